"""autodiff's modules import each other without a cycle, deferred imports (inside functions)
included: the graph is read from the sources, so a cycle that the import order happens to hide
is found too. The tracing package (autodiff.jit) imports neither the transforms nor the operators."""
from __future__ import annotations

import ast
import pathlib

import autodiff

ROOT = pathlib.Path(autodiff.__file__).parent


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the autodiff modules it imports anywhere in its source}."""
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
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


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
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
    assert "autodiff.jit.program" in graph["autodiff.jit.traced"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_autodiff_has_no_import_cycle():
    cycle = _cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_tracing_package_knows_no_transform_and_no_operator():
    graph = import_graph()
    jit = {name for name in graph if name == "autodiff.jit" or name.startswith("autodiff.jit.")}
    imported = set().union(*(graph[name] for name in jit))
    assert not imported & {"autodiff.transforms", "autodiff.operators", "autodiff.function", "autodiff"}
    transforms = graph["autodiff.transforms"] | graph["autodiff.operators"]
    assert not {name for name in transforms if name.startswith("autodiff.jit") or name == "autodiff.function"}
