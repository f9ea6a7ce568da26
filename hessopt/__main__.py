"""``python -m hessopt``: run the test-problem suite and print a table and a per-method summary."""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor

from . import problems
from .suite import METHODS, format_summary, format_table, rosenbrock_race, run_suite


def _instances(spec: str, n: int | None):
    if spec == "mgh":
        return list(problems.MGH)
    if spec == "scalable":
        return [problems.scalable(name, n or 1000) for name in problems.SCALABLE]
    return [problems.get(name, n) for name in spec.split(",")]


def _save_profile(runs, path: str) -> None:
    """The performance profile of ``hessopt.plot``, written to a file with no display needed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plot import performance_profile
    ax = performance_profile(runs, plt.figure(figsize=(7, 4.5)).add_subplot())
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=120)
    plt.close(ax.figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hessopt", description=__doc__)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated methods (default: all)")
    parser.add_argument("--problems", default="mgh",
                        help="'mgh' (the 39 Moré-Garbow-Hillstrom instances), 'scalable', or names")
    parser.add_argument("--n", type=int, default=None, help="size for scalable problems")
    parser.add_argument("--compare-scipy", action="store_true",
                        help="also run scipy's counterparts, and the chained-Rosenbrock race")
    parser.add_argument("--rosenbrock", type=int, nargs="*", default=[1000],
                        help="sizes for the chained-Rosenbrock race (with --compare-scipy)")
    parser.add_argument("--plot", metavar="FILE", help="save a performance profile to FILE")
    parser.add_argument("--workers", type=int, default=0, help="run in a pool of N processes")
    parser.add_argument("--gtol", type=float, default=None,
                        help="stop hessopt's runs at ||g||_inf <= GTOL instead of its default test "
                             "(the relative gradient <= 1e-8); scipy keeps its defaults")
    parser.add_argument("--maxiter", type=int, default=None)
    parser.add_argument("--eager", action="store_true",
                        help="evaluate derivatives eagerly on the tape (default: replay the "
                             "objective's traced programs, autodiff.function)")
    parser.add_argument("--finite-differences", action="store_true",
                        help="hide the objectives from autodiff: hessopt's derivatives by finite differences")
    args = parser.parse_args(argv)

    methods = [m.strip().lower() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {sorted(METHODS)}")
    options = {name: value for name, value in [("gtol", args.gtol), ("maxiter", args.maxiter)]
               if value is not None}
    if args.eager:
        options["trace"] = False
    instances = _instances(args.problems, args.n)
    if args.workers > 0:
        with ProcessPoolExecutor(args.workers) as pool:
            runs = run_suite(instances, methods, args.compare_scipy, pool, options, args.finite_differences)
    else:
        runs = run_suite(instances, methods, args.compare_scipy, None, options, args.finite_differences)
    print(format_table(runs))
    print("\nSummary, " + ("every method with its defaults" if args.gtol is None else
                          f"hessopt to ||g||_inf <= {args.gtol:g}, scipy with its defaults"))
    print(format_summary(runs))
    if args.compare_scipy:
        for n in args.rosenbrock:
            print(f"\nChained Rosenbrock, n = {n:,}, x0 = (-1.2, 1, ...): both with their defaults"
                  + (f" (hessopt to ||g||_inf <= {args.gtol:g})" if args.gtol is not None else ""))
            print(format_table(rosenbrock_race(n, gtol=args.gtol)))
    if args.plot:
        _save_profile(runs, args.plot)
        print(f"\nperformance profile saved to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
