"""A case's grid, as caniuse draws support: a table per framework, a row per device and mode, a column per
version, each cell coloured by its outcome; below it, the evidence of each run of versions that behave
alike (why, the expected values, the command that reproduces it).

Each cell carries its column and outcome as ``data-`` attributes (so a test, or a reader's script, can
check the page against the results) and its evidence in its ``title``; it links to its evidence row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from conformance.records.explain import explain
from conformance.records.values import format_value
from conformance.records.outcomes import SYMBOLS
from conformance.records.record import Record
from conformance.site.html import badge, esc, outcome_class, slug
from conformance.site.model import CaseData, Row, SiteData

__all__ = ["Shown", "command", "render_grid", "shown_values", "value_text"]

#: The word a grid cell shows beside the outcome's symbol (the full name is in its title).
SHORT = {"silent-wrong": "wrong", "crash": "crash", "timeout": "hangs", "warns": "warns", "raises": "raises",
         "silent-correct": "correct", "aliases": "aliases", "copies": "copies", "unsupported": "no API",
         "error": "error", "skipped": "skipped"}
#: Observations without a reference that still tell why a cell has its outcome (memory shared or copied).
_OBSERVED = frozenset({"shares_memory", "same_storage", "same_object"})
#: How many values a cell's evidence shows, and how long each may be.
VALUES, VALUE_LENGTH = 8, 120


@dataclass(frozen=True)
class Shown:
    """One observation as the site shows it: the reference's value, and what the framework gave where
    that differs (or, for a memory observation, what it observed)."""

    name: str
    expected: str | None
    got: str | None
    wrong: bool

    @property
    def text(self) -> str:
        if self.expected is None:
            return f"{self.name}: observed {self.got}"
        return f"{self.name}: expected {self.expected}" + (f", got {self.got}" if self.wrong else "")


def value_text(value: Any, limit: int = VALUE_LENGTH) -> str:
    """A value for a reader, as every report shows one (``records/values.py``)."""
    return format_value(value, limit)


def shown_values(record: Record, limit: int = VALUES) -> list[Shown]:
    """The values that judged *record*, in step order, at most *limit*: the wrong ones kept before the others."""
    found = []
    for observation in record.observations:
        name = str(observation.get("name"))
        if "reference" in observation:
            wrong = observation.get("ok") is False or observation.get("matches_reference") is False
            found.append(Shown(name, value_text(observation["reference"]), value_text(observation.get("value")), wrong))
        elif observation.get("kind") in _OBSERVED:
            found.append(Shown(name, None, value_text(observation.get("value")), False))
    if len(found) <= limit:
        return found
    keep = [i for i, s in enumerate(found) if s.wrong][:limit]
    keep += [i for i, s in enumerate(found) if not s.wrong][:limit - len(keep)]
    return [found[i] for i in sorted(keep)]


def command(case_id: str, row: Row) -> str:
    """The reproducer: run with the framework version of the cell installed."""
    return f"conformance show {case_id} --framework {row.framework} --mode {row.mode} --device {row.device}"


def _why(record: Record) -> str:
    return explain(record, "brief") or ""


def _label(record: Record) -> str:
    short = SHORT.get(record.outcome, record.outcome)
    return f"{short}, wrong result" if record.outcome == "warns" and record.correct is False else short


def _title(record: Record, row: Row, case_id: str) -> str:
    lines = [f"{row.framework} {record.framework_version} · {row.device} · {row.mode}: {record.outcome_label}"]
    why = _why(record)
    if why:
        lines[0] += f" ({why})"
    if record.outcome != "skipped":
        lines.append(f"reproduce with {row.framework} {record.framework_version} installed: {command(case_id, row)}")
    return "\n".join(lines)


def _key(record: Record) -> tuple[object, ...]:
    """What the evidence shows of a cell: neighbouring versions that show the same share one evidence row."""
    return (record.outcome_label, _why(record), tuple(shown_values(record)))


@dataclass
class _Run:
    """Neighbouring versions of a row whose cells show the same evidence."""

    row: Row
    versions: list[str]
    record: Record
    anchor: str


def _runs(data: CaseData, rows: Sequence[Row], versions: Sequence[str]) -> list[_Run]:
    runs: list[_Run] = []
    for row in rows:
        previous = None
        for version in versions:
            record = data.cell(row, version)
            key = None if record is None else _key(record)
            if record is not None and key == previous:
                runs[-1].versions.append(version)
            elif record is not None:
                runs.append(_Run(row, [version], record, slug("e", row.framework, row.device, row.mode,
                                                              str(sum(r.row == row for r in runs)))))
            previous = key
    return runs


def _cell(data: CaseData, row: Row, version: str, anchors: Mapping[tuple[Row, str], str]) -> str:
    record = data.cell(row, version)
    if record is None:
        return '<td class="o none" title="not run">·</td>'
    attributes = (f'data-framework="{esc(row.framework)}" data-version="{esc(version)}" data-mode="{esc(row.mode)}" '
                  f'data-device="{esc(row.device)}" data-outcome="{esc(record.outcome)}"')
    return (f'<td class="o {outcome_class(record.outcome)}" {attributes} '
            f'title="{esc(_title(record, row, data.case.id))}"><a href="#{anchors[(row, version)]}">'
            f'{SYMBOLS.get(record.outcome, "?")}<span>{esc(_label(record))}</span></a></td>')


def _evidence_row(run: _Run, case_id: str) -> str:
    record = run.record
    span = run.versions[0] if len(run.versions) == 1 else f"{run.versions[0]} – {run.versions[-1]}"
    values = "".join(
        f'<li data-observation="{esc(v.name)}"'
        + (f' data-expected="{esc(v.expected)}"' if v.expected is not None else "")
        + (f' data-got="{esc(v.got)}"' if v.wrong or v.expected is None else "")
        + f' class="{"wrong" if v.wrong else "ok"}">{esc(v.text)}</li>'
        for v in shown_values(record))
    return (f'<tr id="{run.anchor}" data-framework="{esc(run.row.framework)}" data-device="{esc(run.row.device)}" '
            f'data-mode="{esc(run.row.mode)}" data-versions="{esc(" ".join(run.versions))}" '
            f'data-outcome="{esc(record.outcome)}">'
            f"<td>{esc(run.row.label)}</td><td>{esc(span)}</td>"
            f"<td>{badge(record.outcome, record.outcome_label)}</td><td>{esc(_why(record))}</td>"
            f'<td>{"<ul>" + values + "</ul>" if values else ""}</td>'
            f'<td><code class="cmd">{esc(command(case_id, run.row))}</code></td></tr>')


def _never_run(data: CaseData, row: Row, versions: Sequence[str]) -> str | None:
    """Why no version of a row ran the case (each cell skipped: no GPU, say), else None."""
    cells = [r for r in (data.cell(row, v) for v in versions) if r is not None]
    if cells and all(r.outcome == "skipped" for r in cells):
        return cells[-1].reason or "skipped"
    return None


def _framework(data: CaseData, site: SiteData, framework: str) -> str:
    versions = site.versions[framework]
    skipped = {row: why for row in site.rows[framework] if (why := _never_run(data, row, versions)) is not None}
    rows = [row for row in site.rows[framework] if row not in skipped]
    runs = _runs(data, rows, versions)
    anchors = {(run.row, version): run.anchor for run in runs for version in run.versions}
    head = "".join(f'<th scope="col">{esc(v)}</th>' for v in versions)
    body = "".join(f'<tr><th scope="row">{esc(row.label)}</th>'
                   + "".join(_cell(data, row, v, anchors) for v in versions) + "</tr>\n" for row in rows)
    evidence = "".join(_evidence_row(run, data.case.id) + "\n" for run in runs)
    converter = " (a converter: the torch program converted, run on paddle)" if framework in site.converters else ""
    note = "".join(f'<p class="note" data-framework="{esc(framework)}" data-device="{esc(row.device)}" '
                   f'data-mode="{esc(row.mode)}" data-outcome="skipped">{esc(row.label)}: not run on any version '
                   f"({esc(why)})</p>\n" for row, why in skipped.items())
    if not rows:
        return f'<h3 id="{slug("grid", framework)}">{esc(framework)}{esc(converter)}</h3>\n{note}'
    return (f'<h3 id="{slug("grid", framework)}">{esc(framework)}{esc(converter)}</h3>\n'
            f'<div class="scroll"><table class="grid" data-framework="{esc(framework)}">'
            f'<thead><tr><th scope="col">device · mode</th>{head}</tr></thead>\n<tbody>\n{body}</tbody></table></div>\n'
            f'<table class="evidence"><thead><tr><th>row</th><th>versions</th><th>outcome</th><th>why</th>'
            f"<th>expected values</th><th>reproduce (with that version installed)</th></tr></thead>\n"
            f"<tbody>\n{evidence}</tbody></table>\n{note}")


def render_grid(data: CaseData, site: SiteData) -> str:
    """The grid of every framework that has a cell of this case, each with its evidence."""
    shown = [f for f in site.frameworks if any(c.framework == f for c in data.cells)]
    if not shown:
        return "<p>No results for this case yet: run <code>conformance run</code>.</p>\n"
    return "".join(_framework(data, site, framework) for framework in shown)
