"""hessopt.least_squares: Gauss-Newton and Levenberg-Marquardt with the Jacobian from autodiff."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

import autodiff as ad
import optimizers

from ._arguments import (
    as_options,
    check_option,
    exact_derivatives,
    normalize,
    plain_value,
    real_array,
    residual_vector,
)
from ._bounds import feasible_set, report_bounds
from ._implicit import least_squares_through_solution
from ._precision import in_x0_precision


def least_squares(residuals: Callable, x0, method: str = "lm", jac: Callable | None = None,
                  args: tuple = (), callback: Callable | None = None,
                  options: dict | None = None, bounds=None) -> OptimizeResult:
    """Minimize 0.5 ||r(x)||^2 by Levenberg-Marquardt (``"lm"``) or Gauss-Newton (``"gn"``).

    The Jacobian comes from autodiff in one vectorized sweep unless ``jac`` is given: a replayed
    program of ``autodiff.function`` (``options={"trace": False}``: eager; residuals that cannot
    be traced run eagerly, and ``result.untraced_reason`` says why). ``x0``, ``args``,
    ``callback`` and ``options`` are taken as by :func:`minimize`; residuals of any shape
    are raveled (``result.fun`` and the rows of ``result.jac`` follow that order), and ``result.x``
    and ``result.grad`` have the form of ``x0``. Gauss-Newton uses J^T J as the Hessian, with no
    second derivatives (Nocedal & Wright, 2006, ch. 10; Moré 1978 for the Levenberg-Marquardt
    scaling).

    ``bounds`` are scipy ``least_squares``' ``(lb, ub)`` (each a scalar or an array of x0's shape
    or size, a pytree of x0's structure for a pytree x0; ``-np.inf``/``np.inf`` or None for no
    bound) or a ``scipy.optimize.Bounds``. Levenberg-Marquardt is then the trust-region method
    with TRON's bounded step on the Gauss-Newton model (Lin & Moré 1999), Gauss-Newton the
    projected one (Bertsekas 1982); the residuals are never evaluated outside the box (x0 is
    clipped into it, and the message says so) and success means the projected gradient test.
    ``result.active_mask`` (always there, in the form of x0) is -1 at a lower bound, +1 at an
    upper one and 0 for free variables, as in scipy.

    Inside a transform, residuals that read a tracked Tensor make ``x``, ``fun`` and ``cost``
    differentiable in it (the implicit function theorem on the cost's exact Hessian; see
    :func:`minimize`). ``hessopt.covariance(result)`` is curve_fit's ``pcov``.

    Parameters
    ----------
    residuals : callable
        ``residuals(x, *args)`` -> array.
    x0 : array_like or pytree
        The starting point.
    method : {"lm", "gn"}, default "lm"
    jac : callable, optional
        The Jacobian of the raveled residuals (default: autodiff).
    args, callback, options
        As for :func:`minimize`.
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
        Bound constraints (see above).

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``cost`` (0.5 ||r||^2), ``fun`` (the residuals), ``jac``, ``grad``, counts, ``status``,
        ``success``, ``message``, ``history``, ``active_mask``.

    Raises
    ------
    TypeError
        If residuals is not callable.
    ValueError
        For an unknown method or jac, or bad bounds (which entry, and why).

    Examples
    --------
    Fit y = a exp(-b t) to exact data:

    >>> import numpy as np
    >>> import hessopt
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> y = 2 * np.exp(-0.5 * t)
    >>> hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 1.0]).x.round(6)
    array([2. , 0.5])

    With the rate held at or below 0.4, it ends on that bound:

    >>> result = hessopt.least_squares(lambda x: x[0] * np.exp(-x[1] * t) - y, [1.0, 0.1],
    ...                                bounds=([0, 0], [np.inf, 0.4]))
    >>> result.x.round(6), result.active_mask
    (array([1.903881, 0.4     ]), array([0, 1]))
    """
    differentiated = least_squares_through_solution(least_squares, dict(locals()))   # inside a transform
    if differentiated is not None:
        return differentiated
    if not callable(residuals):
        raise TypeError(f"residuals must be callable, got {type(residuals).__name__}")
    if method not in ("lm", "gn"):
        raise ValueError(f"unknown least-squares method {method!r}; choose 'lm' or 'gn'")
    feasible = feasible_set(bounds, x0, pairs=False)
    options = as_options(options)
    trace = options.pop("trace", True)
    check_option("trace", trace)
    call = normalize(x0, args, callback, options, optimizers.least_squares_lm, "least_squares")
    unravel, args, n = call.unravel, call.args, call.x0.size
    call.x0, note = feasible.start(call.x0)

    def flat_residuals(x):
        return residual_vector(residuals(unravel(x), *args))

    traced = ad.function(flat_residuals, eager_fallback=True) if trace else None
    if callable(jac):
        jacobian = lambda x: real_array(plain_value(jac(unravel(x), *args)),  # noqa: E731
                                        "the value of jac").reshape(-1, n)
    elif exact_derivatives(jac):
        jacobian = ad.jacobian(traced or flat_residuals)
    else:
        raise ValueError(f"jac must be a callable or None (exact, from autodiff); got {jac!r}")
    result = optimizers.least_squares_lm(lambda x: np.asarray(plain_value(flat_residuals(x)), dtype=float),
                                         call.x0, jacobian, callback=call.callback, method=method,
                                         bounds=feasible, **call.options)
    if traced is not None and traced.fallback_reason is not None:
        result.untraced_reason = traced.fallback_reason
    report_bounds(result, result.get("active_mask", np.zeros(n, dtype=int)), note, unravel)
    return in_x0_precision(call.finish(result, ("x", "grad")), x0, ("x", "grad"))
