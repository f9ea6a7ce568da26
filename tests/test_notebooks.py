"""Every notebook runs top to bottom in a fresh kernel, its committed cells are its source's, and
the numbers its text relies on come out of the fresh run, and are saved, as the text states them.

The notebooks are executed on an in-memory copy (the committed files are never rewritten here);
a cell that raises, including the value checks the notebooks make with ``assert_allclose`` and
``claims.claim``, fails the test. The fresh run must show the saved claims, and each saved value
must lie within the claim's tolerance of the text's number, as the fresh one does.
``notebooks/build.py`` rebuilds and re-executes them for commit.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = ["01_gradient_tape", "02_hessian_vector_products", "03_jacobians_and_hessians",
            "04_newton_methods", "05_input_gradient_regularization", "06_curvature_spectrum",
            "07_bound_constraints", "08_derivatives_of_solutions",
            "09_fitting_an_ode_model", "10_constrained_optimization"]



def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load("notebook_build", NOTEBOOKS / "build.py")
claims = _load("notebook_claims", NOTEBOOKS / "claims.py")
# the notebooks whose text rests on measured numbers: each must check them with claim()
WITH_CLAIMS = ["03_jacobians_and_hessians", "04_newton_methods", "05_input_gradient_regularization",
               "06_curvature_spectrum", "07_bound_constraints", "08_derivatives_of_solutions",
               "10_constrained_optimization"]


def claims_of(notebook: nbformat.NotebookNode) -> dict[str, dict]:
    """The claims a notebook's outputs show, by name, in order."""
    shown = [output["data"][claims.MIME] for cell in notebook.cells if cell.cell_type == "code"
             for output in cell.outputs if claims.MIME in output.get("data", {})]
    by_name = {c["name"]: c for c in shown}
    assert len(by_name) == len(shown), "two claims share a name"
    return by_name


def test_a_claim_holds_within_its_tolerance_or_fails(capsys):
    assert claims.claim("x", 0.104, 0.1, atol=0.005) == 0.104
    assert "✓ x = 0.104 (the text says 0.1 ± 0.005)" in capsys.readouterr().out
    assert claims.claim("y", 99.0, 100.0, rtol=0.01) == 99.0
    with pytest.raises(AssertionError, match="x = 0.106, not within 0.005 of the 0.1 the text says"):
        claims.claim("x", 0.106, 0.1, atol=0.005)
    with pytest.raises(AssertionError):
        claims.claim("nan", float("nan"), 0.1, atol=1.0)
    with pytest.raises(ValueError, match="positive rtol or atol"):
        claims.claim("z", 1.0, 1.0)


def test_the_ten_notebooks_and_their_sources_are_there():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED
    assert sorted(p.stem for p in build.SOURCES.glob("*.py")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_built_from_its_source_with_outputs(name):
    """The committed cells are the source's (rebuild with build.py after editing a source), and
    every code cell was executed (none is saved without its run)."""
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    fresh = build.notebook_of(build.SOURCES / f"{name}.py")
    assert [(c.cell_type, c.source) for c in committed.cells] == \
        [(c.cell_type, c.source) for c in fresh.cells]
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert any(o.get("data", {}).get("image/png") for c in code for o in c.outputs), \
        "every notebook shows at least one figure"
    assert bool(claims_of(committed)) == (name in WITH_CLAIMS)


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_in_a_fresh_kernel_and_its_claims_match_the_saved_ones(name, tmp_path):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    saved = claims_of(notebook)
    # the kernel is this interpreter's environment (the venv CI installed the package into)
    notebook.cells.append(nbformat.v4.new_code_cell(
        f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix"))
    build.execute(notebook, tmp_path)   # raises CellExecutionError on any error
    assert all(c.execution_count for c in notebook.cells if c.cell_type == "code")
    fresh = claims_of(notebook)
    assert list(fresh) == list(saved), "the saved notebook shows other claims: rebuild it"
    # The fresh value is within the claim's tolerance of the text's number (the claim cell asserts it);
    # so must the saved one be, with the text's number unchanged. They are not compared with each other:
    # a measured number's tolerance is its spread about the text's number over kernels, threads and
    # seeds, so two runs on two machines may differ by twice it. A tolerance computed from a run's own
    # residuals (a stopping test's bound) belongs to that run: the saved value is held to the saved one.
    for claim_name, now in fresh.items():
        then = saved[claim_name]
        assert then["expected"] == now["expected"], f"{claim_name}: the text's number changed: rebuild"
        assert abs(then["value"] - then["expected"]) <= then["tolerance"], \
            f"{claim_name}: {then['value']:.6g} saved, not within its {then['tolerance']:.3g} of the text's " \
            f"{then['expected']:.6g} (now {now['value']:.6g} within {now['tolerance']:.3g})"
