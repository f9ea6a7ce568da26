"""Build the notebooks from their sources and execute them, saving outputs and figures.

Each notebook is written as a plain Python file in ``notebooks/src`` (the "percent" format:
``# %%`` starts a code cell, ``# %% [markdown]`` a Markdown cell whose lines start with ``# ``).
This script turns each into ``notebooks/NAME.ipynb`` and runs it top to bottom in a fresh
``python3`` kernel with the repository importable, so the saved outputs are the ones the current
code produces. Seeds are fixed in the sources; timings vary from run to run, and the numbers the
text relies on are checked within stated tolerances by ``claims.claim`` (``tests/test_notebooks.py``
checks them in the saved outputs and in a fresh run).

    python notebooks/build.py                  # every notebook
    python notebooks/build.py 02 05            # those whose names start with 02 or 05
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCES = HERE / "src"
KERNEL = "python3"
TIMEOUT = 300  # seconds per cell; every notebook takes well under a minute in all

_CELL_START = re.compile(r"^# %%(?: \[(markdown)\])?\s*$")


def cells_of(source: str) -> list:
    """The cells of a percent-format source, in order (text before the first marker is dropped)."""
    cells, kind, lines = [], None, []

    def close():
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(
                "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())))
        elif kind == "code" and text:
            cells.append(nbformat.v4.new_code_cell(text))

    for line in source.splitlines():
        match = _CELL_START.match(line)
        if match:
            close()
            kind, lines = match.group(1) or "code", []
        else:
            lines.append(line)
    close()
    return cells


def notebook_of(source_path: Path) -> nbformat.NotebookNode:
    """An unexecuted notebook from a source file, with the kernel named in its metadata."""
    notebook = nbformat.v4.new_notebook(cells=cells_of(source_path.read_text()))
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    for k, cell in enumerate(notebook.cells):   # stable ids, so rebuilding changes only outputs
        cell["id"] = f"cell-{k:02d}"
    return notebook


def kernel_environment() -> dict[str, str]:
    """The kernel's environment: the repository first on the Python path (CI installs the package,
    a checkout need not), then this folder (for ``claims``, which the notebooks import), and one
    BLAS thread unless the caller chose otherwise: the notebooks' matrices are small, and on a
    loaded 2-core machine BLAS threads waiting for each other made them up to ten times slower."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)]
                                        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    return env


def execute(notebook: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel started in ``cwd`` (see ``kernel_environment``); any error
    raises ``nbclient.exceptions.CellExecutionError``."""
    client = NotebookClient(notebook, timeout=TIMEOUT, kernel_name=KERNEL, record_timing=False,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=kernel_environment())   # keyword arguments go to the kernel's start
    return notebook


def main(prefixes: list[str]) -> None:
    for source in sorted(SOURCES.glob("*.py")):
        if prefixes and not any(source.stem.startswith(p) for p in prefixes):
            continue
        start = time.perf_counter()
        notebook = execute(notebook_of(source), HERE)
        nbformat.write(notebook, HERE / f"{source.stem}.ipynb")
        print(f"{source.stem}.ipynb: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
