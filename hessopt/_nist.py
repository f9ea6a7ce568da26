"""The 27 NIST StRD nonlinear regression problems, with their certified values.

NIST's Statistical Reference Datasets (https://www.itl.nist.gov/div898/strd/nls/nls_main.shtml, public
domain) give for each problem its data, a model, two starting points ("Start 1" far from the solution,
"Start 2" nearer) and the certified least-squares parameters, their standard deviations and the residual
sum of squares, computed in 128-bit arithmetic and printed to 11 significant digits. The files
``data/nist_strd/*.dat`` are NIST's, as NIST publishes them (taken from lmfit's copy, which only strips
trailing whitespace); ``nist_problem(name)`` reads one and attaches its model, written here from the
file's "Model:" line in plain NumPy, so autodiff can trace it.

The residual is ``y - model(b, x)`` (for Nelson, whose model is of log y, ``log(y) - model(b, x)``);
its sum of squares at the certified parameters is the certified residual sum of squares
(``tests/hessopt/test_nist.py`` checks every file and model that way).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["NIST_STRD", "NistProblem", "nist_problem"]

_DATA = Path(__file__).with_name("data") / "nist_strd"
_TWO_PI = 2 * np.pi


def _rational(b, x, numerator: int):
    """(b1 + b2 x + ... ) / (1 + b_(k+1) x + ...), the numerator's k = ``numerator`` coefficients first."""
    top = sum(b[k] * x ** k for k in range(numerator))
    bottom = 1 + sum(b[numerator + k - 1] * x ** k for k in range(1, len(b) - numerator + 1))
    return top / bottom


def _gauss(b, x):
    return (b[0] * np.exp(-b[1] * x) + b[2] * np.exp(-(x - b[3]) ** 2 / b[4] ** 2)
            + b[5] * np.exp(-(x - b[6]) ** 2 / b[7] ** 2))


def _enso(b, x):
    return (b[0] + b[1] * np.cos(_TWO_PI * x / 12) + b[2] * np.sin(_TWO_PI * x / 12)
            + b[4] * np.cos(_TWO_PI * x / b[3]) + b[5] * np.sin(_TWO_PI * x / b[3])
            + b[7] * np.cos(_TWO_PI * x / b[6]) + b[8] * np.sin(_TWO_PI * x / b[6]))


def _lanczos(b, x):
    return b[0] * np.exp(-b[1] * x) + b[2] * np.exp(-b[3] * x) + b[4] * np.exp(-b[5] * x)


def _chwirut(b, x):
    return np.exp(-b[0] * x) / (b[1] + b[2] * x)


def _misra1a(b, x):
    return b[0] * (1 - np.exp(-b[1] * x))


#: name -> model(b, x), as the file's "Model:" line writes it.
_MODELS: dict[str, Callable] = {
    "Misra1a": _misra1a,
    "Chwirut2": _chwirut,
    "Chwirut1": _chwirut,
    "Lanczos3": _lanczos,
    "Gauss1": _gauss,
    "Gauss2": _gauss,
    "DanWood": lambda b, x: b[0] * x ** b[1],
    "Misra1b": lambda b, x: b[0] * (1 - (1 + b[1] * x / 2) ** -2),
    "Kirby2": lambda b, x: _rational(b, x, 3),
    "Hahn1": lambda b, x: _rational(b, x, 4),
    "Nelson": lambda b, x: b[0] - b[1] * x[:, 0] * np.exp(-b[2] * x[:, 1]),
    "MGH17": lambda b, x: b[0] + b[1] * np.exp(-x * b[3]) + b[2] * np.exp(-x * b[4]),
    "Lanczos1": _lanczos,
    "Lanczos2": _lanczos,
    "Gauss3": _gauss,
    "Misra1c": lambda b, x: b[0] * (1 - (1 + 2 * b[1] * x) ** -0.5),
    "Misra1d": lambda b, x: b[0] * b[1] * x / (1 + b[1] * x),
    "Roszman1": lambda b, x: b[0] - b[1] * x - np.arctan(b[2] / (x - b[3])) / np.pi,
    "ENSO": _enso,
    "MGH09": lambda b, x: b[0] * (x ** 2 + x * b[1]) / (x ** 2 + x * b[2] + b[3]),
    "Thurber": lambda b, x: _rational(b, x, 4),
    "BoxBOD": _misra1a,
    "Rat42": lambda b, x: b[0] / (1 + np.exp(b[1] - b[2] * x)),
    "MGH10": lambda b, x: b[0] * np.exp(b[1] / (x + b[2])),
    "Eckerle4": lambda b, x: b[0] / b[1] * np.exp(-0.5 * ((x - b[2]) / b[1]) ** 2),
    "Rat43": lambda b, x: b[0] / (1 + np.exp(b[1] - b[2] * x)) ** (1 / b[3]),
    "Bennett5": lambda b, x: b[0] * (b[1] + x) ** (-1 / b[2]),
}

#: The problems' names in NIST's order: lower, average, then higher level of difficulty.
NIST_STRD: tuple[str, ...] = tuple(_MODELS)


@dataclass(frozen=True)
class NistProblem:
    """One NIST StRD nonlinear regression problem.

    ``x`` is (observations,) or, for Nelson's two predictors, (observations, 2); ``starts`` holds
    NIST's "Start 1" and "Start 2" as rows; ``certified`` the certified parameters and
    ``certified_sd`` their standard deviations; ``digits`` the significant digits printed (11).

    Examples
    --------
    >>> from hessopt.problems import nist_problem
    >>> problem = nist_problem("Misra1a")
    >>> problem.difficulty, problem.y.size, problem.starts[0], problem.certified
    ('lower', 14, array([5.e+02, 1.e-04]), array([2.38942129e+02, 5.50156432e-04]))
    >>> residuals = problem.residuals(problem.certified)
    >>> bool(abs(residuals @ residuals - problem.certified_rss) < 1e-10 * problem.certified_rss)
    True
    """

    name: str
    difficulty: str
    model: Callable
    x: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    certified: np.ndarray
    certified_sd: np.ndarray
    certified_rss: float
    digits: int

    def residuals(self, b):
        """The residuals y - model(b, x) (log y for Nelson) at parameters ``b``."""
        response = np.log(self.y) if self.name == "Nelson" else self.y
        return response - self.model(b, self.x)


def _significant_digits(number: str) -> int:
    return len(re.sub(r"\D", "", number.lower().split("e")[0]).lstrip("0"))


@functools.cache
def nist_problem(name: str) -> NistProblem:
    """The NIST StRD problem ``name`` (one of ``NIST_STRD``), read from NIST's file.

    Examples
    --------
    Fit it from NIST's far start and compare with the certificate:

    >>> import numpy as np
    >>> import hessopt
    >>> from hessopt.problems import nist_problem
    >>> problem = nist_problem("Rat42")
    >>> fit = hessopt.least_squares(problem.residuals, problem.starts[0], ftol=1e-14, xtol=1e-14, gtol=None)
    >>> bool(np.all(np.abs(fit.x - problem.certified) <= 1e-9 * np.abs(problem.certified)))
    True
    """
    if name not in _MODELS:
        raise ValueError(f"unknown NIST StRD problem {name!r}; choose one of {', '.join(NIST_STRD)}")
    text = (_DATA / f"{name}.dat").read_text()
    lines = text.splitlines()
    first, last = map(int, re.search(r"Data\s+\(lines (\d+) to (\d+)\)", text).groups())
    table = np.array([line.split() for line in lines[first - 1:last]], dtype=float)
    parameters = re.findall(r"^\s*b\d+\s*=\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", text, re.MULTILINE)
    values = np.array(parameters, dtype=float)
    rss = float(re.search(r"Residual Sum of Squares:\s+(\S+)", text).group(1))
    difficulty = re.search(r"(Lower|Average|Higher) Level of Difficulty", text).group(1).lower()
    x = table[:, 1] if table.shape[1] == 2 else table[:, 1:]
    return NistProblem(name, difficulty, _MODELS[name], x, table[:, 0], values[:, :2].T.copy(),
                       values[:, 2].copy(), values[:, 3].copy(), rss,
                       min(_significant_digits(row[2]) for row in parameters))
