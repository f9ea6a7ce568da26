"""Engine overhead: gradient time of plain-NumPy code, against NumPy itself and peers.

(a) extended Rosenbrock, n = 10,000, written as plain NumPy code;
(b) a chain of scalar ops: 300 x ``sin(x) * 1.01 + 0.1 * x`` (1,200 ops);
(c) the cost of one op with no tape active, over the bare NumPy call.
In (a), minimal_tape.py is the floor any eager Python tape starts from (see its docstring).
Peers (autograd, torch) are measured when installed (`pip install ".[bench]"`).
Run: python benchmarks/bench_overhead.py
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff as ad

import minimal_tape
from common import median_time, optional, report

N = 10_000
CHAIN = 300


def rosenbrock(x, np=np):
    return np.sum(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2)


def minimal_rosenbrock(x):
    """The same function on the floor tape of minimal_tape.py (its own sum, no NumPy dispatch)."""
    return minimal_tape.total(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2)


def rosenbrock_gradient(x):
    """The hand-coded gradient: the NumPy baseline."""
    g = np.empty_like(x)
    r = x[1::2] - x[::2] ** 2
    g[::2] = -400.0 * x[::2] * r - 2.0 * (1.0 - x[::2])
    g[1::2] = 200.0 * r
    return g


def chain(x, sin=np.sin):
    for _ in range(CHAIN):
        x = sin(x) * 1.01 + 0.1 * x
    return x


def torch_chain_gradient(torch, s0) -> Callable:
    """The chain's gradient at s0 in torch eager mode (a peer, when installed)."""
    def run():
        x = torch.tensor(s0, requires_grad=True)
        chain(x, torch.sin).backward()
        return x.grad
    return run


def tape_gradient(f, x0):
    def run():
        x = ad.constant(x0)
        with ad.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    return run


def main() -> None:
    x0 = np.tile([-1.2, 1.0], N // 2)
    assert np.allclose(tape_gradient(rosenbrock, x0)().numpy(), rosenbrock_gradient(x0))
    assert np.allclose(minimal_tape.gradient(minimal_rosenbrock, x0), rosenbrock_gradient(x0))
    autograd, torch = optional("autograd"), optional("torch")

    print(f"(a) gradient of extended Rosenbrock, n = {N:,} (plain NumPy code)")
    rows = [("numpy hand-coded gradient", median_time(lambda: rosenbrock_gradient(x0))),
            ("numpy f only", median_time(lambda: rosenbrock(x0))),
            ("autodiff tape", median_time(tape_gradient(rosenbrock, x0))),
            ("minimal special-purpose tape", median_time(lambda: minimal_tape.gradient(minimal_rosenbrock, x0)))]
    if autograd:
        import autograd.numpy as agnp
        rows.append(("autograd", median_time(lambda: autograd.grad(lambda x: rosenbrock(x, agnp))(x0))))
    if torch:
        torch.set_num_threads(1)
        def torch_grad():
            x = torch.tensor(x0, requires_grad=True)
            y = torch.sum(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2)
            y.backward()
            return x.grad
        rows.append(("torch eager", median_time(torch_grad)))
    report(rows, "numpy hand-coded gradient")
    print("  autodiff / torch eager:", _ratio(rows, "autodiff tape", "torch eager"))
    print("  autodiff / minimal tape:", _ratio(rows, "autodiff tape", "minimal special-purpose tape"))

    s0 = np.float64(0.3)
    print(f"\n(b) gradient of a chain of scalar ops: {CHAIN} x sin(x)*1.01 + 0.1*x = {4 * CHAIN} ops")
    rows = [("numpy forward only", median_time(lambda: chain(np.asarray(s0)))),
            ("autodiff tape", median_time(tape_gradient(chain, s0)))]
    if autograd:
        import autograd.numpy as agnp
        rows.append(("autograd", median_time(lambda: autograd.grad(lambda x: chain(x, agnp.sin))(s0))))
    if torch:
        rows.append(("torch eager", median_time(torch_chain_gradient(torch, s0))))
    report(rows, "numpy forward only")
    print("  autodiff / torch eager:", _ratio(rows, "autodiff tape", "torch eager"))
    print("  autodiff / autograd:   ", _ratio(rows, "autodiff tape", "autograd"))
    print(f"  autodiff per op (forward + backward): {dict(rows)['autodiff tape'] / (4 * CHAIN) * 1e6:.2f} us")

    print("\n(c) one op with no tape active: np.sin on a 0-d array")
    a = np.asarray(0.3)
    t = ad.constant(0.3)
    bare = median_time(lambda: np.sin(a), number=20000)
    anp_call = median_time(lambda: ad.numpy.sin(t), number=20000)
    dispatched = median_time(lambda: np.sin(t), number=20000)
    print(f"  numpy {bare * 1e6:.2f} us; autodiff.numpy.sin(Tensor) {anp_call * 1e6:.2f} us "
          f"(+{(anp_call - bare) * 1e6:.2f} us); np.sin(Tensor) via dispatch {dispatched * 1e6:.2f} us "
          f"(+{(dispatched - bare) * 1e6:.2f} us)")


def _ratio(rows, numerator, denominator):
    table = dict(rows)
    if denominator not in table:
        return "(peer not installed)"
    return f"{table[numerator] / table[denominator]:.2f}x"


if __name__ == "__main__":
    main()
