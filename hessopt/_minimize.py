"""hessopt.minimize: scipy's interface, exact derivatives from autodiff.

Each iterate records its gradient once (``autodiff.hessian_operator``); every Hessian-vector product
at that iterate is one backward sweep over the cached recording, and a full Hessian is one batched
sweep taken only where the method asks for it (at accepted points). By default the objective is
traced once (``autodiff.function``) and those recordings are replayed as plain NumPy programs; an
objective that cannot be traced runs eagerly, with the same results.
"""
from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
from scipy.optimize import OptimizeResult

import optimizers
from optimizers.feasible import FeasibleSet
from optimizers.krylov import clearly_negative
from optimizers.loop import krylov_curvature
from optimizers.methods import Declaration
from optimizers.objective import MESSAGES, Status

from ._arguments import (
    Call,
    UserHessian,
    as_options,
    check_option,
    exact_derivatives,
    normalize,
    scalar_value,
    scipy_rosen_derivatives,
)
from ._bounds import feasible_set, report_bounds
from ._constrained import constrained_method, minimize_constrained, refuse_constraints
from ._constraints import constraint_items
from ._covariance import attach_hess_inv
from ._derivatives import (
    AutodiffDerivatives,
    Flat,
    check_split,
    derivatives_of,
    flat_derivatives,
    ggn_option,
    variables_of,
)
from ._finite_differences import curvature, fallback
from ._hessians import GradientDerivative, QuasiNewton
from ._implicit import minimize_through_solution
from ._precision import in_x0_precision
from ._scipy_methods import all_fixed, evaluations, fixed_by_bounds, scipy_call
from ._sparse_policy import Structure, considered, structured

#: The second-order methods by name (first-order ones, "adam" and "gd", are accepted too), as
#: declared in :data:`optimizers.REGISTRY`; the one that takes general constraints (the interior
#: point) is chosen by :func:`hessopt._constrained.constrained_method`.
METHODS: dict[str, Callable] = {d.name: d.function for d in optimizers.REGISTRY.declarations()
                                if not d.first_order and not d.constraints}


def method_declaration(method: str) -> Declaration:
    """The declaration of ``method`` (case-insensitive) among minimize's methods.

    Raises
    ------
    ValueError
        For an unknown method, naming the known ones.
    """
    found = optimizers.REGISTRY.get(method.lower()) if isinstance(method, str) else None
    if found is None or found.constraints:
        first_order = sorted(d.name for d in optimizers.REGISTRY.declarations() if d.first_order)
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS) + first_order}")
    return found


def minimize(fun: Callable, x0, args: tuple = (), method: str | None = None,
             jac: Callable | bool | None = None, hess=None,
             hessp: Callable | None = None, bounds=None, constraints=(), tol: float | None = None,
             callback: Callable | None = None, options: dict | None = None) -> OptimizeResult:
    """Minimize ``fun(x, *args)`` with a second-order method; scipy.optimize.minimize's interface.

    Derivatives default to exact ones from autodiff (``fun`` is plain NumPy code); ``jac=None``,
    ``False`` or a finite-difference scheme ("2-point", ...) all mean exact derivatives, and where
    autodiff cannot follow ``fun`` (``float(x[0])``, ``math.pow``, ``np.array([x[0], x[1]])``),
    finite differences of f that never leave the bounds, with a warning naming the operation and
    the line (:mod:`hessopt._finite_differences`); ``result.derivatives`` says which.
    ``method="L-BFGS-B"`` or ``"TNC"`` runs the bounded trust-region method under that name, with
    their options mapped or refused by name (:mod:`hessopt._scipy_methods`); bounds that fix every
    variable return at once with one evaluation, as in scipy.
    User-supplied ``jac`` (or ``jac=True``: fun returns (f, g)), ``hess`` (returning an array, a
    sparse matrix or a LinearOperator; or a ``scipy.optimize.HessianUpdateStrategy`` such as
    ``BFGS()``, updated at each iterate) and ``hessp`` are honoured. With a user gradient and no
    ``hess``/``hessp``, second derivatives are the derivative of that gradient: autodiff of it when
    it is NumPy code, else its finite differences, as scipy's (the message then says so);
    ``result.hessian_source`` names the source. User functions get a copy of x, as in scipy.
    ``x0`` may be an array-like (a list of numbers is a
    vector, as in scipy; any shape is kept) or a pytree (dict, namedtuple, or list/tuple holding
    arrays): ``result.x`` and ``result.jac`` have its form, and so do ``jac``'s and ``hessp``'s
    arguments. ``tol`` sets ``gtol``. ``callback(xk)`` gets the iterate after each iteration, a
    callback whose one parameter is named ``intermediate_result`` the OptimizeResult (scipy's
    rule). Options: each method's own and scipy's names for its counterpart (those without effect
    here are listed in docs/coming-from/scipy.md), each checked before anything is evaluated;
    ``maxiter`` 0 or less makes no iteration; ``disp`` prints the iteration table and warns when
    the run fails (scipy's categories); ``return_all`` gives ``result.allvecs``; unknown options
    warn and are ignored, as in scipy. A start point where f or the gradient is not finite gives
    a failed result (status 3), not an exception. The result has scipy's fields plus ``history``, column-wise
    (``optimizers.History``): ``history["f"]``, ``["gnorm"]``, the cumulative ``["nfev"]``,
    ``["njev"]``, ``["nhev"]``, the method's own columns, and ``["x"]``, the iterates as flat
    vectors (a pytree x0 in ``ad.ravel`` order), unless ``options={"keep_iterates": False}``.
    ``options={"trace": False}`` turns off tracing: by default every derivative (gradients,
    Hessian-vector products, dense Hessians, Gauss-Newton products, the first-order methods'
    gradients) is a replayed program of ``autodiff.function(fun)``, with the same iterates as eager
    evaluation; a plain fun called again (the same fun; args of the same shapes, which are inputs
    of its programs when they are float arrays and numbers, else the same args objects) keeps its
    programs for its next calls, which replay them while fun records the same program at their x0
    (fun runs once more per call for that check: ``_derivatives.PlainTraces``); a ``fun`` that cannot be
    traced (say, it calls ``.numpy()``) runs eagerly, and ``result.untraced_reason`` says why.
    ``"newton"``, ``"trust-exact"`` and ``"dogleg"`` factor the Hessian's matrix: where they do
    not consider sparse Hessians (below 1,000 variables, or ``options={"sparse": False}``) each
    point's value, gradient and dense Hessian come from one program
    (``_derivatives.with_hessian_rows``); they factor sparse Hessians as sparse matrices: from
    1,000 variables on, when the pattern found in the recorded program at x0 is under 5%
    dense, each iterate's Hessian comes from ``autodiff.sparse_hessian`` (``options={"sparse":
    False}``: never; ``True``: at any size);
    ``result.sparse`` says whether it did and ``result.dense_reason`` why not, where it was
    asked for or considered (:mod:`optimizers.sparse`); the factorization, CHOLMOD's supernodal
    Cholesky or qdldl, is chosen from the pattern (``options={"factorization": "cholmod"}`` or
    ``"qdldl"`` to choose; :mod:`optimizers.supernodal`). ``"newton-cg"``, ``"trust-ncg"`` and
    ``"trust-krylov"`` precondition their Krylov solves from the sparse Hessian (algebraic
    multigrid from 50,000 variables on, its incomplete Cholesky factorization below;
    ``options={"preconditioner": "amg"}`` or ``"incomplete-cholesky"`` to choose) once a solve
    takes more than 100 products on 1,000 variables or more (``options={"precondition": False}``:
    never; ``True``: from the first iterate); ``result.preconditioned`` says whether they did,
    ``result.preconditioner`` with which, and ``result.precondition_reason`` when it started or
    why not (:mod:`optimizers.preconditioning`).

    Derivatives of the solution: inside a transform (``ad.grad``, ``jacobian``, ``hessian``,
    ``jvp``, ``vjp``), with ``fun`` reading a tracked Tensor (a closure's, or one of ``args``),
    ``result.x`` and ``result.fun`` are Tensors whose derivatives come from the implicit function
    theorem at the returned point (active bounds held fixed), to any order; a run that did not
    converge raises (:mod:`hessopt._implicit`). The second-order methods' results have
    ``hess_inv``, the inverse of the exact Hessian at x as a LinearOperator, made on first use
    (``.todense()``, ``.diagonal()``; :mod:`hessopt._covariance`).

    Models: when ``x0`` is a list of Variables (``model.trainable_variables``), ``fun(*args)`` takes
    no parameters and reads the Variables, as Keras' ``minimize(loss, var_list)``; at the end the
    Variables hold the solution (and, if the run raises, their initial values). ``"hessian-free"``
    takes ``options={"ggn": (predict, loss)}``: ``predict`` is called like ``fun`` (with the
    parameters, or with no argument for Variables) and returns predictions, ``loss`` maps them to
    a scalar with ``loss(predict(x)) == fun(x)``; CG then runs on generalized Gauss-Newton products
    (Martens 2010). ``"adam"`` and ``"gd"`` are first-order baselines.

    Bounds: ``bounds`` is a ``scipy.optimize.Bounds`` or a sequence of ``(lo, hi)`` pairs (None or
    an infinity for no bound), one per entry of x0 in its raveled order, or, for a pytree x0, a
    pytree of x0's structure with a pair per array; ``lo == hi`` fixes a variable. trust-ncg and
    trust-krylov (the default with bounds) become TRON, Lin & Moré's (1999) bound-constrained
    trust-region Newton method, trust-exact and dogleg the same on the dense Hessian, newton-cg
    and newton Bertsekas' (1982) projected Newton method, gd and adam projected updates; arc and
    hessian-free refuse bounds. ``fun`` is never evaluated outside the box (x0 outside it is
    clipped into it, and the message says so); success means the projected gradient passes the
    gradient test and the free variables show no negative curvature. The result has
    ``active_mask`` in the form of x0 (-1 at a lower bound, +1 at an upper one, 0 free, as
    scipy's ``least_squares``), and the history an ``active`` column, the bounds x is on.

    Constraints: scipy's dicts (``{"type": "eq" | "ineq", "fun", "jac", "args"}``, ineq meaning
    ``fun >= 0``), ``LinearConstraint`` and ``NonlinearConstraint``, alone or in a list, with or
    without bounds, run the primal-dual interior-point method (``method=None``,
    ``"interior-point"``, or scipy's ``"trust-constr"`` and ``"SLSQP"``, which run it too; see
    :mod:`hessopt._constrained`); the Jacobians and the Lagrangian's Hessian come from autodiff
    where not given. The result adds scipy trust-constr's ``v``, ``constr``,
    ``constr_violation``, ``optimality``, ``lagrangian_grad``; the other methods refuse
    constraints by name.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float`` (no parameters for Variables).
    x0 : array_like, pytree, or list of Variables
        The starting point.
    args : tuple, optional
        Extra arguments of fun, jac, hess and hessp.
    method : str, optional
        One of ``hessopt.METHODS`` (newton, newton-cg, trust-ncg, trust-krylov, trust-exact,
        dogleg, arc, hessian-free), or "adam", "gd", or "interior-point" ("trust-constr", "SLSQP");
        case-insensitive. Default (None) "newton-cg", "trust-ncg" with bounds, and
        "interior-point" with constraints.
    jac, hess, hessp : optional
        User derivatives, as in scipy; exact ones from autodiff where not given.
    bounds : scipy.optimize.Bounds, sequence of (lo, hi) pairs, or pytree of pairs, optional
        Bound constraints (see above).
    constraints : dict, LinearConstraint, NonlinearConstraint or a list of them, optional
        General constraints (see above); ``()`` or None: none.
    tol : float, optional
        Sets ``gtol``.
    callback : callable, optional
        ``callback(xk)`` or ``callback(intermediate_result)``.
    options : dict, optional
        ``maxiter``, ``gtol``, ``disp``, ``keep_iterates``, ``return_all`` and the method's own.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``njev``, ``nhev``, ``status``, ``success``,
        ``message``, ``history``, ``derivatives`` ("autodiff", "finite differences", "autodiff, then
        finite differences" when autodiff refused f after x0, or "jac"),
        for the second-order methods ``hessian_source``
        ("autodiff", "autodiff of the gradient", "finite differences of the gradient", "hess",
        "hessp", "quasi-Newton (BFGS updates)", ...), with bounds ``active_mask``, and as in scipy
        ``hess``, the user's ``hess`` at ``x``, from trust-ncg, trust-krylov, trust-exact and dogleg.

    Raises
    ------
    TypeError
        If fun is not callable, derivatives have the wrong type, or an option is of the wrong kind.
    ValueError
        For an unknown method, an option out of range, jac/hess/hessp with Variables, bad
        bounds (which entry, and why), bounds or constraints with a method that does not take
        them, or malformed constraints (which one, and why).

    Examples
    --------
    >>> import numpy as np
    >>> import autodiff as ad
    >>> import hessopt
    >>> rosenbrock = lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> result = hessopt.minimize(rosenbrock, [-1.2, 1.0], method="trust-ncg")
    >>> result.success, result.x.round(4)
    (True, array([1., 1.]))
    >>> hessopt.minimize(lambda p: np.sum((p["w"] - 1) ** 2) + p["b"] ** 2, {"w": np.zeros(2), "b": 3.0}).x
    {'w': array([1., 1.]), 'b': array(0.)}
    >>> w = ad.Variable([0.0, 0.0])                 # a model's parameters: a loss of no argument
    >>> _ = hessopt.minimize(lambda: np.sum((w - [1.0, 2.0]) ** 2), [w], method="newton")
    >>> w.numpy()
    array([1., 2.])

    Non-negative least squares: the first variable ends on its bound.

    >>> A, b = np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([-1.0, 1.0])
    >>> result = hessopt.minimize(lambda x: np.sum((A @ x - b) ** 2), [1.0, 1.0], bounds=[(0, None)] * 2)
    >>> result.x.round(6), result.active_mask
    (array([0., 1.]), array([-1,  0]))
    """
    differentiated = minimize_through_solution(minimize, dict(locals()))   # inside a transform
    if differentiated is not None:
        return differentiated
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    items = constraint_items(constraints)
    feasible = feasible_set(bounds, x0)
    constrained = constrained_method(method, bool(items))
    if constrained is not None:
        declaration, scipy_name = constrained
        return minimize_constrained(fun, x0, args, declaration, scipy_name, (jac, hess, hessp), feasible,
                                    bounds is not None, items, tol, callback, as_options(options))
    method, options, scipy_run = scipy_call(method, options)   # L-BFGS-B, TNC: hessopt's bounded method
    declaration = optimizers.REGISTRY.default(feasible) if method is None else method_declaration(method)
    if items:
        refuse_constraints(declaration)
    jac, hess, hessp = scipy_rosen_derivatives(fun, jac, hess, hessp)
    options, ggn, trace = _face_options(options, tol, declaration)
    eps = check_option("eps", options.pop("eps"), declaration.name) if "eps" in options else None
    call = normalize(x0, args, callback, options, declaration.function, declaration.name)
    start = call.x0
    call.x0, note = _placed(feasible, declaration, call.x0)
    if all_fixed(feasible):   # scipy's early return: nothing to optimize
        result = fixed_by_bounds(fun, call.x0, call.unravel, call.args)
        report_bounds(result, feasible.active_mask(call.x0), None, call.unravel)   # scipy's message as it is
        return call.finish(result, fields=("x",))
    dense = _dense_hessians(declaration, call, jac, hess, hessp)
    derivatives = fallback(_autodiff(fun, x0, call, jac, hess, hessp, ggn, trace, dense), jac, call, feasible, eps,
                           call.options.get("gtol"), second=(hess, hessp, declaration))
    hess = curvature(derivatives, hess, hessp, declaration)   # finite differences: BFGS in a trust region
    if scipy_run is not None:
        call.callback = scipy_run.watch(call.callback, evaluations(derivatives))
    flat = flat_derivatives(fun, jac, hess, hessp, call, derivatives, declaration, ggn=ggn is not None, trace=trace)
    structure = structured(flat, call, derivatives, declaration, feasible)
    result = _solve(declaration, feasible, derivatives, structure.flat, call, start)
    _report(result, hess, call, declaration, structure)
    if not (declaration.first_order or ggn is not None or callable(hess) or hessp is not None
            or structure.flat.gradient is not None or derivatives.name != "autodiff"):
        # the curvature is autodiff's Hessian of fun (not finite differences' approximation)
        attach_hess_inv(result, derivatives)
    _check_quasi_newton(result, structure.flat, derivatives, feasible, call, trace)
    _count_user_calls(result, structure.flat, derivatives)
    result.derivatives = derivatives.name if exact_derivatives(jac) else "jac"
    if scipy_run is not None:
        scipy_run.finish(result)
    if bounds is not None:
        report_bounds(result, result.get("active_mask", np.zeros(start.size, dtype=int)), note, call.unravel)
    return in_x0_precision(call.finish(result), x0, ("x", "jac"))


def _face_options(options, tol: float | None, declaration: Declaration) -> tuple[dict, tuple | None, bool]:
    """The options dict (a copy), with ``gtol`` from ``tol`` (the options' own wins), and the face's
    own options taken out of it: ``ggn`` (for the methods declared to take Gauss-Newton products)
    and ``trace``."""
    options = as_options(options)
    if tol is not None:
        check_option("gtol", tol, label="tol")
        options.setdefault("gtol", tol)
    ggn = ggn_option(options, declaration)
    trace = options.pop("trace", True)
    check_option("trace", trace)
    return options, ggn, trace


def _placed(feasible: FeasibleSet, declaration: Declaration, x0: np.ndarray) -> tuple[np.ndarray, str | None]:
    """x0 placed in the set (:meth:`~optimizers.feasible.FeasibleSet.start`) and its note, once the
    method is known to take the set; a method that takes no bounds refuses a box by name."""
    if not declaration.takes(feasible):
        takers = ", ".join(d.name for d in optimizers.REGISTRY.declarations() if d.takes(feasible))
        raise ValueError(f"method {declaration.name!r} does not take bounds; the methods that do: {takers}")
    return feasible.start(x0)


def _dense_hessians(declaration: Declaration, call: Call, jac, hess, hessp) -> bool:
    """Whether the run factors autodiff's dense Hessian at each point and asks for no products: a
    method that factors the matrix, where the sparse path is not considered, on autodiff's
    derivatives."""
    return (declaration.sparse and not considered(call.options.get("sparse"), call.x0.size)
            and exact_derivatives(jac) and exact_derivatives(hess) and hessp is None)


def _autodiff(fun: Callable, x0, call: Call, jac, hess, hessp, ggn: tuple | None,
              trace: bool, dense: bool = False) -> AutodiffDerivatives:
    """autodiff's derivatives of ``fun`` of x0's structure, or of the Variables x0 is a list of (then
    derivatives come from autodiff only); with ``ggn``, loss(predict(x0)) checked to be fun(x0);
    ``dense``: each point's operator made with its dense Hessian (a method that factors it, below
    the sparse path's size, on autodiff's Hessian)."""
    variables = variables_of(x0)
    if variables is None:
        derivatives = derivatives_of(fun, call.args, call.unravel, ggn, trace, call.x0, dense)
    elif exact_derivatives(jac) and exact_derivatives(hess) and hessp is None:
        derivatives = AutodiffDerivatives(lambda: scalar_value(fun(*call.args)), call.unravel, variables, ggn,
                                          trace)
    else:
        raise ValueError("with Variables as x0, derivatives come from autodiff: leave jac, hess and hessp unset")
    if ggn is not None:
        check_split(derivatives, call.x0)
    return derivatives


def _solve(declaration: Declaration, feasible: FeasibleSet, derivatives: AutodiffDerivatives, flat: Flat,
           call: Call, start: np.ndarray) -> OptimizeResult:
    """The declared method's run with the flat derivatives, in the set when it takes bounds (the
    Variables, if any, then hold its x; or ``start`` again if it raises)."""
    in_set = {"bounds": feasible} if declaration.bounds else {}
    return derivatives.solve(declaration.function, start, flat.fun, call.x0, flat.jac, hess=flat.hess,
                             hessp=flat.hessp, callback=call.callback, operator=flat.operator, **in_set,
                             **call.options)


def _report(result: OptimizeResult, hess, call: Call, declaration: Declaration, structure: Structure) -> None:
    """What the face adds to the optimizer's result: scipy's ``hess`` (the user's Hessian at x, for
    the methods whose scipy counterparts return it), the Hessian's source (:func:`_report_hessian`)
    and the sparse policy's reasons."""
    source = structure.flat.source
    if callable(hess) and declaration.returns_hess:
        user = source if isinstance(source, UserHessian) else UserHessian(hess, call.unravel, call.args,
                                                                         result.x.size)
        result.hess = user.at(result.x)
    if source is not None:
        _report_hessian(result, source)
    structure.report(result)


def _check_quasi_newton(result: OptimizeResult, flat: Flat, derivatives: AutodiffDerivatives,
                        feasible: FeasibleSet, call: Call, trace: bool) -> None:
    """A quasi-Newton run's success checked with true second derivatives (those of the user's
    gradient, or autodiff's) at its end (:func:`_check_curvature`), unless ``check_second_order``
    is off."""
    if isinstance(flat.source, QuasiNewton) and result.success and call.options.get("check_second_order", True):
        exact = derivatives.at if flat.gradient is None else GradientDerivative(flat.gradient, flat.last, trace=trace)
        _check_curvature(result, feasible, exact(result.x).matvec)


def _count_user_calls(result: OptimizeResult, flat: Flat, derivatives) -> None:
    """nfev and njev as the user's functions were called: every call of the user's gradient (the
    Hessian's recordings and differences too; with jac=True each is a call of fun), or autodiff's
    gradients plus those the Hessian sources asked for at other points; on finite differences,
    every call of f (those of a quasi-Newton run's final curvature check too)."""
    calls = getattr(derivatives, "calls", None)
    if calls is not None:
        result.nfev = calls
    if flat.counted is None:
        result.njev += flat.last.extra
    else:
        result.njev = flat.counted.calls
        if flat.jac is True:
            result.nfev = flat.counted.calls


def _check_curvature(result: OptimizeResult, feasible: FeasibleSet, matvec: Callable) -> None:
    """A quasi-Newton run's success, checked with true second derivatives (products ``matvec`` at
    its x) at its end: the strategy's matrix (positive definite for BFGS) cannot tell a saddle
    point from a minimum, the loop's own Krylov check in the set's curvature space (in a box, the
    free variables) can. Clearly negative curvature turns the result into status 5 (no false
    success)."""
    space = feasible.curvature_space(SimpleNamespace(x=result.x, matvec=matvec))
    estimate = None if space is None else krylov_curvature(space)
    if estimate is not None and clearly_negative(estimate[0], estimate[2]):
        result.update(status=Status.NOT_A_MINIMUM, success=False, message=(
            f"{MESSAGES[Status.NOT_A_MINIMUM]}: the gradient test passed, but the true Hessian has "
            f"curvature {estimate[0]:.1e} there, which the quasi-Newton matrix does not show."))


def _report_hessian(result: OptimizeResult, source) -> None:
    """``result.hessian_source``, a sentence in the message when the Hessian was approximated by
    finite differences, and nhev as the source counts it."""
    result.hessian_source = source.name
    if source.note is not None:
        note = source.note if source.note.endswith(".") else source.note + "."
        result.message += (" Second derivatives came from finite differences of the gradient (jac), "
                           f"which autodiff could not follow: {note}")
    if source.evaluations is not None:
        result.nhev = source.evaluations
