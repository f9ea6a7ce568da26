"""Mini-batch training with second-order steps: stochastic Hessian-free optimization and subsampled
Newton-CG, and Adam and momentum SGD as first-order baselines on the same batches.

Data that does not fit one batch is the normal case of training. Every step here works on one batch
B: its f and g are B's, its curvature products those of a subsample S of B (a tenth, say: curvature
needs far fewer examples than the gradient, the observation both methods rest on), and every value
it compares (a line search, the reduction ratio that moves the damping) is f on the same B, so no
comparison mixes batches. After its update the step takes the next batch, and the loop evaluates
the new point on it: that is where the next step starts, so no gradient is computed twice.

A step carries its state from batch to batch: Hessian-free's damping lambda (moved by each batch's
reduction ratio, Martens 2010 §4.1) and its CG warm start (§4.5), Adam's moments. A step that finds
no lower value on its batch leaves x where it is (Hessian-free then raises lambda) and the run goes
on with the next batch. There is no gradient test (:class:`NoGradientTest`): a batch gradient is
not the gradient, and a small one is noise, not a first-order point; the one loop of
:mod:`optimizers.loop` runs these steps with that test. A run ends when its epochs are used up
(status 1), when the callback or ``evaluate`` raises StopIteration (status 99), or at NaN/inf
(status 3), and returns its last iterate.

References: J. Martens, "Deep learning via Hessian-free optimization", ICML 2010; R. H. Byrd,
G. M. Chin, W. Neveitt and J. Nocedal, "On the use of stochastic Hessian information in optimization
methods for machine learning", SIAM J. Optim. 21 (2011) 977-995 (subsampled Hessian Newton-CG);
D. P. Kingma and J. Ba, "Adam: a method for stochastic optimization", ICLR 2015.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

from .first_order import Update, adam, heavy_ball
from .history import History
from .linesearch import LineSearchResult, backtracking
from .loop import Loop, Monitor, RunOptions, Saddle, Step, Stop, Trial
from .methods import Problem, declared
from .newton import HessianFreeStep, LineSearchDescent, MartensDamping, truncated_cg
from .objective import Iterate, Objective, Status
from .stopping import GradientTest

# Byrd et al. (2011) cap CG at 10 iterations per step; Martens' CG runs until its progress test.
SUBSAMPLED_CG_MAXITER = 10
STOCHASTIC_HF_CG_MAXITER = 50

EPOCHS_DONE = "The epochs asked for are done: a stochastic method stops on its budget"


class NoGradientTest(GradientTest):
    """The convergence test of a stochastic run: none. Its f and g are those of one batch (and each
    step takes the next batch), so a small batch gradient is noise, not a first-order point.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.stochastic import NoGradientTest
    >>> NoGradientTest()(np.zeros(2), 0.0, np.zeros(2))
    False
    """

    def __call__(self, x: np.ndarray, f: float, g: np.ndarray) -> bool:
        return False

    def describe(self, x: np.ndarray, f: float, g: np.ndarray, name: str = "g") -> str:
        return "none, the gradient of one batch is not the gradient"


class Epochs:
    """The batches of a run, epoch after epoch, as ``(epoch, batch)`` pairs.

    ``batches`` is a sequence or another re-iterable (a new pass is taken each epoch), a callable
    ``batches(epoch) -> iterable`` (a fresh one per epoch: reshuffled, say), or a one-pass
    iterator (a generator), which serves one epoch only.

    Raises
    ------
    TypeError
        If ``batches`` is neither iterable nor callable, or (while iterating) a callable returns
        no iterable.
    ValueError
        For ``epochs`` not a positive integer, a one-pass iterator with more than one epoch, or (while
        iterating) an epoch without batches.

    Examples
    --------
    >>> from optimizers.stochastic import Epochs
    >>> list(Epochs(["a", "b"], epochs=2))
    [(0, 'a'), (0, 'b'), (1, 'a'), (1, 'b')]
    >>> list(Epochs(lambda epoch: range(epoch, epoch + 2), epochs=2))
    [(0, 0), (0, 1), (1, 1), (1, 2)]
    """

    def __init__(self, batches: Iterable | Callable[[int], Iterable], epochs: int = 1):
        if isinstance(epochs, bool) or int(epochs) != epochs or epochs < 1:
            raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
        self.epochs = int(epochs)
        if callable(batches) and not hasattr(batches, "__iter__"):
            self._epoch = batches
        elif hasattr(batches, "__iter__"):
            if iter(batches) is batches and self.epochs > 1:
                raise ValueError(f"batches is a one-pass iterator (a generator, say), which cannot "
                                 f"serve {self.epochs} epochs: pass a list or another re-iterable, "
                                 f"or a callable epoch -> batches")
            self._epoch = lambda epoch: batches
        else:
            raise TypeError(f"batches must be an iterable of batches or a callable epoch -> batches, "
                            f"got {type(batches).__name__}")

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        for epoch in range(self.epochs):
            empty = True
            for batch in self._batches_of(epoch):
                empty = False
                yield epoch, batch
            if empty:
                raise ValueError(f"epoch {epoch} has no batches")

    def _batches_of(self, epoch: int) -> Iterator:
        """The batches of ``epoch``, or a TypeError naming what a callable ``batches`` returned."""
        batches = self._epoch(epoch)
        try:
            return iter(batches)
        except TypeError:
            raise TypeError(f"batches({epoch}) returned {type(batches).__name__} {batches!r}, not an iterable "
                            "of batches (a callable batches gives the batches of the epoch it is called "
                            "with)") from None


class BatchObjective(Objective):
    """An :class:`~optimizers.objective.Objective` of one batch at a time.

    ``fun(x, batch)``, ``jac(x, batch)`` (or ``jac=True``: fun returns (f, g)) and the curvature,
    ``hessp(x, p, batch)`` or ``operator(x, batch)``, are evaluated on the current batch; the
    curvature on ``curvature(batch)`` (a subsample; default: the batch itself), made once per
    batch. :meth:`advance` moves to the next batch. Counts add up over batches; a run that ends
    returns its last iterate (no "best point": values of different batches do not compare).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.stochastic import BatchObjective, Epochs
    >>> objective = BatchObjective(lambda x, b: float((x - b) @ (x - b)), np.zeros(1),
    ...                            lambda x, b: 2 * (x - b), Epochs([1.0, 3.0]))
    >>> objective.fun(np.zeros(1)), objective.advance(), objective.fun(np.zeros(1)), objective.advance()
    (1.0, True, 9.0, False)
    """

    def __init__(self, fun: Callable, x0, jac: Callable | bool, batches: Iterable, *,
                 hessp: Callable | None = None, operator: Callable | None = None,
                 curvature: Callable | None = None):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}")
        if curvature is not None and not callable(curvature):
            raise TypeError(f"curvature must be callable (batch -> subsample), got {type(curvature).__name__}")
        self._batches = iter(batches)
        self._curvature = curvature or (lambda batch: batch)
        self.epoch, self.batch = next(self._batches)
        self.curvature_batch = self._curvature(self.batch)
        batch_jac = jac if jac is True or not callable(jac) else (lambda x: jac(x, self.batch))
        super().__init__(
            lambda x: fun(x, self.batch), x0, batch_jac,
            hessp=None if hessp is None else (lambda x, p: hessp(x, p, self.curvature_batch)),
            operator=None if operator is None else (lambda x: operator(x, self.curvature_batch)))

    def advance(self) -> bool:
        """Move to the next batch; False (staying on the last one) when there is none."""
        try:
            self.epoch, self.batch = next(self._batches)
        except StopIteration:
            return False
        self.curvature_batch = self._curvature(self.batch)
        self._fx = self._gx = None     # values and gradients of the last batch are no longer current
        return True

    @property
    def best_f(self) -> float:
        """inf: no point counts as better than the last iterate, which a stochastic run returns
        (values of different batches do not compare)."""
        return np.inf

    @best_f.setter
    def best_f(self, value: float) -> None:
        pass


class BatchSteps(Step):
    """A step of one batch: ``inner`` (a method's step) on the current batch, then the next batch.

    A Stop from ``inner`` other than NaN/inf (no lower value on this batch) leaves x where it is
    and the run goes on. ``evaluate(x) -> dict`` is called at x0 and after each epoch's last step;
    its values, with the epoch, the step count and the seconds since the start, go to
    ``evaluations`` (a History), and raising StopIteration stops the run (status 99).

    Examples
    --------
    Gradient steps on f(x) = (x - b)^2 over the batches b = 1 and b = 3, twice:

    >>> import numpy as np
    >>> from optimizers.loop import Loop, Monitor
    >>> from optimizers.first_order import heavy_ball
    >>> from optimizers.stochastic import BatchObjective, BatchSteps, Epochs, GradientStep, NoGradientTest
    >>> objective = BatchObjective(lambda x, b: float((x[0] - b) ** 2), np.zeros(1),
    ...                            lambda x, b: 2 * (x - b), Epochs([1.0, 3.0], epochs=2))
    >>> step = BatchSteps(objective, GradientStep(heavy_ball(1, 0.25)), lambda x: {"x": x[0]})
    >>> result = Loop(objective, step, None, NoGradientTest(), Monitor(objective.counts)).iterate(None)
    >>> result.history["x"].ravel(), step.evaluations["x"], int(result.status)
    (array([0.    , 0.5   , 1.75  , 1.375 , 2.1875]), array([0.    , 1.75  , 2.1875]), 1)
    """

    messages = {Status.MAXITER: EPOCHS_DONE}

    def __init__(self, objective: BatchObjective, inner: Step, evaluate: Callable | None = None):
        if evaluate is not None and not callable(evaluate):
            raise TypeError(f"evaluate must be callable, got {type(evaluate).__name__}")
        self.objective, self.inner, self.evaluate = objective, inner, evaluate
        self.evaluations = History(keep_iterates=False)
        self.steps, self.epochs = 0, 0     # steps taken, epochs their batches came from
        self._start, self._stopped = time.perf_counter(), False

    def default_maxiter(self, n: int) -> int:
        return sys.maxsize      # the epochs end the run

    def start(self, point: Iterate) -> dict:
        self._start = time.perf_counter()
        self._stopped = self._evaluated(point.x, 0)
        return {"epoch": 0, **self.inner.start(point)}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        if self._stopped:
            return Stop(Status.CALLBACK_STOP)
        if not (np.isfinite(point.f) and np.all(np.isfinite(point.g))):
            return Stop(Status.NONFINITE)
        trial = self.inner(point, None)
        if isinstance(trial, Stop):
            if trial.status == Status.NONFINITE:
                return trial
            x, fields = point.x, {"step": 0.0}   # nothing lower on this batch: stay
        else:
            x, fields = trial.x, trial.fields
        self.steps += 1
        epoch = self.objective.epoch
        self.epochs = epoch + 1
        more = self.objective.advance()
        stop = None
        if (not more or self.objective.epoch != epoch) and self._evaluated(x, epoch + 1):
            stop = Stop(Status.CALLBACK_STOP)
        elif not more:
            stop = Stop(Status.MAXITER)
        return Trial(x, np.nan, {"epoch": epoch, **fields}, stop)

    def _evaluated(self, x: np.ndarray, epoch: int) -> bool:
        """Evaluate at x (after ``epoch`` epochs) if asked; True when evaluate stops the run."""
        if self.evaluate is None:
            return False
        try:
            values = self.evaluate(x)
        except StopIteration:
            return True
        if not isinstance(values, dict):
            raise TypeError(f"evaluate must return a dict of values, got {type(values).__name__}")
        self.evaluations.append({"epoch": epoch, "nit": self.steps,
                                 "time": time.perf_counter() - self._start, **values}, {}, x)
        return False


class GradientStep(Step):
    """A first-order step on a batch: ``update(x, g, t)`` (t = 1, 2, ...) from the batch gradient,
    with no evaluation at the new point (the next batch's loop evaluation is the next step's)."""

    def __init__(self, update: Update):
        self.update, self.t = update, 0

    def default_maxiter(self, n: int) -> int:
        return sys.maxsize

    def start(self, point: Iterate) -> dict:
        return {"step": 0.0}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial:
        self.t += 1
        x = self.update(point.x, point.g, self.t)
        return Trial(x, np.nan, {"step": float(np.linalg.norm(x - point.x))})


class SubsampledNewtonCGStep(LineSearchDescent):
    """Byrd, Chin, Neveitt & Nocedal's (2011) step: at most ``cg_maxiter`` CG iterations on the
    subsampled Hessian (Algorithm 4.1; a direction of non-positive curvature ends CG as in
    Newton-CG), then an Armijo backtracking search on the batch's f from the unit step."""

    def __init__(self, objective: Objective, cg_maxiter: int, c1: float):
        super().__init__(objective)
        self.cg_maxiter, self.c1 = cg_maxiter, c1

    def search(self, point: Iterate) -> tuple[LineSearchResult, dict] | Stop:
        cg = truncated_cg(point.matvec, point.g, maxiter=self.cg_maxiter)
        point.release()
        if not np.all(np.isfinite(cg.p)):
            return Stop(Status.NONFINITE)
        search = backtracking(self.objective, point.x, cg.p, point.f, point.g, c1=self.c1)
        return search, {"cg": cg.iterations}


def _run(objective: BatchObjective, inner: Step, options: RunOptions, evaluate: Callable | None) -> OptimizeResult:
    """One stochastic run; the result also has ``evaluations`` and ``epochs`` (the epochs whose
    batches the steps took)."""
    step = BatchSteps(objective, inner, evaluate)
    result = Loop(objective, step, None, NoGradientTest(), Monitor(objective.counts, options)).iterate(options.maxiter)
    result.evaluations, result.epochs = step.evaluations, step.epochs
    return result


def _objective(problem: Problem, epochs: int, curvature: Callable | None) -> BatchObjective:
    """The batch objective of a second-order method, its curvature products on ``curvature(batch)``."""
    return BatchObjective(problem.fun, problem.x0, problem.jac, Epochs(problem.batches, epochs), hessp=problem.hessp,
                          operator=problem.operator, curvature=curvature)


def _first_order_objective(problem: Problem, epochs: int) -> BatchObjective:
    """The batch objective of a first-order method (no curvature)."""
    return BatchObjective(problem.fun, problem.x0, problem.jac, Epochs(problem.batches, epochs))


def _check_derivatives(problem: Problem, needs_curvature: bool) -> None:
    if problem.hess is not None:
        raise ValueError("the stochastic methods take curvature products (hessp or operator), not a "
                         "dense hess")
    if needs_curvature and problem.hessp is None and problem.operator is None:
        raise ValueError("this method needs curvature products: pass hessp(x, p, batch) or "
                         "operator(x, batch)")


@declared("hessian-free", batches=True, gauss_newton=True)
def minimize_stochastic_hessian_free(
        problem: Problem, options: RunOptions, *, curvature: Callable | None = None, epochs: int = 1,
        damping: float = 1.0, cg_maxiter: int = STOCHASTIC_HF_CG_MAXITER, warm_start: float = 0.95,
        c1: float = 1e-4, evaluate: Callable | None = None) -> OptimizeResult:
    """Stochastic Hessian-free optimization (Martens 2010): per batch, damped CG on the curvature
    of a subsample, the step backtracked on the batch's f, lambda carried to the next batch.

    Each step solves (B_S + lambda I) p = -g_B by CG from ``warm_start`` times the previous step
    (Martens' relative-progress test, at most ``cg_maxiter`` steps), B_S the curvature products of
    ``curvature(batch)`` (a Gauss-Newton matrix, for Martens; or the Hessian). The reduction ratio
    rho = (f_B(x + p) - f_B(x)) / (g_B^T p + p^T B_S p / 2) of the batch moves lambda by the
    Levenberg-Marquardt rule (:class:`~optimizers.newton.MartensDamping`) for the next batch.

    Parameters
    ----------
    fun, jac : callable
        ``fun(x, batch)`` and its gradient ``jac(x, batch)`` (or ``jac=True``: fun returns both).
    x0 : array_like
        The start point (1-D).
    hess : None
        Not taken: curvature comes as products.
    hessp, operator : callable
        ``hessp(x, p, batch)``, or ``operator(x, batch)`` with ``matvec(v)``: the curvature of a batch.
    callback : callable, optional
        ``callback(intermediate_result)`` after each step (x, fun: the next batch's f there);
        StopIteration stops the run.
    batches : iterable or callable
        See :class:`Epochs`.
    curvature : callable, optional
        batch -> the subsample whose curvature the products take (default: the batch).
    epochs : int
        Passes over the batches.
    damping : float
        The initial lambda.
    cg_maxiter, warm_start, c1
        CG steps per batch; the fraction of the previous step CG starts from; the backtracking's
        sufficient-decrease constant.
    evaluate : callable, optional
        ``evaluate(x) -> dict``, at x0 and after each epoch (:class:`BatchSteps`).
    maxiter, disp, keep_iterates
        A cap on the steps; the iteration table; keep the iterates in ``history["x"]``.

    Returns
    -------
    OptimizeResult
        ``x, fun, jac`` (on the last batch), ``nit`` (steps), ``epochs``, the counts, ``status``
        (1: epochs done; 99: stopped; 3: NaN/inf), ``history`` (per step: the batch's f and
        gradient norm, ``epoch``, ``lambda``, ``rho``, ``cg``, ``step``) and ``evaluations``.

    Examples
    --------
    Least squares over four batches of rows, five epochs, Gauss-Newton products on half of each:

    >>> import numpy as np
    >>> from optimizers.stochastic import minimize_stochastic_hessian_free
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((400, 3)); b = A @ np.array([1.0, -2.0, 0.5])
    >>> batches = [(A[k::4], b[k::4]) for k in range(4)]
    >>> result = minimize_stochastic_hessian_free(
    ...     lambda x, d: 0.5 * np.mean((d[0] @ x - d[1]) ** 2), np.zeros(3),
    ...     lambda x, d: d[0].T @ (d[0] @ x - d[1]) / len(d[1]), batches=batches, epochs=5,
    ...     hessp=lambda x, p, d: d[0].T @ (d[0] @ p) / len(d[1]), curvature=lambda d: (d[0][:50], d[1][:50]))
    >>> result.x.round(6), result.nit, int(result.status)
    (array([ 1. , -2. ,  0.5]), 20, 1)
    """
    _check_derivatives(problem, needs_curvature=True)
    objective = _objective(problem, epochs, curvature)
    inner = HessianFreeStep(objective, MartensDamping(damping), cg_maxiter=cg_maxiter, warm_start=warm_start, c1=c1)
    return _run(objective, inner, options, evaluate)


@declared("subsampled-newton-cg", batches=True, gauss_newton=True)
def minimize_subsampled_newton_cg(
        problem: Problem, options: RunOptions, *, curvature: Callable | None = None, epochs: int = 1,
        cg_maxiter: int = SUBSAMPLED_CG_MAXITER, c1: float = 1e-4, evaluate: Callable | None = None) -> OptimizeResult:
    """Subsampled Hessian Newton-CG (Byrd, Chin, Neveitt & Nocedal 2011): per batch, at most
    ``cg_maxiter`` CG steps on the Hessian of a subsample, then Armijo backtracking on the batch.

    The parameters and result are those of :func:`minimize_stochastic_hessian_free` (no damping:
    CG ends at a direction of non-positive curvature instead; history: ``cg``, ``step``).

    Examples
    --------
    f(x, b) = sum(cosh(x - b)) over the batches b = (1, -1) and (3, 1): Newton steps on each
    (Hessian diag(cosh(x - b))) settle between their minima:

    >>> import numpy as np
    >>> from optimizers.stochastic import minimize_subsampled_newton_cg
    >>> result = minimize_subsampled_newton_cg(
    ...     lambda x, b: float(np.sum(np.cosh(x - b))), np.zeros(2), lambda x, b: np.sinh(x - b),
    ...     batches=[np.array([1.0, -1.0]), np.array([3.0, 1.0])], epochs=20,
    ...     hessp=lambda x, p, b: np.cosh(x - b) * p)
    >>> result.nit, bool(np.all((result.x > [1.0, -1.0]) & (result.x < [3.0, 1.0])))
    (40, True)
    """
    _check_derivatives(problem, needs_curvature=True)
    objective = _objective(problem, epochs, curvature)
    return _run(objective, SubsampledNewtonCGStep(objective, cg_maxiter, c1), options, evaluate)


@declared("adam", batches=True, first_order=True)
def minimize_stochastic_adam(
        problem: Problem, options: RunOptions, *, epochs: int = 1, learning_rate: float = 1e-3, beta1: float = 0.9,
        beta2: float = 0.999, epsilon: float = 1e-8, evaluate: Callable | None = None) -> OptimizeResult:
    """Adam on mini-batches (Kingma & Ba 2015): one update per batch from its gradient. The
    parameters and result are those of :func:`minimize_stochastic_hessian_free` with Adam's own
    (``learning_rate``, ``beta1``, ``beta2``, ``epsilon``); curvature is not used.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.stochastic import minimize_stochastic_adam
    >>> result = minimize_stochastic_adam(lambda x, b: float((x[0] - b) ** 2), np.zeros(1),
    ...                                   lambda x, b: 2 * (x - b), batches=[1.0, 3.0], epochs=500,
    ...                                   learning_rate=0.05)
    >>> round(float(result.x[0]), 1), result.nit      # the minimum of the mean over batches: 2
    (2.0, 1000)
    """
    _check_derivatives(problem, needs_curvature=False)
    update = adam(problem.x0.size, learning_rate, beta1, beta2, epsilon)
    return _run(_first_order_objective(problem, epochs), GradientStep(update), options, evaluate)


@declared("sgd", batches=True, first_order=True)
def minimize_sgd(problem: Problem, options: RunOptions, *, epochs: int = 1, learning_rate: float = 1e-2,
                 momentum: float = 0.0, evaluate: Callable | None = None) -> OptimizeResult:
    """Stochastic gradient descent, with Polyak's heavy-ball ``momentum`` (0: plain), one update per
    batch. The parameters and result are those of :func:`minimize_stochastic_adam`.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.stochastic import minimize_sgd
    >>> result = minimize_sgd(lambda x, b: float((x[0] - b) ** 2), np.zeros(1), lambda x, b: 2 * (x - b),
    ...                       batches=[1.0, 3.0], epochs=3, learning_rate=0.25)
    >>> result.x, result.nit
    (array([2.296875]), 6)
    """
    _check_derivatives(problem, needs_curvature=False)
    update = heavy_ball(problem.x0.size, learning_rate, momentum)
    return _run(_first_order_objective(problem, epochs), GradientStep(update), options, evaluate)
