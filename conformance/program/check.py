"""A static check of a generated program: every framework name it uses must exist.

An adapter spells names as strings; a typo (``torch.optim.SDG``) would make the
program raise ``AttributeError`` and read as the framework raising.  Checking
the dotted names against the installed framework turns such a slip into a
harness ``error``.  The worker checks when a program raised ``AttributeError``
(or raised inside a compiled function, which may wrap it): the only way a name
that does not resolve can show.  An API that may legitimately be absent is asked
for through ``Adapter.resolve`` while spelling, and becomes ``unsupported``.
"""

from __future__ import annotations

import ast
import types
from typing import Any, Mapping

__all__ = ["bound_names", "unresolved_names"]


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def unresolved_names(source: str, namespace: Mapping[str, Any]) -> list[str]:
    """Dotted names rooted at a module of *namespace* that do not resolve, in order of appearance."""
    missing: list[str] = []
    attributes = [node for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)]
    for node in sorted(attributes, key=lambda n: (n.lineno, n.col_offset)):
        parts = _dotted(node)
        if not parts or not isinstance(namespace.get(parts[0]), types.ModuleType):
            continue
        obj: Any = namespace[parts[0]]
        for i, part in enumerate(parts[1:], start=1):
            if not isinstance(obj, (types.ModuleType, type)):
                break  # past modules and classes, attributes are values' business
            if not hasattr(obj, part):
                name = ".".join(parts[:i + 1])
                if name not in missing:
                    missing.append(name)
                break
            obj = getattr(obj, part)
    return missing


def bound_names(source: str) -> set[str]:
    """Every name *source* binds anywhere (assignments, imports, definitions, loop and ``with`` targets,
    parameters): a name a converted program lacks although the harness's program bound it was lost by the
    converter; one the harness's program never bound is the harness's own slip."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names
