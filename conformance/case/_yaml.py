"""A hardened YAML reader that keeps line numbers and builds plain data only.

It never constructs Python objects from tags, refuses anchors and aliases (so
alias bombs cannot expand), bounds nesting depth and file size, and reports
every problem as a :class:`LoadError` carrying the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 256 * 1024
MAX_DEPTH = 32
_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}
_COLLECTION_TAGS = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
MAX_NUMBER_CHARS = 100


class LoadError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class Lines(dict):
    """Maps a path inside the document (a tuple of keys and indices) to its 1-based line."""

    def of(self, path: tuple, default: int = 1) -> int:
        while path:
            if path in self:
                return self[path]
            path = path[:-1]
        return self.get((), default)


class _Checks:
    """The checks made on every node as it is composed: no alias, no anchor, bounded depth."""

    _depth = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise LoadError(line, "YAML aliases (*name) are not allowed in case files")
        if getattr(event, "anchor", None):
            raise LoadError(line, "YAML anchors (&name) are not allowed in case files")
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LoadError(line, f"nesting deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


class _Composer(_Checks, yaml.SafeLoader):
    """The reader every file can be read with (pure Python); its messages are the ones reported."""


if getattr(yaml, "__with_libyaml__", False):
    class _FastComposer(_Checks, yaml.composer.Composer, yaml.cyaml.CParser,  # type: ignore[misc]
                        yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """The same composer and checks over libyaml's events (six times faster than the pure-Python
        scanner): reading the cases is most of what collecting them costs."""

        def __init__(self, stream: str) -> None:
            yaml.cyaml.CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)
else:  # pragma: no cover - PyYAML built without libyaml
    _FastComposer = None


def _read_fast(text: str) -> tuple[Any, Lines] | None:
    """The data of a well-formed document through libyaml's events; None for anything else, which the
    pure-Python reader then reads (so every problem is reported in its words, at its line)."""
    if _FastComposer is None or yaml.reader.Reader.NON_PRINTABLE.search(text):
        return None
    try:
        loader = _FastComposer(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            lines = Lines()
            return _to_data(loader, node, (), lines), lines
        finally:
            loader.dispose()
    except Exception:  # noqa: BLE001 - read again below, where the problem gets its message
        return None


def load(path: Path) -> tuple[Any, Lines]:
    """Read one YAML document from *path* as plain data, with the line of every node."""
    raw = path.read_bytes()
    if len(raw) > MAX_BYTES:
        raise LoadError(1, f"file is {len(raw)} bytes; case files are limited to {MAX_BYTES}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(raw.count(b"\n", 0, exc.start) + 1, "not UTF-8 text") from None
    if "\x00" in text:
        raise LoadError(text.count("\n", 0, text.index("\x00")) + 1, "binary content (NUL byte)")
    fast = _read_fast(text)
    if fast is not None:
        return fast
    try:
        loader = _Composer(text)  # the reader rejects control characters here, before parsing
    except yaml.reader.ReaderError as exc:
        raise LoadError(text.count("\n", 0, exc.position) + 1,
                        f"unacceptable character #x{exc.character:04x}: {exc.reason}") from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise LoadError(line, f"YAML syntax: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise LoadError(1, f"YAML: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        raise LoadError(1, "empty file")
    lines = Lines()
    return _to_data(loader, node, (), lines), lines


def _to_data(loader: yaml.SafeLoader, node: yaml.Node, path: tuple, lines: Lines) -> Any:
    line = lines[path] = node.start_mark.line + 1
    allowed = {_COLLECTION_TAGS[type(node)]} if type(node) in _COLLECTION_TAGS else _PLAIN_TAGS
    if node.tag not in allowed:  # a tag on a mapping or sequence is refused too, not ignored
        raise LoadError(line, f"tag {node.tag!r} is not allowed")
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _to_data(loader, key_node, path + ("<key>",), lines)
            if not isinstance(key, str):
                raise LoadError(key_node.start_mark.line + 1, f"mapping key {key!r} is not a string")
            if key in result:
                raise LoadError(key_node.start_mark.line + 1, f"duplicate key {key!r}")
            result[key] = _to_data(loader, value_node, path + (key,), lines)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_to_data(loader, item, path + (i,), lines) for i, item in enumerate(node.value)]
    if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
        # int() of a long decimal raises, and a long sexagesimal (1:2:3...) takes quadratic time
        raise LoadError(line, f"number literal longer than {MAX_NUMBER_CHARS} characters")
    try:
        return loader.construct_object(node)
    except (ValueError, OverflowError) as exc:
        raise LoadError(line, f"cannot read scalar {node.value[:40]!r}: {exc}") from None
