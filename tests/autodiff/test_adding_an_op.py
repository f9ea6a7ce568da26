"""The "Adding an op" example of docs/guides/differentiate.md, run as written, so the page cannot drift from
the API."""
from __future__ import annotations

import pathlib
import re

import numpy as np

import autodiff as ad

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guides" / "differentiate.md"


def _adding_an_op_example() -> dict:
    """The names the Python block of the page's "Adding an op" section defines."""
    section = PAGE.read_text().split("## Adding an op", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    names: dict = {}
    exec(compile(code, str(PAGE), "exec"), names)
    return names


def test_the_documented_op_passes_the_readme_test():
    _adding_an_op_example()["test_logcosh"]()


def test_the_documented_op_has_the_closed_form_derivatives_in_both_modes():
    logcosh = _adding_an_op_example()["logcosh"]
    x0, t = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(logcosh(x)))(x0), np.tanh(x0), rtol=1e-15)
    np.testing.assert_allclose(ad.hessian(lambda x: np.sum(logcosh(x)))(x0), np.diag(1 / np.cosh(x0) ** 2),
                               rtol=1e-14)
    value, tangent = ad.jvp(logcosh, (x0,), (t,))
    np.testing.assert_allclose(value, np.log(np.cosh(x0)), rtol=1e-15)
    np.testing.assert_allclose(tangent, t * np.tanh(x0), rtol=1e-15)
