"""Derivatives for the optimizers from autodiff, or from what the user gave.

:class:`AutodiffDerivatives` gives f, gradients, Hessian-vector products and Hessians of ``fun`` on
flat float vectors: each iterate records its gradient once (``autodiff.hessian_operator``), every
product at that iterate is one sweep of the cached recording, and by default the objective is
traced once (``autodiff.function``) and replayed. :func:`first_derivatives` and
:func:`second_derivatives` choose, in scipy's order of precedence, between the user's ``jac``,
``hess`` (a matrix, or a ``HessianUpdateStrategy``) and ``hessp`` and autodiff's.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
from scipy.optimize import HessianUpdateStrategy, OptimizeResult

import autodiff as ad
import optimizers
from autodiff.core import state
from autodiff.jit import LeastRecentlyUsed, content_key, unchanged
from autodiff.jit.signature import signature
from autodiff.transforms import cached_hvp, transformed
from optimizers.methods import Declaration
from optimizers.objective import same_point

from ._arguments import (
    FINITE_DIFFERENCES,
    Call,
    PointDerivatives,
    UserHessian,
    exact_derivatives,
    gradient_vector,
    plain_value,
    scalar_value,
    value_and_gradient,
)
from ._hessians import GradientDerivative, LastGradient, QuasiNewton


class AutodiffDerivatives(PointDerivatives):
    """f, gradient, HVPs and Hessians of ``f`` on flat float vectors, from autodiff.

    The Hessian operator of the last point asked for is kept: its value and gradient were computed
    once, and each product is one sweep of its recording. Plain values at other points (line-search
    and trust-region trial points) are one NumPy evaluation with no tape.

    With ``variables`` (a list of Variables), ``f`` takes no argument and reads them: each point is
    assigned to the Variables before ``f`` runs. With ``ggn=(predict, loss)`` the operator is the
    generalized Gauss-Newton one of loss(predict(...)), ``predict`` called like ``f``. With
    ``trace`` every derivative (gradients, products, dense Hessians, Gauss-Newton products) is a
    replayed program of ``autodiff.function`` (f eagerly where it cannot be traced:
    ``untraced_reason`` then says why); plain values are NumPy calls of f either way. ``shared``
    holds the autodiff.functions of earlier runs of the same f (minimize_many's runs in one
    process, or earlier calls with an ``autodiff.function``: :func:`derivatives_of`), by role:
    they are replayed instead of traced again, and those made here are added; ``native`` compiles
    them (numba, the compiled extra) as ``autodiff.function(..., native=True)`` does. With
    ``with_args=(g, args)`` (f is ``x -> g(x, *args)``), the traced objective is g and args are
    inputs of its programs (their float arrays read at each call, as jax.jit reads its
    arguments), not constants of a closure. With ``dense`` (a method that factors each point's
    dense Hessian and asks for no products), each point's operator comes with its dense Hessian,
    made with its value and gradient by one function (:func:`with_hessian_rows`: one trace and one
    program where the operator's pair and its matrix's batch would be two).
    ``name`` is where the derivatives come from (``result.derivatives``).
    """

    name = "autodiff"
    _shared: dict | None = None     # (class defaults: subclasses that build lazily share nothing, replay NumPy)
    _native = False
    #: evaluations of f so far: recordings at new points, plain values elsewhere, values with gradients
    evaluations = 0

    def __init__(self, f: Callable, unravel: Callable | None = None, variables: list | None = None,
                 ggn: tuple[Callable, Callable] | None = None, trace: bool = False, shared: dict | None = None,
                 native: bool = False, with_args: tuple[Callable, tuple] | None = None, dense: bool = False):
        self.f = f                      # a function of the structure unravel(x) (or of x itself)
        self.unravel = unravel or (lambda x: x)
        self.variables = variables
        self._traced: list = []         # the autodiff.functions made here (untraced_reason)
        self._shared = shared
        self._native = native
        self._args = () if with_args is None else with_args[1]
        objective = (self._replayed(f, trace, "objective") if with_args is None else
                     self._replayed(with_args[0], trace, "objective of (x, *args)"))
        self._with_hessian = None
        if ggn is None:
            self._operator_at = lambda point: ad.hessian_operator(objective, point, args=self._args)
            if dense and variables is None:
                self._with_hessian = transformed(with_hessian_rows, objective)
                self._identity = np.eye(0)
        else:
            predict, loss = self._replayed(ggn[0], trace, "predict"), ggn[1]
            self._operator_at = lambda point: ad.ggn_operator(predict, loss, point)
        # first-order methods: the value and gradient alone, of f of the point (the Variables' values)
        self._value_and_grad = ad.value_and_grad(objective if variables is None else
                                                 self._replayed(lambda _: f(), trace, "variables"))
        self._x = None
        self._operator = None

    def _replayed(self, g: Callable, trace: bool, role: str) -> Callable:
        """``autodiff.function(g)`` when tracing (eagerly where it cannot be traced), else g; the
        shared one of this role, if there is one."""
        if not trace:
            return g
        traced = None if self._shared is None else self._shared.get(role)
        if traced is None:
            traced = ad.function(g, eager_fallback=True, native=self._native)
            if self._shared is not None:
                self._shared[role] = traced
        self._traced.append(traced)
        return traced

    def point(self, x: np.ndarray):
        """What ``f`` and the operators take at x: the structure ``unravel(x)``, or the Variables
        holding x."""
        if self.variables is None:
            return self.unravel(x)
        for variable, value in zip(self.variables, ad.tree.flatten(self.unravel(x))[0]):
            variable.assign(value)
        return self.variables

    @property
    def untraced_reason(self) -> str | None:
        """Why the objective runs eagerly (None: traced, or tracing off)."""
        return next((t.fallback_reason for t in self._traced if t.fallback_reason is not None), None)

    def call(self, x: np.ndarray):
        point = self.point(x)
        return self.f() if self.variables is not None else self.f(point)

    def at(self, x: np.ndarray) -> ad.HessianOperator:
        if not same_point(x, self._x):
            self.evaluations += 1
            self._x = self._operator = None   # the old recording goes before the new one is made
            operator = self._operator_at(self.point(x)) if self._with_hessian is None else self._with_matrix(x)
            operator.value  # noqa: B018  f runs here, not at a deferred operator's first read: a refusal is at(x)'s
            self._operator, self._x = operator, np.array(x, copy=True)
        return self._operator

    def _with_matrix(self, x: np.ndarray) -> HessianWithMatrix:
        """The operator of x made with its dense Hessian (``dense``)."""
        if self._identity.shape[0] != x.size:
            self._identity = np.eye(x.size, dtype=x.dtype)
        point = self.point(x)
        return HessianWithMatrix(*self._with_hessian(point, self._identity, *self._args), point, self._operator_at)

    def fun(self, x: np.ndarray) -> float:
        if same_point(x, self._x):
            return self._operator.value
        self.evaluations += 1
        return np.asarray(plain_value(self.call(x)))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """f(x) and its gradient, with no recording kept (first-order methods)."""
        self.evaluations += 1
        value, gradient = self._value_and_grad(self.point(x), *self._args)
        return np.asarray(plain_value(value)), flat_gradient(gradient)

    def solve(self, solver: Callable, x0: np.ndarray, *args, **kwargs) -> OptimizeResult:
        """``solver(*args, **kwargs)``; the Variables, if any, then hold its ``x`` (or x0 again if
        it raises), and ``untraced_reason`` says why the objective ran eagerly, if it did."""
        try:
            result = solver(*args, **kwargs)
        except BaseException:
            if self.variables is not None:
                self.point(x0)
            raise
        if self.variables is not None:
            self.point(result.x)
        if self.untraced_reason is not None:
            result.untraced_reason = self.untraced_reason
        return result


def with_hessian_rows(f: Callable) -> Callable:
    """``(x, V, *args) -> (f(x, *args), its flat gradient, the rows H v of the rows v of V)``: what a
    Hessian operator of x computes, and its ``matmat`` of V's transpose in one batched sweep
    (:func:`autodiff.transforms.cached_hvp`), as one function: the same sweeps, in one trace."""
    def value_gradient_rows(x, V, *args):
        (value, gradient), product = cached_hvp((lambda point: f(point, *args)) if args else f, x)
        return value, gradient, product(V)
    return value_gradient_rows


class HessianWithMatrix(ad.HessianOperator):
    """A point's Hessian operator made with its dense matrix (``rows``, from :func:`with_hessian_rows`
    with V the identity), for the methods that factor the matrix: ``to_dense`` is the matrix;
    products, which those methods do not ask (a covariance might), come from the point's own
    operator (``operator_at(point)``), made on first use."""

    def __init__(self, value, gradient, rows: np.ndarray, point, operator_at: Callable):
        self._rows, self._operator_at, self._operator = rows, operator_at, None
        super().__init__(value, gradient, self._products, None, point)

    def _products(self, V: np.ndarray) -> np.ndarray:
        if self._operator is None:
            self._operator = self._operator_at(self.x)
        return self._operator.product(V)

    def to_dense(self) -> np.ndarray:
        return self._rows.T   # (matmat's: the products with the identity's rows, as columns)


class SharedTraces(threading.local):
    """The autodiff.functions of one ``fun`` and ``args`` that every ``minimize`` call with them,
    in this thread, replays instead of tracing fun again (``AutodiffDerivatives``' ``shared``):
    minimize_many's runs made here. Set for the runs' duration (``with SHARED_TRACES.of(...)``);
    a call of any other fun or args (an objective that itself calls minimize) traces its own.
    ``batch`` holds them by thread: a thread's first run finds them as a ``minimize`` alone would
    (``derivatives_of``: an ``autodiff.function``'s own, those a plain fun's earlier calls kept, or
    new ones), and its next runs share them."""

    fun: Callable | None = None
    args: tuple | None = None
    batch: dict | None = None

    @contextmanager
    def of(self, fun: Callable, args: tuple, batch: dict):
        kept = self.fun, self.args, self.batch
        self.fun, self.args, self.batch = fun, args, batch
        try:
            yield
        finally:
            self.fun, self.args, self.batch = kept

    def batch_of(self, fun: Callable, args: tuple) -> dict | None:
        """The traces by thread of the batch ``minimize(fun, x0, args)`` runs in, if any: one of the
        same ``fun`` and the same ``args`` (each argument the same object)."""
        if fun is not self.fun or self.args is None or len(args) != len(self.args):
            return None
        return self.batch if all(a is b for a, b in zip(args, self.args)) else None


SHARED_TRACES = SharedTraces()


class PlainTraces:
    """The programs ``minimize`` derived for a plain fun, kept for its next calls.

    A scipy user calls ``minimize(f, x0)`` again and again with the same f, often with new data in
    ``args``, and tracing f at each call costs more than a small solve. So from the second call of
    a fun with the same args, x0's signature and thread on, each call records f once at x0, with
    no derivative (``autodiff.jit.trace``), before anything else; when that recording is the same
    program as the one kept (``autodiff.jit.content``: the same ops on constants of the same bytes,
    no branch, and the kept constants unchanged since), the call replays the kept programs, else
    it traces its own and they are kept in their place. Args that can be inputs of programs
    (``inputs``: float arrays and numbers) are inputs of them and of the recording, as an
    ``autodiff.function``'s args are: "the same args" are args of the same signature (shapes,
    dtypes, numbers by value), and new data replays. Other args are the same objects (their ids).
    A global or a closure's array that changed, a branch or a Variable in f: the call traces its
    own, as it would without this. A first call only notes fun's id and args' (signature or ids),
    holding neither: a fun used once is neither kept alive nor called more often than before, and
    an entry of a fun gone (a note, or programs that did not keep it alive: a run that made none)
    is not one of a new fun at its address (a bound method, a new object at each access, is such a
    new fun at each call). These only find the kept programs; whether a call replays them is decided
    by the recording's content. A fun whose recording has no content key (a branch, a Variable, a
    rule of the user's) or that cannot be recorded is not recorded again for it. Kept for points of
    at most ``MAX_SIZE`` elements (small problems, where the trace's cost counts), for the ``size``
    slots used last.
    """

    MAX_SIZE = 10_000

    def __init__(self, size: int = 16):
        # slot -> (a weak reference to its function, or None; "seen", "never" or (content, its
        # constants, the programs)): the reference tells a function gone from a new one at its id
        self._kept = LeastRecentlyUsed(size)
        self._lock = threading.Lock()

    def of(self, fun: Callable, args: tuple, point, as_inputs: bool = False) -> dict | None:
        """The programs (AutodiffDerivatives' ``shared``) for ``fun(point, *args)``: those kept, when
        they are the same program, else new ones, kept from now on; None when not kept.
        ``as_inputs``: args are inputs of the programs (``derivatives_of``'s ``with_args``)."""
        if state.tapes or state.accumulators or state.observers:   # inside a transform: f runs as it is
            return None
        try:
            key, leaves, _, _ = signature((point,))
            held = signature(args)[0] if as_inputs else tuple(map(id, args))
        except Exception:   # noqa: BLE001  (an unhashable static leaf: the run itself meets it)
            return None
        if sum(leaf.size for leaf in leaves) > self.MAX_SIZE:
            return None
        slot, weak = (id(fun), held, key, threading.get_ident()), _weak(fun)
        with self._lock:
            kept = self._kept.get(slot)
            if kept is not None and kept[0] is not None and kept[0]() is not fun:
                kept = None   # the entry of a function gone, whose id this one now has
            if kept is None or kept[1] == "never":
                self._kept.put(slot, kept or (weak, "seen"))   # recorded from its next call on
                return None
        try:
            with np.errstate(all="ignore"):   # (the run itself warns)
                found = content_key(ad.jit.trace(fun, point, *args) if as_inputs else
                                    ad.jit.trace(lambda tree: fun(tree, *args), point))
        except Exception:   # noqa: BLE001  (f's own error, or an untraceable f: the run itself meets it)
            found = None
        if found is None:
            with self._lock:
                self._kept.put(slot, (weak, "never"))
            return None
        content, constants = found
        with self._lock:
            kept = self._kept.get(slot)
            if kept is None or isinstance(kept[1], str) or kept[1][0] != content or not unchanged(kept[1][1]):
                kept = (weak, (content, constants, {}))
                self._kept.put(slot, kept)
        return kept[1][2]


PLAIN_TRACES = PlainTraces()


def _weak(fun: Callable) -> weakref.ref | None:
    """A weak reference to ``fun``, or None for a callable that takes none (its entries are then
    taken at their id's word)."""
    try:
        return weakref.ref(fun)
    except TypeError:
        return None


def derivatives_of(fun: Callable, args: tuple, unravel: Callable, ggn: tuple | None,
                   trace: bool, x0: np.ndarray | None = None, dense: bool = False) -> AutodiffDerivatives:
    """autodiff's derivatives of ``x -> fun(unravel(x), *args)``. An ``autodiff.function`` fun was
    made once to be replayed (as a function given to jax.jit is compiled once): its derived
    programs are kept with it, by thread, and args are inputs of them (``inputs``); its
    ``native`` holds for them. A plain fun's programs are kept for its next calls at points like
    ``x0`` while it computes the same program (``PlainTraces``), with args as their inputs too
    (when traced): scipy's loop of fits, ``minimize(f, x0, args=(t, y))`` with a new y each time."""
    made_once = isinstance(fun, ad.Function)
    replayed = ggn is None and (inputs(args) if made_once else trace and bool(args) and inputs(args, flat=True))
    batch, thread = SHARED_TRACES.batch_of(fun, args), threading.get_ident()
    shared = None if batch is None else batch.get(thread)
    if shared is None and replayed and made_once:
        shared = fun.memo.setdefault(SharedTraces, {}).setdefault(thread, {})   # dies with fun
    elif shared is None and trace and ggn is None and x0 is not None and not made_once:
        shared = PLAIN_TRACES.of(fun, args, unravel(x0), as_inputs=replayed)
    if batch is not None:   # the batch's next runs in this thread share them
        shared = batch.setdefault(thread, {} if shared is None else shared)
    return AutodiffDerivatives(lambda tree: scalar_value(fun(tree, *args)), unravel, ggn=ggn, trace=trace,
                               shared=shared, native=made_once and fun.native,
                               with_args=(lambda tree, *more: scalar_value(fun(tree, *more)), args)
                               if replayed else None, dense=dense)


def inputs(args: tuple, flat: bool = False) -> bool:
    """Whether ``args`` can be arguments of replayed programs: every leaf a float array (an input,
    read at each call) or a number, string, bool or None (static, compared by value). Others (a
    Tensor, an object of the user's) stay in a closure of the objective, traced at each call.
    ``flat``: each argument itself such a leaf (a plain fun's args, as scipy's ``args=(t, y)``: a
    list or dict is passed as it is, since a plain f may write into it; a replay would pass a copy)."""
    return all(_leaf_input(leaf) for leaf in (args if flat else ad.tree.flatten(args)[0]))


def _leaf_input(leaf) -> bool:
    return ((type(leaf) is np.ndarray and leaf.dtype.kind == "f") or
            type(leaf) in (int, float, bool, str, type(None), np.float64, np.int64))


def flat_gradient(gradient) -> np.ndarray:
    """A gradient of the structure of x0 (arrays or Tensors) as one flat vector, in ``ad.ravel`` order."""
    return np.concatenate([np.ravel(plain_value(g)) for g in ad.tree.flatten(gradient)[0]])


def variables_of(x0) -> list | None:
    """The Variables when x0 is a structure of them (a model's trainable_variables), else None."""
    leaves = ad.tree.flatten(x0)[0]
    return leaves if leaves and all(isinstance(leaf, ad.Variable) for leaf in leaves) else None


def ggn_option(options: dict, declaration: Declaration) -> tuple[Callable, Callable] | None:
    """Take ``options["ggn"]``, the (predict, loss) split for Gauss-Newton products, if given (for
    the methods declared to take them)."""
    ggn = options.pop("ggn", None)
    if ggn is None:
        return None
    if not declaration.gauss_newton:
        takers = " or ".join(f"method={d.name!r}" for d in optimizers.REGISTRY.declarations() if d.gauss_newton)
        raise ValueError(f"the 'ggn' option is for {takers}, not {declaration.name!r}")
    if not (isinstance(ggn, (tuple, list)) and len(ggn) == 2 and all(map(callable, ggn))):
        raise TypeError("options['ggn'] must be a pair (predict, loss) of callables")
    return tuple(ggn)


def check_split(derivatives: AutodiffDerivatives, x0: np.ndarray) -> None:
    """loss(predict(x0)) must be fun(x0): the products and the objective describe one function."""
    value = float(derivatives.fun(x0))     # before the operator exists: a plain evaluation
    split = derivatives.at(x0).value
    if not np.isclose(split, value, rtol=1e-8, atol=1e-12):
        raise ValueError(f"options['ggn']: loss(predict(x0)) = {split!r} but fun(x0) = {value!r}; "
                         "they must describe the same objective")


class Counted:
    """A function with every call counted."""

    def __init__(self, function: Callable):
        self._function, self.calls = function, 0

    def __call__(self, x):
        self.calls += 1
        return self._function(x)


def first_derivatives(fun: Callable, jac, call: Call, derivatives: AutodiffDerivatives):
    """(f, gradient, the user's gradient, the user's counted function) on flat vectors for the
    optimizers (gradient True: f returns the pair). The user's gradient (None without one) maps
    flat x, ndarray or Tensor, to the flat gradient: second derivatives are its derivative."""
    unravel, args, n = call.unravel, call.args, call.x0.size
    if callable(jac):
        gradient = Counted(lambda x: gradient_vector(jac(unravel(x), *args), n, "jac"))
        return lambda x: scalar_value(fun(unravel(x), *args)), gradient, gradient, gradient
    if jac is True:
        def values(x):
            value, g = value_and_gradient(fun(unravel(x), *args))
            return value, gradient_vector(g, n, "fun's gradient (jac=True)")
        pair = Counted(values)
        return pair, True, lambda x: pair(x)[1], pair
    if exact_derivatives(jac):
        return derivatives.fun, derivatives.jac, None, None
    raise ValueError(f"jac must be a callable, True (fun returns (f, g)), or None/False/"
                     f"{'/'.join(FINITE_DIFFERENCES)} (exact, from autodiff); got {jac!r}")


class Named(NamedTuple):
    """A Hessian source that is what the user gave or autodiff of fun: its name, no note, and
    ``evaluations`` to report as nhev (None: the optimizer's count)."""
    name: str
    note: str | None = None
    evaluations: int | None = None


def second_derivatives(hess, hessp, call: Call, derivatives: AutodiffDerivatives, *,
                        gradient: Callable | None, last: LastGradient, trace: bool, ggn: bool):
    """(hess, hessp, operator, source) on flat vectors. In scipy's order of precedence: the user's
    ``hess`` (``hessp`` then serves the products, if given), a ``HessianUpdateStrategy``, the
    user's ``hessp``; with none of them, the derivative of the user's gradient when there is one
    (:class:`~hessopt._hessians.GradientDerivative`), else autodiff's operator of each point
    (``AutodiffDerivatives.at``: its gradient recorded once, each product one sweep of it). The
    source tells ``result.hessian_source``."""
    unravel, args, n = call.unravel, call.args, call.x0.size
    if hessp is not None and not callable(hessp):
        raise TypeError(f"hessp must be callable, got {type(hessp).__name__}")
    flat_hessp = None if hessp is None else \
        (lambda x, p: gradient_vector(hessp(unravel(x), unravel(p), *args), n, "hessp"))
    if callable(hess):
        user = UserHessian(hess, unravel, args, n)
        # products with its matrix are not evaluations: nhev counts the calls of hess
        return user.matrix, flat_hessp or user.product, None, user if flat_hessp is None else Named("hess")
    if isinstance(hess, HessianUpdateStrategy):
        if hessp is not None:   # scipy drops hessp silently here
            raise ValueError(f"hess={type(hess).__name__}() approximates the Hessian from gradients; "
                             "hessp would go unused: pass one of them")
        source = QuasiNewton(hess, last, n)
        return None, None, source, source
    if not exact_derivatives(hess):
        raise TypeError(f"hess must be a callable, a scipy.optimize.HessianUpdateStrategy (BFGS(), "
                        f"SR1()), or None/{'/'.join(FINITE_DIFFERENCES)} (exact, from autodiff of the "
                        f"gradient); got {hess!r}")
    if flat_hessp is not None:
        return None, flat_hessp, None, Named("hessp")
    if gradient is not None and not ggn:
        source = GradientDerivative(gradient, last, "3-point" if hess == "3-point" else "2-point", trace)
        return None, None, source, source
    return None, None, derivatives.at, Named("autodiff (generalized Gauss-Newton)" if ggn else derivatives.name)


class Flat(NamedTuple):
    """The run's derivatives on flat vectors, as the optimizers take them: ``fun``, ``jac`` (True:
    fun returns (f, g)), ``hess``, ``hessp``, ``operator``; the Hessian's ``source`` (its name is
    ``result.hessian_source``; None for a first-order method); the user's gradient on flat vectors
    (``gradient``, None without one), the user's counted function (``counted``, None when
    autodiff gives the gradient) and the run's gradient with its last value (``last``)."""
    fun: Callable
    jac: Callable | bool
    hess: Callable | None
    hessp: Callable | None
    operator: Callable | None
    source: object
    gradient: Callable | None
    counted: Counted | None
    last: LastGradient


def flat_derivatives(fun: Callable, jac, hess, hessp, call: Call, derivatives: AutodiffDerivatives,
                     declaration: Declaration, *, ggn: bool, trace: bool) -> Flat:
    """The derivatives a method takes (:class:`Flat`): a first-order method's value and gradient
    (one sweep when they come from autodiff), a second-order method's curvature too
    (:func:`second_derivatives`); a quasi-Newton or gradient-derivative source reads the run's
    last gradient, so the run's gradient goes through it."""
    if declaration.first_order and exact_derivatives(jac):
        flat_fun, flat_jac, gradient, counted = derivatives.value_and_grad, True, None, None
    else:
        flat_fun, flat_jac, gradient, counted = first_derivatives(fun, jac, call, derivatives)
    last = LastGradient(flat_fun, pair=True) if flat_jac is True else LastGradient(flat_jac)
    if declaration.first_order:
        flat_hess = flat_hessp = operator = source = None
    else:
        flat_hess, flat_hessp, operator, source = second_derivatives(
            hess, hessp, call, derivatives, gradient=gradient, last=last, trace=trace, ggn=ggn)
    if isinstance(source, (QuasiNewton, GradientDerivative)):   # they read the run's last gradient
        flat_fun, flat_jac = (last, True) if flat_jac is True else (flat_fun, last)
    return Flat(flat_fun, flat_jac, flat_hess, flat_hessp, operator, source, gradient, counted, last)
