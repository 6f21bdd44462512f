"""The upgrade steps the site has a page for: each release against the one before it (``conformance
upgrades``), and the common jumps of ``tox -e diff``.

The changes are ``conformance diff``'s own (:func:`~conformance.report.diff.compare`): the site only groups a
step's comparisons (one per device and mode) under one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from conformance.records.record import Column, version_key
from conformance.report.diff import Comparison, Side, compare, load_side
from conformance.report.render import Source
from conformance.report.upgrades import upgrade_chain

__all__ = ["JUMPS", "Step", "comparison_where", "upgrade_steps"]

#: The jumps ``tox -e diff`` writes a page for: (framework, from, to).
JUMPS = (("paddle", "2.6.2", "3.3.1"), ("paddle", "3.0.0", "3.3.1"), ("torch", "2.4.1", "2.15.0"))


@dataclass(frozen=True)
class Step:
    """One upgrade, *old* -> *new* of a framework, with a comparison per device and mode."""

    framework: str
    old: str
    new: str
    comparisons: tuple[Comparison, ...]
    #: A jump over several releases (``tox -e diff``) rather than a release against the one before it.
    jump: bool = False

    @property
    def name(self) -> str:
        """The page's file name, without its suffix: ``torch-2.13.0-2.14.1``."""
        return f"{self.framework}-{self.old}-{self.new}"

    @property
    def title(self) -> str:
        return f"{self.framework} {self.old} → {self.new}"

    @property
    def changes(self) -> int:
        return sum(len(c.changes) for c in self.comparisons)


def _chain_steps(chain: Sequence[Comparison]) -> list[Step]:
    grouped: dict[tuple[str, str, str], list[Comparison]] = {}
    for comparison in chain:
        old, new = comparison.pairs[0]
        grouped.setdefault((new.framework, old.version, new.version), []).append(comparison)
    return [Step(framework, old, new, tuple(sorted(found, key=lambda c: c.pairs[0][1].sort_key)))
            for (framework, old, new), found in grouped.items()]


def _version_side(sources: Sequence[Source], framework: str, version: str) -> Side | None:
    """Every column of one framework version that ran something, from the files that hold it (as
    ``conformance diff torch==2.4.1`` takes them from the committed folder)."""
    sides = []
    for source in sources:
        columns = [c for c in source.columns if (c.framework, c.version) == (framework, version)]
        if columns:
            side = load_side(source.path)
            ran = [c for c in columns if c in side.columns
                   and any(cell.outcome != "skipped" for cell in side.columns[c].values())]
            if ran:
                sides.append(side.only(ran))
    return Side.merged(sides) if sides else None


def upgrade_steps(paths: Sequence[Path | str], sources: Sequence[Source],
                  controls: Sequence[Path | str] = ()) -> list[Step]:
    """Each release against the one before it, then the jumps whose two versions are in *sources*; by framework
    and version."""
    steps = _chain_steps(upgrade_chain(paths, controls))
    taken = {step.name for step in steps}
    for framework, old, new in JUMPS:
        before, after = _version_side(sources, framework, old), _version_side(sources, framework, new)
        if before is None or after is None or f"{framework}-{old}-{new}" in taken:
            continue
        steps.append(Step(framework, old, new, (compare(before, after),), jump=True))
    return sorted(steps, key=lambda s: (s.jump, s.framework, version_key(s.old), version_key(s.new)))


def comparison_where(comparison: Comparison) -> str:
    """``cpu, eager``: what a comparison of one step is about; a jump's comparison names every pair."""
    pairs: list[tuple[Column, Column]] = comparison.pairs
    return "; ".join(dict.fromkeys(f"{new.device}, {new.mode}" for _, new in pairs))
