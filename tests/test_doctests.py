"""The docstring examples of every module run as doctests, every public name has one, and the
README's complete Python examples run.

One case per module of ``autodiff``, ``optimizers`` and ``hessopt``: an example whose printed output
differs from what it shows fails here, so the examples cannot drift from the code. matplotlib draws
with Agg (no window, no display needed).
"""
from __future__ import annotations

import ast
import builtins
import doctest
import importlib
import inspect
import pathlib
import pkgutil
import re
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

PACKAGES = ("autodiff", "optimizers", "hessopt")
OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS

# The public surface: modules whose public names (``__all__``, else every name defined there without a
# leading underscore) each need a docstring with an "Examples" section. autodiff.numpy's hundreds of
# NumPy ops carry NumPy's own meaning; that module has one example in its module docstring instead.
PUBLIC_MODULES = ("autodiff", "autodiff.extend", "autodiff.tree", "autodiff.jit", "autodiff.implicit",
                  "autodiff.linear_solve", "hessopt", "hessopt.nn",
                  "hessopt.nn.activations", "hessopt.nn.losses", "hessopt.nn.datasets", "hessopt.regularizers",
                  "hessopt.curvature", "hessopt.plot", "hessopt.problems", "hessopt.suite", "optimizers")


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


# --- the README ------------------------------------------------------------------------------------
# A ```python block that defines every name it uses is a complete program, and runs here (in a scratch
# directory: it may save a picture). A block that uses names from the surrounding prose (``f``, ``x0``,
# ``model``) is a fragment and is not run; tests/autodiff/test_readme.py runs "Adding an op" in depth.
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _readme_blocks() -> list[tuple[int, str]]:
    text = README.read_text()
    return [(text[:match.start()].count("\n") + 1, match.group(1))
            for match in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)]


def _undefined_names(code: str) -> set[str]:
    """Names the code reads but never binds (by assignment, import, def, class or parameter)."""
    tree = ast.parse(code)
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return read - bound


COMPLETE_BLOCKS = [(line, code) for line, code in _readme_blocks() if not _undefined_names(code)]


@pytest.mark.parametrize("line, code", COMPLETE_BLOCKS,
                         ids=[f"README.md:{line}" for line, _ in COMPLETE_BLOCKS])
def test_readme_examples_run(line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "readme"})
    _close_figures()
