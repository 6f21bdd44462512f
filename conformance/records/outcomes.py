"""How each outcome is shown: one symbol and a short label, used by every report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.records.record import Record

__all__ = ["SYMBOLS", "LABELS", "badge", "cell_badge", "ORDER"]

#: Outcomes in report order, most dangerous first.
ORDER = ("silent-wrong", "crash", "timeout", "warns", "raises", "silent-correct", "aliases", "copies",
         "unsupported", "error", "skipped")

SYMBOLS = {
    "silent-wrong": "❌", "crash": "💥", "timeout": "⏱️", "warns": "⚠️", "raises": "🛑",
    "silent-correct": "✅", "aliases": "🔗", "copies": "📄", "unsupported": "➖", "error": "🐞",
    "skipped": "⏭️",
}

LABELS = {
    "silent-wrong": "silently wrong result", "crash": "the process died", "timeout": "hung",
    "warns": "warns", "raises": "raises an exception", "silent-correct": "silent, correct",
    "aliases": "shares memory", "copies": "copies memory", "unsupported": "no such API",
    "error": "harness error (not a framework behaviour)", "skipped": "not run (reason given)",
}


def badge(outcome: str) -> str:
    """An outcome as reports show it; an outcome this version does not know (read from a results file)
    is shown with its markdown specials escaped, so it cannot become markup."""
    if outcome in SYMBOLS:
        return f"{SYMBOLS[outcome]} {outcome}"
    from conformance.report.markdown import text

    return f"? {text(outcome)}"


def cell_badge(record: "Record") -> str:
    """A cell's outcome as reports show it, with the rest of its label (``warns (right result)``): a warning
    says whether the result beside it was right."""
    return badge(record.outcome) + record.outcome_label[len(record.outcome):]
