"""Every hazard and its safe spelling, checked against the results: the data behind the porting guide.

A case is a **hazard** where some eager cell of it, on a framework's own column, raises, is wrong
(silently or beside a warning), crashes or hangs, or where it shares memory on some columns and copies it
on others (code that relies on one meets the other).  A hand-written hazard names the cases that are its
safe spelling (``remedy: [ids]``) or says why there is none (``no_remedy:``), and says in one line why it
goes wrong (``cause:``); cases the fuzzer wrote are hazards by construction and need neither.

A remedy is **verified** on a column (a framework version and device) when it is silent-correct there, or
shares or copies memory (``aliases``/``copies``) with values that match the reference (a memory case's
values are recorded as evidence, ``matches_reference``, not as its outcome).  A remedy must be safe
wherever it ran: it is itself a hazard if any eager cell of it raises, is wrong, warns, crashes or hangs,
and a remedy whose memory behaviour differs between columns (``aliases`` on one, ``copies`` on another) is
a porting hazard of its own; a cell the harness could not judge (``error``) verifies nothing and says so.
Each column where the hazard ran (any outcome but ``unsupported`` and ``skipped``) needs a remedy
verified on it.

Scope: eager cells of the frameworks' own columns.  A converter's column (PaConvert's: its records say
so, ``report/conversions.py``) is what a tool does to a program, reported beside the hazards by the
guide (``report/porting.py``), not a framework a remedy is written for; compiled modes are the mode
report's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from conformance.case.model import Case
from conformance.records.record import EAGER, Column, Record
from conformance.report.conversions import converter_frameworks

__all__ = ["HAZARDS", "SAFE", "Hazard", "Problem", "Remedies", "check_remedies", "is_hazard"]

#: Outcomes that make a cell a hazard (``warns`` counts when its result is wrong).
HAZARDS = frozenset({"raises", "silent-wrong", "crash", "timeout"})
#: Outcomes a remedy may have: right values, whether memory is shared or copied.
SAFE = frozenset({"silent-correct", "aliases", "copies"})
#: Outcomes of a cell that did not run the program.
NOT_RUN = frozenset({"unsupported", "skipped"})
MEMORY = frozenset({"aliases", "copies"})


def is_hazard(record: Record) -> bool:
    """Whether the cell raises, is wrong, crashes or hangs."""
    return record.outcome in HAZARDS or record.wrong


def memory_differs(records: Iterable[Record]) -> list[Record]:
    """The memory cells of a case that shares memory on some columns and copies it on others (a porting
    hazard: code that relies on one sees the other), else none."""
    memory = [r for r in records if r.outcome in MEMORY]
    return memory if len({r.outcome for r in memory}) > 1 else []


@dataclass(frozen=True)
class Problem:
    """Something the check found, at a case file's line."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Hazard:
    """A hazard case, its hazardous cells, and which remedy is verified on each column where it ran."""

    case: Case
    hazardous: list[Record]
    ran: list[Column]
    verified: dict[Column, str] = field(default_factory=dict)  # column -> the remedy verified there

    #: columns of a device lent now and then (a GPU) that ran the hazard before any of its remedies existed:
    #: not verified there yet, which docs/gpu.md says, rather than a problem of the catalogue
    pending: list[Column] = field(default_factory=list)

    @property
    def unverified(self) -> list[Column]:
        return [c for c in self.ran if c not in self.verified and c not in self.pending]


@dataclass
class Remedies:
    """The outcome of the check: every hazard, and every problem found."""

    hazards: dict[str, Hazard]
    problems: list[Problem]
    #: Of the problems, the remedies that name no case of the catalogue (a typo, or a file that did not load):
    #: nothing can be said of them, so the porting guide is not written over them.
    unknown: list[Problem] = field(default_factory=list)
    #: Hand-written cases with no eager result in the files: neither hazard nor remedy can be checked.
    unrun: list[str] = field(default_factory=list)

    @property
    def remedied(self) -> list[Hazard]:
        """Hazards whose remedies are verified on every column where they ran."""
        return [h for h in self.hazards.values() if h.case.remedy and not h.unverified]


def _eager_cells(records: Iterable[Record], converters: frozenset[str]) -> dict[str, dict[Column, Record]]:
    """case -> column -> record, for the frameworks' own eager columns (a later record wins a cell)."""
    cells: dict[str, dict[Column, Record]] = {}
    for record in records:
        if record.mode == EAGER and record.framework not in converters and record.outcome != "skipped":
            cells.setdefault(record.case, {})[record.column] = record
    return cells


def check_remedies(cases: Sequence[Case], records: Iterable[Record]) -> Remedies:
    """Check every case of *cases* against *records* (a case the fuzzer wrote needs no remedy)."""
    records = list(records)
    cells = _eager_cells(records, converter_frameworks(records))
    by_id = {case.id: case for case in cases}
    problems: list[Problem] = []
    unknown: list[Problem] = []
    hazards: dict[str, Hazard] = {}

    def problem(case: Case, key: tuple, message: str) -> None:
        problems.append(Problem(case.path, _line(case, key), message))

    for case in cases:
        mine = cells.get(case.id, {})
        hazardous = [r for r in mine.values() if is_hazard(r)] or memory_differs(mine.values())
        for i, remedy in enumerate(case.remedy):
            if remedy not in by_id:
                problem(case, ("remedy", i), f"remedy {remedy!r} is not a case of this catalogue")
                unknown.append(problems[-1])
        if not hazardous:
            continue
        ran = sorted(c for c, r in mine.items() if r.outcome not in NOT_RUN)
        hazard = hazards[case.id] = Hazard(case, sorted(hazardous, key=lambda r: r.column), ran)
        if case.generated:
            continue
        if not case.cause:
            problem(case, ("id",), "a hazard says why it goes wrong: add a one-line 'cause:'")
        if not case.remedy and not case.no_remedy:
            problem(case, ("id",), f"a hazard ({_where(hazardous)}) names its safe spelling ('remedy: [case ids]') "
                                   "or says why there is none ('no_remedy:')")
            continue
        for i, remedy in enumerate(case.remedy):
            if remedy in by_id:
                problems += _remedy_problems(case, i, by_id[remedy], cells.get(remedy, {}), hazard)
        hazard.pending = [c for c in hazard.ran if c.device != "cpu" and c not in hazard.verified
                          and not any(c in cells.get(remedy, {}) for remedy in case.remedy)]
        if case.remedy and hazard.unverified:
            problem(case, ("remedy",), "no remedy is verified on " + ", ".join(c.label for c in hazard.unverified)
                    + ", where the hazard ran")
    unrun = sorted(case.id for case in cases if not case.generated and case.id not in cells)
    return Remedies(hazards, problems, unknown, unrun)


def _remedy_problems(case: Case, index: int, remedy: Case, cells: Mapping[Column, Record],
                     hazard: Hazard) -> list[Problem]:
    """What is wrong with one remedy of *case*; marks the columns it verifies on *hazard*."""
    line = _line(case, ("remedy", index))
    if not cells:
        return [Problem(case.path, line, f"remedy {remedy.id!r} has no results: run it on every column")]
    faults = [r for r in cells.values() if r.outcome == "error"]
    if faults:
        return [Problem(case.path, line, f"remedy {remedy.id!r} was not judged (a harness fault, error): "
                                         f"{_where(faults)}: run it again")]
    unsafe = [r for r in cells.values() if r.outcome not in SAFE | NOT_RUN]
    if unsafe:
        return [Problem(case.path, line, f"remedy {remedy.id!r} is itself a hazard: {_where(unsafe)}")]
    differing = [r for r in cells.values() if r.outcome in MEMORY
                 and any(o.get("matches_reference") is False for o in r.observations)]
    if differing:
        return [Problem(case.path, line, f"remedy {remedy.id!r} shares or copies memory, but its values differ "
                                         f"from the reference: {_where(differing)}")]
    memory = {r.outcome for r in cells.values() if r.outcome in MEMORY}
    if len(memory) > 1:
        by = {o: [r for r in cells.values() if r.outcome == o] for o in sorted(memory)}
        return [Problem(case.path, line, f"remedy {remedy.id!r} shares memory on some columns and copies on others "
                                         f"({'; '.join(_where(rs) for rs in by.values())}): a hazard of its own")]
    for column, record in cells.items():
        if record.outcome in SAFE and column in hazard.ran:
            hazard.verified.setdefault(column, remedy.id)
    return []


def _where(records: Iterable[Record]) -> str:
    """``raises on torch 2.13.0 cpu, paddle 3.3.1 cpu``, outcomes grouped."""
    by: dict[str, list[str]] = {}
    for record in sorted(records, key=lambda r: r.column):
        by.setdefault(record.outcome_label, []).append(record.column.label)
    return "; ".join(f"{outcome} on {', '.join(labels)}" for outcome, labels in by.items())


def _line(case: Case, key: tuple) -> int:
    """The line of *key* in the case's file (a case sent to another process has no line map: its id's line)."""
    return case.lines.of(key, case.line) if case.lines else case.line
