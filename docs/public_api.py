"""The public surface of the three packages, defined once: the documentation's API reference is generated
from it (``docs/conf.py``) and the tests read it (``tests/test_doctests.py``, ``tests/test_docs.py``).

A public module's public names are its ``__all__``, else every function and class defined there whose
name has no leading underscore. ``autodiff.numpy``'s hundreds of NumPy ops carry NumPy's own meaning and
are documented by their module's docstring, not one page each.
"""
from __future__ import annotations

import importlib
import inspect

PACKAGES = ("autodiff", "optimizers", "hessopt")
PUBLIC_MODULES = ("autodiff", "autodiff.extend", "autodiff.tree", "autodiff.jit", "autodiff.implicit",
                  "autodiff.linear_solve", "hessopt", "hessopt.nn",
                  "hessopt.nn.activations", "hessopt.nn.losses", "hessopt.nn.datasets", "hessopt.regularizers",
                  "hessopt.curvature", "hessopt.plot", "hessopt.problems", "hessopt.suite", "optimizers")


def public_names(module_name: str) -> list[str]:
    """The public names of one module, in the order its ``__all__`` (or its source) gives them."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name, obj in vars(module).items() if not name.startswith("_")
                 and (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module_name]
    return list(names)
