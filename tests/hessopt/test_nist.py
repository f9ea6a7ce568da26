"""The NIST StRD nonlinear regression problems: the files and models against their certificates, and
hessopt.least_squares' fits from both of NIST's starting points against the certified parameters.

Tolerances. The certified parameters are printed to ``digits`` (11) significant digits, so each lies
within half a unit of its last digit of the exact least-squares solution b* of the data as printed;
10^-(digits - 1) relative, the brief's "certified digits", leaves at least as much again for the fit.
A fit in float64 cannot do better than the rounding floor of its fixed point: the residuals r = y - f(b)
carry rounding errors |dr_i| <= 16 u (|y_i| + |f_i|) (the decimal data's conversion, a model of at most
a dozen operations with correctly rounded exp/log, the subtraction; u = eps / 2), which move the
least-squares solution by |J^+| |dr| to first order (Higham 2002, sec. 20.1, at the solution, where the
second-order term of the nonlinear model is below the first's at these residuals). The Gauss-Newton
refinement stops where two successive steps are noise of that size, so a fit may lie twice that floor
from b*. Each parameter is held to 10^-(digits - 1) |b_i| + 2 (|J^+| |dr|)_i; the floor is below
10^-10 relative on every problem but Lanczos1-3 and Bennett5 (cond(J) up to 6e4 after scaling its
columns), where it reaches 6.6e-11.
"""
import numpy as np
import pytest

import autodiff as ad
import hessopt
from hessopt.problems import NIST_STRD, nist_problem

U = np.finfo(np.float64).eps / 2

def response(problem) -> np.ndarray:
    return np.log(problem.y) if problem.name == "Nelson" else problem.y


def rounding_floor(problem) -> np.ndarray:
    """|J^+| |dr| at the certified parameters, dr the residuals' rounding bound (module docstring)."""
    b = problem.certified
    jacobian = np.asarray(ad.jacobian(problem.residuals)(b))
    rounding = 16 * U * (np.abs(response(problem)) + np.abs(np.asarray(problem.model(b, problem.x))))
    return np.abs(np.linalg.pinv(jacobian)) @ rounding


def half_unit(problem) -> np.ndarray:
    """Half a unit in the last printed digit of each certified parameter."""
    exponent = np.floor(np.log10(np.abs(problem.certified)))
    return 0.5 * 10.0 ** (exponent - (problem.digits - 1))


def test_the_collection_is_nists_27_problems_in_its_three_levels():
    levels = [nist_problem(name).difficulty for name in NIST_STRD]
    assert len(NIST_STRD) == 27
    assert (levels.count("lower"), levels.count("average"), levels.count("higher")) == (8, 11, 8)
    nelson = nist_problem("Nelson")
    assert nelson.x.shape == (128, 2) and nelson.starts.shape == (2, 3) and nelson.digits == 11


@pytest.mark.parametrize("name", NIST_STRD)
def test_certified_parameters_give_the_certified_residual_sum_of_squares(name):
    """Each file's data and the model written here against the certificate: at the printed
    parameters the sum of squares is the certified one, within what the parameters' rounding moves
    it (second order at a minimum: ||J h||^2, h the half units), its own rounding and the printed
    sum's."""
    problem = nist_problem(name)
    b = problem.certified
    r = problem.residuals(b)
    jacobian = np.asarray(ad.jacobian(problem.residuals)(b))
    parameters_rounding = np.linalg.norm(np.abs(jacobian) @ half_unit(problem)) ** 2
    residual_rounding = 16 * U * np.linalg.norm(np.abs(response(problem)) + np.abs(problem.model(b, problem.x)))
    bound = (parameters_rounding + 2 * np.linalg.norm(r) * residual_rounding
             + 0.5 * 10.0 ** (np.floor(np.log10(problem.certified_rss)) - 10))
    assert abs(r @ r - problem.certified_rss) <= bound
    if name != "Lanczos1":   # its sum, 1.4e-25, is below what 11 digits of the parameters resolve
        assert bound <= 1e-8 * problem.certified_rss


def test_rounding_floors_stay_below_the_certificates_digits_where_the_docstring_says():
    floors = {name: np.max(rounding_floor(nist_problem(name)) / np.abs(nist_problem(name).certified))
              for name in NIST_STRD}
    assert {name for name, floor in floors.items() if floor > 1e-11} == {"Lanczos1", "Lanczos2", "Lanczos3",
                                                                          "Bennett5"}
    assert max(floors.values()) < 1e-10


@pytest.mark.parametrize("start", [1, 2])
@pytest.mark.parametrize("name", NIST_STRD)
def test_least_squares_reaches_the_certified_parameters(name, start):
    problem = nist_problem(name)
    result = hessopt.least_squares(problem.residuals, problem.starts[start - 1],
                                   ftol=None, xtol=None, gtol=1e-15, max_nfev=2000)
    tolerance = 10.0 ** -(problem.digits - 1) * np.abs(problem.certified) + 2 * rounding_floor(problem)
    np.testing.assert_array_less(np.abs(result.x - problem.certified), tolerance)


def test_mgh10_down_its_valley_with_the_default_tolerances_is_not_a_success():
    """Down MGH10's valley b1 -> 0 (b1 exp(b2 / (x + b3)) fits with b1 = 2e-45, b2 = 3.6e5, where
    Levenberg-Marquardt with Nielsen's damping went from start 1, the sum of squares 1.7e4 times the
    certified one), the run goes on to max_nfev without success, as scipy's 'lm' from there: it once
    reported ftol success at cost 5.8e8, the steps, solved on J's unscaled columns, 2e17 against 4,
    having lost the short columns' directions."""
    problem = nist_problem("MGH10")
    valley = np.array([2.15654696e-45, 3.55903102e+05, 3.09154463e+03])
    result = hessopt.least_squares(problem.residuals, valley, max_nfev=2000)
    assert np.max(np.abs(result.x - problem.certified) / np.abs(problem.certified)) > 1
    assert not result.success and result.status == 0


def test_an_unknown_name_is_refused_with_the_names():
    with pytest.raises(ValueError, match="unknown NIST StRD problem 'Misra1e'.*Misra1a"):
        nist_problem("Misra1e")
