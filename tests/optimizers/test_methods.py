"""Each method declares what it takes and gives (optimizers.methods), the registry lists them by
those declarations, and every declaration is true of the method it describes."""
import inspect

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import rosen, rosen_der, rosen_hess_prod

import optimizers
from optimizers.bounds import Box
from optimizers.feasible import UNCONSTRAINED
from optimizers.methods import Declaration, Registry, declared

DETERMINISTIC = optimizers.REGISTRY.declarations()
BATCHES = optimizers.REGISTRY.declarations(batches=True)
SHARED = [("fun", inspect.Parameter.empty), ("x0", inspect.Parameter.empty), ("jac", inspect.Parameter.empty),
          ("hess", None), ("hessp", None), ("callback", None), ("operator", None)]


def test_the_registry_lists_every_method_in_the_suites_order():
    assert [d.name for d in DETERMINISTIC] == ["newton", "newton-cg", "trust-ncg", "trust-krylov", "trust-exact",
                                               "dogleg", "arc", "hessian-free", "adam", "gd", "interior-point"]
    assert [d.name for d in BATCHES] == ["hessian-free", "subsampled-newton-cg", "adam", "sgd"]
    exported = {getattr(optimizers, name) for name in optimizers.__all__ if name.startswith("minimize_")}
    assert {d.function for d in DETERMINISTIC + BATCHES} == exported
    assert optimizers.REGISTRY.get("trust-ncg").function is optimizers.minimize_trust_ncg
    assert optimizers.REGISTRY.get("adam", batches=True).function is optimizers.minimize_stochastic_adam
    assert optimizers.REGISTRY.get("bfgs") is None


def test_scipys_default_is_newton_cg_unconstrained_and_trons_in_a_box():
    assert optimizers.REGISTRY.default(UNCONSTRAINED).name == "newton-cg"
    assert optimizers.REGISTRY.default(Box([0.0], [1.0])).name == "trust-ncg"


@pytest.mark.parametrize("declaration", DETERMINISTIC + BATCHES, ids=lambda d: d.function.__name__)
def test_every_method_takes_the_shared_parameters_in_scipys_order(declaration):
    parameters = inspect.signature(declaration.function).parameters
    assert [(name, parameters[name].default) for name, _ in SHARED] == SHARED
    assert list(parameters)[:6] == ["fun", "x0", "jac", "hess", "hessp", "callback"]
    assert ("bounds" in parameters) == declaration.bounds
    if declaration.batches:
        assert "gtol" not in parameters and parameters["keep_iterates"].default is False
        assert parameters["batches"].default is inspect.Parameter.empty
    else:
        assert [parameters[name].default for name in ("gtol", "maxiter", "disp", "keep_iterates")] == \
            [None, None, False, True]
    assert parameters[list(parameters)[-1]].kind is inspect.Parameter.KEYWORD_ONLY
    assert declaration.function.__doc__.lstrip()[0].isupper()


def test_a_method_refuses_what_it_does_not_take_by_its_own_name():
    with pytest.raises(TypeError, match=r"minimize_arc\(\) got an unexpected keyword argument 'bounds'"):
        optimizers.minimize_arc(rosen, np.zeros(2), rosen_der, hessp=rosen_hess_prod, bounds=([0, 0], [1, 1]))
    with pytest.raises(TypeError, match=r"minimize_newton\(\) missing a required argument: 'jac'"):
        optimizers.minimize_newton(rosen, np.zeros(2))


def test_a_declared_method_gets_x0_placed_and_the_run_options_as_one_object():
    @declared("probe", bounds=True)
    def minimize_probe(problem, options, *, level=1):
        return problem, options, level
    problem, options, level = minimize_probe(rosen, [3.0, 0.5], rosen_der, None, None, print,
                                             bounds=([0, 0], [1, 1]), maxiter=4, level=2)
    np.testing.assert_array_equal(problem.x0, [1.0, 0.5])
    assert problem.note.startswith("x0 lay outside the bounds in 1 of 2 entries")
    assert isinstance(problem.feasible, Box) and problem.jac is rosen_der
    assert (options.maxiter, options.callback, options.gtol, options.keep_iterates, level) == (4, print, None, True, 2)
    assert minimize_probe.declaration == Declaration("probe", minimize_probe, bounds=True)


def test_the_registry_refuses_an_undeclared_function_and_two_of_one_name():
    with pytest.raises(ValueError, match="not a declared method"):
        Registry([rosen])
    with pytest.raises(ValueError, match="two methods are named 'newton'"):
        Registry([optimizers.minimize_newton, optimizers.minimize_newton])


def _quadratic_problem(n=3):
    A = np.diag(np.arange(1.0, n + 1))
    return (lambda x: 0.5 * x @ A @ x - x.sum(), np.full(n, 0.5), lambda x: A @ x - 1,
            lambda x: scipy.sparse.csc_matrix(A))


@pytest.mark.parametrize("declaration", [d for d in DETERMINISTIC if d.bounds], ids=lambda d: d.name)
def test_a_method_declared_with_bounds_runs_in_the_box(declaration):
    """min x^T A x / 2 - sum(x), A = diag(1, 2, 3), over [0, 0.6]^3: x* = (0.6, 1/2, 1/3), the first
    on its upper bound. At success the free variables' error is at most |pg_i| / A_ii <= |pg_i|,
    which the relative gradient test holds to 1e-8 max(1, |f|) (|f| < 1 here)."""
    fun, x0, jac, hess = _quadratic_problem()
    options = {"maxiter": 5000, "learning_rate": 0.1} if declaration.first_order else {}
    result = declaration.function(fun, x0, jac, hess=hess, bounds=([0.0] * 3, [0.6] * 3), **options)
    assert result.success
    np.testing.assert_allclose(result.x, [0.6, 0.5, 1 / 3], rtol=0, atol=1e-8)
    np.testing.assert_array_equal(result.active_mask, [1, 0, 0])


@pytest.mark.parametrize("declaration", DETERMINISTIC, ids=lambda d: d.name)
def test_sparse_preconditioned_and_first_order_declarations_are_what_the_methods_do(declaration):
    """A sparse factorization reports ``sparse``, a preconditioned Krylov method ``preconditioned``;
    a first-order method never asks for curvature (nhev absent or 0), a second-order one needs it."""
    fun, x0, jac, hess = _quadratic_problem()
    options = {"learning_rate": 0.1, "maxiter": 2000} if declaration.first_order else {}
    result = declaration.function(fun, x0, jac, hess=hess, **options)
    assert ("sparse" in result) == declaration.sparse
    assert ("preconditioned" in result) == declaration.preconditioned
    assert result.get("nhev", 0) == 0 if declaration.first_order else result.nhev > 0
    if not declaration.first_order:
        with pytest.raises(ValueError, match="second derivatives"):
            declaration.function(fun, x0, jac, **options)


def test_hess_is_declared_by_the_methods_whose_scipy_counterparts_return_it():
    assert [d.name for d in DETERMINISTIC if d.returns_hess] == ["trust-ncg", "trust-krylov", "trust-exact", "dogleg"]
    assert [d.name for d in DETERMINISTIC + BATCHES if d.gauss_newton] == \
        ["hessian-free", "hessian-free", "subsampled-newton-cg"]
