"""autodiff's modules import each other without a cycle, deferred imports (inside functions)
included: the graph is read from the sources, so a cycle that the import order happens to hide
is found too. The tracing package (autodiff.jit) imports neither the transforms nor the operators."""
from __future__ import annotations

from test_layering import find_cycle, import_graph


def test_autodiff_has_no_import_cycle():
    cycle = find_cycle(import_graph(("autodiff",)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_tracing_package_knows_no_transform_and_no_operator():
    graph = import_graph(("autodiff",))
    jit = {name for name in graph if name == "autodiff.jit" or name.startswith("autodiff.jit.")}
    imported = set().union(*(graph[name] for name in jit))
    assert not imported & {"autodiff.transforms", "autodiff.operators", "autodiff.function", "autodiff"}
    transforms = graph["autodiff.transforms"] | graph["autodiff.operators"]
    assert not {name for name in transforms if name.startswith("autodiff.jit") or name == "autodiff.function"}
