"""Index expressions of ``getitem`` / ``setitem`` steps, parsed without eval.

Grammar: comma-separated items; each item is an integer, a loop variable, a
slice ``start:stop:step`` whose parts are optional integers, ``...`` (the dimensions
not named), ``None`` (a new dimension of size 1), or a list of integers ``[0, 2]`` or
of booleans ``[True, False]`` (advanced indexing: ``t[[0, 2]]`` reads a copy, and
writes those elements; a list of booleans picks where it is true).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Union

__all__ = ["Index", "parse_index"]

_INT = re.compile(r"-?\d+\Z")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")

# int, loop-variable name, ("slice", start, stop, step), ("list", (i, ...)) of ints or bools, ("ellipsis",),
# ("none",)
Item = Union[int, str, tuple]
_BOOLEANS = {"True": True, "False": False}


@dataclass(frozen=True)
class Index:
    items: tuple[Item, ...]

    def source(self) -> str:
        """The Python spelling, e.g. ``0:2`` or ``i, :``."""
        return ", ".join(_item_source(item) for item in self.items)

    def variables(self) -> tuple[str, ...]:
        return tuple(item for item in self.items if isinstance(item, str))

    @property
    def advanced(self) -> bool:
        """Whether an item is a list: the frameworks' (and NumPy's) advanced indexing, which reads a copy."""
        return any(isinstance(item, tuple) and item[0] == "list" for item in self.items)

    def resolve(self, env: Mapping[str, int]) -> tuple:
        """A NumPy-style index tuple, with loop variables taken from *env*."""
        out: list = []
        for item in self.items:
            if isinstance(item, tuple) and item[0] == "ellipsis":
                out.append(Ellipsis)
            elif isinstance(item, tuple) and item[0] == "none":
                out.append(None)
            elif isinstance(item, tuple) and item[0] == "list":
                out.append(list(item[1]))
            elif isinstance(item, tuple):
                out.append(slice(*item[1:]))
            elif isinstance(item, str):
                out.append(int(env[item]))
            else:
                out.append(item)
        return tuple(out)


def _item_source(item: Item) -> str:
    if isinstance(item, tuple) and item[0] == "ellipsis":
        return "..."
    if isinstance(item, tuple) and item[0] == "none":
        return "None"
    if isinstance(item, tuple) and item[0] == "list":
        return "[" + ", ".join(map(str, item[1])) + "]"
    if isinstance(item, tuple):
        parts = ["" if p is None else str(p) for p in item[1:]]
        if parts[2] == "":
            parts = parts[:2]
        return ":".join(parts)
    return str(item)


def parse_index(spec: object) -> Index:
    """Parse *spec* (an int or a string); raise ValueError naming the bad part."""
    if isinstance(spec, bool) or not isinstance(spec, (int, str)):
        raise ValueError(f"index must be an integer or a string like '0:2', not {spec!r}")
    if isinstance(spec, int):
        return Index((spec,))
    items: list[Item] = []
    for raw in _split(spec):
        part = raw.strip()
        if part == "...":
            if any(item == ("ellipsis",) for item in items):
                raise ValueError(f"index {spec!r} holds '...' twice")
            items.append(("ellipsis",))
        elif part == "None":
            items.append(("none",))
        elif part.startswith("["):
            entries = [entry.strip() for entry in part[1:-1].split(",")] if part.endswith("]") else None
            if entries and all(entry in _BOOLEANS for entry in entries):
                items.append(("list", tuple(_BOOLEANS[entry] for entry in entries)))
                continue
            if not entries or not all(_INT.match(entry) for entry in entries):
                raise ValueError(f"a list in index {spec!r} must hold integers, e.g. [0, 2], or booleans, e.g. "
                                 f"[True, False], not {part!r}")
            items.append(("list", tuple(int(entry) for entry in entries)))
        elif ":" in part:
            bounds = part.split(":")
            if len(bounds) > 3:
                raise ValueError(f"bad slice {part!r} in index {spec!r}")
            numbers: list[int | None] = []
            for bound in bounds:
                bound = bound.strip()
                if bound and not _INT.match(bound):
                    raise ValueError(f"slice bound {bound!r} in index {spec!r} is not an integer")
                numbers.append(int(bound) if bound else None)
            numbers += [None] * (3 - len(numbers))
            items.append(("slice", *numbers))
        elif _INT.match(part):
            items.append(int(part))
        elif _NAME.match(part):
            items.append(part)
        else:
            raise ValueError(f"cannot read index item {part!r} in {spec!r}")
    return Index(tuple(items))


def _split(spec: str) -> list[str]:
    """The items of *spec*: split at commas outside brackets."""
    parts, depth, current = [], 0, ""
    for char in spec:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in index {spec!r}")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise ValueError(f"unbalanced '[' in index {spec!r}")
    return parts + [current]
