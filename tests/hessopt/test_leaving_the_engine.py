"""hessopt.minimize on a function that stores tracked values into an ndarray: the seed returned
x = [0, 0] with success=True (the gradient was silently zero); autodiff refuses the conversion, and
minimize then takes finite differences of f and says why (issue 35)."""
import numpy as np
import pytest
from scipy.optimize import OptimizeWarning

import hessopt


def rosenbrock_through_an_array(x):
    r = np.empty(2)
    r[0] = 10 * (x[1] - x[0] ** 2)
    r[1] = 1 - x[0]
    return np.sum(r ** 2)


def rosenbrock_through_a_list(x):
    return np.sum([(10 * (x[1] - x[0] ** 2)) ** 2, (1 - x[0]) ** 2])


@pytest.mark.parametrize("method", ["newton-cg", "trust-exact"])
@pytest.mark.parametrize("fun, where", [(rosenbrock_through_an_array, r"float\(\) .*: r\[0\] = 10"),
                                        (rosenbrock_through_a_list, r"np\.asarray\(\) .*: return np\.sum\(\[")])
def test_a_function_that_drops_its_gradient_runs_on_finite_differences_and_says_why(fun, where, method):
    """The gradient is never silently zero: autodiff refuses the conversion (issue 35: the run then
    takes finite differences of f, with a warning naming the operation and the line)."""
    with pytest.warns(OptimizeWarning, match=rf"autodiff cannot follow fun: {where}"):
        result = hessopt.minimize(fun, np.zeros(2), method=method)
    assert result.success and result.derivatives == "finite differences"
    # the default relative test, 1e-8 at f ~ 0, on central differences near the end: x to ~1e-7
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)


def test_the_same_function_written_with_np_stack_reaches_the_minimum():
    def rosenbrock(x):
        return np.sum(np.stack([10 * (x[1] - x[0] ** 2), 1 - x[0]]) ** 2)
    result = hessopt.minimize(rosenbrock, np.zeros(2), method="trust-exact")
    assert result.success
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)
