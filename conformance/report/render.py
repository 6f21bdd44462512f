"""The compatibility report: every results file merged into one markdown page.

The summary written after a run shows one run; this report is for readers who
pick a framework version: it puts every version side by side, states over which
versions each behaviour holds, and gives the evidence (exception, error size,
warning) and the command that reproduces each cell.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from conformance.records.explain import explain
from conformance.records.outcomes import LABELS, ORDER, SYMBOLS, badge
from conformance.records.record import EAGER, Column, Record, version_key
from conformance.records.results import latest_by_cell, load_records
from conformance.report.markdown import code, table, text

__all__ = ["Source", "VersionRange", "version_ranges", "load_sources", "default_results", "render_report",
           "case_attributions"]


@dataclass(frozen=True)
class VersionRange:
    """Consecutive versions (among those present) with one outcome."""

    outcome: str
    first: str
    last: str
    since: bool  # the range reaches the newest version present, and more than one version is present

    def __str__(self) -> str:
        outcome, first, last = text(self.outcome), text(self.first), text(self.last)
        if self.since:
            return f"{outcome} since {first}"
        if self.first == self.last:
            return f"{outcome} in {first}"
        return f"{outcome} in {first}–{last}"


def version_ranges(outcomes: Mapping[str, str | None], versions: Iterable[str] | None = None) -> list[VersionRange]:
    """Group *outcomes* (version -> outcome) into ranges of consecutive versions.

    *versions* is the axis: every version present for the framework and device,
    so that a version where this case did not run (absent, skipped, None)
    breaks a range instead of being silently bridged.
    """
    axis = sorted(set(versions if versions is not None else outcomes) | set(outcomes), key=version_key)
    ranges: list[list[str]] = []  # [outcome, first, last]
    previous: str | None = None
    for version in axis:
        outcome = outcomes.get(version)
        if outcome in (None, "skipped"):
            previous = None
            continue
        if outcome == previous:
            ranges[-1][2] = version
        else:
            ranges.append([outcome, version, version])
        previous = outcome
    newest = axis[-1] if axis else None
    return [VersionRange(o, first, last, since=len(axis) > 1 and last == newest) for o, first, last in ranges]


@dataclass
class Source:
    """One results file and the machine facts its records carry."""

    path: str
    records: int = 0
    columns: list[Column] = field(default_factory=list)
    run_info: dict[str, list[str]] = field(default_factory=dict)


_INFO_KEYS = ("python", "os", "cpu", "gpu", "numpy", "cases_revision")


def load_sources(paths: Sequence[Path | str]) -> tuple[list[Record], list[Source]]:
    """Records of every file, in order (a later file wins a cell), and what each file holds.

    Raises :class:`~conformance.records.results.ResultsError` at the first line that is not a record.
    """
    records: list[Record] = []
    sources = []
    for path in paths:
        mine = load_records([path])
        records += mine
        info: dict[str, list[str]] = {}
        for record in mine:
            for key in _INFO_KEYS:
                value = record.run_info.get(key)
                if value is not None and str(value) not in info.setdefault(key, []):
                    info[key].append(str(value))
        sources.append(Source(str(path), len(mine), sorted({r.column for r in mine}), info))
    return records, sources


def default_results(directory: Path | str) -> list[Path]:
    """Every kept results file; latest.jsonl only when nothing else exists (it is overwritten by each run)."""
    directory = Path(directory)
    kept = sorted(p for p in directory.glob("*.jsonl") if p.name != "latest.jsonl")
    latest = directory / "latest.jsonl"
    return kept or ([latest] if latest.exists() else [])


def case_attributions(records: Iterable[Record]) -> dict[str, str]:
    """The ``source:`` line of each case file still on disk (where the case came from)."""
    from conformance.case.load import load_case

    found: dict[str, str] = {}
    for record in records:
        path = record.case_file
        if record.case in found or not path or not Path(path).is_file():
            continue
        try:
            found[record.case] = load_case(path).source
        except Exception:  # a case file edited since the run: the report still renders
            continue
    return found


def _cell_badge(record: Record) -> str:
    if record.outcome == "warns" and record.correct is False:
        return badge("warns") + " (wrong result)"
    return badge(record.outcome)


def _display_path(path: str, relative_to: Path | None) -> str:
    """The case file as a link relative to the report, or as a path when it is outside the tree."""
    target = Path(path)
    try:
        shown = target.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return code(path)
    if relative_to is None:
        return code(shown)
    link = Path(os.path.relpath(target.resolve(), relative_to.resolve())).as_posix()
    # Percent-encoded, and always relative ("./" first): a file name cannot close the link, add markup
    # or become a link of another scheme ("javascript:").
    return f"[{code(shown)}](./{urllib.parse.quote(link, safe='/')})"


class _Matrix:
    """The merged cells, split into shown columns and all-skipped ones."""

    def __init__(self, records: Iterable[Record]) -> None:
        self.cells = latest_by_cell(records)
        by_column: dict[Column, list[Record]] = {}
        for (_, column), record in self.cells.items():
            by_column.setdefault(column, []).append(record)
        self.skipped = {c: sorted({r.reason or "no reason given" for r in rs})
                        for c, rs in by_column.items() if all(r.outcome == "skipped" for r in rs)}
        self.columns = sorted(c for c in by_column if c not in self.skipped)
        latest_title: dict[str, tuple[str, str]] = {}
        for record in self.cells.values():
            latest_title[record.case] = (record.topic or "", record.title or "")
        self.cases = sorted(latest_title, key=lambda c: (latest_title[c][0], c))
        self.topic = {c: latest_title[c][0] for c in latest_title}
        self.title = {c: latest_title[c][1] for c in latest_title}

    def get(self, case: str, column: Column) -> Record | None:
        return self.cells.get((case, column))


def _header(sources: Sequence[Source], plot: str | None, plot_note: str | None) -> list[str]:
    lines = ["# Compatibility report", "",
             "In-place and aliasing behaviour of each framework version, merged from the results files "
             "below by `conformance report` (a later file wins a cell that two files share).", ""]
    rows = []
    for source in sources:
        info = source.run_info
        rows.append([code(source.path), str(source.records),
                     ", ".join(text(c.label) for c in source.columns) or "none"]
                    + [text(", ".join(info.get(k, [])) or "–") for k in _INFO_KEYS])
    lines += table(["results file", "records", "columns", "Python", "OS", "CPU", "GPU", "NumPy",
                    "cases revision"], rows)
    lines += ["", "Legend: " + " · ".join(f"{SYMBOLS[o]} **{o}**: {LABELS[o]}" for o in ORDER)
              + " · empty: the case was not in that results file.", ""]
    if plot:
        lines += [f"![outcome heatmap: cases x columns]({plot})", ""]
    elif plot_note:
        lines += [f"_{plot_note}_", ""]
    return lines


def _matrix_table(matrix: _Matrix, columns: Sequence[Column] | None = None, heading: str = "## Matrix",
                  intro: str = "") -> list[str]:
    columns = [c for c in matrix.columns if c.mode == EAGER] if columns is None else list(columns)
    rows: list[list[str]] = []
    topic = None
    for case in matrix.cases:
        if matrix.topic[case] != topic:
            topic = matrix.topic[case]
            rows.append([f"**{text(topic or 'no topic')}**"] + [""] * len(columns))
        cells = [matrix.get(case, c) for c in columns]
        name = f"[{code(case)}](#{_anchor(case)})"
        if intro and _depends_on_mode(cells):
            name = f"**{name}**"
        rows.append([name] + [_cell_badge(r) if r else "" for r in cells])
    counts: dict[Column, dict[str, int]] = {c: {} for c in columns}
    for column in columns:
        for case in matrix.cases:
            record = matrix.get(case, column)
            if record:
                counts[column][record.outcome] = counts[column].get(record.outcome, 0) + 1
    present = [o for o in ORDER if any(o in counts[c] for c in columns)]
    present += sorted({o for c in columns for o in counts[c]} - set(present))
    rows.append(["**counts**"] + [""] * len(columns))
    rows += [[badge(o)] + [str(counts[c].get(o, 0)) for c in columns] for o in present]
    rows.append(["total"] + [str(sum(counts[c].values())) for c in columns])
    lines = [heading, ""] + ([intro, ""] if intro else [])
    if columns:
        lines += table(["case"] + [text(c.label) for c in columns], rows)
    else:
        lines.append("No column has a cell that ran.")
    if matrix.skipped:
        lines.append("")
    for column, reasons in sorted((c, r) for c, r in matrix.skipped.items() if (c.mode == EAGER) != bool(intro)):
        lines.append(f"- {SYMBOLS['skipped']} {text(column.label)}: every cell skipped: "
                     + "; ".join(text(r) for r in reasons))
    return lines + [""]


def _depends_on_mode(cells: Sequence[Record | None]) -> bool:
    """Whether one build gives this case different outcomes in different modes."""
    by_build: dict[tuple[str, str, str], set] = {}
    for r in cells:
        if r is not None:
            by_build.setdefault((r.framework, r.framework_version, r.device), set()).add((r.outcome, r.correct))
    return any(len(outcomes) > 1 for outcomes in by_build.values())


def _compiled_table(matrix: _Matrix) -> list[str]:
    """Each build that ran compiled: its eager column, then its compiled modes (``docs/modes.md``)."""
    compiled = [c for c in matrix.columns if c.mode != EAGER]
    if not compiled:
        return []
    columns: list[Column] = []
    for build in dict.fromkeys((c.framework, c.version, c.device) for c in compiled):
        columns += [c for c in matrix.columns if (c.framework, c.version, c.device) == build
                    and c.mode == EAGER] + [c for c in compiled if (c.framework, c.version, c.device) == build]
    return _matrix_table(matrix, columns, "## Compiled modes", intro=(
        "The same cases compiled (torch.compile; paddle.jit.to_static, with and without full_graph), beside "
        "the eager column of the same build; a case in bold has an outcome that depends on the mode."))


def _anchor(case: str) -> str:
    """The id GitHub gives the heading ``### `case` `` (lower case, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", case.lower()).replace(" ", "-")


def _by_version(matrix: _Matrix) -> list[str]:
    lines = ["## Behaviour by version", "",
             "Inferred from the results present: a range joins consecutive versions present with the same "
             "outcome; *since* means up to the newest version present; a version where the case did not "
             "run breaks a range. Cases whose outcome differs between versions are in bold.", ""]
    axes: dict[tuple[str, str, str], list[Column]] = {}  # (framework, device, mode) -> its columns by version
    for column in matrix.columns:
        axes.setdefault((column.framework, column.device, column.mode), []).append(column)
    for framework in sorted({fw for fw, _, _ in axes}):
        lines += [f"### {text(framework)}", ""]
        # cpu before gpu, eager before other modes: the order of their columns with the version left out
        for (fw, device, mode), columns in sorted(axes.items(), key=lambda kv: Column(kv[0][0], "0", *kv[0][1:])):
            if fw != framework:
                continue
            versions = [c.version for c in columns]
            where = device + (f", {mode}" if mode != EAGER else "")
            lines += [f"{text(where)}, versions present: " + ", ".join(text(v) for v in versions), ""]
            for case in matrix.cases:
                outcomes = {}
                for column in columns:
                    record = matrix.get(case, column)
                    outcomes[column.version] = record.outcome if record else None
                ranges = version_ranges(outcomes, versions)
                if not ranges:
                    continue
                name = code(case)
                if len({r.outcome for r in ranges}) > 1:
                    name = f"**{name}**"
                lines.append(f"- {name}: " + ", ".join(str(r) for r in ranges))
            lines.append("")
    return lines


def _details(matrix: _Matrix, attributions: Mapping[str, str], link_base: Path | None) -> list[str]:
    lines = ["## Cases", ""]
    for case in matrix.cases:
        records = [r for r in (matrix.get(case, c) for c in matrix.columns) if r]
        if not records:
            continue
        lines += [f"### {code(case)}", "", f"**{text(matrix.title[case])}**", ""]
        facts = [f"topic {code(matrix.topic[case])}"] if matrix.topic[case] else []
        case_file = next((r.case_file for r in records if r.case_file), None)
        if case_file:
            facts.append(f"case file {_display_path(case_file, link_base)}")
        if attributions.get(case):
            facts.append(f"source: {text(attributions[case])}")
        if facts:
            lines += ["; ".join(facts), ""]
        for column in matrix.columns:
            record = matrix.get(case, column)
            if record is None:
                continue
            evidence = explain(record, "markdown")
            lines.append(f"- **{text(column.label)}**: {_cell_badge(record)}"
                         + (f" — {evidence}" if evidence else ""))
        commands = []
        for column in matrix.columns:
            command = f"conformance show {case} --framework {column.framework}"
            command += f" --device {column.device}" if column.device != "cpu" else ""
            if command not in commands:
                commands.append(command)
        lines += ["", "Reproduce: " + ", ".join(code(c) for c in commands), ""]
    return lines


def render_report(records: Iterable[Record], sources: Sequence[Source], *,
                  plot: str | None = None, plot_note: str | None = None,
                  attributions: Mapping[str, str] | None = None, link_base: Path | None = None) -> str:
    """The whole report as markdown.

    *plot* is the heatmap's link (relative to the report), *plot_note* says why
    there is none; *attributions* maps case id to its ``source:`` line;
    *link_base* is the report's directory, for relative links to case files.
    """
    matrix = _Matrix(records)
    lines = _header(sources, plot, plot_note) + _matrix_table(matrix) + _compiled_table(matrix) + _by_version(matrix)
    lines += _details(matrix, attributions or {}, link_base)
    return "\n".join(lines).rstrip("\n") + "\n"
