"""What the site shows, gathered once: the catalogue's cases, each with its cells and its programs.

Every page reads this model rather than the results files, so the pages of one build agree with each
other, and the order of everything (frameworks, versions, rows, cases) is decided here, once, for a
byte-identical rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from conformance.case.model import Case
from conformance.records.programs import ProgramText, load_programs, newest_programs
from conformance.records.record import EAGER, Column, Record, split_build, version_key
from conformance.report.conversions import Conversion, conversions, converter_frameworks
from conformance.report.porting import topic_titles
from conformance.report.remedies import Remedies, check_remedies

__all__ = ["CaseData", "Program", "Row", "SiteData", "gather"]

#: The frameworks shown first, in this order; any other framework follows by name, converters last.
FIRST = ("torch", "paddle")
_DEVICE_ORDER = {"cpu": 0, "gpu": 1}


@dataclass(frozen=True)
class Program:
    """The code a user of *framework* writes for a case, as *version* spelled it (kept beside its results)."""

    framework: str
    version: str
    device: str
    mode: str
    code: str
    unsupported: str | None = None
    #: Whether the case has changed since the program was kept (its digest differs).
    stale: bool = False


@dataclass(frozen=True)
class Row:
    """A row of a case's grid: one framework on one device in one mode, over the framework's versions."""

    framework: str
    device: str
    mode: str

    @property
    def sort_key(self) -> tuple[object, ...]:
        return (_DEVICE_ORDER.get(self.device, 9), self.device, self.mode != EAGER, self.mode)

    @property
    def label(self) -> str:
        return f"{self.device} · {self.mode}"


@dataclass
class CaseData:
    """One case of the catalogue: its cells (the latest record of each column) and each framework's program."""

    case: Case
    cells: dict[Column, Record] = field(default_factory=dict)
    programs: dict[str, Program] = field(default_factory=dict)

    def cell(self, row: Row, version: str) -> Record | None:
        return self.cells.get(Column(row.framework, version, row.device, row.mode))

    def newest(self, framework: str) -> Record | None:
        """The framework's cell a reader meets today: its newest version that ran, CPU, eager."""
        ran = [r for c, r in self.cells.items() if c.framework == framework and c.mode == EAGER
               and r.outcome != "skipped"]
        return max(ran, key=lambda r: (r.device == "cpu", version_key(r.framework_version))) if ran else None


@dataclass
class SiteData:
    """Everything a build renders."""

    cases: list[CaseData]
    #: topic -> (title, introduction) from each topic folder's README.md
    topics: dict[str, tuple[str, str]]
    frameworks: list[str]
    converters: frozenset[str]
    versions: dict[str, list[str]]
    rows: dict[str, list[Row]]
    remedies: Remedies
    conversions: dict[str, Conversion]
    #: case id -> the codes of the ``conformance scan`` rules that find it in code
    scan_rules: dict[str, list[str]] = field(default_factory=dict)

    @property
    def by_id(self) -> dict[str, CaseData]:
        return {data.case.id: data for data in self.cases}

    @property
    def languages(self) -> list[str]:
        """The frameworks whose users write programs (a converter's program is another framework's)."""
        return [f for f in self.frameworks if f not in self.converters]


def _framework_order(frameworks: Iterable[str], converters: frozenset[str]) -> list[str]:
    return sorted(set(frameworks), key=lambda f: (f in converters, FIRST.index(f) if f in FIRST else len(FIRST), f))


def _program(entry: ProgramText, digest: str) -> Program:
    """A kept program as the site shows it."""
    unsupported = entry.get("unsupported")
    return Program(entry["framework"], split_build(entry["version"])[0], entry["device"], entry["mode"], entry["code"],
                   unsupported if isinstance(unsupported, str) and unsupported else None,
                   bool(entry.get("case_digest") and digest and entry["case_digest"] != digest))


def _scan_rules(cases: Sequence[Case]) -> dict[str, list[str]]:
    """Which rules of the scanner (its shipped data) find each case in code."""
    from conformance.scan.catalogue import Catalogue, CatalogueError

    try:
        catalogue = Catalogue.load()
    except CatalogueError:
        return {}
    return {case.id: rules for case in cases if case.id in catalogue.cases
            for rules in [catalogue.rules_of(case.id)] if rules}


def gather(cases: Sequence[Case], records: Iterable[Record], results_files: Sequence[Path | str],
           case_folders: Sequence[Path | str]) -> SiteData:
    """The model of a site: *records* (the latest record of each cell) of the catalogue's *cases*, and the
    programs kept beside *results_files*."""
    records = list(records)
    known = {case.id for case in cases}
    converters = converter_frameworks(records)
    newest = newest_programs(load_programs(results_files), {case.id: case.digest for case in cases})
    cells: dict[str, dict[Column, Record]] = {}
    versions: dict[str, set[str]] = {}
    rows: dict[str, set[Row]] = {}
    for record in records:
        if record.case not in known:
            continue
        cells.setdefault(record.case, {})[record.column] = record
        versions.setdefault(record.framework, set()).add(record.framework_version)
        rows.setdefault(record.framework, set()).add(Row(record.framework, record.device, record.mode))
    frameworks = _framework_order(versions, converters)
    data = [CaseData(case, dict(sorted(cells.get(case.id, {}).items())),
                     {framework: _program(entry, case.digest) for (framework, case_id), entry in newest.items()
                      if case_id == case.id})
            for case in sorted(cases, key=lambda c: (c.topic, c.id))]
    topics: dict[str, tuple[str, str]] = {}
    for folder in case_folders:
        if Path(folder).is_dir():
            topics.update(topic_titles(folder))
    for case in cases:
        topics.setdefault(case.topic, (case.topic, ""))
    ordered = [r for r in records if r.case in known]
    return SiteData(cases=data, topics=dict(sorted(topics.items())), frameworks=frameworks, converters=converters,
                    versions={f: sorted(versions[f], key=version_key) for f in frameworks},
                    rows={f: sorted(rows[f], key=lambda r: r.sort_key) for f in frameworks},
                    remedies=check_remedies(cases, ordered), conversions=conversions(ordered),
                    scan_rules=_scan_rules(cases))
