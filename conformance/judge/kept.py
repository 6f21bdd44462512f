"""The reference service's answers kept between runs: a case's float64 reference depends on the case, this
package's code and NumPy, never on the framework a cell runs, so the columns of every framework version
(and every run of a catalogue but its first) share one computation of it.

An answer is kept under the hash of what was asked (the case's digest, which covers its steps, tolerance
and stated values, and the request, but not its time limit) and NumPy's version, in a folder of the
user's cache named after this package's code
(:func:`conformance.cache.harness_fingerprint`), sealed with the user's key like a kept case: whatever
is planted or edited there is asked for afresh.  Only an answer the reference gives whatever its limits
(``ok``: the observations; ``failed``: a step the value model cannot take) is kept, never one that ran
out of time or memory, and never one larger than :data:`MAX_KEPT_BYTES` (an observation of millions of
numbers is recomputed rather than stored).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from typing import Any, Mapping

from conformance.cache import code_folder, read_sealed, write_sealed

__all__ = ["MAX_KEPT_BYTES", "kept_answer", "keep_answer", "is_kept"]

#: The largest answer kept, as its JSON.
MAX_KEPT_BYTES = 1 << 20
#: The answers that do not depend on the limits the reference ran under.
_KEPT_STATUSES = ("ok", "failed")


@lru_cache(maxsize=None)
def _numpy_version() -> str:
    import numpy  # the service's NumPy: it runs on this interpreter

    return numpy.__version__


@lru_cache(maxsize=4096)
def _name(asked: str, case_digest: str) -> str:
    return hashlib.sha256(f"{_numpy_version()}\0{case_digest}\0{asked}".encode("utf-8")).hexdigest()[:40] + ".json"


def answer_path(request: Mapping[str, Any], case_digest: str, case_id: str = "") -> str:
    """Where the answer to *request* about the case of *case_digest* is kept (a case without a digest, not
    read from a file, has no such place: :class:`OSError`).  The float32 spread's random rounding is seeded
    by the case's id (conformance/judge/reference.py), so a spread is kept under *case_id* too: a case
    judged from the cache is judged as it would be afresh.  A string, not a ``Path``: pathlib would
    intern every file name it parses for the life of the process.  (Asked for each case: the folder and
    the names of the most recent cases are worked out once.)"""
    if not case_digest:
        raise FileNotFoundError("a case without a digest keeps no answer")
    fields = {key: value for key, value in request.items() if key != "time_limit"}
    if request.get("spread"):
        fields["seeded_by"] = case_id
    asked = json.dumps(fields, sort_keys=True) if fields else "{}"  # the plain reference: asked of each case
    return os.path.join(code_folder("references"), _name(asked, case_digest))


def is_kept(request: Mapping[str, Any], case_digest: str, case_id: str = "") -> bool:
    """Whether an answer is kept for *request* (a cheap look: :func:`kept_answer` still checks its seal)."""
    try:
        return os.path.isfile(answer_path(request, case_digest, case_id))
    except OSError:
        return False


def kept_answer(request: Mapping[str, Any], case_digest: str, case_id: str = "") -> dict[str, Any] | None:
    """The kept answer to *request*, or None (none kept, or not sealed by this user as this code kept it)."""
    try:
        data = read_sealed(answer_path(request, case_digest, case_id))
    except OSError:  # a case without a digest
        return None
    if data is None:
        return None
    try:
        answer = json.loads(data)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) and answer.get("status") in _KEPT_STATUSES else None


def keep_answer(request: Mapping[str, Any], case_digest: str, answer: Mapping[str, Any],
                case_id: str = "") -> None:
    """Keep *answer* to *request* when it is one the limits did not decide and is small enough; a cache
    that cannot be written keeps nothing."""
    if answer.get("status") not in _KEPT_STATUSES:
        return
    try:
        data = json.dumps({k: v for k, v in answer.items() if k != "id"}, allow_nan=True).encode("utf-8")
    except (TypeError, ValueError):
        return
    if len(data) > MAX_KEPT_BYTES or not case_digest:
        return
    write_sealed(answer_path(request, case_digest, case_id), data)
