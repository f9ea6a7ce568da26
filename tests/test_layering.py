"""The layering rule, checked in fresh interpreters: imports point down, never up or sideways.

``autodiff`` imports only NumPy (no scipy, no matplotlib); ``optimizers`` works on plain arrays and
never loads ``autodiff``; only ``hessopt`` joins them. And the import graph of the three packages'
modules is acyclic, deferred imports (inside functions) included: the graph is read from the
sources, so a cycle that the import order happens to hide is found too.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("autodiff", "optimizers", "hessopt")


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


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """{module: the modules of ``packages`` it imports anywhere in its source}."""
    paths = {_module_name(p): p for package in packages for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:  # "from package import module" imports the module
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base)
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph (its modules in order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_reader_finds_a_deferred_import_and_a_cycle():
    graph = import_graph()
    assert "autodiff.transforms" in graph["autodiff.operators"]
    assert "optimizers.feasible" in graph["optimizers.loop"] and "optimizers.methods" in graph["optimizers.newton"]
    assert "optimizers.methods" in graph["hessopt._derivatives"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_graph_of_the_three_packages_is_acyclic():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_graph_points_down_only():
    """No module of autodiff imports optimizers or hessopt; none of optimizers imports autodiff or
    hessopt (the fresh-interpreter check above sees only what an import loads; this one sees
    every import in the sources)."""
    graph = import_graph()
    for name, targets in graph.items():
        package = name.split(".")[0]
        above = {"autodiff": {"optimizers", "hessopt"}, "optimizers": {"autodiff", "hessopt"}}.get(package, set())
        assert not {t for t in targets if t.split(".")[0] in above}, name
