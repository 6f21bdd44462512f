"""A hardened YAML reader that keeps line numbers and builds plain data only.

It never constructs Python objects from tags, refuses anchors and aliases (so
alias bombs cannot expand), bounds nesting depth and file size, and reports
every problem as a :class:`LoadError` carrying the line.
"""

from __future__ import annotations

import os
import stat
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


_CParser = getattr(yaml.cyaml, "CParser", None) if getattr(yaml, "__with_libyaml__", False) else None


def _read_fast(text: str) -> tuple[Any, Lines] | None:
    """The data of a well-formed document, built straight from libyaml's events (no node tree; several
    times faster than composing): reading the cases is most of what collecting them costs.  None for
    anything this path does not take (an alias, an anchor, a tag, a problem of any kind), which the
    pure-Python reader then reads, so every problem is reported in its words, at its line."""
    if _CParser is None or yaml.reader.Reader.NON_PRINTABLE.search(text):
        return None
    parser = _CParser(text)
    try:
        return _build(parser)
    except Exception:  # noqa: BLE001 - read again by the pure-Python reader, where the problem gets its message
        return None
    finally:
        parser.dispose()


class _Declined(Exception):
    """Something the fast path leaves to the pure-Python reader."""


_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _build(parser: Any) -> tuple[Any, Lines]:
    """One document's data and lines from the parser's events, without recursion (depth is counted).
    (Events are told apart by their exact class: libyaml's parser makes no others.)"""
    lines = Lines()
    stack: list[list[Any]] = []  # [container, path, key or None]
    root: list[Any] = []
    if type(parser.get_event()) is not yaml.StreamStartEvent or type(parser.get_event()) is not yaml.DocumentStartEvent:
        raise _Declined()
    scalar_event, mapping_start, sequence_start = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    while True:
        event = parser.get_event()
        kind = type(event)
        if kind is yaml.DocumentEndEvent:
            break
        if kind in ends:
            _attach(stack, root, stack.pop()[0])
            continue
        if kind is yaml.AliasEvent or event.anchor is not None or len(stack) >= MAX_DEPTH:
            raise _Declined()  # (a node deeper than MAX_DEPTH, counting the document's as 1, is refused)
        if stack:
            top = stack[-1]
            container, path, key = top
            if key is None and type(container) is dict:  # this event is a key
                if kind is not scalar_event:
                    raise _Declined()
                lines[path + ("<key>",)] = event.start_mark.line + 1
                key = _scalar(event)
                if type(key) is not str or key in container:
                    raise _Declined()
                top[2] = key
                continue
            here = path + ((key if type(container) is dict else len(container)),)
        else:
            if root:
                raise _Declined()
            here = ()
        lines[here] = event.start_mark.line + 1
        if kind is scalar_event:
            value: Any = _scalar(event)
        elif kind is mapping_start or kind is sequence_start:
            if event.tag is not None:
                raise _Declined()
            stack.append([{} if kind is mapping_start else [], here, None])
            continue
        else:
            raise _Declined()
        _attach(stack, root, value)
    if type(parser.get_event()) is not yaml.StreamEndEvent or len(root) != 1:
        raise _Declined()
    return root[0], lines


def _attach(stack: list[list[Any]], root: list[Any], value: Any) -> None:
    """Put a finished value in the collection being built (under its key), or make it the document."""
    if not stack:
        root.append(value)
        return
    top = stack[-1]
    if type(top[0]) is dict:
        top[0][top[2]] = value
        top[2] = None
    else:
        top[0].append(value)


#: Scalars already read, by (tag, text, implicit): keys, op names and small numbers recur in every case,
#: and resolving a scalar (regular expressions) costs more than the rest of reading it.  Their values are
#: immutable (strings, numbers, booleans, null); emptied when it grows past _SCALARS_KEPT.
_SCALARS: dict[tuple[Any, str, Any], Any] = {}
_SCALARS_KEPT = 4096


def _scalar(event: Any) -> Any:
    key = (event.tag, event.value, event.implicit)
    value = _SCALARS.get(key, _SCALARS)
    if value is _SCALARS:
        if len(_SCALARS) >= _SCALARS_KEPT:
            _SCALARS.clear()
        value = _SCALARS[key] = _resolve_scalar(event)
    if value is _Declined:
        raise _Declined()
    return value


def _resolve_scalar(event: Any) -> Any:
    """A scalar's value, or _Declined (a tag, a type other than plain data, an overlong number)."""
    if event.tag is not None and event.tag != "!":
        return _Declined
    tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag not in _PLAIN_TAGS or (tag in _NUMBER_TAGS and len(event.value) > MAX_NUMBER_CHARS):
        return _Declined
    try:
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, event.value, event.start_mark,
                                                                                   event.end_mark, event.style))
    except Exception:  # noqa: BLE001 - left to the pure-Python reader, which reports it at its line
        return _Declined


def read_bounded(path: Path) -> bytes:
    """The bytes of a case file, refused before reading when it is not a regular file (a FIFO would block,
    a device never end) or is larger than MAX_BYTES (a sparse file of a gigabyte is never read whole)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # a FIFO opens at once
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LoadError(1, f"not a regular file ({_file_kind(info.st_mode)}); a case file must be one")
        if info.st_size > MAX_BYTES:
            raise LoadError(1, f"file is {info.st_size} bytes; case files are limited to {MAX_BYTES}")
        chunks, size = [], 0
        while size <= MAX_BYTES:  # plain reads: a file object costs more than reading a case file
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        raw = b"".join(chunks)
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:  # it grew while being read
        raise LoadError(1, f"file is over {MAX_BYTES} bytes; case files are limited to {MAX_BYTES}")
    return raw


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return kind
    return "not a plain file"


def load(path: Path, raw: bytes | None = None) -> tuple[Any, Lines]:
    """Read one YAML document from *path* as plain data, with the line of every node.  *raw*: its bytes,
    where the caller has read them already (:func:`read_bounded`'s)."""
    raw = read_bounded(path) if raw is None else raw
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
