"""The package's layers read top to bottom, as the pipeline does (case -> ops -> program -> workers -> judge ->
records -> report): no module of ``conformance`` is in an import cycle.  Every import counts, at module
level, inside a function or under ``TYPE_CHECKING``: each is a link a reader follows."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "conformance"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules an import statement loads: ``from a import b`` is ``a.b`` where that is a
    module (the package ``a`` is already loaded as its parent), else ``a``."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: None if is_package else -1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    found = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module] |= _targets(module, node, path.name == "__init__.py", set(modules))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_of_the_package_is_in_an_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 80 and "conformance.ops.tensors" in graph["conformance.ops"]
    assert cycles(graph) == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles(graph))


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from conformance.case import load\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    known = {"conformance", "conformance.case", "conformance.case.load"}
    assert _targets("conformance.ops", node, False, known) == {"conformance.case.load"}
