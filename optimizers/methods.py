"""What each method takes and gives, declared where it is defined, and the parameters every method
shares, read in one place.

A method is a function of a :class:`Problem` (f, its derivatives as given, x0 placed in the
feasible set), the :class:`~optimizers.loop.RunOptions` and its own keyword options, decorated with
:func:`declared`. The decorator

- attaches the method's :class:`Declaration` (what it takes: bounds, a Hessian it factors as a
  sparse matrix, a preconditioner for its Krylov solves, only the gradient, batches, Gauss-Newton
  products; what it gives: scipy's ``result.hess``; where it is scipy's default), which
  ``hessopt`` reads instead of keeping tables of its own;
- makes the public function, scipy's calling convention ``method(fun, x0, jac, hess=None,
  hessp=None, callback=None, *, operator=None, gtol=None, maxiter=None, disp=False,
  keep_iterates=True, [bounds=None,] **options)`` (with batches: ``batches`` instead of
  ``gtol``, and ``keep_iterates=False``), so the shared parameters are written once, here.

The registry (:class:`Registry`; ``optimizers.REGISTRY``) lists every method by its declaration:
adding a method is its module and one entry there. As optimistix builds a solver from named parts,
the declaration names what the method is made of, and the face never asks which method it runs.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import OptimizeResult

from .bounds import Box
from .feasible import UNCONSTRAINED, FeasibleSet, Unconstrained
from .loop import RunOptions, Step, run
from .objective import HessianOperator, Objective


@dataclass(frozen=True)
class Declaration:
    """What a method takes and gives.

    Attributes
    ----------
    name : str
        Its name (scipy's where scipy has the method): ``"trust-ncg"``.
    function : callable
        The method itself (set by :func:`declared`).
    bounds : bool
        It takes ``bounds`` (a :class:`~optimizers.bounds.Box` or a pair ``(lower, upper)``).
    sparse : bool
        It factors the Hessian's matrix, which it uses as a sparse one when it comes sparse (the
        option ``sparse``; :mod:`optimizers.sparse`).
    preconditioned : bool
        Its Krylov solves may be preconditioned with the sparse Hessian's incomplete factorization
        (the option ``precondition``; :mod:`optimizers.preconditioning`).
    first_order : bool
        It needs the gradient only (no curvature).
    batches : bool
        It runs on mini-batches (``fun(x, batch)``; :mod:`optimizers.stochastic`).
    gauss_newton : bool
        Its curvature may be generalized Gauss-Newton products (hessopt's ``ggn`` option).
    returns_hess : bool
        scipy's counterpart returns ``result.hess``, the user's Hessian at the solution.
    trust_region : bool
        A trust region bounds its steps: a quasi-Newton matrix's unscaled start (the identity)
        cannot throw its first step far (the face's default curvature on finite differences).
    constraints : bool
        It takes ``constraints``, general ones ``lower <= c(x) <= upper`` (a
        :class:`~optimizers.constraints.CanonicalConstraint`).
    default_in : tuple of FeasibleSet types
        The sets in which it is scipy's default method (Newton-CG unconstrained, TRON in a box).
    """
    name: str
    function: Callable = field(repr=False, compare=False)
    bounds: bool = False
    sparse: bool = False
    preconditioned: bool = False
    first_order: bool = False
    batches: bool = False
    gauss_newton: bool = False
    returns_hess: bool = False
    trust_region: bool = False
    constraints: bool = False
    default_in: tuple[type[FeasibleSet], ...] = ()

    def takes(self, feasible: FeasibleSet) -> bool:
        """Whether the method runs in ``feasible``: every method unconstrained, a box where it takes
        bounds."""
        return isinstance(feasible, (Unconstrained, Box) if self.bounds else Unconstrained)


@dataclass(frozen=True)
class Problem:
    """What a method minimizes: ``fun`` from ``x0`` with the gradient ``jac`` (or True: fun returns
    ``(f, g)``) and the curvature as given (``hess``, ``hessp`` or ``operator``), x0 placed in the
    ``feasible`` set (the set's ``note`` on that, None if x0 did not move), and for a stochastic
    method the ``batches``."""
    fun: Callable
    x0: np.ndarray
    jac: Callable | bool
    hess: Callable | None = None
    hessp: Callable | None = None
    operator: Callable[[np.ndarray], HessianOperator] | None = None
    feasible: FeasibleSet = UNCONSTRAINED
    note: str | None = None
    batches: object = None

    def objective(self, **options) -> Objective:
        """The counted :class:`~optimizers.objective.Objective` of f and its derivatives from x0."""
        return Objective(self.fun, self.x0, self.jac, self.hess, self.hessp, self.operator, **options)

    def run(self, objective: Objective, step: Step, options: RunOptions, *, probe: Callable | None = None,
            counts: Callable[[], dict] | None = None) -> OptimizeResult:
        """:func:`optimizers.loop.run` in this problem's feasible set, its note ending the message."""
        return run(objective, step, options, feasible=self.feasible, note=self.note, probe=probe, counts=counts)


def feasible_set(bounds: FeasibleSet | tuple | list | None) -> FeasibleSet:
    """A method's ``bounds`` argument as a :class:`~optimizers.feasible.FeasibleSet`: None is
    unconstrained; a set is itself; a pair ``(lower, upper)`` of arrays is a
    :class:`~optimizers.bounds.Box`.

    Raises
    ------
    TypeError
        For anything else.
    ValueError
        For bounds the box refuses (NaN, ``lower > upper``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.methods import feasible_set
    >>> feasible_set(None), feasible_set(([0.0, 0.0], [1.0, np.inf]))
    (Unconstrained(), Box(n=2, bounded=2, fixed=0))
    """
    if bounds is None:
        return UNCONSTRAINED
    if isinstance(bounds, FeasibleSet):
        return bounds
    if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        return Box(*bounds)
    raise TypeError(f"bounds must be a Box or a pair (lower, upper) of arrays, got {type(bounds).__name__}")


def _objective_parameters(fun: Callable, x0, jac: Callable | bool, hess: Callable | None = None,
                          hessp: Callable | None = None, callback: Callable | None = None, *,
                          operator: Callable[[np.ndarray], HessianOperator] | None = None,
                          gtol: float | None = None, maxiter: int | None = None, disp: bool = False,
                          keep_iterates: bool = True, bounds: FeasibleSet | tuple | None = None):
    """The parameters every method shares (``bounds`` only where declared)."""


def _batch_parameters(fun: Callable, x0, jac: Callable | bool, hess: None = None, hessp: Callable | None = None,
                      callback: Callable | None = None, *, batches, operator: Callable | None = None,
                      maxiter: int | None = None, disp: bool = False, keep_iterates: bool = False):
    """The parameters every stochastic method shares."""


_SHARED = {False: inspect.signature(_objective_parameters).parameters,
           True: inspect.signature(_batch_parameters).parameters}
_PROBLEM = ("fun", "x0", "jac", "hess", "hessp", "operator", "batches")
_RUN = ("gtol", "maxiter", "callback", "disp", "keep_iterates")


def declared(name: str, **takes) -> Callable[[Callable], Callable]:
    """Declare a method (see the module docstring): ``takes`` are the :class:`Declaration`'s
    fields. The decorated ``body(problem, options, **own)`` becomes the public method, whose
    signature is the shared parameters followed by ``body``'s keyword-only ones; it places x0 in
    the feasible set of ``bounds`` (:meth:`~optimizers.feasible.FeasibleSet.start`) before
    anything is evaluated.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.methods import declared
    >>> @declared("halving")
    ... def minimize_halving(problem, options, *, factor=0.5):
    ...     return problem.x0 * factor
    >>> minimize_halving(lambda x: x @ x, [2.0], lambda x: 2 * x, factor=0.25)
    array([0.5])
    >>> minimize_halving.declaration.name, minimize_halving.declaration.bounds
    ('halving', False)
    """
    def declare(body: Callable) -> Callable:
        shared = _SHARED[takes.get("batches", False)]
        own = [p for p in inspect.signature(body).parameters.values() if p.kind is p.KEYWORD_ONLY]
        signature = inspect.Signature([p for p in shared.values() if p.name != "bounds" or takes.get("bounds")]
                                      + own, return_annotation=OptimizeResult)

        @functools.wraps(body)
        def method(*args, **kwargs) -> OptimizeResult:
            try:
                arguments = signature.bind(*args, **kwargs)
            except TypeError as error:   # as Python words it, naming the method
                raise TypeError(f"{body.__name__}() {error}") from None
            arguments.apply_defaults()
            values = arguments.arguments
            return body(_problem(values), RunOptions(**{k: values.pop(k) for k in _RUN if k in values}),
                        **values)
        method.__signature__ = signature
        method.declaration = Declaration(name, method, **takes)
        return method
    return declare


def _problem(values: dict) -> Problem:
    """The Problem of a call's arguments (taken out of ``values``), x0 placed in the feasible set."""
    problem = {k: values.pop(k) for k in _PROBLEM if k in values}
    feasible = feasible_set(values.pop("bounds", None))
    x0, note = feasible.start(np.array(problem.pop("x0"), dtype=float))
    return Problem(x0=x0, feasible=feasible, note=note, **problem)


class Registry:
    """The methods by their declarations, in the order given; a name is unique among the methods
    with or without batches.

    Raises
    ------
    ValueError
        For two methods of one name and kind, or a function that is not :func:`declared`.

    Examples
    --------
    >>> import optimizers
    >>> from optimizers.bounds import Box
    >>> [d.name for d in optimizers.REGISTRY.declarations() if d.sparse]
    ['newton', 'trust-exact', 'dogleg', 'interior-point']
    >>> optimizers.REGISTRY.default(Box([0.0], [1.0])).name, optimizers.REGISTRY.get("arc").bounds
    ('trust-ncg', False)
    """

    def __init__(self, methods: Iterable[Callable]):
        self._declarations: dict[tuple[bool, str], Declaration] = {}
        for method in methods:
            declaration = getattr(method, "declaration", None)
            if not isinstance(declaration, Declaration):
                raise ValueError(f"{getattr(method, '__name__', method)!r} is not a declared method")
            key = (declaration.batches, declaration.name)
            if key in self._declarations:
                raise ValueError(f"two methods are named {declaration.name!r}")
            self._declarations[key] = declaration

    def declarations(self, *, batches: bool = False) -> list[Declaration]:
        """The declarations of the methods with (or without) batches, in order."""
        return [d for (b, _), d in self._declarations.items() if b == batches]

    def get(self, name: str, *, batches: bool = False) -> Declaration | None:
        """The declaration of ``name`` (None: no such method)."""
        return self._declarations.get((batches, name))

    def default(self, feasible: FeasibleSet) -> Declaration:
        """scipy's default method in ``feasible`` (Newton-CG unconstrained, TRON's in a box)."""
        return next(d for d in self.declarations() if isinstance(feasible, d.default_in))
