"""The upgrade chain: every release of a framework against the one before it, one diff per step.

A maintainer on version N asks what changes at N+1, not what changed over the whole line; and a
behaviour is dated by the first step that shows it.  So the columns of all results files are grouped
by framework, device and mode, ordered by version, and each neighbouring pair is compared with the
same ranking as ``conformance diff`` (new silent-wrong first).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from conformance.records.record import Column
from conformance.report.diff import (SHORT_NAMES, BadInput, Comparison, Side, compare, load_side, markdown_sections,
                                     short_counts)
from conformance.report.markdown import table, text

__all__ = ["upgrade_chain", "render_upgrades", "nearest_side", "committed_side"]


def _runs(column_cells: dict[str, object]) -> bool:
    """Whether a column ran anything: a column of only ``skipped`` cells (a GPU absent) has no history."""
    return any(getattr(cell, "outcome", None) != "skipped" for cell in column_cells.values())


def upgrade_chain(paths: Iterable[Path | str], controls: Iterable[Path | str] = ()) -> list[Comparison]:
    """One comparison per neighbouring pair of versions, per framework, device and mode, in step order (by
    framework, device and version, a step's modes together, eager first).  *controls*: results
    of a version run under another NumPy, which attribute the changes of a step whose two versions ran with
    different NumPy (``compare``'s control)."""
    controls = list(controls)
    control = Side.merged([load_side(path) for path in controls]) if controls else None
    lines: dict[tuple[str, str, str], list[tuple[Column, Side]]] = {}
    for path in paths:
        side = load_side(path)
        for column, cells in side.columns.items():
            if _runs(cells):
                one = side.only([column])
                lines.setdefault((column.framework, column.device, column.mode), []).append((column, one))
    chain = []
    for key in sorted(lines):
        versions = sorted(lines[key], key=lambda item: item[0].sort_key)
        seen = [column.version for column, _ in versions]
        twice = {v for v in seen if seen.count(v) > 1}
        if twice:
            raise BadInput(f"{' '.join(key)}: version(s) {', '.join(sorted(twice))} in more than one file")
        chain += [compare(old, new, control) for (_, old), (_, new) in zip(versions, versions[1:])]
    return sorted(chain, key=_step_order)


def _step_order(comparison: Comparison) -> tuple:
    """By framework, device and version, a step's modes together (eager first): what one upgrade changes is
    read in one place."""
    key = comparison.pairs[0][1].sort_key  # framework, version, device order, device, not eager, mode
    return key[0], key[2], key[3], key[1], key[4], key[5]


def _anchor(comparison: Comparison) -> str:
    """A step's anchor (every mode of a release on a device is one step)."""
    old, new = comparison.pairs[0]
    words = f"{new.framework} {old.version} to {new.version} {new.device}"
    return re.sub(r"[^a-z0-9]+", "-", words.replace(".", "").lower()).strip("-")


def _steps(chain: list[Comparison]) -> list[list[Comparison]]:
    """The chain (in step order) as steps: a release against the one before it on one device, every mode."""
    steps: dict[tuple, list[Comparison]] = {}
    for comparison in chain:
        old, new = comparison.pairs[0]
        steps.setdefault((new.framework, new.device, old.version, new.version), []).append(comparison)
    return list(steps.values())


def _step_title(comparison: Comparison) -> str:
    old, new = comparison.pairs[0]
    return f"{new.framework} {old.version} → {new.version} ({new.device})"


def render_upgrades(chain: list[Comparison]) -> str:
    """An index of every step (counts by severity, a row per mode), then each step's changes, mode by mode."""
    lines = ["# Upgrade chain", "",
             "Each release against the one before it, per framework and device, every mode of a step together",
             "(eager, then the compiled modes); a change is ranked as `conformance diff` ranks it (new",
             "silent-wrong first), and an API that arrives is new API, never a change for the worse. Where a",
             "step's two versions ran with different NumPy it says so, and a control column (one version under the",
             "other NumPy, `reports/controls/`) marks each change as NumPy's or the framework's. Any two versions:",
             "`conformance diff torch==2.4.1 torch==2.15.0`.", ""]
    steps = _steps(chain)
    rows = []
    for modes in steps:
        for comparison in modes:
            rows.append([f"[{text(_step_title(comparison))}](#{_anchor(comparison)})",
                         text(comparison.pairs[0][1].mode), str(comparison.compared), *short_counts(comparison)])
    lines += table(["upgrade", "mode", "cells compared", *(f"{rank}. {name}" for rank, name in SHORT_NAMES.items())],
                   rows)
    for modes in steps:
        lines += ["", f'<a id="{_anchor(modes[0])}"></a>', "", f"## {text(_step_title(modes[0]))}", ""]
        for comparison in modes:
            lines += [f"### {text(comparison.pairs[0][1].mode)}", ""]
            lines += markdown_sections(comparison, level=4)
    return "\n".join(lines) + "\n"


def nearest_side(new: Side, directory: Path | str) -> Side:
    """The committed columns nearest to each column of *new*: the same version (its public part: a
    local ``+cu128`` build is that version), else the newest one below it, else the oldest above it."""
    from conformance.records.record import version_key

    committed: dict[tuple[str, str, str], list[tuple[Column, Side]]] = {}
    for path in sorted(Path(directory).glob("*.jsonl")):
        if path.name == "latest.jsonl" or Path(new.path).resolve() == path.resolve():
            continue
        side = load_side(path)
        for column, cells in side.columns.items():
            if _runs(cells):
                committed.setdefault((column.framework, column.device, column.mode), []).append(
                    (column, side.only([column])))
    chosen: list[Side] = []
    for column in sorted(new.columns):
        candidates = committed.get((column.framework, column.device, column.mode), [])
        if not candidates:
            continue
        mine = version_key(column.version.split("+")[0])
        same = [c for c in candidates if version_key(c[0].version.split("+")[0]) == mine]
        below = sorted((c for c in candidates if version_key(c[0].version.split("+")[0]) < mine),
                       key=lambda c: c[0].sort_key)
        above = sorted((c for c in candidates if version_key(c[0].version.split("+")[0]) > mine),
                       key=lambda c: c[0].sort_key)
        chosen.append((same or below[-1:] or above[:1])[0][1])
    if not chosen:
        raise BadInput(f"no committed column in {directory} is of the framework, device and mode of "
                       f"{new.path} ({', '.join(c.label for c in sorted(new.columns))})")
    return Side.merged(chosen)


def committed_side(name: str, directory: Path | str) -> Side:
    """The committed columns of a framework version named ``torch==2.4.1`` (every device and mode); a
    version without its patch (``torch==2.4``) names the newest committed release of that line."""
    from conformance.records.record import version_key

    framework, _, version = name.partition("==")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", framework) or not version:
        raise BadInput(f"{name}: neither a file nor a version by name (FRAMEWORK==VERSION, e.g. torch==2.4.1)")
    files: dict[str, list[Path]] = {}
    for path in sorted(Path(directory).glob(f"{framework}-*.jsonl")):
        found = re.fullmatch(rf"{re.escape(framework)}-(.+?)-(cpu|gpu)(-compiled)?\.jsonl", path.name)
        if found and (found.group(1) == version or found.group(1).startswith(version + ".")):
            files.setdefault(found.group(1), []).append(path)
    if not files:
        raise BadInput(f"{name}: no such file, and no committed results of {framework} {version} in {directory}")
    newest = max(files, key=version_key)
    sides = [load_side(path) for path in files[newest]]
    ran = [side.only([c for c, cells in side.columns.items() if _runs(cells)]) for side in sides]
    return Side.merged([side for side in ran if side.columns] or sides)  # a column never run (no GPU) is left out
