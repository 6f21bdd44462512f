"""The end of a conformance run: this run's records read back from its results file (a record at a time, so
memory does not grow with the run), then the summary written, the baselines updated or pruned, each cell's
program kept, and what the terminal prints after the run (the findings, stale baseline entries, notes).
:class:`RunState` is what the controller keeps of the run while it runs.

``pytest_sessionfinish`` and ``pytest_terminal_summary`` (``conformance/plugin.py``) call these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from conformance.adapter import adapter_classes
from conformance.case.load import find_case_files, load_cases
from conformance.lean import COUNTED
from conformance.outputs import keep_previous, write_file
from conformance.records.baseline import UPDATE_OPTION, BaselineError, Baselines
from conformance.records.explain import explain as describe  # the one explanation of a cell
from conformance.records.programs import NO_PROGRAM, keep_spooled
from conformance.records.record import Record, slim
from conformance.records.results import read_records
from conformance.report.summary import render_summary
from conformance.session.state import (PREVIOUS, PRODUCED, PROGRAM_SPOOL, Cell, baseline_folder, baselines, cell,
                                       results_path)


#: Outcomes whose explanation is printed after the run: the cells a user must read.
DANGEROUS = ("silent-wrong", "crash", "timeout")
#: What a record's line holds when :func:`findings` may explain it (a warning is explained where it is wrong).
_MENTIONED = tuple(outcome.encode() for outcome in DANGEROUS + ("warns",))


@dataclass(eq=False)  # registered as a plugin: pluggy keeps plugins in a set, so hashed by identity
class RunState:
    """What the controller keeps of this run while it runs: counts and where its records begin in the
    results file, never the records themselves (the end of the run reads them back, a record at a time),
    so its memory does not grow with the number of cells."""

    reported: int = 0  # cells whose outcome was reported (xdist forwards the reports)
    start: int = 0  # the offset in the results file where this run's records begin
    kept: set[Cell] = field(default_factory=set)  # --resume: the cells of the file this run selected
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # column -> outcome -> cells, at the end
    stale: list[str] = field(default_factory=list)
    notes: list[tuple[str, dict[str, bool]]] = field(default_factory=list)
    interrupted: bool = False
    stopped: str = ""  # why pytest stopped before every selected cell ran (-x, --maxfail), said in full
    summary_written: bool = False

    plugins: Any = None  # the run's plugin manager, where the terminal is found

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        properties = dict(report.user_properties)
        result = yield  # every other plugin (the terminal among them) has had the report
        if "outcome" not in properties:
            return result
        if report.when == "setup":  # every phase carries the cell's properties: the cell is counted once
            self.reported += 1
            if properties.get("kept"):
                self.kept.add((properties["case"], properties["framework"], properties["device"],
                               properties["mode"]))
        if report.passed:
            self._count_only(report, properties["outcome"] if report.when == "call" else "")
        return result

    def _count_only(self, report: pytest.TestReport, category: str) -> None:
        """The terminal keeps every report it counted to the end of the run, in lists by category; a
        passing cell's report is kept there as one shared stand-in, which counts the same (those lists are
        only counted; passing setups and teardowns, in the category "", are not even that)."""
        stats = getattr(self.plugins and self.plugins.get_plugin("terminalreporter"), "stats", None)
        kept = stats.get(category) if isinstance(stats, dict) else None
        if kept and kept[-1] is report:
            if category:
                kept[-1] = COUNTED
            else:
                kept.pop()


def keep_programs(config: pytest.Config, records: list[Record]) -> list[tuple[str, dict[str, bool]]]:
    """Keep the program of each cell this run recorded beside its results file (records/programs.py): the
    reports show each framework's code from it.  Each came back from the worker that ran the cell, with its
    result, and waits in the run's spool; a cell a resumed run kept has its program kept already.  A
    converter's are not kept.  Returns a note when some cell has no program kept (one the run could not
    write down, or kept by a run whose programs were lost)."""
    path = results_path(config)
    if str(path) == os.devnull:
        return []
    classes = adapter_classes()
    wanted = [(r.framework, r.framework_version, r.device, r.mode, r.case) for r in records
              if r.outcome not in NO_PROGRAM and r.framework in classes and not classes[r.framework].isolated]
    spool = config.stash.get(PROGRAM_SPOOL, None)
    if spool is not None:
        spool.close()
    _, missing = keep_spooled(path, wanted, fresh=not config.getoption("conformance_resume"))
    if not missing:
        return []
    return [(f"programs: {missing} of {len(wanted)} cell(s) have no program kept beside {path}, which the reports "
             f"show each framework's code from (`conformance show CASE` prints any cell's)", {"yellow": True})]


def environment_faults(records: list[Record]) -> list[tuple[str, dict[str, bool]]]:
    """One line per column whose framework cannot work in this environment (every cell an error)."""
    faults: dict[str, tuple[str, int]] = {}
    for record in records:
        problem = record.details.get("environment")
        if isinstance(problem, str):
            label = record.column.label
            faults[label] = (problem, faults.get(label, ("", 0))[1] + 1)
    return [(f"error: {label}: {count} cell(s) not run, the environment is at fault: {problem}", {"red": True})
            for label, (problem, count) in sorted(faults.items())]


def unchecked_columns(config: pytest.Config, records: list[Record]) -> list[tuple[str, dict[str, bool]]]:
    """One line per column of this run that no baseline checked: its outcomes were recorded, and nothing
    compared them with earlier ones (a version never recorded, or baselines left out)."""
    counts: dict[Any, int] = {}
    for record in records:
        if record.outcome != "skipped":
            counts[record.column] = counts.get(record.column, 0) + 1
    if not counts or config.getoption("conformance_update_baselines"):
        return []
    store = baselines(config)
    if store is None:
        why = ("--no-baselines" if config.getoption("conformance_no_baselines")
               else f"no baseline folder {baseline_folder(config)[0]}")
        return [(f"unchecked: {column.label}: {count} cell(s) recorded, none checked against a baseline ({why})",
                 {"yellow": True}) for column, count in sorted(counts.items())]
    lines = []
    for column, count in sorted(counts.items()):
        try:
            missing = store.load(column) is None
        except BaselineError:
            continue  # refused before the run
        if missing:
            lines.append((f"unchecked: {column.label}: {count} cell(s) recorded, none checked: no baseline "
                          f"{store.file(column)} ({UPDATE_OPTION} records one)", {"yellow": True}))
    return lines


def prune(config: pytest.Config, state: RunState) -> bool:
    """--prune-baselines: remove the entries of cases known to be gone from the whole catalogue, listing
    each; refuse (False, saying why) whenever that is not known."""
    known, problem = _catalogue(config)
    if problem is not None:
        state.notes.append((f"error: --prune-baselines removed nothing: {problem}", {"red": True}))
        return False
    removed = Baselines(baseline_folder(config)[0]).prune(known)
    state.notes += [(f"pruned baseline entry: {path}: {case}", {"yellow": True}) for path, case in removed]
    if not removed:
        state.notes.append(("--prune-baselines: every baseline entry names a case of the catalogue", {}))
    return True


def _this_runs(config: pytest.Config, state: RunState,
               mentioning: tuple[bytes, ...] = ()) -> Iterator[dict[str, Any]]:
    """This run's records in their JSON form, read back from the results file a record at a time: those
    it appended, and (--resume) those of the cells it kept; never a cell of an earlier run it did not
    select.  A results file on /dev/null keeps nothing to read: the slim records kept in memory then.
    *mentioning*: only records whose line holds one of these bytes (:func:`read_records`) need be given."""
    path = results_path(config)
    if str(path) == os.devnull:
        yield from (record.to_dict() for record in config.stash.get(PRODUCED, {}).values())
        return
    if not state.reported or not path.exists():
        return
    if state.kept:
        yield from (r for r in read_records([path], torn_ok=True, stop=state.start, mentioning=mentioning)
                    if cell(r) in state.kept)
    yield from read_records([path], torn_ok=True, start=state.start, mentioning=mentioning)


def this_runs_records(config: pytest.Config, state: RunState) -> list[Record]:
    """The latest record of each cell this run reported, slim (what the summary, the baselines and the
    counts need); an unreadable results file is reported, never a traceback."""
    latest: dict[Cell, Record] = {}
    try:
        for record in _this_runs(config, state):
            latest[cell(record)] = slim(record)
    except Exception as exc:  # noqa: BLE001 - an unreadable results file is reported, never a traceback
        state.notes.append((f"error: cannot read {results_path(config)}: {exc}", {"red": True}))
        return []
    return list(latest.values())


def findings(config: pytest.Config, state: RunState) -> Iterator[str]:
    """The explanation of each cell a user must read (a dangerous outcome, or a warning beside a wrong
    result), from this run's records read back one at a time."""
    try:  # only the lines that name one of those outcomes are parsed: most cells are none of them
        for record in _this_runs(config, state, mentioning=_MENTIONED):
            outcome = record["outcome"]
            if outcome in DANGEROUS or (outcome == "warns" and (record.get("details") or {}).get("correct") is False):
                yield describe(record)
    except Exception:  # noqa: BLE001 - reported once, by this_runs_records
        return


def write_summary(records: list[Record], path: Path, state: RunState, config: pytest.Config) -> None:
    text = render_summary(records, notes=[line for line, _ in state.notes
                                          if line.startswith(("unchecked:", "error:")) or ": no cells of " in line])
    if state.interrupted or state.stopped:
        title, _, rest = text.partition("\n")
        why = "**Interrupted**: the run was stopped" if state.interrupted else f"**Stopped early**: {state.stopped}"
        text = (f"{title}\n\n{why} before every cell ran; {len(records)} cell(s) finished and are shown below."
                f"\n{rest}")
    kept = keep_previous(path)
    if kept is not None:
        config.stash.setdefault(PREVIOUS, []).append(f"the previous run's summary: {kept}")
    write_file(path, text)
    state.summary_written = True


def why_no_cell_ran(config: pytest.Config) -> str:
    args = [arg.split("::")[0] for arg in config.args]
    paths = [Path(config.invocation_params.dir, arg) for arg in args]
    if not find_case_files(p for p in paths if p.exists()):
        return f"no case file (*.yaml, *.yml) under {', '.join(args)}"
    if not load_cases(paths)[0]:
        return "every case file is invalid (see above)"
    return "every cell was deselected (-k, -m or --deselect)"


def _catalogue(config: pytest.Config) -> tuple[set[str], str | None]:
    """The ids of every case of the whole catalogue, and of the run's own paths (a case run from outside
    the catalogue is known too); with the reason they are not all known, when a file cannot be read
    (its ids are unknown) or there is no catalogue.  The catalogue is the folder ``cases`` where the
    run was started, and the nearest folder named ``cases`` around each path the run was given."""
    here = Path(config.invocation_params.dir)
    roots: list[Path] = [here / "cases"] if (here / "cases").is_dir() else []
    for arg in config.args:
        path = Path(here, arg.split("::")[0]).absolute()
        enclosing = next((p for p in [path, *path.parents] if p.name == "cases" and p.is_dir()), None)
        roots += [enclosing] if enclosing is not None else []
        roots.append(path)
    if not any(root.name == "cases" for root in roots):
        return set(), f"no catalogue (a folder named cases) in {here} or around the run's paths"
    cases, errors = load_cases(dict.fromkeys(roots))
    if errors:
        return set(), (f"{len(errors)} case file(s) could not be read, so the cases they define are unknown; "
                       f"first: {errors[0]}")
    return {case.id for case in cases}, None


def stale(config: pytest.Config, records: list[Record]) -> list[str]:
    """Baseline entries of the columns this run ran that name no case of the catalogue."""
    store = baselines(config)
    if not records or store is None or config.getoption("conformance_prune_baselines"):
        return []
    candidates = store.stale(records)
    if not candidates:
        return []
    known, problem = _catalogue(config)
    if problem is not None:  # which entries are stale is not known: none is called stale
        return []
    return [entry for entry in candidates if entry.rsplit(": ", 1)[1] not in known]


def drop_gone_cases(config: pytest.Config, state: RunState) -> None:
    """--resume: the records, kept from before, of cases the catalogue no longer has (removed or renamed)
    leave the results file, so that its report describes the catalogue as it is; the file as it was is
    kept beside it (``NAME.previous``) and the cases are named.  Nothing is dropped where the catalogue is
    not known (a case file that cannot be read)."""
    path = results_path(config)
    if not config.getoption("conformance_resume") or str(path) == os.devnull or not path.is_file():
        return
    known, problem = _catalogue(config)
    if problem is not None:
        return
    gone = sorted({r["case"] for r in read_records([path], torn_ok=True, stop=state.start)
                   if r.get("case") not in known})
    if not gone:
        return
    aside = keep_previous(path)
    dropped = set(gone)
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle if not _names_a_case_of(line, dropped)]
    write_file(path, "".join(lines))
    shown = ", ".join(gone[:8]) + (", ..." if len(gone) > 8 else "")
    state.notes.append((f"dropped from {path} the records of {len(gone)} case(s) no longer in the catalogue "
                        f"({shown}); the file as it was: {aside}", {"yellow": True}))


def _names_a_case_of(line: str, cases: set[str]) -> bool:
    """Whether a results file's *line* is a record of one of *cases* (run lines and others are kept)."""
    import json

    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("case") in cases
