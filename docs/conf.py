"""Sphinx configuration of hessopt's documentation: ``python -m sphinx -W --keep-going docs docs/_build/html``.

Sphinx, because the three packages' docstrings are numpydoc and Sphinx is where numpydoc, autodoc and
autosummary live (NumPy's, SciPy's and scikit-learn's references are built the same way); myst-parser
reads the Markdown pages and myst-nb the notebooks, rendering the outputs they were saved with (the
test suite executes them, ``tests/test_notebooks.py``). All of it installs with pip (the ``docs``
extra): no pandoc, no other binary.

Two things are generated at each build, into git-ignored folders: ``api/`` (one page per public module,
its names read from ``docs/public_api.py``, so a name added to an ``__all__`` appears without an edit
here) and ``notebooks/`` (copies of ``../notebooks/*.ipynb``, so a new notebook appears too).
"""
from __future__ import annotations

import filecmp
import importlib
import inspect
import pathlib
import shutil
import sys

import numpy as np

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS)]

import public_api  # noqa: E402  (docs/ on the path first)

project = "hessopt"
author = "the hessopt developers"
copyright = "2026, the hessopt developers"
release = version = "0.1.0"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc", "myst_nb"]
exclude_patterns = ["_build"]
html_theme = "pydata_sphinx_theme"
html_title = "hessopt"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 4
nb_execution_mode = "off"        # the notebooks are saved executed; tests/test_notebooks.py runs them
nb_merge_streams = True
# The notebooks' claims (notebooks/claims.py) are saved as data for tests/test_notebooks.py beside their
# text/plain form, which is what the page shows; the data has no renderer and needs none.
suppress_warnings = ["mystnb.unknown_mime_type"]

autosummary_generate = True
autodoc_typehints = "none"       # the signature shows them; numpydoc's Parameters say them in words
autodoc_default_options = {"members": True, "show-inheritance": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
templates_path = ["_templates"]

# Methods named as ndarray's or dict's (Tensor.sum, History.items) keep those meanings and NumPy's
# docstrings: the reference documents the rest (the rule of tests/test_doctests.py).
MIRRORED = set(dir(np.ndarray)) | set(dir(dict))


def _skip_mirrored(app, what, name, obj, skip, options):
    return True if what == "class" and name in MIRRORED else None


def _write_if_changed(path: pathlib.Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


DOCUMENTED_MODULES = public_api.PUBLIC_MODULES + ("autodiff.numpy",)


def _module_page(module_name: str, documented: dict[int, str]) -> tuple[str, list[str]]:
    """One module's page: its docstring, an autosummary of its public names (a page each), its public
    submodules linked, and its re-exports of a function or class documented under an earlier name
    linked there (``hessopt.grad`` is ``autodiff.grad``: one page, and no duplicate object). Returns the
    page and the qualified names that get a page of their own."""
    module = importlib.import_module(module_name)
    lines = [module_name, "=" * len(module_name), "", f".. automodule:: {module_name}", "   :no-members:", ""]
    names = public_api.public_names(module_name) if module_name in public_api.PUBLIC_MODULES else []
    submodules = [name for name in names if f"{module_name}.{name}" in DOCUMENTED_MODULES]
    pages, reexports = [], []
    for name in names:
        obj = getattr(module, name)
        if name in submodules:
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) in documented:
            reexports.append(f"``{module_name}.{name}`` is :obj:`{documented[id(obj)]}`")
        else:
            documented.setdefault(id(obj), f"{module_name}.{name}")
            pages.append(name)
    if pages:
        lines += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in pages] + [""]
    if submodules:
        lines += ["Modules: " + ", ".join(f":doc:`{module_name}.{name}`" for name in submodules) + ".", ""]
    if reexports:
        lines += ["Also here, documented under their first name: " + "; ".join(reexports) + ".", ""]
    return "\n".join(lines), [f"{module_name}.{name}" for name in pages]


def _generate_api_pages() -> None:
    api = DOCS / "api"
    documented: dict[int, str] = {}
    pages: set[str] = set()
    for module_name in DOCUMENTED_MODULES:
        text, names = _module_page(module_name, documented)
        _write_if_changed(api / f"{module_name}.rst", text)
        pages.update(names)
    for stale in api.glob("*.rst"):   # a module or a name that is no longer public leaves no page behind
        if stale.stem not in DOCUMENTED_MODULES and stale.stem != "index":
            stale.unlink()
    for stale in (api / "generated").glob("*.rst"):
        if stale.stem not in pages:
            stale.unlink()
    index = ["API reference", "=============", "",
             "Generated from the docstrings: every public name of ``autodiff``, ``optimizers`` and "
             "``hessopt`` and of their public modules.", "", ".. toctree::", "   :maxdepth: 1", ""]
    _write_if_changed(api / "index.rst", "\n".join(index + [f"   {name}" for name in DOCUMENTED_MODULES]) + "\n")


def _copy_notebooks() -> None:
    """The saved notebooks, copied beside the pages (Sphinx reads only files under docs/)."""
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    for source in sources:
        copy = target / source.name
        if not copy.exists() or not filecmp.cmp(source, copy, shallow=False):
            shutil.copyfile(source, copy)
    for stale in set(target.glob("*.ipynb")) - {target / source.name for source in sources}:
        stale.unlink()


def setup(app):
    app.connect("autodoc-skip-member", _skip_mirrored)


_generate_api_pages()
_copy_notebooks()
