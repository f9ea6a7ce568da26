"""scipy's bounded quasi-Newton methods by name: ``method="L-BFGS-B"`` and ``"TNC"``.

Code written for scipy names L-BFGS-B or TNC (or none, with bounds) for a bound-constrained
problem; ``minimize`` runs hessopt's bounded trust-region Newton method under that name (trust-ncg
in a box: TRON, C.-J. Lin and J. J. Moré, "Newton's method for large bound-constrained
optimization problems", SIAM J. Optim. 9 (1999) 1100-1127), and the message says so. Their
options are read where they mean something here, each as scipy documents it:

- ``maxiter``, ``disp``, ``gtol`` (and L-BFGS-B's ``pgtol``): the run's own; TNC's ``gtol=-1`` and
  ``ftol=-1`` are its "default" and mean hessopt's default test;
- ``eps``: the absolute finite-difference step, where derivatives are differences
  (:mod:`hessopt._finite_differences`);
- ``ftol``: L-BFGS-B's relative-reduction test, ``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <=
  ftol`` after an accepted step, a successful stop as in scipy (the message says which test
  passed); ``maxfun``: a cap on the evaluations of f (every call, finite differences included),
  a failed stop.

The options that set L-BFGS-B's or TNC's own machinery (L-BFGS-B's memory ``maxcor`` and
line-search limit ``maxls``; TNC's scaling, CG and line-search settings) are accepted at scipy's
default value and refused by name at any other: a Newton method has no counterpart, and ignoring
them would be silently wrong.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

from optimizers.bounds import Box
from optimizers.objective import Status

from ._arguments import as_options, check_option, plain_value

#: scipy's method names (lower case) run by the bounded trust-region method, and how scipy spells them
SCIPY_BOUNDED = {"l-bfgs-b": "L-BFGS-B", "tnc": "TNC"}
RUNS_AS = "trust-ncg"
#: options renamed to the run's own
_RENAMED = {"pgtol": "gtol"}
#: options that set the method's own machinery, at scipy's default values (any of them)
_OWN = {
    "L-BFGS-B": {"maxcor": (10,), "maxls": (20,), "iprint": (-1, None), "finite_diff_rel_step": (None,)},
    "TNC": {"scale": (None,), "offset": (None,), "mesg_num": (None,), "maxCGit": (-1,), "eta": (-1,),
            "stepmx": (0,), "accuracy": (0,), "minfev": (0,), "xtol": (-1,), "rescale": (-1,),
            "finite_diff_rel_step": (None,)},
}
_WHY = {"maxcor": "the memory of L-BFGS-B's quasi-Newton matrix", "maxls": "L-BFGS-B's line-search limit",
        "iprint": "L-BFGS-B's Fortran output",
        "finite_diff_rel_step": "a relative finite-difference step (eps, the absolute one, is read)",
        "scale": "TNC's variable scaling", "offset": "TNC's variable offsets", "mesg_num": "TNC's output",
        "maxCGit": "TNC's CG iterations per step", "eta": "TNC's line-search severity",
        "stepmx": "TNC's line-search step limit", "accuracy": "TNC's line-search accuracy",
        "minfev": "TNC's estimate of the minimum", "xtol": "TNC's step-size test", "rescale": "TNC's f scaling"}


def scipy_method(method) -> str | None:
    """scipy's spelling of ``method`` when it is L-BFGS-B or TNC (any case), else None."""
    return SCIPY_BOUNDED.get(method.lower()) if isinstance(method, str) else None


class ScipyBounded:
    """One call with ``method="L-BFGS-B"`` or ``"TNC"``: its options translated (``translated``),
    the stops hessopt's loop lacks (``ftol``, ``maxfun``) watched after each iteration
    (:meth:`watch`), and the result's status and message made scipy's (:meth:`finish`).

    Raises
    ------
    ValueError
        For an option of the method's own machinery at a value other than scipy's default, or
        ``ftol``, ``maxfun`` out of range (TypeError: of the wrong kind).
    """

    def __init__(self, name: str, options: dict):
        self.name = name
        options = dict(options)
        if name == "TNC":   # TNC's -1 means its default: hessopt's own test, no ftol test
            for default in ("ftol", "gtol"):
                if isinstance(options.get(default), (int, float)) and options[default] < 0:
                    options.pop(default)
        self.ftol, self.maxfun = (check_option(stop, options.pop(stop), name) if stop in options else None
                                  for stop in ("ftol", "maxfun"))
        for own, defaults in _OWN[name].items():
            if own in options:
                value = options.pop(own)
                if not any(value is d or (d is not None and value == d) for d in defaults):
                    raise ValueError(f"options[{own!r}] = {value!r}: {_WHY[own]} is {name}'s own; hessopt runs "
                                     f"{name} as its bounded trust-region Newton method ({RUNS_AS}), which has "
                                     f"no counterpart. Leave it out (or at scipy's default, {defaults[0]!r})")
        self.translated = {_RENAMED.get(k, k): v for k, v in options.items()}
        self.stopped: str | None = None

    def watch(self, callback: Callable | None, evaluations: Callable[[OptimizeResult], int]) -> Callable | None:
        """The loop's callback with the ``ftol`` and ``maxfun`` stops before the user's (a stop
        raises StopIteration, which ends the run; :meth:`finish` then names it)."""
        if self.ftol is None and self.maxfun is None:
            return callback
        last = {"x": None, "f": None}

        def watched(intermediate: OptimizeResult) -> None:
            x, f = intermediate.x, float(intermediate.fun)
            moved = last["x"] is not None and not np.array_equal(x, last["x"])
            if moved and self.ftol is not None and \
                    last["f"] - f <= self.ftol * max(abs(last["f"]), abs(f), 1.0):
                self.stopped = "ftol"
            elif self.maxfun is not None and evaluations(intermediate) >= self.maxfun:
                self.stopped = "maxfun"
            if last["x"] is None or moved:
                last.update(x=np.array(x, copy=True), f=f)
            if self.stopped is not None:
                raise StopIteration
            if callback is not None:
                callback(intermediate)
        return watched

    def finish(self, result: OptimizeResult) -> None:
        """scipy's status for the stops watched here, and the message naming the method run."""
        # the loop's message ends with the gradient norm and test, "(||pg||_inf = ...)."; kept
        detail = result.message[result.message.find(" ("):] if " (" in result.message else "."
        if self.stopped == "ftol":
            result.update(status=Status.SUCCESS, success=True, message=(
                f"CONVERGENCE: RELATIVE REDUCTION OF F <= FTOL = {self.ftol:g}, the user's test{detail}"))
        elif self.stopped == "maxfun":
            result.update(status=Status.MAXITER, success=False, message=(
                f"STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT, maxfun = {self.maxfun}{detail}"))
        result.message += (f" Method {self.name!r} ran as hessopt's bounded trust-region Newton method "
                           f"({RUNS_AS}; TRON, Lin & Moré 1999).")


def scipy_call(method, options) -> tuple[str | None, dict | None, ScipyBounded | None]:
    """``(method, options, run)``: for L-BFGS-B or TNC, hessopt's method, the translated options
    and the :class:`ScipyBounded` run; else the arguments as they were and None."""
    name = scipy_method(method)
    if name is None:
        return method, options, None
    run = ScipyBounded(name, as_options(options))
    return RUNS_AS, run.translated, run


def evaluations(derivatives) -> Callable[[OptimizeResult], int]:
    """The evaluations of f so far, for ``maxfun``: every call of f when the derivatives are finite
    differences (they count them), else the run's count in the loop's intermediate result."""
    calls = getattr(derivatives, "calls", None)
    return (lambda intermediate: intermediate.nfev) if calls is None else (lambda intermediate: derivatives.calls)


def all_fixed(feasible) -> bool:
    """Whether the set is a box whose bounds fix every variable."""
    return isinstance(feasible, Box) and bool(np.all(feasible.lower == feasible.upper))


def fixed_by_bounds(fun: Callable, x: np.ndarray, unravel: Callable, args: tuple) -> OptimizeResult:
    """scipy's result when the bounds fix every variable (x, flat, is where they fix it): one
    evaluation, no iteration, "All independent variables were fixed by bounds."; no gradient is
    evaluated (``jac`` is absent, as in scipy)."""
    value = plain_value(fun(unravel(x), *args))
    return OptimizeResult(x=x, fun=float(np.asarray(value).reshape(())), success=True, status=Status.SUCCESS,
                          message="All independent variables were fixed by bounds.", nfev=1, njev=0, nhev=0,
                          nit=0)
