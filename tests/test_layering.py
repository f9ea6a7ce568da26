"""The layering rule, checked in fresh interpreters: imports point down, never up or sideways.

``autodiff`` imports only NumPy (no scipy, no matplotlib); ``optimizers`` works on plain arrays and
never loads ``autodiff``; only ``hessopt`` joins them.
"""
import subprocess
import sys

import pytest


def _loaded_after_import(package: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after ``import package``."""
    code = f"import sys, {package}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("package, forbidden", [
    ("autodiff", {"scipy", "matplotlib", "optimizers", "hessopt"}),
    ("optimizers", {"autodiff", "matplotlib", "hessopt"}),
])
def test_a_package_never_loads_what_sits_above_or_beside_it(package, forbidden):
    loaded = _loaded_after_import(package)
    assert package in loaded
    assert not loaded & forbidden, f"importing {package} loaded {sorted(loaded & forbidden)}"


def test_hessopt_joins_the_two_packages():
    assert {"autodiff", "optimizers", "hessopt"} <= _loaded_after_import("hessopt")
