"""Checked cases kept between runs: reading and checking a case file is most of what collecting it
costs (about a millisecond), and a catalogue changes little between runs.

A case is kept under the hash of its file's bytes and folder name (its topic, when it names none),
in a folder of the user's cache named after this package's code, so a case is only ever taken from
the cache when this very code checked these very bytes.  A file that does not check is never kept:
its problem is reported afresh each time.  A kept case is the case's own types and nothing else,
sealed with the user's own key kept outside the cache folder: whatever is planted or edited in the
folder is checked afresh.  It is pickled (read back three times faster than the JSON form it had), and
read by an unpickler that rebuilds the case's four types and refuses any other name a blob holds,
so even a sealed blob never imports or calls anything else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

from conformance.cache import code_folder, read_sealed, write_sealed
from conformance.case import _yaml
from conformance.case.index import Index
from conformance.case.load import Case, Step, Tolerance, load_case

__all__ = ["load_checked", "dump_case", "read_case"]

#: The only types a kept case is rebuilt into, by the name a pickle gives them.
_TYPES: dict[tuple[str, str], type] = {(cls.__module__, cls.__qualname__): cls
                                       for cls in (Case, Step, Tolerance, Index)}


class _CaseUnpickler(pickle.Unpickler):
    """Rebuilds the case's own types only: any other global a blob names is refused, never looked up."""

    def find_class(self, module: str, name: str) -> Any:
        cls = _TYPES.get((module, name))
        if cls is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not a type of a kept case")
        return cls


def dump_case(case: Case) -> bytes | None:
    """*case* as kept data, or None when it would not read back as the same case (a value of another type
    than the case's own: then it is not kept)."""
    try:
        data = pickle.dumps(case, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a value that cannot be pickled: the case is not kept
        return None
    again = read_case(data)  # or compared as bytes: a NaN of a case's values is not equal to itself
    same = again is not None and (again == case or pickle.dumps(again, protocol=pickle.HIGHEST_PROTOCOL) == data)
    return data if same else None


def read_case(data: bytes) -> Case | None:
    """The case kept *data* holds, or None for anything else (unreadable, a type it may not rebuild, or
    not a case)."""
    try:
        case = _CaseUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - whatever the blob is, it is not a kept case
        return None
    return case if type(case) is Case else None


def load_checked(path: Path | str, raw: bytes | None = None) -> Case:
    """``load_case(path).slim()``, from the cache when these bytes were checked before by this code.  *raw*:
    the file's bytes, where the caller has just read the whole regular file (collection looks into each)."""
    name = os.fspath(path)  # a string: pathlib interns every part of every path it parses, for the process's life
    if raw is None or len(raw) > _yaml.MAX_BYTES:
        try:
            raw = _yaml.read_bounded(name)
        except (_yaml.LoadError, OSError):
            return load_case(Path(name)).slim()  # which raises the file's problem, in its words
    kept = os.path.join(code_folder("cases"), hashlib.sha256(
        raw + b"\0" + os.path.basename(os.path.dirname(name)).encode("utf-8", "surrogateescape")).hexdigest()[:40]
        + ".case")
    data = read_sealed(kept)  # None unless this package kept it, as it kept it: then checked afresh
    case = read_case(data) if data is not None else None
    if case is not None:
        object.__setattr__(case, "path", name)  # a case of its own, just unpickled: nothing else holds it
    else:
        case = load_case(Path(name), raw).slim()
        data = dump_case(dataclasses.replace(case, path=""))
        if data is not None:
            write_sealed(kept, data)
    if data is not None:
        case.__dict__["_pickled"] = data  # what Case.pickled() would make: a worker is sent these bytes
    return case
