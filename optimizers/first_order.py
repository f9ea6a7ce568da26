"""First-order baselines: gradient descent (with optional heavy-ball momentum) and Adam.

Both take fixed-size steps from gradients alone, the way neural networks are usually trained, for
comparison with the second-order methods. Statuses are honest: success only when the gradient
test of :mod:`optimizers.stopping` passes; running out of iterations is ``MAXITER``; a non-finite f
or g stops the run with ``NONFINITE`` and returns the best point seen.

References: B. T. Polyak, "Some methods of speeding up the convergence of iteration methods", USSR
Comput. Math. Math. Phys. 4 (1964); D. P. Kingma and J. Ba, "Adam: a method for stochastic
optimization", ICLR 2015.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy.optimize import OptimizeResult

from .bounds import Box
from .feasible import FeasibleSet, Unconstrained
from .loop import RunOptions, Saddle, Step, Stop, Trial
from .methods import Problem, declared
from .objective import Iterate, Objective, Status

Update = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


@declared("gd", bounds=True, first_order=True)
def minimize_gd(problem: Problem, options: RunOptions, *, learning_rate: float = 1e-2,
                momentum: float = 0.0) -> OptimizeResult:
    """Gradient descent x <- x + v, v <- momentum v - learning_rate g (plain descent when
    ``momentum`` is 0; Polyak's heavy ball otherwise). ``hess``, ``hessp`` and ``operator`` are
    ignored.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    learning_rate : float
        The step length factor.
    momentum : float
        The heavy-ball coefficient in [0, 1).
    bounds : Box or (lower, upper), optional
        Bound constraints: each update is projected into the box (projected gradient descent;
        Bertsekas, *Nonlinear Programming*, 2nd ed., §2.3), success on the projected gradient.

    Returns
    -------
    OptimizeResult
        ``x, fun, jac, nit, nfev, njev, status, success, message`` and ``history``.

    Examples
    --------
    On f = ||x||^2 a learning rate of 1/4 halves x at every step:

    >>> import numpy as np
    >>> from optimizers import minimize_gd
    >>> result = minimize_gd(lambda x: x @ x, np.array([1.0, -2.0]), lambda x: 2 * x, learning_rate=0.25)
    >>> result.success, result.history["x"][:3]
    (True, array([[ 1.  , -2.  ],
           [ 0.5 , -1.  ],
           [ 0.25, -0.5 ]]))
    """
    return _run(problem, options, heavy_ball(problem.x0.size, learning_rate, momentum))


@declared("adam", bounds=True, first_order=True)
def minimize_adam(problem: Problem, options: RunOptions, *, learning_rate: float = 1e-3, beta1: float = 0.9,
                  beta2: float = 0.999, epsilon: float = 1e-8) -> OptimizeResult:
    """Adam (Kingma & Ba 2015, Algorithm 1): steps of ``learning_rate`` m_hat / (sqrt(v_hat) +
    epsilon) from bias-corrected moving averages of g and g**2. ``hess``, ``hessp`` and
    ``operator`` are ignored.

    Parameters
    ----------
    fun, x0, jac, hess, hessp, callback, operator, gtol, maxiter, disp, keep_iterates
        As for every method here (see :mod:`optimizers`).
    learning_rate : float
        The step length (Adam's alpha).
    beta1, beta2 : float
        Decay rates of the moving averages of g and g**2.
    epsilon : float
        Added to sqrt(v_hat).
    bounds : Box or (lower, upper), optional
        Bound constraints: each update is projected into the box, success on the projected
        gradient.

    Returns
    -------
    OptimizeResult
        As :func:`minimize_gd`.

    Examples
    --------
    The first Adam step moves every coordinate by the learning rate, whatever the gradient's scale:

    >>> import numpy as np
    >>> from optimizers import minimize_adam
    >>> result = minimize_adam(lambda x: x @ x, np.array([1.0, -200.0]), lambda x: 2 * x, learning_rate=0.1)
    >>> result.history["x"][1].round(6)
    array([   0.9, -199.9])
    """
    return _run(problem, options, adam(problem.x0.size, learning_rate, beta1, beta2, epsilon))


def heavy_ball(n: int, learning_rate: float, momentum: float = 0.0) -> Update:
    """The update of gradient descent with Polyak's heavy ball for n variables: ``update(x, g, t)``
    is x + v with v <- momentum v - learning_rate g (its own velocity, kept across calls).

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.first_order import heavy_ball
    >>> update = heavy_ball(1, learning_rate=0.5, momentum=0.5)
    >>> update(np.array([1.0]), np.array([1.0]), 1), update(np.array([0.5]), np.array([1.0]), 2)
    (array([0.5]), array([-0.25]))
    """
    _check_positive(learning_rate=learning_rate)
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    velocity = np.zeros(n)

    def update(x, g, t):
        velocity[:] = momentum * velocity - learning_rate * g
        return x + velocity
    return update


def adam(n: int, learning_rate: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999,
         epsilon: float = 1e-8) -> Update:
    """Adam's update for n variables (Kingma & Ba 2015, Algorithm 1): ``update(x, g, t)`` at step
    t = 1, 2, ... is x - learning_rate m_hat / (sqrt(v_hat) + epsilon), from its own moving averages.

    Examples
    --------
    >>> import numpy as np
    >>> from optimizers.first_order import adam
    >>> adam(2, learning_rate=0.1)(np.array([1.0, -200.0]), np.array([2.0, -400.0]), 1)
    array([   0.9, -199.9])
    """
    _check_positive(learning_rate=learning_rate)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be non-negative, got {epsilon!r}")
    for name, beta in (("beta1", beta1), ("beta2", beta2)):
        if not 0 <= beta < 1:
            raise ValueError(f"{name} must lie in [0, 1), got {beta!r}")
    m, v = np.zeros(n), np.zeros(n)

    def update(x, g, t):
        m[:] = beta1 * m + (1 - beta1) * g
        v[:] = beta2 * v + (1 - beta2) * g * g
        m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
        return x - learning_rate * m_hat / (np.sqrt(v_hat) + epsilon)
    return update


def _run(problem: Problem, options: RunOptions, update: Update) -> OptimizeResult:
    """Run ``update`` from x0 in the problem's feasible set (f and the gradient only)."""
    objective = Objective(problem.fun, problem.x0, problem.jac)
    return problem.run(objective, first_order_step(problem.feasible, objective, update), options)


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")


class FirstOrderUpdate(Step):
    """A first-order step: ``update(x, g, t)`` gives the next iterate (t = 1, 2, ...), always
    accepted; a NaN/inf value or gradient there ends the run (status 3, the best point seen
    returned)."""

    def __init__(self, objective: Objective, update: Update):
        self.objective, self.update, self.t = objective, update, 0

    def default_maxiter(self, n: int) -> int:
        return 1000

    def start(self, point: Iterate) -> dict:
        return {"step": 0.0}

    def __call__(self, point: Iterate, saddle: Saddle | None) -> Trial | Stop:
        self.t += 1
        x = self.next(point)
        f, g = self.objective.fun(x), self.objective.grad(x)
        if not (np.isfinite(f) and np.all(np.isfinite(g))):
            return Stop(Status.NONFINITE)
        return Trial(x, f, {"step": float(np.linalg.norm(x - point.x))})

    def next(self, point: Iterate) -> np.ndarray:
        """The next iterate."""
        return self.update(point.x, point.g, self.t)


class ProjectedUpdate(FirstOrderUpdate):
    """A first-order step projected into a ``box`` (projected gradient descent; Bertsekas,
    *Nonlinear Programming*, 2nd ed., §2.3)."""

    def __init__(self, objective: Objective, update: Update, box: Box):
        super().__init__(objective, update)
        self.box = box

    def next(self, point: Iterate) -> np.ndarray:
        return self.box.project(super().next(point))


@functools.singledispatch
def first_order_step(feasible: FeasibleSet, objective: Objective, update: Update) -> Step:
    """The first-order step of ``feasible``: the update as it is, or projected into a box."""
    raise TypeError(f"the first-order methods take no {type(feasible).__name__}")


@first_order_step.register
def _(feasible: Unconstrained, objective: Objective, update: Update) -> Step:
    return FirstOrderUpdate(objective, update)


@first_order_step.register
def _(feasible: Box, objective: Objective, update: Update) -> Step:
    return ProjectedUpdate(objective, update, feasible)
