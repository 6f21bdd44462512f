"""The markdown summary table written after every run: cases x framework-device."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.records.outcomes import LABELS, SYMBOLS, cell_badge
from conformance.records.record import Column, Record, as_record
from conformance.records.results import latest_by_cell
from conformance.report.markdown import code, table, text

__all__ = ["column_name", "render_summary", "write_summary"]


def column_name(record: Record | Mapping[str, Any]) -> str:
    return as_record(record).column.label


def render_summary(records: Iterable[Record | Mapping[str, Any]], notes: Iterable[str] = ()) -> str:
    """The table of this run's cells; *notes*: what the reader must know of the run as a whole (a column
    no baseline checked, an environment at fault), listed under it."""
    cells = latest_by_cell(records)
    by_column: dict[Column, list[Record]] = {}
    for record in cells.values():
        by_column.setdefault(record.column, []).append(record)
    skipped = {c: rs[0].reason or "" for c, rs in by_column.items() if all(r.outcome == "skipped" for r in rs)}
    columns = sorted(c for c in by_column if c not in skipped)
    cases = sorted({(r.topic or "", r.case) for r in cells.values()})
    lines = ["# Conformance summary", ""]
    rows = [[f"{text(topic)}/{code(case)}"] + [cell_badge(cells[(case, c)]) if (case, c) in cells else ""
                                               for c in columns] for topic, case in cases]
    if columns:  # every name and label escaped: a folder or a version may hold any character
        lines += table(["case"] + [text(c.label) for c in columns], rows)
    lines += [f"- {SYMBOLS['skipped']} {text(column.label)}: every cell skipped: {text(reason)}"
              for column, reason in sorted(skipped.items())]
    notes = list(notes)
    if notes:
        lines += ["", "## Notes", ""] + [f"- {text(note)}" for note in notes]
    lines += ["", "Legend: " + "; ".join(f"{SYMBOLS[o]} {o}: {LABELS[o]}" for o in SYMBOLS), ""]
    return "\n".join(lines)


def write_summary(records: Iterable[Record | Mapping[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_summary(records), encoding="utf-8")
