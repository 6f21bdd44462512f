"""Checked cases kept between runs: reading and checking a case file is most of what collecting it
costs (about a millisecond), and a catalogue changes little between runs.

A case is kept under the hash of its file's bytes and folder name (its topic, when it names none),
in a folder of the user's cache named after this package's code, so a case is only ever taken from
the cache when this very code checked these very bytes.  A file that does not check is never kept:
its problem is reported afresh each time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from pathlib import Path

from conformance.cache import cache_folder, forget_other_code, harness_fingerprint, write_atomically
from conformance.case import _yaml
from conformance.case.load import Case, load_case

__all__ = ["load_checked"]


def load_checked(path: Path | str) -> Case:
    """``load_case(path).slim()``, from the cache when these bytes were checked before by this code."""
    path = Path(path)
    try:
        raw = _yaml.read_bounded(path)
    except (_yaml.LoadError, OSError):
        return load_case(path).slim()  # which raises the file's problem, in its words
    forget_other_code(cache_folder() / "cases")
    kept = cache_folder() / "cases" / harness_fingerprint() / hashlib.sha256(
        raw + b"\0" + path.parent.name.encode("utf-8", "surrogateescape")).hexdigest()[:40]
    try:
        case = pickle.loads(kept.read_bytes())
        if isinstance(case, Case):
            return dataclasses.replace(case, path=str(path))
    except Exception:  # noqa: BLE001 - none kept, or unreadable: checked afresh
        pass
    case = load_case(path).slim()
    write_atomically(kept, pickle.dumps(dataclasses.replace(case, path=""), protocol=pickle.HIGHEST_PROTOCOL))
    return case
