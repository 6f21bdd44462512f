"""The stored form of a record: what a results file holds, written without what the record repeats.

Every committed column holds every case, so a field written out in full in each record costs as much again
with each column; the repository must stay small enough to travel to a GPU machine
(``tests/test_repository.py``).  :func:`compact` leaves out what is known without it and :func:`expand`
puts it back when the record is read, so every reader sees the same :class:`~conformance.records.Record`:

* an observation's ``kind`` where its name says it (``value(x)``: a record of any form names every
  observation's kind, so a missing one is always this);
* a float32 observation's values at float32's shortest spelling (the same float32 numbers), and the
  relative and absolute errors at four significant figures (they are shown at three);
* a warning raised again and again with the same text at the same step: once, with how many times;
* the case file where it is ``cases/TOPIC/CASE.yaml``;
* in an exception's message, the machine's own paths (the folder of the generated program, the
  environment's ``site-packages``), which say nothing about the framework and differ from machine to
  machine, and the middle of a message longer than :data:`MAX_MESSAGE` characters (a compiler's
  traceback: its head says where, its tail what; ``conformance show`` prints it whole);
* the reference at twelve significant figures (it is judged in full before it is written);
* what most judged observations share: judged by the reference at the usual tolerance of their dtype
  (:data:`USUAL_TOLERANCE`), and often with no error at all, as ``"judged": "usual"`` or
  ``"judged": "usual, exact"`` (a key no record of the full form has).

Both are idempotent, and ``expand(compact(details)) == expand(details)`` up to the rounding and the
paths above.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["MAX_MESSAGE", "compact", "expand", "compact_case_file", "expand_case_file"]

MAX_MESSAGE = 1200
_HEAD = 700
_KIND = re.compile(r"^([a-z_]+)\(")
_SITE_PACKAGES = re.compile(r'(?<=File ")[^"\n]*?/site-packages/')
_PROGRAM_FOLDER = re.compile(r'(?<=File ")[^"\n]*?/conformance-programs-[^/"\n]*/')
_CUT = re.compile(r" …\[\d+ characters cut\]… ")
_ERRORS = ("max_abs_error", "max_rel_error")

#: dtype -> (atol, rtol): the tolerance most observations of the dtype are judged at (the judge's defaults
#: when this form was made).  Frozen: a stored file is read back by it whatever the judge's defaults become.
USUAL_TOLERANCE = {"float32": (1e-06, 1e-05), "float64": (1e-12, 1e-09)}
_JUDGED = "judged"
_USUAL, _EXACT = "usual", "usual, exact"
_WARNINGS = ("warnings", "ignored_warnings")


def _float32_text(value: Any) -> Any:
    """Floats at the shortest spelling that reads back as the same float32."""
    if isinstance(value, float) and math.isfinite(value):  # math's: NumPy's ufunc on one float costs 10x
        return float(str(np.float32(value)))
    if isinstance(value, list):
        return [_float32_text(v) for v in value]
    return value


def _figures(value: Any, figures: int = 4) -> Any:
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{figures}g}")
    if isinstance(value, list):
        return [_figures(v, figures) for v in value]
    return value


def _message(text: str) -> str:
    """The message without the machine's paths, and its middle cut where it is long."""
    text = _PROGRAM_FOLDER.sub("", _SITE_PACKAGES.sub("<site-packages>/", text))
    if len(text) <= MAX_MESSAGE or _CUT.search(text):
        return text
    tail = MAX_MESSAGE - _HEAD
    return f"{text[:_HEAD]} …[{len(text) - MAX_MESSAGE} characters cut]… {text[-tail:]}"


def _compact_observation(observation: Any) -> Any:
    if not isinstance(observation, Mapping):
        return observation
    out = dict(observation)
    named = _KIND.match(str(out.get("name", "")))
    if named and named.group(1) == out.get("kind"):
        del out["kind"]
    if out.get("dtype") == "float32" and "value" in out:
        out["value"] = _float32_text(out["value"])
    if "reference" in out:
        out["reference"] = _figures(out["reference"], 12)
    for key in _ERRORS:
        if key in out:
            out[key] = _figures(out[key])
    usual = USUAL_TOLERANCE.get(out.get("dtype"))  # type: ignore[arg-type]
    if (_JUDGED not in out and out.get("judged_by") == "reference" and usual is not None
            and (out.get("atol"), out.get("rtol")) == usual):
        for key in ("judged_by", "atol", "rtol"):
            del out[key]
        exact = all(type(out.get(key)) is float and out[key] == 0.0 for key in _ERRORS)
        if exact:
            for key in _ERRORS:
                del out[key]
        out[_JUDGED] = _EXACT if exact else _USUAL
    return out


def _expand_observation(observation: Any) -> Any:
    if not isinstance(observation, Mapping) or ("kind" in observation and _JUDGED not in observation):
        return observation  # nothing left out: as it is (a record the engine made, in its full form)
    out = dict(observation)
    if "kind" not in out:
        named = _KIND.match(str(out.get("name", "")))
        if named:
            out["kind"] = named.group(1)
    usual = USUAL_TOLERANCE.get(out.get("dtype"))  # type: ignore[arg-type]
    if out.get(_JUDGED) in (_USUAL, _EXACT) and usual is not None:
        out["judged_by"] = "reference"
        out["atol"], out["rtol"] = usual
        if out.pop(_JUDGED) == _EXACT:
            out.update(dict.fromkeys(_ERRORS, 0.0))
    return out


def _merged(warnings: list) -> list:
    """Identical warnings as one entry each, with ``times`` where there were more than one."""
    merged: dict[str, dict] = {}
    order: list[Any] = []
    for warning in warnings:
        if not isinstance(warning, Mapping):
            order.append(warning)
            continue
        key = repr(sorted((k, repr(v)) for k, v in warning.items() if k != "times"))
        if key in merged:
            merged[key]["times"] = int(merged[key].get("times", 1)) + int(warning.get("times", 1))
        else:
            merged[key] = dict(warning)
            order.append(merged[key])
    return order


def compact(details: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(details)
    if isinstance(out.get("observations"), list):
        out["observations"] = [_compact_observation(o) for o in out["observations"]]
    for key in _WARNINGS:
        if isinstance(out.get(key), list):
            out[key] = _merged(out[key])
    exception = out.get("exception")
    if isinstance(exception, Mapping) and isinstance(exception.get("message"), str):
        out["exception"] = {**exception, "message": _message(exception["message"])}
    return out


def expand(details: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(details)
    if isinstance(out.get("observations"), list):
        out["observations"] = [_expand_observation(o) for o in out["observations"]]
    return out


def compact_case_file(case_file: str | None, case: str, topic: str | None) -> str | None:
    """None (left out) where the case file is where its topic and id put it."""
    return None if topic and case_file == f"cases/{topic}/{case}.yaml" else case_file


def expand_case_file(raw: Mapping[str, Any]) -> str | None:
    if "case_file" in raw:
        return raw["case_file"]
    topic, case = raw.get("topic"), raw.get("case")
    return f"cases/{topic}/{case}.yaml" if isinstance(topic, str) and topic and isinstance(case, str) else None
