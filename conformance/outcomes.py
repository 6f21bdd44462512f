"""The outcomes a cell can have: what the judge gives, what records and baselines hold, what the reports
name.  Anything else in a results or baseline file is not a record of this package."""

from __future__ import annotations

__all__ = ["OUTCOMES"]

OUTCOMES = ("raises", "warns", "silent-correct", "silent-wrong", "aliases", "copies",
            "unsupported", "crash", "timeout", "error", "skipped")
