"""The markdown summary table written after every run: cases x framework-device."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from conformance.records.outcomes import LABELS, SYMBOLS, badge
from conformance.report.render import column_label
from conformance.records.results import latest_by_cell

__all__ = ["column_name", "render_summary", "write_summary"]


def column_name(record: dict[str, Any]) -> str:
    return column_label((record["framework"], record["framework_version"], record["device"]))


def render_summary(records: Iterable[dict[str, Any]]) -> str:
    cells = latest_by_cell(records)
    by_column: dict[str, list[dict[str, Any]]] = {}
    for record in cells.values():
        by_column.setdefault(column_name(record), []).append(record)
    skipped = {c: rs[0]["details"].get("reason", "") for c, rs in by_column.items()
               if all(r["outcome"] == "skipped" for r in rs)}
    columns = sorted(c for c in by_column if c not in skipped)
    cases = sorted({(r.get("topic", ""), r["case"]) for r in cells.values()})
    table: dict[tuple[str, str], str] = {(r["case"], column_name(r)): r["outcome"] for r in cells.values()}
    lines = ["# Conformance summary", ""]
    if columns:
        lines += ["| case | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for topic, case in cases if columns else ():
        row = [badge(table[(case, c)]) if (case, c) in table else "" for c in columns]
        lines.append(f"| {topic}/`{case}` | " + " | ".join(row) + " |")
    lines += [f"- {SYMBOLS['skipped']} {column}: every cell skipped: {reason}"
              for column, reason in sorted(skipped.items())]
    lines += ["", "Legend: " + "; ".join(f"{SYMBOLS[o]} {o}: {LABELS[o]}" for o in SYMBOLS), ""]
    return "\n".join(lines)


def write_summary(records: Iterable[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_summary(records), encoding="utf-8")
