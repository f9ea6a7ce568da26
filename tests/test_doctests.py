"""The docstring examples of every module run as doctests, every public name has one, and the
Python examples of the README and of the documentation pages run.

One case per module of ``autodiff``, ``optimizers`` and ``hessopt``: an example whose printed output
differs from what it shows fails here, so the examples cannot drift from the code. matplotlib draws
with Agg (no window, no display needed).
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pathlib
import pkgutil
import re
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS

# The public surface (docs/public_api.py, which the API reference is generated from): modules whose public
# names (``__all__``, else every name defined there without a leading underscore) each need a docstring
# with an "Examples" section. autodiff.numpy's hundreds of NumPy ops carry NumPy's own meaning; that
# module has one example in its module docstring instead.
_spec = importlib.util.spec_from_file_location(
    "public_api", pathlib.Path(__file__).resolve().parents[1] / "docs" / "public_api.py")
public_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(public_api)
PACKAGES, PUBLIC_MODULES = public_api.PACKAGES, public_api.PUBLIC_MODULES


def _module_names() -> list[str]:
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names.append(package)
        names += [info.name for info in pkgutil.walk_packages(module.__path__, package + ".")
                  if not info.name.endswith("__main__")]
    return sorted(names)


def _close_figures() -> None:
    """Examples draw into new figures and never show them: close them (pyplot only if loaded)."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("name", _module_names())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    _close_figures()
    assert runner.failures == 0, "".join(report)


def _public_names(name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items() if not n.startswith("_")
                 and (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name]
    return [(f"{name}.{n}", getattr(module, n)) for n in names
            if inspect.isfunction(getattr(module, n)) or inspect.isclass(getattr(module, n))]


# Methods named as ndarray's or dict's (Tensor.sum, History.items) keep those meanings; the rest say theirs.
MIRRORED = set(dir(np.ndarray)) | set(dir(dict))


def _public_methods(cls: type) -> list[tuple[str, object]]:
    return [(f"{cls.__qualname__}.{n}", obj) for n, obj in vars(cls).items()
            if not n.startswith("_") and n not in MIRRORED
            and (inspect.isfunction(obj) or isinstance(obj, property))]


def _public() -> list[tuple[str, object]]:
    by_object: dict[int, tuple[str, object]] = {}   # a re-export (hessopt.grad is autodiff.grad) counts once
    for name in PUBLIC_MODULES:
        for qualified, obj in _public_names(name):
            by_object.setdefault(id(obj), (qualified, obj))
    return sorted(by_object.values())


PUBLIC = _public()


@pytest.mark.parametrize("qualified, obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_public_names_have_an_example(qualified, obj):
    doc = inspect.getdoc(obj) or ""
    assert "\nExamples\n--------\n" in doc and ">>> " in doc, \
        f"{qualified} has no NumPy-style Examples section"
    if inspect.isclass(obj):
        bare = [method for method, member in _public_methods(obj) if not (member.__doc__ or "").strip()]
        assert not bare, f"public methods without a docstring: {bare}"


@pytest.mark.parametrize("name", PUBLIC_MODULES + ("autodiff.numpy",))
def test_public_modules_say_what_they_are(name):
    doc = inspect.getdoc(importlib.import_module(name)) or ""
    assert doc.strip(), f"module {name} has no docstring"
    if name == "autodiff.numpy":   # its ops are NumPy's: the module shows how they are used
        assert "\nExamples\n--------\n" in doc and ">>> " in doc


# --- the README and the documentation pages ---------------------------------------------------------
# Every ```python block of README.md and of docs/**/*.md runs: a page's blocks in order, in one namespace
# (a later block uses what an earlier one defined, as a reader would type them), in a scratch directory
# (a block may save a picture). A block that is deliberately not run says so on the line before it,
# ``<!-- not-run: the reason -->`` (invisible on GitHub and in the site). Output is shown in ```text
# blocks, which are not run. tests/autodiff/test_readme.py runs "Adding an op" in depth.
ROOT = pathlib.Path(__file__).resolve().parents[1]
GENERATED = ("docs/_build", "docs/api", "docs/notebooks")   # written by the docs build (docs/conf.py)
PAGES = [ROOT / "README.md"] + sorted(path for path in (ROOT / "docs").rglob("*.md")
                                      if not any(path.is_relative_to(ROOT / folder) for folder in GENERATED))
NOT_RUN = re.compile(r"<!-- not-run: \S.*-->\n$")


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """(line, code, runs) of each ```python block of a Markdown text."""
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        before = text[:match.start()]
        previous_line = before[before.rstrip("\n").rfind("\n") + 1:]
        blocks.append((before.count("\n") + 1, match.group(1), not NOT_RUN.match(previous_line)))
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(ROOT)) for page in PAGES])
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs"}
    name = page.relative_to(ROOT)
    for line, code, runs in python_blocks(page.read_text()):
        if runs:
            exec(compile(code, f"{name}:{line}", "exec"), namespace)
    _close_figures()


def test_not_run_markers_are_read():
    text = "```python\nx = 1\n```\n<!-- not-run: needs a cluster -->\n```python\nclient.submit()\n```\n"
    assert [(line, runs) for line, _, runs in python_blocks(text)] == [(1, True), (5, False)]
