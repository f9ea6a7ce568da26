"""hessopt.minimize on a function that stores tracked values into an ndarray: the seed returned
x = [0, 0] with success=True (the gradient was silently zero); now the run stops with the reason."""
import numpy as np
import pytest

import hessopt


def rosenbrock_through_an_array(x):
    r = np.empty(2)
    r[0] = 10 * (x[1] - x[0] ** 2)
    r[1] = 1 - x[0]
    return np.sum(r ** 2)


def rosenbrock_through_a_list(x):
    return np.sum([(10 * (x[1] - x[0] ** 2)) ** 2, (1 - x[0]) ** 2])


@pytest.mark.parametrize("method", ["newton-cg", "trust-exact"])
def test_minimize_refuses_a_function_that_drops_its_gradient(method):
    with pytest.raises(ValueError) as raised:
        hessopt.minimize(rosenbrock_through_an_array, np.zeros(2), method=method)
    assert "losing its gradient" in str(raised.value.__cause__)
    with pytest.raises(TypeError, match=r"np\.stack"):
        hessopt.minimize(rosenbrock_through_a_list, np.zeros(2), method=method)


def test_the_same_function_written_with_np_stack_reaches_the_minimum():
    def rosenbrock(x):
        return np.sum(np.stack([10 * (x[1] - x[0] ** 2), 1 - x[0]]) ** 2)
    result = hessopt.minimize(rosenbrock, np.zeros(2), method="trust-exact")
    assert result.success
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)
