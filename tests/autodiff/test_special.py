"""scipy.special on Tensors: values and the special points of its rules (the derivative checks of every
function are cases of test_ops.py), errors that name the scipy function, and autodiff's own import
never loading scipy."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.special

import autodiff as ad
import autodiff.numpy as anp

EULER_GAMMA = 0.5772156649015329


def test_closed_form_derivatives():
    # d gammaln / dx = digamma; digamma(1) = -Euler's gamma, digamma'(1) = pi^2 / 6
    assert math.isclose(ad.grad(scipy.special.gammaln)(1.0), -EULER_GAMMA, rel_tol=1e-14)
    assert math.isclose(ad.grad(ad.grad(scipy.special.gammaln))(1.0), math.pi ** 2 / 6, rel_tol=1e-13)
    assert math.isclose(ad.grad(scipy.special.erf)(0.0), 2 / math.sqrt(math.pi), rel_tol=1e-15)
    assert math.isclose(ad.grad(scipy.special.ndtri)(0.5), math.sqrt(2 * math.pi), rel_tol=1e-14)
    assert math.isclose(ad.grad(scipy.special.logit)(0.25), 1 / (0.25 * 0.75), rel_tol=1e-15)
    assert math.isclose(ad.grad(scipy.special.i1e)(0.0), 0.5, rel_tol=1e-15)


def test_xlogy_and_friends_have_zero_slope_in_y_where_x_is_zero():
    """x log y is 0 for every y on x = 0, so its y-derivative there is 0, not 0 / 0."""
    for f in (scipy.special.xlogy, scipy.special.xlog1py, scipy.special.rel_entr):
        with np.errstate(divide="ignore", invalid="ignore"):  # the x-slope there is log 0 = -inf
            g = ad.grad(lambda v, f=f: f(v[0], v[1]))(np.array([0.0, 0.0 if f is not scipy.special.xlog1py else -1.0]))
        assert g[1] == 0.0


def test_logsumexp_weights_and_sign():
    a, b = np.array([0.0, np.log(2.0)]), np.array([1.0, -1.0])     # 1 - 2 = -1
    value, sign = anp.special.logsumexp(ad.constant(a), b=ad.constant(b), return_sign=True)
    assert value.numpy() == 0.0 and sign.numpy() == -1.0
    ga, gb = ad.grad(lambda a, b: anp.special.logsumexp(a, b=b, return_sign=True)[0], (0, 1))(a, b)
    np.testing.assert_allclose(ga, [-1.0, 2.0], rtol=1e-15)   # d log|S| = b exp(a) / S
    np.testing.assert_allclose(gb, [-1.0, -2.0], rtol=1e-15)


def test_an_unsupported_scipy_special_function_is_named():
    with pytest.raises(TypeError, match=r"scipy\.special\.struve has no derivative rule"):
        ad.grad(lambda x: scipy.special.struve(1.0, x))(0.5)


@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax", "multigammaln", "polygamma"])
def test_scipy_functions_that_convert_their_input_name_our_version(name):
    call = {"multigammaln": lambda x: scipy.special.multigammaln(x, 2),
            "polygamma": lambda x: scipy.special.polygamma(1, x)}.get(name, getattr(scipy.special, name))
    with pytest.raises(TypeError, match=rf"scipy\.special\.{name} converted it.*"
                                        rf"autodiff\.numpy\.special\.{name} is its differentiable version"):
        ad.grad(lambda x: np.sum(call(x)))(np.array([2.0, 3.0]))


def test_importing_autodiff_and_its_special_module_does_not_load_scipy():
    code = "import sys, autodiff, autodiff.numpy.special; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
