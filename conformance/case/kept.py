"""Checked cases kept between runs: reading and checking a case file is most of what collecting it
costs (about a millisecond), and a catalogue changes little between runs.

A case is kept under the hash of its file's bytes and folder name (its topic, when it names none),
in a folder of the user's cache named after this package's code, so a case is only ever taken from
the cache when this very code checked these very bytes.  A file that does not check is never kept:
its problem is reported afresh each time.  A kept case is data (JSON of the case's own types, each
named, nothing else rebuilt), never code, sealed with the user's own key kept outside the cache folder:
whatever is planted or edited in the folder is checked afresh.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.cache import cache_folder, forget_other_code, harness_fingerprint, seal, unseal, write_atomically
from conformance.case import _yaml
from conformance.case.index import Index
from conformance.case.load import Case, Step, Tolerance, load_case

__all__ = ["load_checked", "dump_case", "read_case"]

#: The only types a kept case is rebuilt into.
_TYPES: dict[str, type] = {cls.__name__: cls for cls in (Case, Step, Tolerance, Index)}


class _NotKept(ValueError):
    """A value that is not a kept case."""


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _TYPES.get(name) is not type(value):
            raise _NotKept(f"a {name} is not kept")
        return {"type": name, "fields": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"tuple": [_encode(item) for item in value]}
    if isinstance(value, list):
        return {"list": [_encode(item) for item in value]}
    if isinstance(value, Mapping):
        return {"map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise _NotKept(f"a {type(value).__name__} is not kept")


#: What JSON gives for a scalar: kept as it is.
_SCALARS = frozenset({type(None), bool, int, float, str})


def _decode(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:  # most of a case's nodes (its literals' numbers): one look-up each
        return value
    if kind is dict:  # one look-up per form, no set built per node
        if len(value) == 2 and "fields" in value:
            cls, fields = _TYPES.get(value.get("type")), value["fields"]
            if cls is not None and type(fields) is dict:  # noqa: E721
                return cls(**{name: _decode(item) for name, item in fields.items()})
        elif len(value) == 1:
            form, items = next(iter(value.items()))
            if type(items) is list:  # noqa: E721
                if form == "tuple":
                    return tuple([_decode(item) for item in items])
                if form == "list":
                    return [_decode(item) for item in items]
                if form == "map":
                    return {_decode(k): _decode(v) for k, v in items}
        raise _NotKept("an object of no kept form")
    raise _NotKept(f"a {kind.__name__} of no kept form")


def dump_case(case: Case) -> bytes | None:
    """*case* as kept data, or None when it would not read back as the same case (then it is not kept)."""
    try:
        data = json.dumps(_encode(case), allow_nan=True).encode("utf-8")
    except _NotKept:
        return None
    return data if read_case(data) == case else None


def read_case(data: bytes) -> Case | None:
    """The case kept *data* holds, or None for anything else (unreadable, or not a case)."""
    try:
        case = _decode(json.loads(data))
    except (ValueError, TypeError, RecursionError):
        return None
    return case if isinstance(case, Case) else None


def load_checked(path: Path | str) -> Case:
    """``load_case(path).slim()``, from the cache when these bytes were checked before by this code."""
    path = Path(path)
    try:
        raw = _yaml.read_bounded(path)
    except (_yaml.LoadError, OSError):
        return load_case(path).slim()  # which raises the file's problem, in its words
    forget_other_code(cache_folder() / "cases")
    kept = cache_folder() / "cases" / harness_fingerprint() / (hashlib.sha256(
        raw + b"\0" + path.parent.name.encode("utf-8", "surrogateescape")).hexdigest()[:40] + ".json")
    try:
        data = unseal(kept.read_bytes())  # None unless this package kept it, as it kept it
    except OSError:  # none kept: checked afresh
        data = None
    case = read_case(data) if data is not None else None
    if case is not None:
        return dataclasses.replace(case, path=str(path))
    case = load_case(path).slim()
    data = dump_case(dataclasses.replace(case, path=""))
    sealed = seal(data) if data is not None else None
    if sealed is not None:
        write_atomically(kept, sealed)
    return case
