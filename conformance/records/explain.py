"""One explanation of a cell, for every place that shows one.

The pytest item, a baseline change, the compatibility report and the diff all
say why a cell has its outcome.  They used to say it four ways, from four
readings of the record's dict; now :func:`explain` decides what explains a
cell (the exception with its kind and place, the wrong observations and their
error, warnings, the reason, message and signal) and only the rendering
differs: several lines of plain text, one line of markdown, or a short phrase.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Mapping

from conformance.records.bounds import is_summary
from conformance.report.markdown import code, text  # a leaf module: escaping only
from conformance.records.record import RaisedException, Record, as_record
from conformance.records.values import all_zero, format_value

__all__ = ["explain", "raised_brief", "show_value", "Style"]

Style = Literal["text", "markdown", "brief"]


def _first_line(value: object) -> str:
    return next((line.strip() for line in str(value or "").splitlines() if line.strip()), "")


def _shorten(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


#: How long the brief form of an exception's message may be: torch's autograd message says which tensor
#: and which version in its first sentence, some 200 characters.
BRIEF_MESSAGE = 240


def _whole_sentences(value: str, limit: int) -> str:
    """*value* cut after its last whole sentence within *limit* (the advice that follows, such as torch's
    "Hint: enable anomaly detection...", goes first); a first sentence longer than that keeps both its
    ends, where a message names the tensor and the version (never cut at "[to…")."""
    if len(value) <= limit:
        return value
    end = max((i + 1 for i, c in enumerate(value[:limit]) if c == "." and value[i + 1:i + 2] in (" ", "")),
              default=0)
    if end:
        return value[:end] + " …"
    head = value[: limit * 2 // 5].rstrip()
    return f"{head} … {value[len(value) - (limit - len(head) - 3):].lstrip()}"


def show_value(value: Any, limit: int = 200) -> str:
    """An observed or reference value for a terminal line: as recorded, or a summarised array by its shape,
    range and digest."""
    return format_value(value, limit) if is_summary(value) else _shorten(str(value), limit)


def raised_brief(type_: str, phase: str | None, kind: str | None) -> str:
    """``RuntimeError (backward; kind autograd)``: how the diff names an exception (baselines keep no message)."""
    inside = "; ".join([str(phase)] + ([f"kind {kind}"] if kind else []))
    return f"{type_} ({inside})"


def _place(exc: RaisedException, code: Any) -> str:
    """Where and what: ``step 4, line 12, iteration 2; op `add_`; phase backward; kind autograd``."""
    groups = []
    position = ", ".join(f"{name} {value}" for name, value in
                         (("step", exc.step), ("line", exc.line), ("iteration", exc.iteration)) if value is not None)
    if position:
        groups.append(position)
    if exc.op:
        groups.append(f"op {code(exc.op)}")
    if exc.phase:
        groups.append(f"phase {exc.phase}")
    if exc.kind:
        groups.append(f"kind {exc.kind}")
    return "; ".join(groups)


def _distinct_warnings(record: Record, limit: int) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = []
    for warning in record.warnings:
        item = (str(warning.get("category") or "Warning"), _shorten(_first_line(warning.get("message")), limit))
        if item not in shown:
            shown.append(item)
    return shown


def _brief(record: Record) -> str:
    exc = record.exception
    if exc:
        return f"{raised_brief(exc.type, exc.phase, exc.kind)}: {_whole_sentences(exc.first_line, BRIEF_MESSAGE)}"
    if record.max_error is not None:
        return f"max relative error {record.max_error:.3g}"
    if record.outcome == "warns":
        warning = (record.warnings or [{}])[0]
        wrong = ", result wrong" if record.correct is False else ""
        return f"{warning.get('category', 'warning')}: {_shorten(_first_line(warning.get('message')), 80)}{wrong}"
    for value in (record.reason, record.message):
        if value:
            return _shorten(_first_line(value), 100)
    return ""


def _copies(record: Record) -> str | None:
    """The one way every place says that a framework's copy decided the cell (engine.py's copy policy): a
    copy where the documentation promises sharing is a hazard; one it documents is what it promises."""
    promised = record.details.get("copies_where_documented_as_view")
    if isinstance(promised, Mapping) and promised:
        return ("copies where its documentation promises shared memory (a hazard): "
                + ", ".join(sorted(map(str, promised))))
    documented = record.details.get("documented_copies")
    if isinstance(documented, Mapping) and documented:
        return "copies, as its documentation allows: " + ", ".join(sorted(map(str, documented)))
    return None


def _markdown(record: Record) -> str:
    parts = []
    copies = _copies(record)
    if copies:
        parts.append(text(copies))
    exc = record.exception
    if exc:
        parts.append(f"{code(exc.type)} ({_place(exc, code)}): {text(_shorten(exc.first_line, 300))}")
    wrong = record.wrong_observations
    if record.outcome in ("silent-wrong", "warns") and wrong and all("reference" in o for o in wrong):
        parts += [_expected_and_got(o) for o in wrong[:2]]
        if len(wrong) > 2:
            parts.append(f"{len(wrong) - 2} more wrong: " + ", ".join(code(str(o.get("name"))) for o in wrong[2:6])
                         + (" …" if len(wrong) > 6 else ""))
    elif record.outcome in ("silent-wrong", "warns") and record.max_error is not None:  # values not recorded
        parts.append(f"max relative error {record.max_error:.3g}")
        if wrong:
            parts.append("wrong: " + ", ".join(code(str(o.get("name"))) for o in wrong[:4])
                         + (f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""))
    if record.outcome == "warns" and record.correct is not None:
        parts.append("result correct" if record.correct else "result **wrong**")
    unjudged = _unjudged(record)
    if unjudged:
        parts.append("not judged: " + ", ".join(code(n) for n in unjudged[:4])
                     + (f" and {len(unjudged) - 4} more" if len(unjudged) > 4 else "")
                     + f" ({text(_shorten(_first_line(_unjudged_reason(record)), 200))})")
    warnings = _distinct_warnings(record, 200)
    parts += [f"warning {code(category)}: {text(message)}" for category, message in warnings[:3]]
    if len(warnings) > 3:
        parts.append(f"{len(warnings) - 3} more distinct warnings")
    for key, value in (("reason", record.reason), ("message", record.message)):
        if value:
            parts.append(f"{key}: {text(_shorten(_first_line(value), 300))}")
    if record.signal:
        parts.append(f"signal {record.signal}")
    return "; ".join(parts)


def _expected_and_got(observation: Mapping[str, Any]) -> str:
    """``grad(x)`` expected ``[2, 4]``, got ``[6, 12]`` (relative error 2): bounded values, and no relative
    error where the reference is 0 (it says nothing there)."""
    reference, value = observation.get("reference"), observation.get("value")
    said = (f"{code(str(observation.get('name')))} expected {code(format_value(reference, 80))}, "
            f"got {code(format_value(value, 80))}")
    error = observation.get("max_rel_error")
    if isinstance(error, (int, float)) and math.isfinite(error) and error < 1e300 and not all_zero(reference):
        said += f" (relative error {error:.3g})"
    return said


def _unjudged(record: Record) -> list[str]:
    """Observations recorded but not judged: the reference cannot give their values."""
    return [str(o.get("name")) for o in record.details.get("observations") or () if o.get("not_judged")]


def _unjudged_reason(record: Record) -> str:
    return next(str(o["not_judged"]) for o in record.details.get("observations") or () if o.get("not_judged"))


def _observation_line(observation: Mapping[str, Any]) -> str:
    line = (f"  {observation.get('name')}: got {show_value(observation.get('value'))}, "
            f"reference {show_value(observation.get('reference'))}")
    error = observation.get("max_rel_error")
    if isinstance(error, (int, float)) and error and math.isfinite(error) and error < 1e300 \
            and not all_zero(observation.get("reference")):
        line += f" (max rel error {error:.3g})"
    if observation.get("reason"):
        line += f" - {observation['reason']}"
    return line


def _text(record: Record) -> str:
    lines = [f"{record.case} on {record.column.where}: {record.outcome}"]
    copies = _copies(record)
    if copies:
        lines.append(f"  {copies}")
    exc = record.exception
    if exc:
        lines.append(f"  {exc.type} ({_place(exc, str)}): {exc.first_line}")
    wrong = record.wrong_observations
    lines += [_observation_line(o) for o in wrong[:8]]
    if len(wrong) > 8:
        lines.append(f"  and {len(wrong) - 8} more wrong observations")
    if record.outcome == "warns" and record.correct is not None:
        lines.append("  result correct" if record.correct else "  result wrong")
    unjudged = _unjudged(record)
    if unjudged:
        lines.append(f"  not judged: {', '.join(unjudged[:8])} ({_unjudged_reason(record)})")
    warnings = _distinct_warnings(record, 300)
    lines += [f"  warning {category}: {message}" for category, message in warnings[:3]]
    for key, value in (("reason", record.reason), ("message", record.message), ("signal", record.signal)):
        if value:
            lines.append(f"  {key}: {value}")
    return "\n".join(lines)


def explain(record: Record | Mapping[str, Any], style: Style = "text") -> str:
    """Why a cell has its outcome.

    ``text``: a head line (case, column, outcome) and a few indented lines, for
    the terminal (the pytest item, a baseline change).  ``markdown``: one line
    of evidence for the report.  ``brief``: one short phrase for the diff.
    """
    record = as_record(record)
    if style == "markdown":
        return _markdown(record)
    if style == "brief":
        return _brief(record)
    return _text(record)
