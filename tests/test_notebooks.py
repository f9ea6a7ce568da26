"""Every notebook runs top to bottom in a fresh kernel, and its committed cells are its source's.

The notebooks are executed on an in-memory copy (the committed files are never rewritten here);
a cell that raises, including the value checks the notebooks make with ``assert_allclose``, fails
the test. ``notebooks/build.py`` rebuilds and re-executes them for commit.
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
            "04_newton_methods", "05_input_gradient_regularization", "06_curvature_spectrum"]

_spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


def test_the_six_notebooks_and_their_sources_are_there():
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


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_in_a_fresh_kernel(name, tmp_path):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    # the kernel is this interpreter's environment (the venv CI installed the package into)
    notebook.cells.append(nbformat.v4.new_code_cell(
        f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix"))
    build.execute(notebook, tmp_path)   # raises CellExecutionError on any error
    assert all(c.execution_count for c in notebook.cells if c.cell_type == "code")
