"""Rules are exact at special points wherever an exact answer exists (DESIGN.md): powers at 0 to every
order, in reverse and forward mode; the square of a 2-norm at 0. Where the function has a true kink
or pole, the convention is the one docs/guides/differentiate.md documents, and these tests pin it down.
"""
import math

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp


def derivatives(f, x: float, orders: int = 4) -> list:
    """f', f'', ... at x by nested reverse mode."""
    results, g = [], f
    for _ in range(orders):
        g = ad.grad(g)
        results.append(float(g(x)))
    return results


def forward_derivatives(f, x: float, orders: int = 4) -> list:
    """f', f'', ... at x by nested forward mode (jvp of jvp)."""
    results, g = [], f
    for _ in range(orders):
        g = (lambda h: lambda z: ad.jvp(h, (z,), (1.0,))[1])(g)
        results.append(float(g(x)))
    return results


def power_derivative(k: int, j: int, x: float) -> float:
    """d^j/dx^j x^k in closed form (0 beyond order k)."""
    return 0.0 if j > k else math.factorial(k) / math.factorial(k - j) * x ** (k - j)


@pytest.mark.parametrize("k", range(5))
@pytest.mark.parametrize("x", [0.0, 0.5, -1.5])
@pytest.mark.parametrize("spell", [lambda x, k: x ** k, lambda x, k: np.power(x, k),
                                   lambda x, k: x ** float(k), lambda x, k: x ** np.int64(k)],
                         ids=["int", "np.power", "float", "np.int64"])
def test_every_derivative_of_a_power_is_exact_at_zero_and_elsewhere(k, x, spell):
    expected = [power_derivative(k, j, x) for j in range(1, 5)]
    assert derivatives(lambda z: spell(z, k), x) == pytest.approx(expected, rel=1e-14, abs=0)
    assert forward_derivatives(lambda z: spell(z, k), x) == pytest.approx(expected, rel=1e-14, abs=0)


def test_an_array_of_exponents_with_zeros_is_exact_at_zero():
    exponents = np.array([0.0, 1.0, 2.0, 3.0])
    f = lambda x: anp.sum(x ** exponents)  # noqa: E731
    np.testing.assert_array_equal(ad.grad(f)(np.zeros(4)), [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ad.hessian(f)(np.zeros(4)), np.diag([0.0, 0.0, 2.0, 0.0]))
    np.testing.assert_array_equal(ad.hvp(f, ad.constant(np.zeros(4)), np.ones(4)).numpy(), [0, 0, 2, 0])


def test_a_tensor_exponent_keeps_its_derivatives_away_from_zero_and_is_exact_in_x_at_zero():
    def f(v):
        return v[0] ** v[1]
    x, y = 2.0, 0.0
    np.testing.assert_allclose(ad.grad(f)(np.array([x, y])), [0.0, math.log(x)], rtol=1e-15)
    # d2/dx dy x**y = x**(y-1) (1 + y log x) = 1/x at y = 0
    np.testing.assert_allclose(ad.hessian(f)(np.array([x, y])),
                               [[0.0, 1 / x], [1 / x, math.log(x) ** 2]], rtol=1e-14)
    np.testing.assert_array_equal(ad.grad(f)(np.array([0.0, 0.0]))[0], 0.0)  # 0**y at y = 0: constant
    # at x = 0 with y > 1 every derivative of x**y up to order 2 is exact, d/dy (x**y log x) too
    np.testing.assert_array_equal(ad.grad(f)(np.array([0.0, 3.0])), [0.0, 0.0])
    np.testing.assert_array_equal(ad.hessian(f)(np.array([0.0, 2.0])), [[2.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(ad.hessian(f)(np.array([0.0, 3.0])), np.zeros((2, 2)))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # dividing by zero is the point
def test_poles_and_infinite_slopes_at_zero_are_signed_infinities():
    """x**0.5, sqrt and cbrt have an infinite slope at 0 (from the right) and x**-1 a pole: the
    derivatives are the one-sided limits, not zeros."""
    assert derivatives(lambda x: x ** 0.5, 0.0, 2) == [math.inf, -math.inf]
    assert derivatives(anp.sqrt, 0.0, 2) == [math.inf, -math.inf]
    assert derivatives(lambda x: x ** -1, 0.0, 2) == [-math.inf, math.inf]
    assert derivatives(lambda x: x ** 1.5, 0.0, 2) == [0.0, math.inf]
    assert ad.grad(anp.cbrt)(0.0) == math.inf


# --- the square of a 2-norm ------------------------------------------------------------------------

W0 = np.zeros(3)
SQUARED_NORMS = {
    "norm(w)**2": lambda w: np.linalg.norm(w) ** 2,
    "norm(w, 2)**2": lambda w: np.linalg.norm(w, 2) ** 2,
    "norm(w)**2.0": lambda w: np.linalg.norm(w) ** 2.0,
    "np.square(norm(w))": lambda w: np.square(np.linalg.norm(w)),
    "np.power(norm(w), 2)": lambda w: np.power(np.linalg.norm(w), 2),
    "norm(w) * norm(w)": lambda w: (lambda n: n * n)(np.linalg.norm(w)),
    "sum(w**2)": lambda w: np.sum(w ** 2),
    "w @ w": lambda w: w @ w,
    "np.dot(w, w)": lambda w: np.dot(w, w),
    "hypot(w0, w1)**2 + w2**2": lambda w: np.hypot(w[0], w[1]) ** 2 + w[2] ** 2,
    "frobenius norm(W)**2": lambda w: np.linalg.norm(anp.reshape(anp.concatenate([w, w]), (2, 3)),
                                                      "fro") ** 2 / 2,
    "row norms squared": lambda w: np.sum(np.linalg.norm(anp.stack([w, 0 * w]), axis=1) ** 2),
}


@pytest.mark.parametrize("f", SQUARED_NORMS.values(), ids=SQUARED_NORMS.keys())
def test_the_hessian_of_a_squared_norm_is_2i_at_zero(f):
    np.testing.assert_array_equal(ad.hessian(f)(W0), 2 * np.eye(3))
    np.testing.assert_array_equal(ad.hessian_operator(f, W0).to_dense(), 2 * np.eye(3))
    np.testing.assert_array_equal(ad.hvp(f, ad.constant(W0), np.arange(3.0)).numpy(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(ad.grad(f)(W0), W0)
    w = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(ad.hessian(f)(w), 2 * np.eye(3), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ad.grad(f)(w), 2 * w, rtol=1e-14)
    assert float(f(ad.constant(w))) == pytest.approx(w @ w, rel=1e-15)


def test_a_ridge_term_keeps_its_curvature_at_zero():
    def f(w):
        return anp.sum(anp.sin(w)) + 0.5 * np.linalg.norm(w) ** 2
    np.testing.assert_allclose(ad.hessian(f)(W0), np.eye(3), atol=1e-15)


def test_the_square_of_a_norm_follows_the_tapes_that_recorded_the_norm():
    """The square is recomputed from the normed Tensor only for the tapes that recorded the norm."""
    w = ad.constant([3.0, 4.0])
    n = np.linalg.norm(w)  # computed while nothing records
    with ad.GradientTape() as tape:
        tape.watch(n)
        y = n ** 2
    assert tape.gradient(y, n).numpy() == pytest.approx(10.0)
    with ad.GradientTape() as outer:
        outer.watch(w)
        n = np.linalg.norm(w)
        with ad.GradientTape() as inner:
            inner.watch(w)
            y = n ** 2  # inner did not record the norm: for it, y does not depend on w
        assert inner.gradient(y, w) is None
    np.testing.assert_allclose(outer.gradient(y, w).numpy(), [6.0, 8.0])


def test_the_square_of_a_norm_of_a_variable_assigned_since_is_the_square_of_the_old_norm():
    v = ad.Variable([3.0, 4.0])
    with ad.GradientTape() as tape:
        n = np.linalg.norm(v)
        v.assign([1.0, 1.0])
        y = n ** 2
    assert float(y) == pytest.approx(25.0)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [6.0, 8.0])


# --- kinks: documented conventions ----------------------------------------------------------------

@pytest.mark.parametrize("order", [None, 1, 3, 4, np.inf])
def test_vector_norms_have_gradient_zero_at_zero(order):
    np.testing.assert_array_equal(ad.grad(lambda w: np.linalg.norm(w, order))(W0), W0)
    w = np.array([0.3, -1.2, 2.0])
    ad.check_grad(lambda z: np.linalg.norm(z, order), w)  # unchanged away from 0


def test_the_2_norm_and_hypot_have_gradient_zero_at_zero():
    np.testing.assert_array_equal(ad.grad(np.linalg.norm)(W0), W0)
    np.testing.assert_array_equal(ad.grad(lambda w: np.hypot(w[0], w[1]))(np.zeros(2)), [0.0, 0.0])
    assert np.all(np.isfinite(ad.hessian(np.linalg.norm)(W0)))


def test_abs_has_gradient_zero_at_zero():
    assert derivatives(anp.abs, 0.0, 2) == [0.0, 0.0]
    assert derivatives(anp.abs, -2.0, 1) == [-1.0]
    assert derivatives(lambda x: anp.abs(x) ** 2, 0.0, 2) == [0.0, 0.0]  # documented: use x**2


def test_maximum_and_minimum_give_a_tie_to_their_first_argument_and_reductions_share_it():
    assert ad.grad(lambda x: np.maximum(x, 0.0))(0.0) == 1.0  # relu's slope at 0 is 1
    assert ad.grad(lambda x: np.maximum(0.0, x))(0.0) == 0.0
    assert ad.grad(lambda x: np.minimum(x, 0.0))(0.0) == 1.0
    assert ad.grad(lambda x: np.maximum(x, x))(1.5) == 1.0  # exact: maximum(x, x) = x
    assert ad.grad(lambda x: np.minimum(x, x))(1.5) == 1.0
    np.testing.assert_array_equal(ad.grad(np.max)(np.array([2.0, 1.0, 2.0])), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(ad.grad(np.min)(np.array([1.0, 1.0, 3.0])), [0.5, 0.5, 0.0])


def test_clip_passes_the_gradient_at_its_bounds():
    np.testing.assert_array_equal(ad.grad(lambda x: anp.sum(np.clip(x, -1.0, 1.0)))(
        np.array([-1.0, 0.0, 1.0, 2.0])), [1.0, 1.0, 1.0, 0.0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # dividing by zero is the point
def test_std_of_constant_data_has_a_nan_gradient():
    """std is sqrt(var): at constant data (var = 0) the kink shows as NaN, as in JAX."""
    assert np.all(np.isnan(ad.grad(np.std)(np.ones(3))))
