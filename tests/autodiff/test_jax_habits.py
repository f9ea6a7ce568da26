"""JAX's habits in the transforms: ``has_aux``, pytree tangents in ``hvp`` (a dict in, a dict out),
the curried ``hvp(f)(x, v)``, and the error that names ``has_aux`` for a function returning a tuple.

References are closed forms and the transforms' existing forms (flat ``hvp``, ``jvp`` of ``grad``,
``jacobian`` of ``grad``), which agree to rounding.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp

X = np.array([1.0, 2.0, -0.5])


def cubic_with_aux(x):
    """sum(x^3) and, as aux, what a training loop logs: predictions and a count."""
    return np.sum(x ** 3), {"squares": x ** 2, "count": 3}


def assert_same_aux(aux, expected):
    assert set(aux) == set(expected) and aux["count"] == expected["count"] and type(aux["count"]) is int
    np.testing.assert_array_equal(aux["squares"], expected["squares"])
    assert type(aux["squares"]) is np.ndarray


# --- has_aux ----------------------------------------------------------------------------------------

def test_grad_and_value_and_grad_with_has_aux_are_jaxs():
    gradient, aux = ad.grad(cubic_with_aux, has_aux=True)(X)
    np.testing.assert_array_equal(gradient, 3 * X ** 2)
    assert_same_aux(aux, {"squares": X ** 2, "count": 3})
    (value, aux), gradient = ad.value_and_grad(cubic_with_aux, has_aux=True)(X)
    assert value == np.sum(X ** 3)
    np.testing.assert_array_equal(gradient, 3 * X ** 2)
    assert_same_aux(aux, {"squares": X ** 2, "count": 3})
    first, aux = ad.grad(lambda x, y: (x * y ** 2, x), argnums=(0, 1), has_aux=True)(2.0, 3.0)
    assert first == (9.0, 12.0) and aux == 2.0


def test_jacobian_and_hessian_with_has_aux():
    jacobian, aux = ad.jacobian(lambda x: (x ** 2, "note"), has_aux=True)(X)
    np.testing.assert_array_equal(jacobian, np.diag(2 * X))
    assert aux == "note"
    hessian, aux = ad.hessian(cubic_with_aux, has_aux=True)(X)
    np.testing.assert_array_equal(hessian, np.diag(6 * X))
    assert_same_aux(aux, {"squares": X ** 2, "count": 3})
    tree = {"a": 1.0, "b": 3.0}
    hessian, aux = ad.hessian(lambda p: (p["a"] ** 2 * p["b"], p["b"]), has_aux=True)(tree)
    np.testing.assert_array_equal(hessian, [[6.0, 2.0], [2.0, 0.0]])
    assert aux == 3.0


def test_jvp_vjp_and_linearize_with_has_aux_return_aux_last():
    f = lambda x: (np.sin(x), np.sum(x))   # noqa: E731
    t = np.array([1.0, 0.0, 2.0])
    value, tangent, aux = ad.jvp(f, (X,), (t,), has_aux=True)
    np.testing.assert_array_equal(tangent, np.cos(X) * t)
    assert aux == np.sum(X)
    value, vjp_fn, aux = ad.vjp(f, X, has_aux=True)
    np.testing.assert_array_equal(vjp_fn(t)[0], np.cos(X) * t)
    np.testing.assert_array_equal(value, np.sin(X))
    assert aux == np.sum(X)
    value, f_jvp, aux = ad.linearize(f, X, has_aux=True)
    np.testing.assert_allclose(f_jvp(t), np.cos(X) * t, rtol=1e-15)
    assert aux == np.sum(X)


def test_aux_is_passed_through_not_differentiated_by_the_transform_but_by_an_outer_one():
    def inner(a):
        gradient, aux = ad.grad(lambda x: (a * np.sum(x ** 3), a * x), has_aux=True)(X)
        return np.sum(gradient) + np.sum(aux)        # 3 a sum(x^2) + a sum(x)

    assert ad.grad(inner)(2.0) == pytest.approx(3 * np.sum(X ** 2) + np.sum(X), rel=1e-15)


def test_has_aux_replays_under_function():
    traced = ad.function(cubic_with_aux)
    for point in (X, 2 * X):
        gradient, aux = ad.grad(traced, has_aux=True)(point)
        np.testing.assert_array_equal(gradient, 3 * point ** 2)
        assert_same_aux(aux, {"squares": point ** 2, "count": 3})
    gradient, aux = traced.grad(has_aux=True)(X)
    np.testing.assert_array_equal(gradient, 3 * X ** 2)


def test_a_tuple_returned_to_grad_names_has_aux():
    for transform in (ad.grad, ad.value_and_grad):
        with pytest.raises(TypeError, match=r"got a tuple of 2 entries.*has_aux=True"):
            transform(lambda x: (np.sum(x ** 2), 1.0))(X)       # said "returned a plain float" before
    with pytest.raises(TypeError, match=r"has_aux=True needs a function returning a pair \(output, aux\), got a"):
        ad.grad(lambda x: np.sum(x ** 2), has_aux=True)(X)
    with pytest.raises(TypeError, match="got a tuple of 3 entries"):
        ad.jvp(lambda x: (x, x, x), (X,), (X,), has_aux=True)


# --- hvp: pytree tangents, the flat form, the curried form --------------------------------------------

PARAMS = {"w": np.array([1.0, -2.0]), "b": np.array(0.5)}
TANGENT = {"w": np.array([0.3, 1.0]), "b": np.array(-2.0)}


def tree_loss(p):
    """b^2 |w|^2 + sum(w^3): H_ww = 2 b^2 I + 6 diag(w), H_wb = 4 b w, H_bb = 2 |w|^2."""
    return p["b"] ** 2 * np.sum(p["w"] ** 2) + np.sum(p["w"] ** 3)


def tree_hvp_closed_form(p, v):
    w, b = p["w"], p["b"]
    return {"w": (2 * b ** 2 + 6 * w) * v["w"] + 4 * b * w * v["b"],
            "b": 4 * b * w @ v["w"] + 2 * np.sum(w ** 2) * v["b"]}


def test_hvp_of_a_dict_with_a_dict_tangent_is_a_dict_as_jax():
    hv = ad.hvp(tree_loss, PARAMS, TANGENT)
    exact = tree_hvp_closed_form(PARAMS, TANGENT)
    assert set(hv) == {"w", "b"} and hv["w"].shape == (2,) and np.shape(hv["b"]) == ()
    for key in exact:
        np.testing.assert_allclose(hv[key], exact[key], rtol=1e-15)
    by_jvp = ad.jvp(ad.grad(tree_loss), (PARAMS,), (TANGENT,))[1]     # JAX's definition of it
    for key in exact:
        np.testing.assert_allclose(hv[key], by_jvp[key], rtol=1e-15)
    # the tangent's keys in another order pair by key
    reordered = ad.hvp(tree_loss, PARAMS, {"b": TANGENT["b"], "w": TANGENT["w"]})
    np.testing.assert_array_equal(reordered["w"], hv["w"])


def test_the_flat_form_still_gives_a_flat_product_over_ravel():
    flat_tangent, unravel = ad.ravel(TANGENT)
    flat = ad.hvp(tree_loss, PARAMS, flat_tangent)
    assert flat.shape == (3,)
    tree = ad.hvp(tree_loss, PARAMS, TANGENT)
    np.testing.assert_array_equal(flat, ad.ravel(tree)[0])
    np.testing.assert_allclose(flat, ad.hessian(tree_loss)(PARAMS) @ flat_tangent, rtol=1e-15)


def test_hvp_of_a_list_takes_a_list_tangent_or_a_flat_one():
    point = [np.array([1.0, 2.0]), 3.0]
    loss = lambda p: np.sum(p[0] ** 2) * p[1]   # noqa: E731
    hv = ad.hvp(loss, point, [np.array([1.0, 0.0]), 1.0])      # H = [[2 p1 I, 2 p0], [2 p0^T, 0]]
    np.testing.assert_allclose(hv[0], [6.0 + 2.0, 4.0], rtol=1e-15)
    np.testing.assert_allclose(hv[1], 2.0, rtol=1e-15)
    assert isinstance(hv, list)
    np.testing.assert_allclose(ad.hvp(loss, point, [1.0, 0.0, 1.0]), [8.0, 4.0, 2.0], rtol=1e-15)


def test_a_tangent_of_another_structure_is_refused_by_name():
    with pytest.raises(ValueError, match=r"expected a dict with keys \['b', 'w'\]"):
        ad.hvp(tree_loss, PARAMS, {"w": np.ones(2)})
    with pytest.raises(ValueError, match=r"a tangent of shape \(3,\) for a primal of shape \(2,\)"):
        ad.hvp(tree_loss, PARAMS, {"w": np.ones(3), "b": 1.0})


def test_hvp_curried_is_autograds_hessian_vector_product():
    product = ad.hvp(tree_loss)
    hv = product(PARAMS, TANGENT)
    np.testing.assert_array_equal(hv["w"], ad.hvp(tree_loss, PARAMS, TANGENT)["w"])
    cube = ad.hvp(lambda x: np.sum(x ** 3))
    np.testing.assert_array_equal(cube(X, np.ones(3)), 6 * X)
    traced = ad.hvp(ad.function(lambda x: np.sum(x ** 3)))
    np.testing.assert_array_equal(traced(X, np.ones(3)), 6 * X)
    with pytest.raises(TypeError, match=r"hvp takes f, x and v"):
        ad.hvp(tree_loss, PARAMS)


def test_a_dict_tangent_hvp_inside_a_tape_is_differentiated_by_it():
    scale = ad.constant(3.0)
    with ad.GradientTape() as tape:
        tape.watch(scale)
        hv = ad.hvp(lambda p: scale * tree_loss(p), PARAMS, TANGENT)
        total = hv["w"].sum() + hv["b"]
    exact = tree_hvp_closed_form(PARAMS, TANGENT)
    assert isinstance(hv["w"], ad.Tensor)
    np.testing.assert_allclose(hv["w"].numpy(), 3 * exact["w"], rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(total, scale).numpy(), exact["w"].sum() + exact["b"], rtol=1e-14)
    tangent = {"w": ad.constant(TANGENT["w"]), "b": ad.constant(TANGENT["b"])}
    with ad.GradientTape() as tape:
        tape.watch(tangent)
        hv = ad.hvp(tree_loss, PARAMS, tangent)
        total = anp.sum(hv["w"]) + hv["b"]
    # d/dv of 1^T H v is H 1 (H symmetric), in the tangent's structure
    ones = ad.hvp(tree_loss, PARAMS, {"w": np.ones(2), "b": 1.0})
    gradient = tape.gradient(total, tangent)
    np.testing.assert_allclose(gradient["w"].numpy(), ones["w"], rtol=1e-15)


def test_the_hessian_of_a_pytree_stays_flat_and_jacobian_of_grad_is_jaxs_nested_form():
    flat = ad.hessian(tree_loss)(PARAMS)          # the contract: one (n, n) matrix over ravel
    nested = ad.jacobian(ad.grad(tree_loss))(PARAMS)
    assert flat.shape == (3, 3)
    np.testing.assert_allclose(flat[:2, :2], nested["w"]["w"], rtol=1e-15)
    np.testing.assert_allclose(flat[:2, 2], nested["w"]["b"], rtol=1e-15)
    np.testing.assert_allclose(flat[2, :2], nested["b"]["w"], rtol=1e-15)
    np.testing.assert_allclose(flat[2, 2], nested["b"]["b"], rtol=1e-15)


def test_vjp_takes_a_dict_cotangent_and_gives_dicts():
    value, vjp_fn = ad.vjp(ad.grad(tree_loss), PARAMS)
    (cotangent,) = vjp_fn(TANGENT)                # H symmetric: the VJP of the gradient is H v
    exact = tree_hvp_closed_form(PARAMS, TANGENT)
    for key in exact:
        np.testing.assert_allclose(cotangent[key], exact[key], rtol=1e-15)
