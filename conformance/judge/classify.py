"""Judging: compare what a framework did with the reference and name the outcome.

Pure functions over plain data, so they are tested without any framework, and
linear in the number of observations.

Default tolerances (per observed dtype, ``np.isclose`` form ``|obs - ref| <=
atol + rtol * |ref|``):

* float32: rtol 1e-5, atol 1e-6.  A float32 op rounds with relative error at
  most 2**-24 (6e-8); the short programs in cases chain tens of ops, so honest
  float32 results stay within ~1e-6.  Wrong gradients from in-place hazards can
  be as small as 1e-4 relative: 1e-5 keeps a 10x margin on both sides.
* float64: rtol 1e-9, atol 1e-12, for the same reason with 2**-53.
* integers and booleans: exact.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from conformance.case.model import MEASURED, Case, Tolerance
from conformance.outcomes import OUTCOMES
from conformance.ops import OBSERVATIONS, OPS

__all__ = ["OUTCOMES", "Partly", "Unjudged", "classify", "compare", "default_tolerance"]


_DEFAULTS = {"float32": Tolerance(1e-5, 1e-6), "float16": Tolerance(1e-2, 1e-3),
             "bfloat16": Tolerance(1e-2, 1e-3), "float64": Tolerance(1e-9, 1e-12)}


@dataclass(frozen=True)
class Unjudged:
    """A reference observation the reference cannot give, and why (elements a growing ``resize_`` left
    undetermined): the framework's value is recorded, not judged."""

    reason: str


@dataclass(frozen=True)
class Partly:
    """A reference value some of whose elements a growing ``resize_`` left undetermined (memory no one has
    written), which are not judged, or one write gave several values in no defined order (*any_of*: flat
    index -> those values), which may equal any of them; the other elements are judged as usual."""

    value: Any
    undetermined: tuple[int, ...]
    any_of: Mapping[int, tuple[float, ...]] = field(default_factory=dict)

    def judge(self, observed: Mapping[str, Any], tolerance: Tolerance | None) -> dict[str, Any]:
        reference = np.asarray(self.value, dtype=np.float64).reshape(-1)
        value = observed.get("value")
        flat = None if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
        keep = np.ones(reference.size, dtype=bool)
        keep[list(self.undetermined)] = False
        keep[list(self.any_of)] = False
        if flat is None or flat.size != reference.size:
            result = compare(observed, self.value, tolerance)
        else:
            result = compare({**observed, "value": flat[keep].tolist()}, reference[keep].tolist(), tolerance)
            strays = [i for i, values in sorted(self.any_of.items())
                      if not any(compare({**observed, "value": [flat[i]]}, [v], tolerance)["ok"] for v in values)]
            if strays:  # each is as far off as the nearest value written there
                nearest = [min((float(abs(flat[i] - v)), float(abs(flat[i] - v) / max(abs(v), sys.float_info.min)))
                               for v in self.any_of[i]) for i in strays]
                stray = (f"element(s) {strays[:10]} hold none of the values written there "
                         f"(any of {[list(self.any_of[i]) for i in strays[:3]]} is right)")
                result.update(ok=False, reason=stray if "reason" not in result else f"{result['reason']}; {stray}",
                              max_abs_error=max(result.get("max_abs_error") or 0.0, *(a for a, _ in nearest)),
                              max_rel_error=max(result.get("max_rel_error") or 0.0, *(r for _, r in nearest)))
        listed = np.empty(reference.size, dtype=object)  # element by element: a list of values stays one
        listed[:] = reference.tolist()
        for i in self.undetermined:
            listed[i] = None
        for i, values in self.any_of.items():
            listed[i] = {"any_of": list(values)}
        shape = np.shape(self.value)
        result["reference"] = listed.reshape(shape).tolist() if shape else listed[0]
        if self.undetermined:
            result["undetermined_elements"] = list(self.undetermined)
        if self.any_of:
            result["any_of_elements"] = sorted(self.any_of)
        return result


def default_tolerance(dtype: str) -> Tolerance:
    return _DEFAULTS.get(dtype, Tolerance(0.0, 0.0))


#: How many times the float32 spread of a value (:func:`conformance.judge.reference.float32_spread`) its
#: error may be: a framework's float32 kernels round differently from the reference's float32 runs, by
#: an ulp or two at each step, so its result may lie a little farther out than theirs.
SPREAD_FACTOR = 2.0


def compare(observed: Mapping[str, Any], reference: Any, tolerance: Tolerance | None,
            spread: Any = None) -> dict[str, Any]:
    """One judged observation against its reference value.  *spread*: how far float32 arithmetic can
    move each element of the reference; the error may be that much larger (times SPREAD_FACTOR)."""
    value = observed.get("value")
    tol = tolerance or default_tolerance(observed.get("dtype", "float64"))
    flat = _flat_pair(value, reference)
    allowances = None if flat is None or spread is None else _flat_allowances(spread, len(flat[1]))
    if flat is not None and (spread is None or allowances is not None):
        result = {"reference": flat[2], **_compare_flat(flat[0], flat[1], tol, allowances), "rtol": tol.rtol,
                  "atol": tol.atol}
        if allowances is not None:
            result["float32_spread"] = float(np.max(allowances, initial=0.0)) / SPREAD_FACTOR  # as below
            if result["ok"] and not _compare_flat(flat[0], flat[1], tol)["ok"]:
                result["note"] = _within_spread_note(result["float32_spread"])
        return result
    result: dict[str, Any] = {"ok": False, "reference": None if reference is None else _as_listed(reference)}
    if reference is None and value is not None and not np.any(np.asarray(value, dtype=np.float64)):
        result.update(ok=True, note="zeros where the reference has no gradient (None)")
        return result
    if reference is None or value is None:
        result["ok"] = reference is None and value is None
        if not result["ok"]:
            result["reason"] = ("the framework gives no gradient (None) where the reference has one"
                                if value is None else "the framework gives a value where the reference has None")
        return result
    obs = np.asarray(value, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if obs.shape != ref.shape:
        if obs.size != ref.size or np.squeeze(obs).shape != np.squeeze(ref).shape:
            result["reason"] = f"shape {list(obs.shape)} where the reference has {list(ref.shape)}"
            return result
        result["shape_note"] = f"shape {list(obs.shape)}, reference {list(ref.shape)}"
        obs = obs.reshape(ref.shape)
    allowance = None
    if spread is not None:
        allowance = SPREAD_FACTOR * np.maximum(np.asarray(spread, dtype=np.float64), 0.0)  # as _flat_allowances
        if allowance.size != ref.size:
            allowance = None
        else:
            allowance = allowance.reshape(ref.shape)
    result.update(_compare_arrays(obs, ref, tol, allowance), rtol=tol.rtol, atol=tol.atol)
    if allowance is not None:
        result["float32_spread"] = float(np.max(allowance, initial=0.0)) / SPREAD_FACTOR
        if result["ok"] and not _compare_arrays(obs, ref, tol)["ok"]:
            result["note"] = _within_spread_note(result["float32_spread"])
    return result


def _within_spread_note(spread: float) -> str:
    return (f"within float32 rounding of the reference: the program computed in float32 moves it by up to "
            f"{spread:.3g} (the error may be {SPREAD_FACTOR:g} times that), as every float32 program with these "
            f"values does")


def _flat_allowances(spread: Any, size: int) -> list[float] | None:
    """What each of *size* elements may miss by beyond the tolerance (SPREAD_FACTOR times its spread), as
    :func:`compare` takes it from NumPy, where *spread* is a number or a list of numbers of that many finite
    elements; None for anything else, which NumPy compares.  A spread below 0 allows nothing: an allowance
    loosens the tolerance, never tightens it (an exact value stays right)."""
    numbers: list[float] = []
    if type(spread) in _NUMBER_TYPES:
        numbers.append(float(spread))
    elif _flatten(spread, numbers) is None:
        return None
    if len(numbers) != size or not all(map(math.isfinite, numbers)):
        return None
    return [SPREAD_FACTOR * max(0.0, number) for number in numbers]  # 0.0 for -0.0, as np.maximum


def _as_listed(value: Any) -> Any:
    """A reference value for the record: a list where it is small; a large array stays an array (the
    record keeps a summary of it, records/bounds.py), never a list of a million Python floats."""
    array = np.asarray(value, dtype=np.float64)
    return array if array.size > FLAT_LIMIT else array.tolist()


def _compare_arrays(obs: np.ndarray, ref: np.ndarray, tol: Tolerance,
                    allowance: np.ndarray | None = None) -> dict[str, Any]:
    """Whether *obs* is close to *ref* (``np.isclose``, NaN equal to NaN, finite only where *ref* is), and
    the largest absolute and relative errors (0 where both are the same NaN or infinity).  *allowance*:
    an error each element may have beyond the tolerance."""
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(obs - ref)
        same_special = (np.isnan(obs) & np.isnan(ref)) | (np.isinf(obs) & (obs == ref))
        abs_err = np.where(same_special, 0.0, abs_err)
        with np.errstate(divide="ignore"):
            rel_err = np.where(ref != 0, abs_err / np.abs(ref), np.where(abs_err == 0, 0.0, np.inf))
        atol = tol.atol if allowance is None else tol.atol + allowance
        # np.isclose's test, written out: NumPy 1.x's isclose cannot take an array atol (the allowance) where
        # a value is not finite
        within = np.abs(obs - ref) <= atol + tol.rtol * np.abs(ref)
        close = np.where(np.isfinite(obs) & np.isfinite(ref), within, same_special)
    return {"ok": bool(close.all()), "max_abs_error": float(np.nan_to_num(abs_err, nan=np.inf).max(initial=0.0)),
            "max_rel_error": float(np.nan_to_num(rel_err, nan=np.inf).max(initial=0.0))}


#: Observations up to this many numbers (a flat list, or nested lists of one shape) are compared in plain
#: Python (:func:`_compare_flat`): most are a few numbers, where a dozen NumPy calls cost more than the
#: comparison.
FLAT_LIMIT = 64
_NUMBER_TYPES = (float, int)
_LARGEST = sys.float_info.max


def _flat_pair(value: Any, reference: Any) -> tuple[list[float], list[float], Any] | None:
    """Both as float lists, and the reference as the record gives it, when both are numbers or both nested
    lists of numbers of one shape (at most FLAT_LIMIT numbers); None for anything else, which NumPy compares."""
    if type(value) in _NUMBER_TYPES and type(reference) in _NUMBER_TYPES:
        return [float(value)], [float(reference)], float(reference)
    if type(value) is list and type(reference) is list:
        obs: list[float] = []
        ref: list[float] = []
        shape = _flatten(value, obs)
        if shape is not None and _flatten(reference, ref) == shape:
            return obs, ref, _nested(ref, shape)
    return None


def _flatten(value: Any, out: list[float]) -> tuple[int, ...] | None:
    """The shape of *value*, a list of numbers or of such lists, its numbers appended to *out* as floats;
    None for anything else (a ragged list, another type, more than FLAT_LIMIT numbers in *out*)."""
    if type(value) is not list:
        return None
    if not value or type(value[0]) is not list:
        if len(out) + len(value) > FLAT_LIMIT or not all(type(v) in _NUMBER_TYPES for v in value):
            return None
        out.extend(map(float, value))
        return (len(value),)
    shape = None
    for item in value:
        inner = _flatten(item, out)
        if inner is None or (shape is not None and inner != shape):
            return None
        shape = inner
    return (len(value), *shape) if shape is not None else None


def _nested(flat: list[float], shape: tuple[int, ...]) -> Any:
    """*flat* in *shape* (what ``tolist()`` of the array gives)."""
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _compare_flat(obs: list[float], ref: list[float], tol: Tolerance,
                  allowances: list[float] | None = None) -> dict[str, Any]:
    """:func:`_compare_arrays`, element by element, in the same float64 arithmetic (Python's floats):
    NaN errors count as infinite and infinite ones as the largest float, as ``np.nan_to_num`` has it.
    *allowances*: what each element may miss by beyond the tolerance."""
    ok, max_abs, max_rel = True, 0.0, 0.0
    atols = itertools.repeat(tol.atol) if allowances is None else [tol.atol + a for a in allowances]
    for o, r, atol in zip(obs, ref, atols):
        both_nan = o != o and r != r
        diff = abs(o - r)
        r_finite = math.isfinite(r)
        close = (diff <= atol + tol.rtol * abs(r) and r_finite) or o == r or both_nan
        ok = ok and close and math.isfinite(o) == r_finite
        error = 0.0 if both_nan or (o == r and math.isinf(o)) else diff
        relative = error / abs(r) if r != 0 else (0.0 if error == 0 else math.inf)
        max_abs = max(max_abs, math.inf if error != error else _LARGEST if error == math.inf else error)
        max_rel = max(max_rel, math.inf if relative != relative else _LARGEST if relative == math.inf else relative)
    return {"ok": ok, "max_abs_error": max_abs, "max_rel_error": max_rel}


def classify(case: Case, reply: Mapping[str, Any], reference: Mapping[str, Any] | None,
             reference_error: str | None, spread: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """The outcome of one cell and the details that explain it.  *spread*: how far float32 arithmetic
    can move each reference observation (float32 observations may be that much farther from it)."""
    status = reply["status"]
    details: dict[str, Any] = {}
    for key in ("warnings", "ignored_warnings", "native_output", "conversion"):
        if reply.get(key):
            details[key] = reply[key]
    if status in ("skipped", "unsupported", "crash", "timeout", "error"):
        details.update({k: v for k, v in reply.items() if k not in ("status", "observations")})
        return status, details
    if reference_error is not None and reference is None:
        if status == "raised":  # what the framework did is known; there is just nothing to compare
            details["exception"] = _exception(case, reply)
            details["reference_note"] = f"the reference cannot run this case: {reference_error}"
            return "raises", details
        details["message"] = f"the reference cannot run this case: {reference_error}"
        return "error", details
    assert reference is not None
    # With reference_error, the reference stopped at a step it cannot model: what it gave before that step
    # is judged, the values after it are recorded unjudged, and memory observations need no values.
    stopped = None if reference_error is None else f"the reference cannot model a step: {reference_error}"
    observations = reply.get("observations", [])
    details["observations"] = judged = _judge(case, observations, reference, spread or {}, stopped)
    if stopped is not None:
        details["reference_note"] = stopped + "; the values observed after it are recorded, not judged"
    errors = [o for o in judged if o.get("ok") is False]
    if errors:
        details["max_error"] = max(_error_size(o) for o in errors)
    if status == "raised":
        details["exception"] = _exception(case, reply)
        # A wrong result observed before the exception is still a wrong result the user saw.
        return ("silent-wrong" if errors else "raises"), details
    reported = {o["name"] for o in observations}
    missing = [name for name in reference if name not in reported]
    if missing:
        details["message"] = f"observations {missing[:10]} were not reported by the worker"
        return "error", details
    memory = [o for o in observations if o["kind"] in OBSERVATIONS and OBSERVATIONS[o["kind"]].memory]
    if memory:
        return ("aliases" if any(o["value"] for o in memory) else "copies"), details
    left_out = [o["name"] for o in judged if "not_judged" in o]
    correct = None if left_out and not errors else not errors
    if reply.get("warnings"):
        details["correct"] = correct
        return "warns", details
    if correct is None:  # nothing wrong among what could be judged, but the rest is unknown: no verdict
        details["message"] = (f"the reference cannot judge {', '.join(left_out[:10])}; nothing it could judge "
                              f"is wrong, and a case of values has no outcome without them")
        return "error", details
    return ("silent-correct" if correct else "silent-wrong"), details


def _exception(case: Case, reply: Mapping[str, Any]) -> dict[str, Any]:
    step = next((s for s in case.walk() if s.number == reply["step"]), None)
    if step is None:  # raised before the first step: in the framework's prelude, or converting the program
        found = dict(reply["exception"], step=reply["step"], op="prelude", line=None)
        found.setdefault("phase", "op")
        return found
    phase = "observe" if step.op == "observe" else OPS[step.op].phase
    found = dict(reply["exception"], step=step.number, op=step.op, line=step.line)
    found.setdefault("phase", phase)  # a compiled call says itself whether compiling or running failed
    if reply.get("iteration"):  # inside repeat blocks: the 0-based counters, outermost first
        found["iteration"] = reply["iteration"]
    return found


def wrong_result(outcome: str, details: Mapping[str, Any]) -> bool:
    """A wrong result, whether silent or beside a warning that did not say so (``Record.wrong`` on a record)."""
    return outcome == "silent-wrong" or (outcome == "warns" and details.get("correct") is False)


def misses_in_float32(details: Mapping[str, Any]) -> bool:
    """Whether a float32 observation missed the float64 reference: then the cell is judged again with the
    float32 spread of the reference (:func:`compare`), which most cells never need."""
    return any(o.get("ok") is False and o.get("judged_by") == "reference" and o.get("dtype") == "float32"
               for o in details.get("observations", ()))


def _judge(case: Case, observations: list[Mapping[str, Any]], reference: Mapping[str, Any],
           spread: Mapping[str, Any], stopped: str | None = None) -> list[dict]:
    judged = []
    expected = case.expected or {}
    by_number = case.steps_by_number
    memory_case = any(s.op == "observe" and OBSERVATIONS[s.kind].memory for s in case.walk())
    for obs in observations:
        entry = dict(obs)
        step = by_number.get(obs.get("step"))
        if obs.get("kind") == MEASURED and obs.get("name") in expected:  # bytes a measure_allocated block states
            if obs.get("value") is None:  # the framework reports no allocations on this device
                entry.update(informational=True, note="the framework reports no allocated bytes on this device")
            else:
                entry.update(_compare_exactly(obs, expected[obs["name"]]), judged_by="expected")
            judged.append(entry)
            continue
        if step is None or step.op != "observe":
            judged.append(entry)
            continue
        stated = step.name in expected
        if stated and OBSERVATIONS[step.kind].reads in ("int", "bool"):
            entry.update(_compare_exactly(obs, expected[step.name]), judged_by="expected")
        elif stated:  # values the case states itself judge it as the reference's do
            entry.update(compare(obs, expected[step.name], case.tolerance), judged_by="expected")
        elif step.judged:
            value = reference.get(obs["name"])
            if isinstance(value, Unjudged):
                entry["not_judged"] = value.reason
            elif isinstance(value, Partly):
                entry.update(value.judge(obs, case.tolerance), judged_by="reference")
            elif obs["name"] in reference:
                allowance = spread.get(obs["name"]) if obs.get("dtype") == "float32" else None
                entry.update(compare(obs, value, case.tolerance, allowance), judged_by="reference")
            elif stopped is not None and OBSERVATIONS[step.kind].judged:
                entry["not_judged"] = stopped
        elif OBSERVATIONS[step.kind].judged:
            entry["informational"] = True
        if (stated or step.judged) and memory_case:  # values in memory cases are evidence, not verdicts
            entry["matches_reference"] = entry.pop("ok", None)
        judged.append(entry)
    return judged


def _compare_exactly(observed: Mapping[str, Any], expected: Any) -> dict[str, Any]:
    """A counter or a property the case states (``expected:``): right only when it is that very value
    (a version counter of 1 where the case expects 2 is no rounding)."""
    value = observed.get("value")
    ok = type(value) is type(expected) and value == expected
    return {"ok": ok, "reference": expected, "rtol": 0.0, "atol": 0.0,
            **({} if ok else {"max_abs_error": float("inf"), "max_rel_error": float("inf")})}


def _error_size(observation: Mapping[str, Any]) -> float:
    rel = observation.get("max_rel_error")
    return float("inf") if rel is None else float(rel)


def is_failing(outcome: str, details: Mapping[str, Any]) -> bool:
    """Deprecated: findings no longer fail an item (kept until the plugin's verdict is rewritten)."""
    return outcome in ("silent-wrong", "crash", "timeout") or (outcome == "warns" and details.get("correct") is False)
