"""Derivatives by finite differences, for objectives autodiff cannot follow.

An objective that builds arrays from x's entries (``np.array([x[0] ** 2, x[1]])``), calls
``math.pow`` or ``float()`` leaves the engine: autodiff refuses it rather than return a wrong
derivative. scipy takes finite differences of such code, and so does ``minimize`` then, where the
call gives no derivative (``jac=None`` or ``False``) or asks for scipy's ``"2-point"``,
``"3-point"`` or ``"cs"``: :func:`fallback` probes autodiff at x0 and, when it refuses, warns
with the operation and the line of the user's code that stopped it, and gives
:class:`FiniteDifferences` in place of :class:`~hessopt._derivatives.AutodiffDerivatives`.

- The gradient (:func:`difference_gradient`) is forward differences (``"2-point"``, scipy's
  default, step ``sqrt(eps) max(1, |x_i|)``) or central ones (``"3-point"`` and ``"cs"``, step
  ``eps^(1/3) max(1, |x_i|)``). Forward differences give way to central ones for the rest of
  the run once a gradient comes within ``SWITCH_MARGIN`` of passing the gradient test (Gill,
  Murray & Wright, *Practical Optimization*, 1981, §8.6): the forward gradient's error, about
  ``sqrt(eps)`` times the curvature, is where the test's tolerance lies, and a point where it
  vanishes lies a step of the ill-conditioned Hessian's inverse away from the minimizer (Watson's
  function stops 2% above its minimum); the central gradient's error is ``eps^(2/3)``. Each step
  is turned or shortened so that no evaluation leaves the box, as scipy's ``approx_derivative``
  does with bounds (one-sided three-point differences near a bound). A variable fixed by its
  bounds allows no step: its derivative is 0 inside the run (it never moves) and NaN in the
  result's ``jac`` (unknown; scipy's too). ``"cs"`` (complex step) is read as ``"3-point"``: code
  autodiff cannot follow (``float()``, ``math``) drops an imaginary part without a word, so a
  complex step would give a silently wrong gradient. scipy's ``approx_derivative`` is private
  (``scipy.optimize._numdiff``) and ``approx_fprime`` takes no bounds, hence the few lines here.
- The Hessian of a trust-region method (trust-ncg, which L-BFGS-B and TNC run as, trust-krylov,
  trust-exact, dogleg) is, by default, damped BFGS updates (:class:`~hessopt._hessians.QuasiNewton`,
  scipy's ``BFGS(exception_strategy="damp_update")``, Powell's damping: Nocedal & Wright §18.3;
  with plain skipped updates the first update's huge curvature on MGH's penalty function I was never
  corrected, 1,000 iterations at f = 0.05) from the gradient differences the run already has, at no evaluation of f
  (:func:`curvature`), as L-BFGS-B and TNC do with approximate gradients: a difference Hessian
  costs ``n (n + 3) / 2`` values of f a point, a quasi-Newton one none (Nocedal & Wright,
  *Numerical Optimization*, 2nd ed., §6.1; scipy's TNC test 1b, Rosenbrock in a box with
  ``maxfun=200``: 289 calls with the difference Hessian, 106 with BFGS, 129 in TNC). A run that ends in
  success has its curvature checked once with the difference Hessian (no false success at a
  saddle). The other methods keep the difference Hessian: a quasi-Newton matrix starts as the
  identity, and their first step, unbounded by a radius, is then the whole gradient (on the MGH
  set, Jennrich-Sampson's first Newton step lands on the plateau f = 2020, where the gradient
  vanishes in floating point: a false success). So does a call that asks for it (``hess="2-point"``,
  ``"3-point"`` or ``"cs"``): the Hessian
  (:func:`difference_hessian`) is forward second differences of f in the box; up to
  ``DENSE_MAX`` variables the products are taken with it. Above, a Hessian-vector product is the
  forward difference of the gradient along v (Nocedal & Wright, *Numerical Optimization*, 2nd
  ed., §8.1), with the step ``sqrt(delta)`` for a gradient whose relative error is ``delta``
  (``eps^(1/4)`` after forward differences, ``eps^(1/3)`` after central ones) relative to
  ``max(1, |x_i|)`` in every entry that moves, shortened to stay in the box.

Every call of the user's function is counted (``calls``), and f is kept per point, so the value a
gradient starts from is never evaluated twice.

The differences themselves are :func:`difference_jacobian`'s, the one place hessopt takes them: the
gradient here is its one-row case, and it gives ``least_squares`` the Jacobian of residuals autodiff
cannot follow (``"cs"`` read as ``"3-point"`` there too: ``float()`` in residuals drops the
imaginary part, and a complex step gave a zero Jacobian and a false success at x0),
``minimize`` the Hessian as differences of a user gradient autodiff cannot follow
(:class:`~hessopt._hessians.GradientDerivative`) and constraints' derivatives
(:func:`~hessopt._constraints.differentiable`).
"""
from __future__ import annotations

import functools
import linecache
import os
import traceback
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.optimize import BFGS, OptimizeResult, OptimizeWarning

import autodiff
from optimizers.feasible import FeasibleSet
from optimizers.objective import same_point
from optimizers.stopping import DEFAULT_GTOL, GradientTest

from ._arguments import Call, PointDerivatives, exact_derivatives, plain_value

EPS = np.finfo(float).eps
#: the gradient's step relative to max(1, |x_i|), and the product's, by scheme (see module docstring)
GRADIENT_STEP = {"2-point": EPS ** 0.5, "3-point": EPS ** (1 / 3)}
PRODUCT_STEP = {"2-point": EPS ** 0.25, "3-point": EPS ** (1 / 3)}
#: forward differences switch to central ones when the test's measure is below this many tolerances:
#: their error in the measure's units is about sqrt(eps) kappa / 2 for a scaled curvature kappa, so
#: 1000 x the default 1e-8 trusts them only while the measure exceeds that error for kappa up to
#: ~1300 (Rosenbrock's Hessian at its minimum has 1002 on the diagonal: at 100, a BFGS trust-exact
#: run stalled there on forward-difference noise, ||g|| 6e-6)
SWITCH_MARGIN = 1000.0
#: up to this many variables, Hessian products come from the matrix of f's second differences: it
#: costs n (n + 3) / 2 values, what (n + 3) / 2 products of n + 1 values each cost, fewer than a
#: Krylov solve on an ill-conditioned problem takes
DENSE_MAX = 20
#: where the engine and the face live: frames there are not the user's code
_LIBRARY = tuple(os.path.dirname(module.__file__) + os.sep for module in (autodiff, np))
_FACE = os.path.dirname(__file__) + os.sep


def fallback(derivatives, jac, call: Call, feasible: FeasibleSet, eps=None, gtol: float | None = None,
             *, second: tuple, stacklevel: int = 3):
    """``derivatives`` (autodiff's), or :class:`FiniteDifferences` of the same function when the
    call leaves the gradient to hessopt (``jac`` None, False or a scheme), x0 is not a list of
    Variables, and autodiff refuses f at x0 while plain evaluation runs; the warning then names
    what autodiff could not follow. Where autodiff follows f at x0, :class:`Switching` takes the
    differences at the first point of the run where it does not. ``eps``: scipy's absolute step (a
    number or one per entry); ``gtol``: the run's gradient test (None: the default relative one),
    for the switch to central differences; ``second``: the call's ``hess``, ``hessp`` and the
    method's declaration, for the warning (:func:`curvature_words`); ``stacklevel``: the warning's,
    which names the user's call of ``minimize``."""
    if not exact_derivatives(jac) or derivatives.variables is not None:
        return derivatives
    scheme = "3-point" if jac in ("3-point", "cs") else "2-point"
    hess, hessp, declaration = second
    later = curvature_words(scheme if hess is None or hess is False else hess, hessp, declaration)
    differences = lambda reason, first=None: finite_differences(   # noqa: E731
        derivatives, call, feasible, scheme, eps, gtol, reason, first)
    try:
        derivatives.at(call.x0)   # the recording the run starts from: kept, not wasted
        return Switching(derivatives, differences, later)
    except (TypeError, ValueError) as refusal:
        # NumPy words a refused float() in `r[i] = t` as its own ValueError, the refusal its cause
        if not isinstance(refusal, TypeError) and engine_refusal(refusal) is None:
            raise
        plain = derivatives.call(call.x0)    # the user's own error, if f fails without the tape too
        where = refusal_site(refusal)
    if not np.all(np.isfinite(np.asarray(plain_value(plain), dtype=float))):   # a failed result, no warning
        where = f"f(x0) = {plain_value(plain)!r}"
    else:
        warnings.warn(f"autodiff cannot follow fun: {where}. {_approximate(scheme, curvature_words(*second))}",
                      OptimizeWarning, stacklevel=stacklevel)
    return differences(where, (call.x0, plain))


def _approximate(scheme: str, hessian: str) -> str:
    """The warning's second sentence: what the derivatives are."""
    return f"Its derivatives are approximate: finite differences ({scheme}) of f, and {hessian}"


def finite_differences(derivatives, call: Call, feasible: FeasibleSet, scheme: str, eps, gtol: float | None,
                       reason: str, first: tuple | None) -> FiniteDifferences:
    """:class:`FiniteDifferences` of autodiff's function in the set's box (:func:`fallback`)."""
    lower, upper = box_bounds(feasible, call.x0.size)
    function = lambda x: derivatives.call(x)   # noqa: E731  (a fresh copy of x for the user, each call)
    test = GradientTest(gtol)
    tolerance = SWITCH_MARGIN * (DEFAULT_GTOL if gtol is None else gtol)
    near = lambda x, f, g: test.measure(x, f, feasible.stationarity(x, g)) <= tolerance   # noqa: E731
    return FiniteDifferences(function, lower, upper, scheme, eps, first=first, reason=reason, near=near)


class Switching(PointDerivatives):
    """autodiff's derivatives until autodiff refuses f at a point of the run (code that branches,
    after x0, into something the engine cannot follow: ``if x[0] > 2: return float(x[0]) ** 2``),
    then :class:`FiniteDifferences` (made by ``differences(reason)``) for the rest of the run, with
    :func:`fallback`'s warning; ``hessian`` says, for it, where second derivatives then come from.
    Everything else is autodiff's (``f``, ``point``, ``untraced_reason``, ...). ``calls`` is None
    until the switch, then every evaluation of f: those served on autodiff's way (values and
    recordings at distinct points, x0's recorded already) and the differences'."""

    def __init__(self, autodiff, differences: Callable[[str], FiniteDifferences], hessian: str):
        self._autodiff, self._differences, self._hessian = autodiff, differences, hessian
        self.current, self.switched_at = autodiff, None
        self._uncounted = autodiff.evaluations - 1   # autodiff's before x0's recording (a Gauss-Newton split's check)

    def __getattr__(self, name: str):
        return getattr(self._autodiff, name)

    @property
    def name(self) -> str:
        return "autodiff" if self.switched_at is None else "autodiff, then finite differences"

    @property
    def calls(self) -> int | None:
        return None if self.switched_at is None else self._autodiff.evaluations - self._uncounted + self.current.calls

    def _guarded(self, method: str, x: np.ndarray, *rest):
        """``current.method(x, *rest)``, switching to finite differences when autodiff refuses f at x."""
        if self.switched_at is None:
            try:
                return getattr(self._autodiff, method)(x, *rest)
            except (TypeError, ValueError) as error:
                refusal = LaterRefusal.of(error, "fun")
                if refusal is None:
                    raise
            self.switched_at = np.array(x, copy=True)
            self.current = self._differences(refusal.site)
            refusal.warn(f"From there on, {_approximate(self.current.scheme, self._hessian)[4:]}", stacklevel=2)
        return getattr(self.current, method)(x, *rest)

    def at(self, x: np.ndarray):
        return self._guarded("at", x)

    def fun(self, x: np.ndarray):
        return self.current.fun(x)

    def value_and_grad(self, x: np.ndarray):
        return self._guarded("value_and_grad", x)

    def solve(self, solver: Callable, x0: np.ndarray, *args, **kwargs) -> OptimizeResult:
        """autodiff's run; the result says, after a switch, from where its derivatives were
        finite differences (:meth:`FiniteDifferences.report`)."""
        result = self._autodiff.solve(solver, x0, *args, **kwargs)
        if self.switched_at is not None:
            self.current.report(result, f"autodiff's up to x = {np.array2string(self.switched_at, precision=4)}, "
                                        "then finite differences")
        return result


class LaterRefusal(NamedTuple):
    """autodiff's refusal of a function it followed at x0, met at a later point of the run (code
    that branches there into what the engine cannot follow): the function's ``label`` ("fun", or a
    constraint group's) and the refusal's :func:`refusal_site`. What the run does then differs on
    purpose: :class:`Switching` goes on with finite differences in place, the constrained path
    restarts from x0 (:func:`~hessopt._constrained.minimize_constrained`)."""
    label: str
    site: str

    @classmethod
    def of(cls, error: BaseException, label: str) -> LaterRefusal | None:
        """The refusal in ``error`` of the function ``label``; None when the error is not the engine's."""
        return None if engine_refusal(error) is None else cls(label, refusal_site(error))

    def warn(self, then: str, stacklevel: int) -> None:
        """The ``OptimizeWarning``: what autodiff refused and where, then ``then`` (what the run does);
        ``stacklevel`` as the caller's own ``warnings.warn`` would take it."""
        warnings.warn(f"autodiff cannot follow {self.label} at a point of the run after x0 (it could at x0): "
                      f"{self.site}. {then}", OptimizeWarning, stacklevel=stacklevel + 1)


def _quasi_newton_default(hess, hessp, declaration) -> bool:
    """Whether a run on finite differences takes BFGS updates: a trust-region method, and a call
    that names no second derivatives (``hess`` None or False, no ``hessp``; module docstring)."""
    return declaration.trust_region and (hess is None or hess is False) and hessp is None


def curvature(derivatives, hess, hessp, declaration):
    """The run's ``hess``: a fresh damped ``BFGS()`` when its derivatives are finite differences and the
    method and call leave the choice to hessopt (:func:`_quasi_newton_default`), else ``hess``."""
    if isinstance(derivatives, FiniteDifferences) and _quasi_newton_default(hess, hessp, declaration):
        return BFGS(exception_strategy="damp_update")
    return hess


def curvature_words(hess, hessp, declaration) -> str:
    """Where a run on finite differences takes its second derivatives from, in words (the
    warning's), for the call's ``hess`` and ``hessp`` and the method's declaration."""
    if declaration.first_order:
        return "no second derivatives (a first-order method)"
    if _quasi_newton_default(hess, hessp, declaration):
        return "the Hessian from BFGS updates of those gradients (no further evaluation of f)"
    if hessp is None and (hess is None or hess is False or isinstance(hess, str)):
        return f"the Hessian from second differences of f (up to {DENSE_MAX} variables, else of the gradient)"
    return "second derivatives as given (hess, hessp)"


def refusal_site(error: BaseException) -> str:
    """What autodiff refused and where: the operation (the refusal's first sentence when it names
    none) and the last line of the user's code on the way to it ("float(), at script.py:12:
    return float(x[0]) ** 2").

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> from hessopt._finite_differences import refusal_site
    >>> f = lambda x: np.array([x[0], x[1]]).sum()
    >>> try:
    ...     ad.grad(f)(np.ones(2))
    ... except TypeError as error:
    ...     print(refusal_site(error))
    np.asarray() (a Tensor turned into a plain value), at <doctest ...>:1: f = lambda x: np.array([x[0], x[1]]).sum()
    """
    refusal = engine_refusal(error)
    message = f"{type(error).__name__} {_text(error)}" if refusal is None else str(refusal)
    message = message.split(". ")[0].removeprefix("autodiff: ")
    operation = message.split(" would turn a Tensor")
    if len(operation) == 2:
        message = f"{operation[0]} (a Tensor turned into a plain value)"
    user = [frame for frame in traceback.extract_tb(error.__traceback__)
            if not frame.filename.startswith(_LIBRARY) and not frame.filename.startswith(_FACE)]
    if not user:
        return message
    frame = user[-1]
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    return f"{message}, at {os.path.basename(frame.filename)}:{frame.lineno}: {line}"


def engine_refusal(error: BaseException) -> BaseException | None:
    """The engine's own refusal (a TypeError from autodiff) among ``error`` and its causes, if any;
    the user's exceptions are looked at only for their type (their str() may raise)."""
    while error is not None:
        if type(error) is TypeError and str(error).startswith("autodiff"):
            return error
        error = error.__cause__ or error.__context__
    return None


def _text(error: BaseException) -> str:
    """str(error), or a stand-in when its str() raises."""
    try:
        return str(error)
    except Exception:   # a user's exception may fail to print; its type still names it
        return "(its str() raised)"


def box_bounds(feasible: FeasibleSet, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The set's bounds (a Box's lower and upper), or no bound."""
    lower, upper = getattr(feasible, "lower", None), getattr(feasible, "upper", None)
    if lower is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    return np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)


def difference_jacobian(fun: Callable, x: np.ndarray, f0, lower: np.ndarray, upper: np.ndarray,
                        scheme: str = "2-point", step=None) -> np.ndarray:
    """The (m, n) Jacobian of the vector function ``fun`` at x by finite differences, no
    evaluation outside ``[lower, upper]`` (module docstring): forward (``"2-point"``, step
    ``sqrt(eps) max(1, |x_i|)``) or central (``"3-point"``, step ``eps^(1/3) max(1, |x_i|)``,
    one-sided on three points near a bound); callers read ``"cs"`` as ``"3-point"`` (module
    docstring). ``step``: an absolute step (a number or one per entry) in place of the relative
    one. ``f0``: fun(x), or None to evaluate it if a one-sided difference needs it. A variable
    fixed by its bounds gets a zero column.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt._finite_differences import difference_jacobian
    >>> fun = lambda x: np.array([float(x[0]) * float(x[1]), float(x[1]) ** 2])
    >>> x, lower, upper = np.array([1.0, 2.0]), np.full(2, -np.inf), np.array([np.inf, 2.0])
    >>> difference_jacobian(fun, x, None, lower, upper, "3-point").round(8)   # x[1] at its upper bound
    array([[2., 1.],
           [0., 4.]])
    """
    h = np.broadcast_to(GRADIENT_STEP[scheme] * np.maximum(1.0, np.abs(x)) if step is None
                        else np.asarray(step, dtype=float), x.shape)
    at = lambda y: np.atleast_1d(fun(y))   # noqa: E731
    base = (lambda: f0) if f0 is not None else functools.cache(lambda: at(x))
    columns = []
    for i, e in enumerate(np.eye(x.size)):
        up, down = upper[i] - x[i], x[i] - lower[i]
        if scheme == "3-point" and min(up, down) >= h[i]:
            columns.append((at(x + h[i] * e) - at(x - h[i] * e)) / (2 * h[i]))
        elif scheme == "3-point" and max(up, down) > 0:    # one-sided, three points, into the box
            s = min(h[i], max(up, down) / 2) * (1.0 if up >= down else -1.0)
            columns.append((-3 * base() + 4 * at(x + s * e) - at(x + 2 * s * e)) / (2 * s))
        elif max(up, down) > 0:
            s = h[i] if up >= h[i] else (-h[i] if down >= h[i] else (up if up >= down else -down))
            columns.append((at(x + s * e) - base()) / s)
        else:
            columns.append(None)
    rows = next((c.size for c in columns if c is not None), None) or base().size   # all fixed: from f0
    return np.stack([np.zeros(rows) if c is None else c for c in columns], axis=1).reshape(rows, x.size)


def difference_gradient(f: Callable, x: np.ndarray, f0: float, lower: np.ndarray, upper: np.ndarray,
                        scheme: str = "2-point", step=None) -> np.ndarray:
    """The gradient of f at x by finite differences, :func:`difference_jacobian`'s one-row case;
    a variable fixed by its bounds gets 0.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt._finite_differences import difference_gradient
    >>> f = lambda x: float(x[0]) ** 2 + 3 * float(x[1])
    >>> x, lower, upper = np.array([1.0, 2.0]), np.full(2, -np.inf), np.array([np.inf, 2.0])
    >>> difference_gradient(f, x, f(x), lower, upper, "3-point").round(8)   # x[1] at its upper bound
    array([2., 3.])
    """
    return difference_jacobian(f, x, np.atleast_1d(f0), lower, upper, scheme, step)[0]


class FiniteDifferences:
    """f, gradients and Hessian products of ``f`` on flat vectors by finite differences, with
    :class:`~hessopt._derivatives.AutodiffDerivatives`' interface (``fun``, ``jac``, ``at``,
    ``value_and_grad``, ``solve``); ``calls`` counts every call of f, ``reason`` says why
    autodiff was not used. ``first``: a point and f there, already evaluated; ``near(x, f, g)``:
    whether a forward-difference gradient is close enough to passing the run's test to switch to
    central differences (module docstring)."""

    name = "finite differences"
    variables = None
    untraced_reason = None

    def __init__(self, f: Callable, lower: np.ndarray, upper: np.ndarray, scheme: str = "2-point",
                 step=None, first: tuple | None = None, reason: str = "", near: Callable | None = None):
        self._f, self.lower, self.upper, self.scheme, self.step = f, lower, upper, scheme, step
        self._near, self.switched = near, None   # switched: the gradient count at the switch
        self.gradients = 0
        self.reason, self.calls = reason, 0
        self._values: dict[bytes, float] = {}
        self._x = self._operator = None
        if first is not None:   # f there on the refused recording, then plainly: two calls
            self.calls = 2
            self._values[first[0].tobytes()] = float(np.asarray(plain_value(first[1])).reshape(()))

    def fun(self, x: np.ndarray) -> float:
        """f(x), evaluated once per point among the last few (the gradient's base, the iterate)."""
        key = x.tobytes()
        if key not in self._values:
            if len(self._values) > 4:
                self._values.pop(next(iter(self._values)))
            self.calls += 1
            self._values[key] = float(np.asarray(plain_value(self._f(x))).reshape(()))
        return self._values[key]

    def plain(self, x: np.ndarray) -> float:
        """f at a difference point: counted, not kept."""
        self.calls += 1
        return float(np.asarray(plain_value(self._f(x))).reshape(()))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """The gradient at x in the run's scheme, switching from forward to central differences
        near the test (module docstring); ``step``, the user's ``eps``, is kept for both."""
        self.gradients += 1
        f = self.fun(x)
        g = difference_gradient(self.plain, x, f, self.lower, self.upper, self.scheme, self.step)
        if self.scheme == "2-point" and self._near is not None and self._near(x, f, g):
            self.scheme, self.switched = "3-point", self.gradients
            g = difference_gradient(self.plain, x, f, self.lower, self.upper, self.scheme, self.step)
        return g

    def at(self, x: np.ndarray) -> DifferencedPoint:
        if not same_point(x, self._x):
            self._x, self._operator = np.array(x, copy=True), None
            self._operator = DifferencedPoint(self, self._x)
        return self._operator

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self.at(x).gradient

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return self.fun(x), self.jac(x)

    def solve(self, solver: Callable, x0: np.ndarray, *args, **kwargs) -> OptimizeResult:
        """``solver(*args, **kwargs)``; the result says where its derivatives came from (``calls``,
        every call of f, is its nfev: minimize sets it once the run's last check is done)."""
        return self.report(solver(*args, **kwargs))

    def report(self, result: OptimizeResult, kind: str = "finite differences") -> OptimizeResult:
        """The result's ``jac`` with NaN for variables fixed by the bounds (no step: unknown), and
        its message saying the derivatives were ``kind`` (scheme, why)."""
        result.jac = np.where(self.lower == self.upper, np.nan, result.jac)
        switch = "" if self.switched is None else f", 2-point for the first {self.switched - 1} gradients"
        result.message += f" The derivatives are {kind} ({self.scheme}{switch}): {self.reason}."
        return result


class DifferencedPoint:
    """One point's f, gradient and Hessian: products are forward differences of the gradient along
    v, or, up to ``DENSE_MAX`` variables, products with the matrix :func:`difference_hessian`
    makes from f values (module docstring); the matrix is made on first use."""

    def __init__(self, source: FiniteDifferences, x: np.ndarray):
        self._source, self._x = source, x
        self.value = source.fun(x)
        self.gradient = source.gradient(x)
        self._dense = None

    def matvec(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        moved = v != 0
        if not moved.any():
            return np.zeros_like(self._x)
        if self._x.size <= DENSE_MAX:
            return self.to_dense() @ v
        # no entry moves by more than the product step relative to max(1, |x_i|): badly scaled x
        scale = np.min(np.maximum(1.0, np.abs(self._x[moved])) / np.abs(v[moved]))
        t = self._step(v, PRODUCT_STEP[self._source.scheme] * scale)
        if t == 0:   # v leaves the box both ways
            return self.to_dense() @ v
        return (self._source.gradient(self._x + t * v) - self.gradient) / t

    def _step(self, v: np.ndarray, t: float) -> float:
        """t, -t, or the longest step along +-v that stays in the box (0 when none does)."""
        source, x = self._source, self._x
        with np.errstate(divide="ignore", invalid="ignore"):
            forward = np.min(np.where(v > 0, (source.upper - x) / v, np.where(v < 0, (source.lower - x) / v, np.inf)))
            backward = np.min(np.where(v < 0, (x - source.upper) / v, np.where(v > 0, (x - source.lower) / v, np.inf)))
        if forward >= t:
            return t
        if backward >= t:
            return -t
        return forward if forward >= backward else -backward

    def to_dense(self) -> np.ndarray:
        if self._dense is None:
            source = self._source
            self._dense = difference_hessian(source.plain, self._x, self.value, source.lower, source.upper)
        return self._dense


def difference_hessian(f: Callable, x: np.ndarray, f0: float, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The Hessian of f at x from n (n + 3) / 2 values of f: forward second differences
    ``(f(x + s_i e_i + s_j e_j) - f(x + s_i e_i) - f(x + s_j e_j) + f(x)) / (s_i s_j)``, with
    ``f(x + 2 s_i e_i)`` on the diagonal, the step ``eps^(1/3) max(1, |x_i|)`` turned or shortened
    so that ``x + 2 s_i e_i`` stays in the box (error about the step times f''', plus rounding
    ``eps |f| / s^2``); a variable fixed by its bounds gets a zero row and column.

    Examples
    --------
    >>> import numpy as np
    >>> from hessopt._finite_differences import difference_hessian
    >>> f = lambda x: float(x[0]) ** 2 * float(x[1])
    >>> x = np.array([1.0, 3.0])
    >>> difference_hessian(f, x, f(x), np.full(2, -np.inf), np.array([np.inf, 3.0])).round(4)
    array([[6., 2.],
           [2., 0.]])
    """
    n = x.size
    up, down = upper - x, x - lower
    h = EPS ** (1 / 3) * np.maximum(1.0, np.abs(x))
    s = np.where(up >= 2 * h, h, np.where(down >= 2 * h, -h, np.where(up >= down, up / 2, -down / 2)))
    moved = s != 0
    steps = np.diag(s)
    single = np.array([f(x + steps[i]) if moved[i] else f0 for i in range(n)])
    hessian = np.zeros((n, n))
    for i in np.flatnonzero(moved):
        hessian[i, i] = (f(x + 2 * steps[i]) - 2 * single[i] + f0) / s[i] ** 2
        for j in np.flatnonzero(moved[i + 1:]) + i + 1:
            hessian[i, j] = hessian[j, i] = (f(x + steps[i] + steps[j]) - single[i] - single[j] + f0) / (s[i] * s[j])
    return hessian
