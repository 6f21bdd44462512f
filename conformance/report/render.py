"""The compatibility report: every results file merged into one markdown page.

The summary written after a run shows one run; this report is for readers who
pick a framework version: it puts every version side by side, states over which
versions each behaviour holds, and gives the evidence (exception, error size,
warning) and the command that reproduces each cell.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from conformance.report.markdown import code, first_line, shorten, table, text
from conformance.records.outcomes import LABELS, ORDER, SYMBOLS, badge
from conformance.records.results import latest_by_cell, read_records

__all__ = ["Column", "Source", "VersionRange", "version_key", "column_key", "column_label",
           "version_ranges", "load_sources", "default_results", "render_report", "case_attributions"]

#: (framework, version, device): one column of the matrix.
Column = tuple[str, str, str]

_DEVICE_ORDER = {"cpu": 0, "gpu": 1}
_PRE = {"dev": -4, "a": -3, "alpha": -3, "b": -2, "beta": -2, "c": -1, "rc": -1, "pre": -1, "preview": -1}


def _natural(part: str) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok)
                 for tok in re.findall(r"\d+|[a-z]+", part.lower()))


def version_key(version: str) -> tuple[Any, ...]:
    """Numeric order for versions (2.9 < 2.10, 3.0.0rc1 < 3.0.0 < 3.0.0.post1); local labels (+cpu) last.

    Written here rather than imported from ``packaging`` because framework
    versions are not always PEP 440 (``3.0.0-beta``, ``2.13.0+cu121``).
    """
    public, _, local = version.strip().lstrip("vV").partition("+")
    match = re.match(r"(\d+(?:\.\d+)*)(.*)", public)
    if not match:
        return (1, _natural(public), (), _natural(local))
    release = [int(p) for p in match.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    rest = match.group(2).lstrip(".-_").lower()
    tag = re.match(r"[a-z]*", rest).group(0)
    if not rest:
        stage = (0, ())
    elif tag in ("post", "r", "rev"):
        stage = (1, _natural(rest))
    else:
        stage = (_PRE.get(tag, -1), _natural(rest))
    return (0, tuple(release), stage, _natural(local))


def column_key(column: Column) -> tuple[Any, ...]:
    framework, version, device = column
    return framework, version_key(version), _DEVICE_ORDER.get(device, 9), device


def column_label(column: Column) -> str:
    return " ".join(column)


def _column(record: Mapping[str, Any]) -> Column:
    return record["framework"], record["framework_version"], record["device"]


@dataclass(frozen=True)
class VersionRange:
    """Consecutive versions (among those present) with one outcome."""

    outcome: str
    first: str
    last: str
    since: bool  # the range reaches the newest version present, and more than one version is present

    def __str__(self) -> str:
        if self.since:
            return f"{self.outcome} since {self.first}"
        if self.first == self.last:
            return f"{self.outcome} in {self.first}"
        return f"{self.outcome} in {self.first}–{self.last}"


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


def load_sources(paths: Sequence[Path | str]) -> tuple[list[dict[str, Any]], list[Source]]:
    """Records of every file, in order (a later file wins a cell), and what each file holds."""
    records: list[dict[str, Any]] = []
    sources = []
    for path in paths:
        mine = list(read_records([path]))
        records += mine
        info: dict[str, list[str]] = {}
        for record in mine:
            for key in _INFO_KEYS:
                value = (record.get("run_info") or {}).get(key)
                if value is not None and str(value) not in info.setdefault(key, []):
                    info[key].append(str(value))
        sources.append(Source(str(path), len(mine), sorted({_column(r) for r in mine}, key=column_key), info))
    return records, sources


def default_results(directory: Path | str) -> list[Path]:
    """Every kept results file; latest.jsonl only when nothing else exists (it is overwritten by each run)."""
    directory = Path(directory)
    kept = sorted(p for p in directory.glob("*.jsonl") if p.name != "latest.jsonl")
    latest = directory / "latest.jsonl"
    return kept or ([latest] if latest.exists() else [])


def case_attributions(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The ``source:`` line of each case file still on disk (where the case came from)."""
    from conformance.case.load import load_case

    found: dict[str, str] = {}
    for record in records:
        path = record.get("case_file")
        if record["case"] in found or not path or not Path(path).is_file():
            continue
        try:
            found[record["case"]] = load_case(path).source
        except Exception:  # a case file edited since the run: the report still renders
            continue
    return found


def _cell_badge(record: Mapping[str, Any]) -> str:
    details = record.get("details") or {}
    if record["outcome"] == "warns" and details.get("correct") is False:
        return badge("warns") + " (wrong result)"
    return badge(record["outcome"])


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
    return f"[{code(shown)}]({link})"


class _Matrix:
    """The merged cells, split into shown columns and all-skipped ones."""

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.cells = latest_by_cell(records)
        by_column: dict[Column, list[dict[str, Any]]] = {}
        for (case, fw, version, device), record in self.cells.items():
            by_column.setdefault((fw, version, device), []).append(record)
        self.skipped = {c: sorted({(r.get("details") or {}).get("reason") or "no reason given" for r in rs})
                        for c, rs in by_column.items() if all(r["outcome"] == "skipped" for r in rs)}
        self.columns = sorted((c for c in by_column if c not in self.skipped), key=column_key)
        latest_title: dict[str, tuple[str, str]] = {}
        for record in self.cells.values():
            latest_title[record["case"]] = (record.get("topic") or "", record.get("title") or "")
        self.cases = sorted(latest_title, key=lambda c: (latest_title[c][0], c))
        self.topic = {c: latest_title[c][0] for c in latest_title}
        self.title = {c: latest_title[c][1] for c in latest_title}

    def get(self, case: str, column: Column) -> dict[str, Any] | None:
        return self.cells.get((case, *column))


def _header(sources: Sequence[Source], plot: str | None, plot_note: str | None) -> list[str]:
    lines = ["# Compatibility report", "",
             "In-place and aliasing behaviour of each framework version, merged from the results files "
             "below by `conformance report` (a later file wins a cell that two files share).", ""]
    rows = []
    for source in sources:
        info = source.run_info
        rows.append([code(source.path), str(source.records),
                     ", ".join(column_label(c) for c in source.columns) or "none"]
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


def _matrix_table(matrix: _Matrix) -> list[str]:
    columns = matrix.columns
    rows: list[list[str]] = []
    topic = None
    for case in matrix.cases:
        if matrix.topic[case] != topic:
            topic = matrix.topic[case]
            rows.append([f"**{text(topic or 'no topic')}**"] + [""] * len(columns))
        cells = [matrix.get(case, c) for c in columns]
        rows.append([f"[{code(case)}](#{_anchor(case)})"] + [_cell_badge(r) if r else "" for r in cells])
    counts = {c: {} for c in columns}
    for column in columns:
        for case in matrix.cases:
            record = matrix.get(case, column)
            if record:
                counts[column][record["outcome"]] = counts[column].get(record["outcome"], 0) + 1
    present = [o for o in ORDER if any(o in counts[c] for c in columns)]
    present += sorted({o for c in columns for o in counts[c]} - set(present))
    rows.append(["**counts**"] + [""] * len(columns))
    rows += [[badge(o)] + [str(counts[c].get(o, 0)) for c in columns] for o in present]
    rows.append(["total"] + [str(sum(counts[c].values())) for c in columns])
    lines = ["## Matrix", ""]
    if columns:
        lines += table(["case"] + [column_label(c) for c in columns], rows)
    else:
        lines.append("No column has a cell that ran.")
    if matrix.skipped:
        lines.append("")
    for column, reasons in sorted(matrix.skipped.items(), key=lambda kv: column_key(kv[0])):
        lines.append(f"- {SYMBOLS['skipped']} {column_label(column)}: every cell skipped: "
                     + "; ".join(text(r) for r in reasons))
    return lines + [""]


def _anchor(case: str) -> str:
    """The id GitHub gives the heading ``### `case` `` (lower case, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", case.lower()).replace(" ", "-")


def _by_version(matrix: _Matrix) -> list[str]:
    lines = ["## Behaviour by version", "",
             "Inferred from the results present: a range joins consecutive versions present with the same "
             "outcome; *since* means up to the newest version present; a version where the case did not "
             "run breaks a range. Cases whose outcome differs between versions are in bold.", ""]
    axes: dict[tuple[str, str], list[str]] = {}
    for fw, version, device in matrix.columns:
        axes.setdefault((fw, device), []).append(version)
    for framework in sorted({fw for fw, _ in axes}):
        lines += [f"### {text(framework)}", ""]
        for (fw, device), versions in sorted(axes.items(), key=lambda kv: _DEVICE_ORDER.get(kv[0][1], 9)):
            if fw != framework:
                continue
            lines += [f"{text(device)}, versions present: " + ", ".join(text(v) for v in versions), ""]
            for case in matrix.cases:
                outcomes = {}
                for version in versions:
                    record = matrix.get(case, (fw, version, device))
                    outcomes[version] = record["outcome"] if record else None
                ranges = version_ranges(outcomes, versions)
                if not ranges:
                    continue
                name = code(case)
                if len({r.outcome for r in ranges}) > 1:
                    name = f"**{name}**"
                lines.append(f"- {name}: " + ", ".join(str(r) for r in ranges))
            lines.append("")
    return lines


def _evidence(record: Mapping[str, Any]) -> str:
    """One line of facts that explain a cell: what raised, how wrong, what warned, why not run."""
    details = record.get("details") or {}
    parts = []
    exc = details.get("exception")
    if exc:
        where = ", ".join(f"{k} {exc[k]}" for k in ("step", "line", "iteration") if exc.get(k) is not None)
        where += f"; op {code(exc['op'])}" if exc.get("op") else ""
        where += f"; phase {exc['phase']}" if exc.get("phase") else ""
        parts.append(f"{code(exc.get('type', '?'))} ({where}): {text(shorten(first_line(exc.get('message')), 300))}")
    if record["outcome"] in ("silent-wrong", "warns") and details.get("max_error") is not None:
        parts.append(f"max relative error {details['max_error']:.3g}")
        wrong = [o["name"] for o in details.get("observations") or [] if o.get("ok") is False]
        if wrong:
            parts.append("wrong: " + ", ".join(code(n) for n in wrong[:4])
                         + (f" and {len(wrong) - 4} more" if len(wrong) > 4 else ""))
    if record["outcome"] == "warns" and "correct" in details:
        parts.append("result correct" if details["correct"] else "result **wrong**")
    warnings = []
    for warning in details.get("warnings") or []:
        shown = (warning.get("category") or "Warning", shorten(first_line(warning.get("message")), 200))
        if shown not in warnings:
            warnings.append(shown)
    parts += [f"warning {code(category)}: {text(message)}" for category, message in warnings[:3]]
    if len(warnings) > 3:
        parts.append(f"{len(warnings) - 3} more distinct warnings")
    for key in ("reason", "message"):
        if details.get(key):
            parts.append(f"{key}: {text(shorten(first_line(details[key]), 300))}")
    if details.get("signal"):
        parts.append(f"signal {details['signal']}")
    return "; ".join(parts)


def _details(matrix: _Matrix, attributions: Mapping[str, str], link_base: Path | None) -> list[str]:
    lines = ["## Cases", ""]
    for case in matrix.cases:
        records = [r for r in (matrix.get(case, c) for c in matrix.columns) if r]
        if not records:
            continue
        lines += [f"### {code(case)}", "", f"**{text(matrix.title[case])}**", ""]
        facts = [f"topic {code(matrix.topic[case])}"] if matrix.topic[case] else []
        case_file = next((r.get("case_file") for r in records if r.get("case_file")), None)
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
            evidence = _evidence(record)
            lines.append(f"- **{text(column_label(column))}**: {_cell_badge(record)}"
                         + (f" — {evidence}" if evidence else ""))
        commands = []
        for framework, _, device in matrix.columns:
            command = f"conformance show {case} --framework {framework}"
            command += f" --device {device}" if device != "cpu" else ""
            if command not in commands:
                commands.append(command)
        lines += ["", "Reproduce: " + ", ".join(code(c) for c in commands), ""]
    return lines


def render_report(records: Iterable[Mapping[str, Any]], sources: Sequence[Source], *,
                  plot: str | None = None, plot_note: str | None = None,
                  attributions: Mapping[str, str] | None = None, link_base: Path | None = None) -> str:
    """The whole report as markdown.

    *plot* is the heatmap's link (relative to the report), *plot_note* says why
    there is none; *attributions* maps case id to its ``source:`` line;
    *link_base* is the report's directory, for relative links to case files.
    """
    matrix = _Matrix(records)
    lines = _header(sources, plot, plot_note) + _matrix_table(matrix) + _by_version(matrix)
    lines += _details(matrix, attributions or {}, link_base)
    return "\n".join(lines).rstrip("\n") + "\n"
