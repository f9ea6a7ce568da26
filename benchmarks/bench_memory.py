"""Peak memory of Newton-CG training an MLP, against the data and activation size.

Each configuration runs in a fresh process: it loads the data (scikit-learn's digits augmented to N
rows of 64 pixels, ``hessopt.nn.datasets.digits``, written once by this script), builds a 64-H-10
tanh network; the peak resident set size so far (``VmHWM``) is the baseline. Then ten Newton-CG
iterations (``hessopt.minimize``'s defaults: traced, exact Hessian-vector products; gtol 0 so that
all ten run), and the peak after the first and after the
tenth, less the baseline, is the memory the optimization took. It is shown against the data
(N x 64 float64) and one activation (N x H float64).

(a) the 50,000-row MLP (H = 32), softmax cross-entropy, and the same with the exact input-gradient
    penalty (``input_gradient_penalty``, double backpropagation: third-order products);
(b) the plain loss at N = 12,500 .. 50,000 (H = 32) and H = 16 .. 64 (N = 50,000).

``--pythonpath DIR`` runs the configurations with another checkout of hessopt (say, an older
commit), so that before and after are measured by the same script; ``--eager`` runs them untraced.
Run: OMP_NUM_THREADS=1 python benchmarks/bench_memory.py [--pythonpath DIR] [--only a] [--eager]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ITERATIONS = 10
FEATURES = 64
CONFIGS_A = [(50_000, 32, False), (50_000, 32, True)]
CONFIGS_B = [(12_500, 32, False), (25_000, 32, False), (50_000, 16, False), (50_000, 64, False)]

CHILD = r"""
import json, resource, sys
import numpy as np
import hessopt
from hessopt import nn
from hessopt.nn import losses
from hessopt.regularizers import input_gradient_penalty

def peak_mb():
    # VmHWM: this process image's peak (ru_maxrss would include the parent's, copied at the fork)
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # kB on Linux

data, hidden, penalty, iterations = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
trace = sys.argv[5] == "1"
x, y = np.load(data + "_x.npy"), np.load(data + "_y.npy")
model = nn.Sequential([nn.Dense(hidden, "tanh", seed=0), nn.Dense(10, seed=1)])
model(x[:1])
cross_entropy = lambda z: losses.softmax_cross_entropy(y, model(z))
loss = (lambda: cross_entropy(x) + 1e-3 * input_gradient_penalty(cross_entropy, x)) if penalty \
    else (lambda: cross_entropy(x))
baseline, peaks = peak_mb(), []

def note(intermediate_result):
    if intermediate_result.nit >= 1:
        peaks.append(peak_mb())

result = hessopt.minimize(loss, model.trainable_variables, method="newton-cg", callback=note,
                          options={"maxiter": iterations, "gtol": 0.0, "trace": trace})
print(json.dumps({"baseline": baseline, "first": peaks[0], "last": peak_mb(), "nit": result.nit,
                  "fun": float(result.fun)}))
"""


def write_data(directory: pathlib.Path, rows: int) -> str:
    """The augmented digits (N rows) as .npy files; returns their path prefix."""
    from hessopt.nn import datasets
    prefix = directory / f"digits_{rows}"
    if not (directory / f"digits_{rows}_x.npy").exists():
        x, y, _, _ = datasets.digits(n=rows, seed=0)
        np.save(f"{prefix}_x.npy", x)
        np.save(f"{prefix}_y.npy", y)
    return str(prefix)


def measure(prefix: str, hidden: int, penalty: bool, pythonpath: str, trace: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, prefix, str(hidden), "1" if penalty else "0",
                          str(ITERATIONS), "1" if trace else "0"], env=env, capture_output=True, text=True,
                         check=True,
                         cwd=os.path.dirname(prefix))   # not here: sys.path[0] would be this checkout
    return json.loads(out.stdout)


def report(title: str, configs: list, directory: pathlib.Path, pythonpath: str, trace: bool) -> None:
    print(title)
    print(f"  {'N':>7} {'H':>3} {'penalty':>7} {'data MB':>8} {'act. MB':>8} {'baseline':>9} "
          f"{'+1 it':>8} {'+10 it':>8} {'/data':>6} {'/act.':>6}")
    for rows, hidden, penalty in configs:
        found = measure(write_data(directory, rows), hidden, penalty, pythonpath, trace)
        data_mb, activation_mb = rows * FEATURES * 8 / 2 ** 20, rows * hidden * 8 / 2 ** 20
        first, last = found["first"] - found["baseline"], found["last"] - found["baseline"]
        print(f"  {rows:>7} {hidden:>3} {'exact' if penalty else 'no':>7} {data_mb:8.1f} "
              f"{activation_mb:8.1f} {found['baseline']:7.0f}MB {first:6.0f}MB {last:6.0f}MB "
              f"{last / data_mb:6.1f} {last / activation_mb:6.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythonpath", default=str(pathlib.Path(__file__).resolve().parents[1]),
                        help="the hessopt checkout the configurations run with")
    parser.add_argument("--only", choices=("a", "b"))
    parser.add_argument("--eager", action="store_true", help="options={'trace': False}")
    args = parser.parse_args()
    print(f"hessopt from {args.pythonpath}{' (eager)' if args.eager else ''}; peak RSS above the baseline "
          f"(data loaded, model built), after 1 and {ITERATIONS} Newton-CG iterations")
    with tempfile.TemporaryDirectory() as directory:
        if args.only != "b":
            report("(a) the 50,000-row MLP 64-32-10, without and with the exact input-gradient penalty",
                   CONFIGS_A, pathlib.Path(directory), args.pythonpath, not args.eager)
        if args.only != "a":
            report("(b) against the data and activation size (no penalty)", CONFIGS_B,
                   pathlib.Path(directory), args.pythonpath, not args.eager)


if __name__ == "__main__":
    main()
