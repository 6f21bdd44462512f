"""Cell-by-cell comparison of two results or baseline files, ranked by how much it matters.

Net counts hide what a reader needs before an upgrade (same framework, two
versions) or a port (torch vs paddle): which case now gives a wrong gradient.
So every changed cell is listed, most dangerous first, with the evidence.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from conformance.report.markdown import code, first_line, shorten, table, text
from conformance.report.render import Column, column_key, column_label
from conformance.records.results import latest_by_cell

__all__ = ["BadInput", "Cell", "Side", "Change", "Comparison", "SEVERITIES", "load_side", "pair_columns",
           "severity", "compare", "render_text", "render_markdown", "exit_status"]

WRONG, CRASH, BEHAVIOUR, MEMORY, MESSAGE, NOT_COMPARABLE = 1, 2, 3, 4, 5, 6
#: Severity -> heading, most dangerous first.  1 and 2 make the exit status 1.
SEVERITIES = {
    WRONG: "became wrong (silent-wrong, or warns with a wrong result)",
    CRASH: "newly crash or timeout",
    BEHAVIOUR: "behaviour changed (raises <-> silent, raises/unsupported, and other outcome changes)",
    MEMORY: "memory semantics changed (aliases <-> copies)",
    MESSAGE: "same outcome, different exception type, message or phase",
    NOT_COMPARABLE: "not comparable (skipped or harness error on one side)",
}
_SHORT = {WRONG: "became wrong", CRASH: "newly crash/timeout", BEHAVIOUR: "behaviour changed",
          MEMORY: "aliases/copies", MESSAGE: "message-only", NOT_COMPARABLE: "not comparable"}
_SEVERE = (WRONG, CRASH)


class BadInput(Exception):
    """A file that cannot be compared: missing, unreadable, or in neither format."""


@dataclass(frozen=True)
class Cell:
    """What a diff compares of one cell; baselines carry no message or correctness flag."""

    outcome: str
    exception: str | None = None
    message: str | None = None
    phase: str | None = None
    correct: bool | None = None
    brief: str = ""

    @property
    def wrong(self) -> bool:
        return self.outcome == "silent-wrong" or (self.outcome == "warns" and self.correct is False)


@dataclass
class Side:
    path: str
    kind: str  # "results" or "baseline"
    columns: dict[Column, dict[str, Cell]]


def _brief(outcome: str, details: Mapping[str, Any]) -> str:
    exc = details.get("exception")
    if exc:
        return f"{exc.get('type')} ({exc.get('phase')}): {shorten(first_line(exc.get('message')), 100)}"
    if details.get("max_error") is not None:
        return f"max relative error {details['max_error']:.3g}"
    if outcome == "warns":
        warning = (details.get("warnings") or [{}])[0]
        wrong = ", result wrong" if details.get("correct") is False else ""
        return f"{warning.get('category', 'warning')}: {shorten(first_line(warning.get('message')), 80)}{wrong}"
    for key in ("reason", "message"):
        if details.get(key):
            return shorten(first_line(details[key]), 100)
    return ""


def _cell_from_record(record: Mapping[str, Any]) -> Cell:
    details = record.get("details") or {}
    exc = details.get("exception") or {}
    return Cell(record["outcome"], exc.get("type"), first_line(exc.get("message")) or None, exc.get("phase"),
                details.get("correct"), _brief(record["outcome"], details))


def _cell_from_baseline(entry: Mapping[str, Any]) -> Cell:
    brief = f"{entry['exception']} ({entry.get('phase')})" if entry.get("exception") else ""
    return Cell(entry["outcome"], entry.get("exception"), None, entry.get("phase"), None, brief)


def load_side(path: Path | str) -> Side:
    """A results (.jsonl) or baseline (.json) file; format by content, so names do not matter."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read: {exc}") from None
    try:
        whole = json.loads(raw)
    except json.JSONDecodeError:
        whole = None
    try:
        if isinstance(whole, dict) and "cells" in whole:
            column = (str(whole["framework"]), str(whole["version"]), str(whole["device"]))
            cells = {case: _cell_from_baseline(entry) for case, entry in whole["cells"].items()}
            return Side(str(path), "baseline", {column: cells})
        records = []
        for number, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if number < len(raw.splitlines()):  # a torn last line is an interrupted run, not bad input
                    raise BadInput(f"{path}:{number}: not a JSON record") from None
        columns: dict[Column, dict[str, Cell]] = {}
        for (case, framework, version, device), record in latest_by_cell(records).items():
            columns.setdefault((framework, version, device), {})[case] = _cell_from_record(record)
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"{path}: neither a results file nor a baseline (missing field {exc})") from None
    if not columns:
        raise BadInput(f"{path}: no results records in this file")
    return Side(str(path), "results", columns)


def pair_columns(old: Side, new: Side) -> tuple[list[tuple[Column, Column]], list[Column], list[Column]]:
    """Columns to compare, by device: same framework and version first, then same framework
    (an upgrade), then whatever single column is left on each side (a port).
    Returns the pairs and the columns of each side left without a partner."""
    left_old = sorted(old.columns, key=column_key)
    left_new = sorted(new.columns, key=column_key)
    if len(left_old) == 1 and len(left_new) == 1:
        return [(left_old[0], left_new[0])], [], []
    pairs = []
    for rule in (lambda a, b: a == b, lambda a, b: a[0] == b[0] and a[2] == b[2], lambda a, b: a[2] == b[2]):
        for candidate in list(left_old):
            matches = [c for c in left_new if rule(candidate, c)]
            rivals = [c for c in left_old if matches and rule(c, matches[0])]
            if len(matches) == 1 and len(rivals) == 1:
                pairs.append((candidate, matches[0]))
                left_old.remove(candidate)
                left_new.remove(matches[0])
    return sorted(pairs, key=lambda p: column_key(p[1])), left_old, left_new


def severity(old: Cell, new: Cell) -> int | None:
    """How much a change matters (1 = most); None when nothing a reader cares about changed."""
    if new.wrong and not (old.outcome == new.outcome and old.correct in (new.correct, None)):
        return WRONG
    if new.outcome in ("crash", "timeout") and old.outcome != new.outcome:
        return CRASH
    if old.outcome != new.outcome or old.correct != new.correct and None not in (old.correct, new.correct):
        outcomes = {old.outcome, new.outcome}
        if outcomes & {"skipped", "error"}:
            return NOT_COMPARABLE
        if outcomes == {"aliases", "copies"}:
            return MEMORY
        return BEHAVIOUR
    if old.exception != new.exception or old.phase != new.phase:
        return MESSAGE
    if old.message and new.message and _stable(old.message) != _stable(new.message):
        return MESSAGE
    return None


def _stable(message: str) -> str:
    """A message without run-specific tokens (addresses, generated_tensor_20), so reruns compare equal."""
    return re.sub(r"(?<=_)\d+\b", "N", re.sub(r"0x[0-9a-fA-F]+", "0x?", message))


@dataclass
class Change:
    severity: int
    case: str
    pair: tuple[Column, Column]
    old: Cell
    new: Cell


@dataclass
class Comparison:
    old: Side
    new: Side
    pairs: list[tuple[Column, Column]]
    unpaired_old: list[Column]
    unpaired_new: list[Column]
    changes: list[Change] = field(default_factory=list)
    only_old: list[tuple[str, tuple[Column, Column]]] = field(default_factory=list)
    only_new: list[tuple[str, tuple[Column, Column]]] = field(default_factory=list)
    compared: int = 0


def compare(old: Side, new: Side) -> Comparison:
    pairs, unpaired_old, unpaired_new = pair_columns(old, new)
    if not pairs:
        raise BadInput(f"no column of {old.path} ({_columns(old)}) matches a column of {new.path} "
                       f"({_columns(new)}) by device")
    result = Comparison(old, new, pairs, unpaired_old, unpaired_new)
    for pair in pairs:
        before, after = old.columns[pair[0]], new.columns[pair[1]]
        for case in sorted(set(before) | set(after)):
            if case not in after:
                result.only_old.append((case, pair))
            elif case not in before:
                result.only_new.append((case, pair))
            else:
                result.compared += 1
                rank = severity(before[case], after[case])
                if rank is not None:
                    result.changes.append(Change(rank, case, pair, before[case], after[case]))
    result.changes.sort(key=lambda c: (c.severity, column_key(c.pair[1]), c.case))
    return result


def exit_status(comparison: Comparison) -> int:
    return 1 if any(c.severity in _SEVERE for c in comparison.changes) else 0


def _columns(side: Side) -> str:
    return ", ".join(column_label(c) for c in sorted(side.columns, key=column_key))


def _view(pair: tuple[Column, Column]) -> str:
    (fw_a, v_a, _), (fw_b, v_b, _) = pair
    if fw_a != fw_b:
        return "porting view"
    return "upgrade view" if v_a != v_b else "same version"


def _where(comparison: Comparison, pair: tuple[Column, Column]) -> str:
    """How a line names its column pair: the device when that is unambiguous."""
    devices = [p[1][2] for p in comparison.pairs]
    if devices.count(pair[1][2]) == 1:
        return pair[1][2]
    if pair[0] == pair[1]:
        return column_label(pair[0])
    return f"{column_label(pair[0])} -> {column_label(pair[1])}"


def _label(cell: Cell) -> str:
    return cell.outcome + (" (wrong result)" if cell.outcome == "warns" and cell.correct is False else "")


def _detail(change: Change) -> str:
    old, new = change.old.brief, change.new.brief
    if change.severity == MESSAGE or (old and new and old != new):
        return f"was {old or '-'}; now {new or '-'}"
    if old and old != new:
        return f"was {old}"
    return new


def _counts(comparison: Comparison) -> str:
    numbers = [f"{sum(c.severity == s for c in comparison.changes)} {_SHORT[s]}" for s in SEVERITIES]
    return (f"counts: {comparison.compared} cells compared in {len(comparison.pairs)} column pair(s); "
            + ", ".join(numbers)
            + f"; {len(comparison.only_old)} only in OLD, {len(comparison.only_new)} only in NEW")


def render_text(comparison: Comparison) -> str:
    lines = [f"OLD: {comparison.old.path} ({comparison.old.kind})",
             f"NEW: {comparison.new.path} ({comparison.new.kind})", "compared columns:"]
    lines += [f"  {column_label(a)}  ->  {column_label(b)}  ({_view((a, b))})" for a, b in comparison.pairs]
    lines += [f"  not compared: OLD column {column_label(c)} has no single counterpart in NEW"
              for c in comparison.unpaired_old]
    lines += [f"  not compared: NEW column {column_label(c)} has no single counterpart in OLD"
              for c in comparison.unpaired_new]
    if not comparison.changes:
        lines.append("\nno outcome changed")
    for rank, heading in SEVERITIES.items():
        changes = [c for c in comparison.changes if c.severity == rank]
        if not changes:
            continue
        lines += ["", f"[{rank}] {heading}: {len(changes)}"]
        for change in changes:
            detail = _detail(change)
            lines.append(f"  {change.case} [{_where(comparison, change.pair)}]  "
                         f"{_label(change.old)} -> {_label(change.new)}" + (f"  {detail}" if detail else ""))
    for title, cases in (("only in OLD", comparison.only_old), ("only in NEW", comparison.only_new)):
        if cases:
            lines += ["", f"{title}: {len(cases)}"]
            lines += [f"  {case} [{_where(comparison, pair)}]" for case, pair in cases]
    lines += ["", _counts(comparison)]
    return "\n".join(lines) + "\n"


def render_markdown(comparison: Comparison) -> str:
    lines = ["# Outcome changes", "",
             f"OLD: {code(comparison.old.path)} ({comparison.old.kind}); "
             f"NEW: {code(comparison.new.path)} ({comparison.new.kind})", ""]
    lines += table(["OLD column", "NEW column", "view"],
                   [[text(column_label(a)), text(column_label(b)), _view((a, b))] for a, b in comparison.pairs])
    lines += [f"- not compared: OLD column {text(column_label(c))}" for c in comparison.unpaired_old]
    lines += [f"- not compared: NEW column {text(column_label(c))}" for c in comparison.unpaired_new]
    if not comparison.changes:
        lines += ["", "No outcome changed."]
    for rank, heading in SEVERITIES.items():
        changes = [c for c in comparison.changes if c.severity == rank]
        if not changes:
            continue
        lines += ["", f"## {rank}. {text(heading)} ({len(changes)})", ""]
        lines += table(["case", "columns", "old", "new", "detail"],
                       [[code(c.case), text(_where(comparison, c.pair)), text(_label(c.old)),
                         text(_label(c.new)), text(_detail(c))] for c in changes])
    for title, cases in (("Only in OLD", comparison.only_old), ("Only in NEW", comparison.only_new)):
        if cases:
            lines += ["", f"## {title} ({len(cases)})", ""]
            lines += [f"- {code(case)} ({text(_where(comparison, pair))})" for case, pair in cases]
    lines += ["", text(_counts(comparison)), ""]
    return "\n".join(lines)
