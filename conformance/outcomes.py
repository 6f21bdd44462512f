"""The outcomes a cell can have: what the judge gives, what records and baselines hold, what the reports
name.  Anything else in a results or baseline file is not a record of this package."""

from __future__ import annotations

__all__ = ["OUTCOMES", "MACHINE_VALUE_OUTCOMES", "outcome_label"]

OUTCOMES = ("raises", "warns", "silent-correct", "silent-wrong", "aliases", "copies",
            "unsupported", "crash", "timeout", "error", "skipped")
#: The outcomes a case whose value depends on the machine's kernels (``varies_by_machine:``) moves between
#: from one machine to another: which value the kernels compute, never whether the framework raises or warns.
MACHINE_VALUE_OUTCOMES = frozenset({"silent-correct", "silent-wrong"})


def outcome_label(outcome: str, correct: bool | None) -> str:
    """An outcome as every report and page names it: a warning says whether the result beside it was right, so
    that a reader never takes a harmless warning for a wrong number, nor a wrong number for a mere warning
    (*correct*: the judge's word on a ``warns`` cell's values; None where they were not judged)."""
    if outcome == "warns" and correct is not None:
        return f"warns ({'right' if correct else 'wrong'} result)"
    return outcome
