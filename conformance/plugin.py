"""pytest hooks: collect YAML cases as items, one per framework and device.

Registered through the ``pytest11`` entry point, so it is loaded wherever the package is
installed; it therefore does nothing unless the run asks for the matrix (``--conformance``, the
ini setting ``conformance = true``, or the ``conformance`` command, which passes the option).

The hooks read top to bottom as a run goes; what they call is in ``conformance/session``: the options
and shared stash keys (state.py), the start of a run (start.py), the collectors and items (items.py:
collection (parse, check, expand) is in :class:`CaseFile`; execution and reporting in :class:`CaseItem`),
and the end of a run (finish.py).  A malformed case file becomes one failing item that names the file
and line, so every other case still runs.

The verdict is pytest's: an item reports its outcome as its own category (the closing line reads
``1 raises, 2 silent-correct, 1 silent-wrong in 3.1s``), fails only when its outcome differs from
its baseline, and errors when the harness failed.  Findings are never failures.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from conformance.adapter import adapter_classes, installed_version, is_installed
from conformance.case.load import find_case_files
from conformance.engine import DEFAULT_TIMEOUT, Prepared, parallel_processes
from conformance.lean import RAN, count_progress_only
from conformance.outputs import OutputError
from conformance.records.baseline import BaselineError, Baselines
from conformance.report.summary import column_name
from conformance.session.finish import (DANGEROUS, RunState, drop_gone_cases, environment_faults, findings,
                                        keep_programs, prune, stale, this_runs_records, unchecked_columns,
                                        why_no_cell_ran, write_summary)
from conformance.session.items import CaseFile, CaseFolder, CaseItem, absent_columns, cell_of
from conformance.session.start import check_baselines, finished_cells, keep_untouched, size, start_outputs
from conformance.session.state import (ABSENT, ACTIVE, ENGINE, KEPT, LOCK, PREVIOUS, RESULTS_FILE, SEEN_IDS, baseline_folder,
                                       case_timeout, devices, engine, frameworks, is_active, is_controller, keeps_programs,
                                       listed, modes, prefetches, results_path, runs_cells, summary_path)
from conformance.settings import (DEFAULT_BASELINES, DEFAULT_RESULTS, DEFAULT_SUMMARY, DEVICES, OptionError,
                                  check_framework_modes, modes_for)
from conformance.workers.faults import check_memory_settings

_RUN = pytest.StashKey["RunState"]()
_CHOSEN = pytest.StashKey[str]()  # what -n auto chose, and why
_GC_THRESHOLDS = pytest.StashKey[tuple]()  # the collector's thresholds before the run
_WALKED = pytest.StashKey[dict]()  # real folders collected, by resolved path: links into them are not followed

#: The letter each outcome prints in pytest's progress line (``-q``).
LETTERS = {"silent-correct": ".", "silent-wrong": "W", "crash": "C", "timeout": "T", "warns": "w",
           "raises": "r", "aliases": "a", "copies": "c", "unsupported": "u"}


# -- the options of a run -----------------------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    # Every option is prefixed, as pytest's own plugins prefix theirs: installed, this plugin is loaded in
    # every project, whose own conftest.py may well add --device or --results.  The conformance command
    # keeps the short spellings and passes these.
    group = parser.getgroup("conformance", "in-place and aliasing conformance matrix")
    group.addoption("--conformance", action="store_true", default=False,
                    help="collect YAML case files as conformance cells and write results "
                         "[ini: conformance = true; the conformance command always asks]")
    parser.addini("conformance", type="bool", default=False,
                  help="collect YAML case files as conformance cells (as --conformance)")
    group.addoption("--conformance-framework", action="append", default=None, metavar="NAME",
                    help="framework to run (repeatable); default: every installed one "
                         "[env CONFORMANCE_FRAMEWORKS, comma-separated]")
    group.addoption("--conformance-device", action="append", default=None, metavar="NAME",
                    help=f"device to run on (repeatable; {', '.join(DEVICES)}); default: every one, gpu cells "
                         "are skipped "
                         "with the reason when unavailable [env CONFORMANCE_DEVICES]")
    group.addoption("--conformance-mode", action="append", default=None, metavar="NAME",
                    help="mode to run in (repeatable): eager, compiled (every compiled mode of each "
                         "framework), or one by name (compile, to_static, to_static_full_graph); "
                         "default: eager [env CONFORMANCE_MODES]")
    group.addoption("--conformance-results", default=None, metavar="FILE",
                    help=f"JSON-lines results file [env CONFORMANCE_RESULTS; default {DEFAULT_RESULTS}]")
    group.addoption("--conformance-summary", default=None, metavar="FILE",
                    help=f"markdown summary table written at the end [default {DEFAULT_SUMMARY}]")
    group.addoption("--conformance-case-timeout", default=None, metavar="SECONDS",
                    help=f"the longest a cell may run before its worker is killed; caps a case's own "
                         f"timeout [default {DEFAULT_TIMEOUT:g}]")
    group.addoption("--conformance-baselines", default=None, metavar="DIR",
                    help="directory of baselines: a cell whose outcome differs from its baseline fails "
                         f"[env CONFORMANCE_BASELINES; default {DEFAULT_BASELINES} when it exists]")
    group.addoption("--conformance-no-baselines", action="store_true", default=False,
                    help="judge every cell on its own, ignoring baselines")
    group.addoption("--conformance-update-baselines", action="store_true", default=False,
                    help="record this run's outcomes in the baselines (entries of cases not run are kept)")
    group.addoption("--conformance-prune-baselines", action="store_true", default=False,
                    help="remove baseline entries of cases that no longer exist under the run's case folders")
    group.addoption("--conformance-resume", action="store_true", default=False,
                    help="keep the results file and run only the cells missing from it")


# -- the start of a run: options checked, outputs started (session/start.py) --------------------------

#: The garbage collector's thresholds during a conformance run (see pytest_configure).
GC_THRESHOLDS = (10_000, 10, 10)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SEEN_IDS] = {}
    config.stash[ACTIVE] = is_active(config)
    if not config.stash[ACTIVE]:
        return
    # A run holds its cases, items and records to its end, so they only grow; with the default thresholds
    # (a collection every 700 allocations) the collector walks all of them over and over, a fifth of this
    # process's time on a 3,000-cell run.  Rarer collections; the previous thresholds come back after.
    config.stash[_GC_THRESHOLDS] = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        frameworks(config)
        devices(config)
        check_framework_modes(listed(config, "framework", "CONFORMANCE_FRAMEWORKS") or [], modes(config),
                              adapter_classes())
        case_timeout(config)
        check_memory_settings()  # CONFORMANCE_*_MEMORY, read now rather than by a worker or the reference
        check_baselines(config)
        if is_controller(config):
            start_outputs(config)
        config.stash[KEPT] = (finished_cells(results_path(config), frameworks(config))
                              if config.getoption("conformance_resume") else {})
    except (OptionError, BaselineError) as exc:
        raise pytest.UsageError(str(exc)) from None
    prepared = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Prepared)), None)
    if prepared is not None and prepared.engine is not None:  # the conformance command started the workers
        config.stash[ENGINE] = prepared.engine
    if is_controller(config):
        config.stash[_RUN] = RunState(start=size(results_path(config)), plugins=config.pluginmanager)
        config.pluginmanager.register(config.stash[_RUN], "conformance-run")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` in a conformance run: as many processes as can pay (0, serial, where none can)."""
    if not is_active(config):
        return None
    try:
        cells = len(find_case_files(Path(config.invocation_params.dir, a.split("::")[0]) for a in config.args
                                    if Path(config.invocation_params.dir, a.split("::")[0]).exists()))
        per_case = sum(len(modes_for(modes(config), getattr(adapter_classes().get(f), "modes", {})))
                       for f in frameworks(config)) * len(devices(config))
    except OptionError:
        return None  # configure reports it
    count, why = parallel_processes(cells * per_case, len(frameworks(config)))
    config.stash[_CHOSEN] = why
    return count if count > 1 else 0


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not config.stash.get(ACTIVE, False):
        return []
    classes = adapter_classes()
    parts = []
    for name in frameworks(config):
        cls = classes.get(name)
        version = installed_version(cls) if cls and is_installed(cls) else None
        parts.append(f"{name} {version}" if version else f"{name} (not installed)")
    return [f"conformance: frameworks: {', '.join(parts)}; devices: {', '.join(devices(config))}; "
            f"modes: {', '.join(modes(config))}",
            f"conformance: results: {results_path(config)}"
            + (" (resumed)" if config.getoption("conformance_resume") else "")]


# -- feeding the workers: started with the session, fed each case's cells as it is collected ----------

def pytest_sessionstart(session: pytest.Session) -> None:
    """Start every framework's worker and the reference service now: their imports (seconds) overlap
    pytest's collection."""
    config = session.config
    chosen = config.stash.get(_CHOSEN, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if chosen and reporter is not None:
        reporter.write_line(f"conformance: -n auto: {chosen}")
    if ENGINE in config.stash:  # started by the conformance command: the run's settings apply
        config.stash[ENGINE].timeout = case_timeout(config)
        config.stash[ENGINE].keeps_programs = keeps_programs(config)
    if runs_cells(config):
        engine(config).start(frameworks(config))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder is collected once, whatever links lead back into it (``a/up -> ..`` would otherwise make
    collection endless): a second path to a folder already collected is passed over."""
    if not config.stash.get(ACTIVE, False) or not collection_path.is_dir():
        return None
    walked = config.stash.setdefault(_WALKED, {})
    target = collection_path.resolve()
    if walked.get(target, collection_path) != collection_path:
        return True  # collected already, through another path
    if collection_path.is_symlink() and any(target in folder.parents for folder in walked):
        return True  # a link above a folder being collected: following it would walk it again, and again
    return None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Remember each real folder collected, so that links into it are known (see pytest_ignore_collect);
    a folder that is not a Python package is collected by :class:`CaseFolder`."""
    if not parent.config.stash.get(ACTIVE, False):
        return None
    parent.config.stash.setdefault(_WALKED, {}).setdefault(path.resolve(), path)
    if (path / "__init__.py").is_file():
        return None  # a package: pytest's own collector
    return CaseFolder.from_parent(parent, path=path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml") or not parent.config.stash.get(ACTIVE, False):
        return None
    if _named(parent.config, file_path):
        return CaseFile.from_parent(parent, path=file_path)
    looks, raw = _looks_like_a_case(file_path)
    if not looks:
        return None
    return CaseFile.from_parent(parent, path=file_path, raw=raw)  # its bytes: the file is read once


#: How much of a YAML file is looked into for a case's key.
_LOOKED_AT = 1 << 20
#: A top-level key only a case file has at the start of a line (``id:``, ``steps:``).
_CASE_KEY = re.compile(rb"^(id|steps)[ \t]*:", re.MULTILINE)


def _looks_like_a_case(path: Path) -> tuple[bool, bytes | None]:
    """Whether a YAML file found in a folder is a case file: one with a top-level ``id:`` or ``steps:``.  The
    project's other YAML (a CI workflow, its own test data) is not the matrix's to judge; a case file with a
    mistake still names its id, and fails with its reason.  What is not a regular file is collected (it
    fails as an invalid case, without being read).  With the file's bytes, where it was read whole."""
    try:
        if not path.is_file():
            return True, None
        with open(path, "rb") as handle:
            raw = handle.read(_LOOKED_AT)
    except OSError:
        return True, None  # unreadable: collected, so that it fails with its reason
    return bool(_CASE_KEY.search(raw)), raw if len(raw) < _LOOKED_AT else None  # a short read: the whole file


def _named(config: pytest.Config, path: Path) -> bool:
    """Whether the command line named this very file (then it is a case, whatever it holds)."""
    named = config.stash.get(_NAMED_FILES, None)
    if named is None:
        where = config.invocation_params.dir
        named = config.stash[_NAMED_FILES] = {str(Path(where, arg.split("::")[0]).absolute())
                                              for arg in config.args}
    return str(path.absolute()) in named


_NAMED_FILES = pytest.StashKey[set]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collection queued each case's cells on the workers as it read the case; now the cells the session
    will run are known (after -k, -m, deselection and reordering): queue the rest in that order, and
    forget those it will not run.  The case ids seen, which only collection checks, are let go."""
    session.config.stash[SEEN_IDS] = {}
    if prefetches(session.config):
        engine(session.config).replan(cell_of(item) for item in session.items
                                      if isinstance(item, CaseItem) and item._kept() is None)
    if is_controller(session.config) and session.config.stash.get(ACTIVE, False):
        terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        count_progress_only(terminal)
        if terminal is not None and session.items:  # what the progress line's letters stand for
            terminal.write_line("cells: " + "  ".join(f"{letter} {outcome}" for outcome, letter in LETTERS.items())
                                + "  s skipped  E error  F changed against its baseline")


# -- running the cells: one protocol per cell, each counted as what it is -----------------------------

@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """pytest's loop over the session's items, letting go of each item once it ran: an item, its file's
    node and its case would otherwise live to the end of the run, and the parent's memory would grow
    with the number of cells.  Only where this process runs every item itself (xdist has its own loop)."""
    if not prefetches(session.config):
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} error{'s' if session.testsfailed != 1 else ''} "
                                  f"during collection")
    items = session.items
    for index, item in enumerate(items):
        nextitem = items[index + 1] if index + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        items[index] = RAN  # the list keeps its length (plugins may count it), not the item
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A cell runs through :meth:`CaseItem.run_protocol`.  In an xdist worker (which learns its items one
    by one), the next cell is queued first, so that it runs while this one is judged."""
    if not isinstance(item, CaseItem) or not hasattr(item.session, "_setupstate"):
        return None
    if hasattr(item.config, "workerinput"):
        engine(item.config).prefetch(cell_of(i) for i in (item, nextitem)
                                     if isinstance(i, CaseItem) and i._kept() is None)
    item.run_protocol(nextitem)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> Any:
    """Once every plugin has had a cell's passing report (the terminal counts it, xdist forwards it,
    junitxml writes it), it keeps only what a count needs: pytest holds every report to the end of the
    run, and a cell's properties and keywords would make a large run's memory grow with its size."""
    result = yield
    if report.passed and any(key == "outcome" for key, _ in report.user_properties):
        report.user_properties = _NOTHING_KEPT
        report.keywords = _NOTHING_KEPT_BY_NAME
    return result


#: What a passing cell's report keeps once every plugin has had it: shared, and unchangeable.
_NOTHING_KEPT: Any = ()
_NOTHING_KEPT_BY_NAME: Any = MappingProxyType({})


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A cell that passed is counted under its outcome (``3 raises``), not as ``passed``."""
    if report.when != "call" or not report.passed or not config.stash.get(ACTIVE, False):
        return None
    outcome = dict(report.user_properties).get("outcome")
    if not isinstance(outcome, str):
        return None
    colour = "red" if outcome in DANGEROUS else "yellow" if outcome in ("warns", "raises") else "green"
    return outcome, LETTERS.get(outcome, "."), (outcome.upper(), {colour: True})


# -- the end of a run: the summary, the baselines, the terminal (session/finish.py) -------------------

def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(_RUN, None)
    if state is None:  # not asked for the matrix, or an xdist worker (which hands its absent devices over)
        if hasattr(config, "workeroutput") and config.stash.get(ABSENT, None):
            config.workeroutput["conformance_absent"] = [[f, d, v, p] for (f, d), (v, p) in config.stash[ABSENT].items()]
        return
    state.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    stop = session.shouldstop or session.shouldfail
    if stop and not state.interrupted:  # -x, --maxfail: the rest of the selected cells never ran
        selected = len(session.items) or session.testscollected
        state.stopped = f"pytest {stop.rstrip('.')}" if isinstance(stop, str) else "-x or --maxfail reached"
        state.notes.append((f"stopped early ({state.stopped}): {state.reported} of {selected} cell(s) ran; the "
                            f"rest are in neither the results nor the summary (--resume runs them)", {"red": True}))
    absent = absent_columns(config)
    state.notes += [(line, {"yellow": True}) for line in absent]
    if not state.reported and not state.interrupted and absent:
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:  # every column asked for is absent
            session.exitstatus = pytest.ExitCode.OK
        keep_untouched(config)
    elif not state.reported and not state.interrupted:
        keep_untouched(config)  # --collect-only, a -k that matches nothing: the results are as they were
        if not config.getoption("collectonly"):
            state.notes.append((f"error: no cell ran: {why_no_cell_ran(config)}", {"red": True}))
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    failed = False
    try:
        records = this_runs_records(config, state)  # slim, for as long as the end of the run needs them
        state.notes += environment_faults(records) + unchecked_columns(config, records)
        if records or state.interrupted or absent:
            write_summary(records, summary_path(config), state, config)
        if config.getoption("conformance_update_baselines") and records:
            store = Baselines(baseline_folder(config)[0])
            written = store.changes(records)  # said, file by file: what the option rewrote
            store.update(records)
            state.notes += [(line, {"yellow": "unchanged" not in line}) for line in written]
        if records:  # an interrupted run too: the programs of the cells it ran are kept with their records
            state.notes += keep_programs(config, records)
        if config.getoption("conformance_prune_baselines"):
            failed = not prune(config, state)
        for record in records:
            by_outcome = state.counts.setdefault(column_name(record), {})
            by_outcome[record.outcome] = by_outcome.get(record.outcome, 0) + 1
        state.stale = stale(config, records)
        drop_gone_cases(config, state)  # last: it rewrites the file the steps above read back
    except OutputError as exc:  # a baseline or the summary that could not be written: the old one is whole
        state.notes.append((f"error: {exc}", {"red": True}))
        failed = True
    except OSError as exc:
        state.notes.append((f"error: cannot write {exc.filename}: {exc.strerror or exc}", {"red": True}))
        failed = True
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """An xdist worker's absent devices, for the controller's summary."""
    absent = getattr(node, "workeroutput", {}).get("conformance_absent") or []
    for framework, device, version, problem in absent:
        node.config.stash.setdefault(ABSENT, {})[(framework, device)] = (version, problem)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_RUN, None)
    if state is None:
        return
    if state.counts:
        terminalreporter.section("conformance outcomes")
        for column, by_outcome in sorted(state.counts.items()):
            terminalreporter.write_line(f"{column}: " + ", ".join(f"{n} {o}" for o, n in sorted(by_outcome.items())))
    explained = findings(config, state)
    first = next(explained, None)
    if first is not None:
        terminalreporter.section("conformance findings")
        terminalreporter.write_line(first)
        for finding in explained:
            terminalreporter.write_line(finding)
    if state.counts:
        terminalreporter.write_line(f"results: {results_path(config)}")
        summary = summary_path(config)
        terminalreporter.write_line(f"summary: {summary}" + (" (interrupted)" if state.interrupted else ""))
        for entry in state.stale:
            terminalreporter.write_line(f"stale baseline entry (no such case): {entry}", yellow=True)
        for line in config.stash.get(PREVIOUS, []):
            terminalreporter.write_line(f"kept {line}")
    for line, markup in state.notes:
        terminalreporter.write_line(line, **markup)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _GC_THRESHOLDS in config.stash:
        gc.set_threshold(*config.stash[_GC_THRESHOLDS])
    results = config.stash.get(RESULTS_FILE, None)
    if results is not None:
        results.close()
    lock = config.stash.get(LOCK, None)
    if lock is not None:
        lock.release()
    engine = config.stash.get(ENGINE, None)
    if engine is not None:
        engine.close()
