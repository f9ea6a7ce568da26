"""``minimize`` with general constraints: scipy's forms in, hessopt's interior-point method
(:func:`optimizers.minimize_ipm`) run on them, scipy trust-constr's result out.

The method is chosen by :func:`constrained_method`: ``method=None`` with constraints, or
``"interior-point"`` (``"ipm"``), or scipy's constrained names ``"trust-constr"`` and ``"SLSQP"``,
which run the same method (the result's message says so). Their common options map (maxiter;
gtol, SLSQP's ftol and ``tol`` to the KKT tolerance; disp, trust-constr's verbose and SLSQP's
iprint from 2 on to disp); their other options have no counterpart and are refused by name. For
``"trust-constr"``, whose gtol bounds the Lagrangian gradient's largest entry and the violation in
the user's units, success also needs both at most gtol (IPOPT's ``dual_inf_tol`` and
``constr_viol_tol``, 1 and 1e-4 otherwise): its status 1 promises ``optimality < gtol``. A
method for unconstrained or bound-constrained problems refuses constraints.

Derivatives (:mod:`hessopt._constraints`): f's gradient from autodiff (or the user's jac); with f's
curvature from autodiff, the method gets the whole Lagrangian's Hessian as one autodiff program
(``lagrangian_hess``); with the user's hess or hessp for f, it gets f's Hessian from those and the
constraints' from autodiff. From 100 variables on (or 1,000 on the KKT system's side), Jacobians
and Hessians come sparse, with their patterns found in the program; from 1,000 on the KKT side the
KKT matrix is factored by the sparse LDL^T. A constraint whose fun autodiff cannot follow gets
finite differences (the message says so); so does an f autodiff cannot follow at x0 when the call
gives no jac, with ``minimize``'s warning (:func:`_objective_derivatives`; ``result.derivatives``
says which).

The result is scipy trust-constr's (``v``, ``constr``, ``constr_violation``, ``optimality``,
``lagrangian_grad``, ``grad``, the counts) with ``jac`` the gradient as for every other method;
for ``method="trust-constr"`` the status codes are trust-constr's own (1 converged, 0 maxiter, 3
callback), for the other names scipy's common ones (0 success).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

import optimizers
from optimizers.feasible import FeasibleSet
from optimizers.interior_point import DEFAULT_TOL, interior_start
from optimizers.methods import Declaration
from optimizers.objective import Status

from ._arguments import check_option, exact_derivatives, normalize, scalar_value
from ._bounds import report_bounds
from ._constraints import (
    LagrangianCurvature,
    canonical_constraint,
    differentiable,
    parse_constraints,
    sparse_derivatives,
)
from ._derivatives import AutodiffDerivatives, Named, flat_derivatives, variables_of
from ._finite_differences import (
    FiniteDifferences,
    LaterRefusal,
    box_bounds,
    engine_refusal,
    fallback,
    finite_differences,
)

#: hessopt's names of its constrained method, and scipy's names that run it
OWN_NAMES = ("interior-point", "ipm")
SCIPY_NAMES = {"trust-constr": "trust-constr", "slsqp": "SLSQP"}
#: scipy's options of those methods that map onto the interior point's (option -> (name, how))
_MAPPED = {
    "trust-constr": {"verbose": ("disp", lambda v: v >= 2)},
    "slsqp": {"ftol": ("gtol", float), "iprint": ("disp", lambda v: v >= 2)},
}
#: scipy's options of those methods that have no counterpart here: refused by name
_REFUSED = {
    "trust-constr": ("xtol", "barrier_tol", "sparse_jacobian", "initial_tr_radius", "initial_constr_penalty",
                     "initial_barrier_parameter", "initial_barrier_tolerance", "factorization_method",
                     "finite_diff_rel_step"),
    "slsqp": ("eps", "finite_diff_rel_step", "workers"),
}
#: trust-constr's status codes where they differ from every other method's (scipy's convention)
_TRUST_CONSTR_STATUS = {Status.SUCCESS: 1, Status.MAXITER: 0, Status.CALLBACK_STOP: 3}
#: what the face passes to the method itself, never through options
_FACE_ONLY = ("constraints", "lagrangian_hess")


def constrained_declaration() -> Declaration:
    """The declaration of the method that takes general constraints."""
    return next(d for d in optimizers.REGISTRY.declarations() if d.constraints)


def constrained_method(method: str | None, constrained: bool) -> tuple[Declaration, str | None] | None:
    """(the constrained method's declaration, scipy's name asked for or None) when ``method``
    names it (or is None with constraints); None when it names another method (which then must
    take no constraints: see :func:`refuse_constraints`)."""
    name = method.lower() if isinstance(method, str) else method
    if (name is None and constrained) or name in OWN_NAMES:
        return constrained_declaration(), None
    if name in SCIPY_NAMES:
        return constrained_declaration(), SCIPY_NAMES[name]
    return None


def refuse_constraints(declaration: Declaration) -> None:
    """A method without general constraints, given some: a ValueError that says which take them."""
    raise ValueError(f"method {declaration.name!r} takes no general constraints (it takes bounds= "
                     f"{'too' if declaration.bounds else 'neither'}); with constraints= use method=None or "
                     f"{OWN_NAMES[0]!r} (scipy's 'trust-constr' and 'SLSQP' run it too)")


def constrained_options(options: dict, tol: float | None, scipy_name: str | None) -> tuple[dict, bool]:
    """The options for the interior point (a copy), scipy's names of ``scipy_name`` mapped
    (see the module docstring), ``tol`` as gtol, and the face's ``trace`` taken out.

    Raises
    ------
    ValueError
        For scipy's options without counterpart, and for what minimize takes as an argument.
    """
    options = dict(options)
    key = None if scipy_name is None else scipy_name.lower()
    for name in _REFUSED.get(key, ()):
        if name in options:
            raise ValueError(f"options[{name!r}] of {scipy_name!r} has no counterpart in hessopt's interior-point "
                             f"method, which runs for {scipy_name!r} here (its options: maxiter, gtol, disp, "
                             "sparse, mu_init, mu_strategy, dual_inf_tol, constr_viol_tol)")
    for name, (target, convert) in _MAPPED.get(key, {}).items():
        if name in options:
            options.setdefault(target, convert(check_option(name, options.pop(name))))
    for name in _FACE_ONLY:
        if name in options:
            raise ValueError(f"options[{name!r}]: pass {name} to minimize, not in options")
    if tol is not None:
        check_option("gtol", tol, label="tol")
        options.setdefault("gtol", tol)
    if key == "trust-constr":   # its gtol bounds the Lagrangian gradient and the violation, unscaled
        gtol = check_option("gtol", options.get("gtol", DEFAULT_TOL))
        options.setdefault("dual_inf_tol", gtol)
        options.setdefault("constr_viol_tol", gtol)
    trace = options.pop("trace", True)
    check_option("trace", trace)
    return options, trace


def minimize_constrained(fun: Callable, x0, args, declaration: Declaration, scipy_name: str | None,
                         derivatives_given: tuple, feasible: FeasibleSet, bounded: bool, items: list,
                         tol: float | None, callback: Callable | None, options) -> OptimizeResult:
    """``minimize`` with the constrained method (see the module docstring); ``derivatives_given``
    is the user's ``(jac, hess, hessp)``, ``items`` scipy's constraints as a list.

    A function autodiff follows at x0 but refuses at a later point of the run (a branch taken only
    there: ``if x[0] > 2: return float(x[0]) ** 2``) is watched (:class:`_Watch`): the run restarts
    from x0 with finite differences of that function (f's or a constraint's, as at x0), with an
    ``OptimizeWarning`` naming the operation and the line, and the message saying so (as the
    differences' reason: the derivatives' note, or the constraint's). The
    unconstrained path switches in place (:class:`~hessopt._finite_differences.Switching`); here
    f's curvature is part of the Lagrangian's one program, which cannot be split mid-run."""
    options, trace = constrained_options(options, tol, scipy_name)
    call = normalize(x0, args, callback, options, declaration.function, declaration.name)
    if variables_of(x0) is not None:
        raise ValueError("constraints with a list of Variables as x0 are not supported: pass x0 as an array or "
                         "a pytree and fun of it")
    watch = _Watch()
    while True:
        try:
            result = _solve(fun, call, declaration, scipy_name, derivatives_given, feasible, items, trace, watch)
            break
        except (TypeError, ValueError) as error:
            refusal = watch.refused
            if refusal is None or engine_refusal(error) is None:
                raise
            watch.restart()
            refusal.warn(f"The run restarts from x0 with finite differences of {refusal.label}", stacklevel=3)
    if bounded:
        report_bounds(result, result.get("active_mask", np.zeros(call.x0.size, dtype=int)), None, call.unravel)
    return call.finish(result)


def _solve(fun: Callable, call, declaration: Declaration, scipy_name: str | None, derivatives_given: tuple,
           feasible: FeasibleSet, items: list, trace: bool, watch: _Watch) -> OptimizeResult:
    """One run of the interior point (:func:`minimize_constrained`), with finite differences for
    the functions ``watch`` says autodiff refused in an earlier run."""
    jac, hess, hessp = derivatives_given
    derivatives = _objective_derivatives(
        AutodiffDerivatives(watch.guard("fun", lambda tree: scalar_value(fun(tree, *call.args))), call.unravel,
                            trace=trace),
        jac, call, feasible, (hess, hessp, declaration), watch.differenced.get("fun"))
    differenced = isinstance(derivatives, FiniteDifferences)
    flat = flat_derivatives(fun, jac, hess, hessp, call, derivatives, declaration, ggn=False, trace=trace)
    groups = [g if g.fun is None else g._replace(fun=watch.guard(g.label, g.fun))
              for g in parse_constraints(items, call.x0, call.unravel)]
    groups = differentiable(groups, call.x0, *box_bounds(feasible, call.x0.size), refused=watch.differenced)
    sparse = sparse_derivatives(groups, call.x0.size, call.options.get("sparse"))
    # f's curvature is autodiff's: in the Lagrangian
    own_curvature = not differenced and flat.operator == derivatives.at
    objective = (lambda x: derivatives.f(call.unravel(x))) if own_curvature else None
    curvature = LagrangianCurvature(groups, objective, call.x0.size, sparse=sparse, trace=trace)
    constraint = canonical_constraint(groups, sparse=sparse, trace=trace,
                                      curvature=None if own_curvature else curvature)
    if own_curvature:   # f and its gradient alone (no recording per iterate); curvature in the Lagrangian
        fun_, jac_ = derivatives.fun, (lambda x: derivatives.value_and_grad(x)[1])
        second = {"lagrangian_hess": curvature}
    else:
        fun_, jac_ = flat.fun, flat.jac
        second = {"hess": flat.hess, "hessp": flat.hessp, "operator": flat.operator}
    watch.armed = True   # x0's probes are behind: a refusal from here on is one the run met
    result = derivatives.solve(declaration.function, call.x0, fun_, call.x0, jac_, callback=call.callback,
                               bounds=feasible, constraints=constraint, **second, **call.options)
    watch.armed = False
    _report(result, flat, own_curvature, scipy_name)
    result.derivatives = derivatives.name if exact_derivatives(jac) else "jac"
    if differenced:   # every call of f, the differences' too
        result.nfev = derivatives.calls
    for note in (g.note for g in groups if g.note is not None):
        result.message = f"{result.message} {note}."
    if own_curvature:   # the constraints' curvature was part of the Lagrangian's: counted there
        result.constr_nhev = curvature.evaluations
    return result


class _Watch:
    """Which of the user's functions (f, labelled ``"fun"``, or a constraint group, by its label)
    autodiff refused during a run (``refused``, a :class:`~hessopt._finite_differences.LaterRefusal`),
    once ``armed`` (after x0's probes, whose refusals the fallbacks at x0 take); ``differenced``:
    those refused in earlier runs, to be differenced from x0 (:func:`minimize_constrained`)."""

    def __init__(self):
        self.armed, self.refused, self.differenced = False, None, {}

    def guard(self, label: str, function: Callable) -> Callable:
        """``function``, noting an engine refusal it raises while armed (and raising it on)."""
        def guarded(*args):
            try:
                return function(*args)
            except (TypeError, ValueError) as error:
                refusal = LaterRefusal.of(error, label) if self.armed else None
                if refusal is not None:
                    self.refused = refusal
                raise
        return guarded

    def restart(self) -> None:
        """The refused function differenced from the next run on."""
        label, site = self.refused
        if label in self.differenced:   # differenced already: the refusal is not autodiff's to avoid
            raise RuntimeError(f"autodiff refused {label} on finite differences: {site}")
        self.differenced[label] = f"at a point of the run, not at x0: {site}; the run restarted from x0"
        self.refused, self.armed = None, False


def _objective_derivatives(derivatives: AutodiffDerivatives, jac, call, feasible: FeasibleSet, second: tuple,
                           refused: str | None = None):
    """autodiff's derivatives of f, or, when autodiff cannot follow f at x0 and the call gives no
    gradient, :class:`~hessopt._finite_differences.FiniteDifferences` of it in the box with
    ``minimize``'s warning (:func:`~hessopt._finite_differences.fallback`). The gradient is central
    differences unless the call asks for ``"2-point"``: the interior point's KKT test has no
    gradient test for fallback's switch to central ones to watch, and forward differences' error,
    about ``sqrt(eps)`` times the curvature, is the size of its default tolerance. The Hessian is
    second differences of f (:class:`~hessopt._finite_differences.DifferencedPoint`). An f autodiff
    follows at x0 keeps autodiff's derivatives: its curvature belongs in the Lagrangian's program.
    "x0" is the interior point's first iterate, x0 pushed strictly inside the bounds. ``refused``:
    where autodiff refused f in an earlier run (:class:`_Watch`): f is then differenced from x0."""
    scheme = "3-point" if jac is None or jac is False else jac
    lower, upper = box_bounds(feasible, call.x0.size)
    start = dataclasses.replace(call, x0=interior_start(call.x0, lower, upper))   # f is never called outside
    if refused is not None and exact_derivatives(jac):
        return finite_differences(derivatives, start, feasible, scheme, None, call.options.get("gtol"), refused, None)
    differences = fallback(derivatives, scheme, start, feasible, None, call.options.get("gtol"), second=second,
                           stacklevel=6)   # fallback, this, _solve, minimize_constrained, minimize, the user
    return differences if isinstance(differences, FiniteDifferences) else derivatives


def _report(result: OptimizeResult, flat, own_curvature: bool, scipy_name: str | None) -> None:
    """What the face adds: scipy trust-constr's ``grad`` and ``method``, the Hessian's source, the
    user's calls counted, and the message saying which method ran for scipy's name."""
    result.grad, result.niter = result.jac, result.nit    # trust-constr's names too
    result.method = "interior-point"
    result.hessian_source = "autodiff (the Lagrangian's)" if own_curvature else \
        (flat.source.name if isinstance(flat.source, Named) else getattr(flat.source, "name", "hess"))
    if flat.counted is not None:
        result.njev = flat.counted.calls
        if flat.jac is True:
            result.nfev = flat.counted.calls
    if scipy_name is not None:
        result.message = f"{result.message} (method={scipy_name!r} ran hessopt's interior-point method)"
    if scipy_name == "trust-constr":   # its own codes: 1 converged (gtol), 0 maxiter, 3 callback
        result.status = _TRUST_CONSTR_STATUS.get(result.status, int(result.status))
