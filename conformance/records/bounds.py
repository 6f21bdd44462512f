"""Caps on what one cell may write to a results file.

A 24 KB case broadcasting to 1000x10000 once wrote a 200 MB results file and
held the pytest process at 3.3 GB.  A record is evidence, not a data dump: an
array above :data:`MAX_ARRAY` elements is replaced by a summary with a digest
(enough to tell two runs apart and to see the range), text above
:data:`MAX_TEXT` characters is cut with a marker, and at most
:data:`MAX_OBSERVATIONS` observations (wrong ones first) and
:data:`MAX_WARNINGS` warnings are kept.  Applying the caps twice changes nothing.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["MAX_ARRAY", "MAX_TEXT", "MAX_OBSERVATIONS", "MAX_WARNINGS", "summarise_array", "is_summary",
           "bound_strings", "bound_details"]

MAX_ARRAY = 64
MAX_TEXT = 4096
MAX_OBSERVATIONS = 256
MAX_WARNINGS = 64
_HEAD = 8
_ARRAY_KEYS = ("value", "reference")


def _count(value: Any) -> int:
    """Leaf elements of a nested list (a scalar counts one), stopping early once over the cap."""
    if not isinstance(value, list):
        return 1
    total = 0
    for item in value:
        total += _count(item)
        if total > MAX_ARRAY:
            return total
    return total


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def summarise_array(value: list | np.ndarray) -> dict[str, Any]:
    """The summary that stands for a large array: shape, size, digest of its float64 bytes, range, head."""
    try:
        array = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError):  # ragged or non-numeric: digest the text instead
        import json

        blob = json.dumps(value, sort_keys=True, allow_nan=True).encode()
        return {"summary": True, "shape": None, "size": _count(value), "numeric": False,
                "digest": "sha256:" + hashlib.sha256(blob).hexdigest()[:16], "head": blob[:256].decode(errors="replace")}
    flat = array.reshape(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN array has no min or max
        low, high = np.nanmin(flat), np.nanmax(flat)
    return {"summary": True, "shape": list(array.shape), "size": int(array.size),
            "digest": "sha256:" + hashlib.sha256(array.tobytes()).hexdigest()[:16],
            "min": _number(low), "max": _number(high), "head": flat[:_HEAD].tolist()}


def is_summary(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("summary") is True


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    marker = f" …[cut: {len(text)} characters in all]"
    return text[: MAX_TEXT - len(marker)] + marker


_PLAIN = (int, float, bool, type(None))


def bound_strings(value: Any) -> Any:
    """*value* with every string in it cut to :data:`MAX_TEXT` characters."""
    kind = type(value)
    if kind is str:  # the commonest, checked first: a record's text fields are most of its calls
        return value if len(value) <= MAX_TEXT else _cut(value)
    if kind in _PLAIN:
        return value
    if kind is list and all(type(v) in _PLAIN for v in value):  # a row of numbers: nothing to cut
        return list(value)
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, Mapping):
        return {k: bound_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bound_strings(v) for v in value]
    return value


def _bound_observation(observation: Any) -> Any:
    if not isinstance(observation, Mapping):
        return bound_strings(observation)
    bounded = {}
    for key, value in observation.items():
        if key in _ARRAY_KEYS and isinstance(value, np.ndarray):  # a large array judged as one
            bounded[key] = summarise_array(value) if value.size > MAX_ARRAY else value.tolist()
        elif key in _ARRAY_KEYS and isinstance(value, list) and _count(value) > MAX_ARRAY:
            bounded[key] = summarise_array(value)
        else:
            bounded[key] = bound_strings(value)
    return bounded


def _kept_observations(observations: list) -> tuple[list, int]:
    """At most MAX_OBSERVATIONS, in their order, keeping wrong ones before right ones."""
    if len(observations) <= MAX_OBSERVATIONS:
        return observations, 0
    wrong = [i for i, o in enumerate(observations) if isinstance(o, Mapping) and o.get("ok") is False]
    keep = set(wrong[:MAX_OBSERVATIONS])
    for index in range(len(observations)):
        if len(keep) >= MAX_OBSERVATIONS:
            break
        keep.add(index)
    return [observations[i] for i in sorted(keep)], len(observations) - len(keep)


def bound_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """A record's details within the caps."""
    bounded = {}
    for key, value in details.items():
        if key == "observations" and isinstance(value, list):
            kept, omitted = _kept_observations(value)
            bounded[key] = [_bound_observation(o) for o in kept]
            if omitted:
                bounded["observations_omitted"] = omitted + int(details.get("observations_omitted") or 0)
        elif key == "warnings" and isinstance(value, list) and len(value) > MAX_WARNINGS:
            bounded[key] = bound_strings(value[:MAX_WARNINGS])
            bounded["warnings_omitted"] = len(value) - MAX_WARNINGS + int(details.get("warnings_omitted") or 0)
        elif key not in bounded:
            bounded[key] = bound_strings(value)
    return bounded
