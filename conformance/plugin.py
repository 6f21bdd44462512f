"""pytest hooks: collect YAML cases as items, one per framework and device.

Registered through the ``pytest11`` entry point, so it is loaded wherever the package is
installed; it therefore does nothing unless the run asks for the matrix (``--conformance``, the
ini setting ``conformance = true``, or the ``conformance`` command, which passes the option).

Collection (parse, check, expand) is in :class:`CaseFile`; execution and reporting in
:class:`CaseItem`.  A malformed case file becomes one failing item that names the file and line,
so every other case still runs.

The verdict is pytest's: an item reports its outcome as its own category (the closing line reads
``1 raises, 2 silent-correct, 1 silent-wrong in 3.1s``), fails only when its outcome differs from
its baseline, and errors when the harness failed.  Findings are never failures.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterator

import pytest

from conformance.adapter import adapter_classes, installed, installed_version, is_installed, source_version
from conformance.case.kept import load_checked
from conformance.case.load import Case, CaseError, find_case_files, load_cases
from conformance.engine import DEFAULT_TIMEOUT, Engine, Prepared, parallel_processes
from conformance.lean import COUNTED, RAN, count_progress_only
from conformance.outputs import OutputError, ResultsLock, check_outputs, keep_previous, write_file
from conformance.program.rendered import case_key, render_all
from conformance.records.baseline import BaselineError, Baselines
from conformance.records.explain import explain as describe  # the one explanation of a cell
from conformance.records.programs import write_programs
from conformance.records.record import Record, slim, split_build
from conformance.records.results import ResultsError, ResultsFile, ResultsWriteError, read_records
from conformance.report.summary import column_name, render_summary
from conformance.settings import (DEFAULT_BASELINES, DEFAULT_RESULTS, DEFAULT_SUMMARY, DEVICES, EAGER, OptionError,
                                  baseline_dir, check_framework_modes, check_frameworks, check_modes, modes_for,
                                  results_file, seconds)
from conformance.workers.faults import memory_limit

_ACTIVE = pytest.StashKey[bool]()
_PREVIOUS = pytest.StashKey[list]()  # where the outputs of the run before this one were kept
_ENGINE = pytest.StashKey[Engine]()
_SEEN_IDS = pytest.StashKey[dict]()
_KEPT = pytest.StashKey[dict]()
_RUN = pytest.StashKey["RunState"]()
_BASELINES = pytest.StashKey["Baselines | None"]()
_CHOSEN = pytest.StashKey[str]()  # what -n auto chose, and why
_COLUMNS = pytest.StashKey[list]()  # the (framework, device, mode, label) a case expands to
_RESULTS_FILE = pytest.StashKey["ResultsFile"]()
_PRODUCED = pytest.StashKey[dict]()  # results on /dev/null: the slim record of each cell, for the summary
_KEEPS = pytest.StashKey[bool]()  # see _keeps_records
_GC_THRESHOLDS = pytest.StashKey[tuple]()  # the collector's thresholds before the run
_LOCK = pytest.StashKey["ResultsLock"]()  # this run's hold on its results file
_WALKED = pytest.StashKey[dict]()  # real folders collected, by resolved path: links into them are not followed

Cell = tuple[str, str, str, str]  # case id, framework, device, mode: what --resume and the summary key on

#: The letter each outcome prints in pytest's progress line (``-q``).
LETTERS = {"silent-correct": ".", "silent-wrong": "W", "crash": "C", "timeout": "T", "warns": "w",
           "raises": "r", "aliases": "a", "copies": "c", "unsupported": "u"}
#: Outcomes whose explanation is printed after the run: the cells a user must read.
_DANGEROUS = ("silent-wrong", "crash", "timeout")


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


def is_active(config: pytest.Config) -> bool:
    """Whether this run asked for the matrix; otherwise the plugin collects and writes nothing."""
    return bool(config.getoption("conformance") or config.getini("conformance"))


def _listed(config: pytest.Config, option: str, env: str) -> list[str] | None:
    values = config.getoption(f"conformance_{option}")
    if values:
        return list(dict.fromkeys(values))
    raw = os.environ.get(env, "").strip()
    return [v.strip() for v in raw.split(",") if v.strip()] or None


def frameworks(config: pytest.Config) -> list[str]:
    classes = adapter_classes()
    chosen = _listed(config, "framework", "CONFORMANCE_FRAMEWORKS")
    if chosen:
        return check_frameworks(chosen, classes)
    return [name for name, cls in classes.items() if is_installed(cls)] or list(classes)


def devices(config: pytest.Config) -> list[str]:
    chosen = _listed(config, "device", "CONFORMANCE_DEVICES")
    for device in chosen or ():
        if device not in DEVICES:
            raise OptionError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    return chosen or list(DEVICES)


def modes(config: pytest.Config) -> list[str]:
    """The modes asked for (``eager`` by default); ``compiled`` stands for each framework's compiled modes."""
    return check_modes(_listed(config, "mode", "CONFORMANCE_MODES") or [EAGER], adapter_classes())


def case_timeout(config: pytest.Config) -> float:
    raw = config.getoption("conformance_case_timeout")
    return DEFAULT_TIMEOUT if raw is None else seconds("--conformance-case-timeout", raw)


def results_path(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir, results_file(config.getoption("conformance_results")))


def summary_path(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir, config.getoption("conformance_summary") or DEFAULT_SUMMARY)


def _baseline_dir(config: pytest.Config) -> tuple[Path, bool]:
    """The baseline directory, and whether it was asked for (else it is the default)."""
    return baseline_dir(config.getoption("conformance_baselines"), config.invocation_params.dir)


def baselines(config: pytest.Config) -> Baselines | None:
    """The baselines cells are checked against, or None (ignored, updating, or none present);
    one store per run, so each baseline file is read once."""
    if _BASELINES not in config.stash:
        directory, asked = _baseline_dir(config)
        ignored = config.getoption("conformance_no_baselines") or config.getoption("conformance_update_baselines")
        config.stash[_BASELINES] = None if ignored or not (asked or directory.is_dir()) else Baselines(directory)
    return config.stash[_BASELINES]


def _check_baselines(config: pytest.Config) -> None:
    """A baseline folder asked for must exist (else the gate would be off without a word), and every
    baseline file in the folder in use must read, before any cell runs; --update-baselines rewrites
    unreadable ones (keeping their bytes beside them) and creates the folder."""
    directory, asked = _baseline_dir(config)
    if config.getoption("conformance_no_baselines"):
        return
    updating = config.getoption("conformance_update_baselines")
    if asked and not directory.is_dir() and not updating:
        raise OptionError(f"no baseline folder {directory}; give an existing one, or --update-baselines to "
                          f"create it, or --no-baselines to judge every cell on its own")
    if directory.is_dir() and not updating:
        Baselines(directory).check_files()


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def _as_dict(record: Any) -> dict[str, Any]:
    """A record in its JSON form, whether the engine hands back a dict or a typed record."""
    return dict(record) if isinstance(record, Mapping) else record.to_dict()


def _cell(record: Mapping[str, Any]) -> Cell:
    return record["case"], record["framework"], record["device"], record.get("mode", EAGER)


# -- the start of a run: options, outputs, what a resumed run keeps ---------------------------------

#: The garbage collector's thresholds during a conformance run (see pytest_configure).
GC_THRESHOLDS = (10_000, 10, 10)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SEEN_IDS] = {}
    config.stash[_ACTIVE] = is_active(config)
    if not config.stash[_ACTIVE]:
        return
    # A run holds its cases, items and records to its end, so they only grow; with the default thresholds
    # (a collection every 700 allocations) the collector walks all of them over and over, a fifth of this
    # process's time on a 3,000-cell run.  Rarer collections; the previous thresholds come back after.
    config.stash[_GC_THRESHOLDS] = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        frameworks(config)
        devices(config)
        check_framework_modes(_listed(config, "framework", "CONFORMANCE_FRAMEWORKS") or [], modes(config),
                              adapter_classes())
        case_timeout(config)
        memory_limit()  # CONFORMANCE_WORKER_MEMORY, read now rather than by the first worker
        _check_baselines(config)
        if _is_controller(config):
            _start_outputs(config)
        config.stash[_KEPT] = (_finished_cells(results_path(config), frameworks(config))
                               if config.getoption("conformance_resume") else {})
    except (OptionError, BaselineError) as exc:
        raise pytest.UsageError(str(exc)) from None
    prepared = next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Prepared)), None)
    if prepared is not None and prepared.engine is not None:  # the conformance command started the workers
        config.stash[_ENGINE] = prepared.engine
    if _is_controller(config):
        config.stash[_RUN] = RunState(start=_size(results_path(config)), plugins=config.pluginmanager)
        config.pluginmanager.register(config.stash[_RUN], "conformance-run")


def _size(path: Path) -> int:
    """Where this run's records will begin in its results file (started, or trimmed to whole records)."""
    try:
        return 0 if str(path) == os.devnull else path.stat().st_size
    except OSError:
        return 0


def _keeps_records(config: pytest.Config) -> bool:
    """Whether the run keeps each cell's slim record in memory: only when its results go to /dev/null,
    from where the end of the run cannot read them back."""
    if _KEEPS not in config.stash:
        config.stash[_KEEPS] = str(results_path(config)) == os.devnull
    return config.stash[_KEEPS]


def _start_outputs(config: pytest.Config) -> None:
    """Check both outputs (outputs.py), take the results file for this run, then start it: emptied, or
    kept and trimmed to whole records with --resume.  The summary is left as it is until the end."""
    results, summary = results_path(config), summary_path(config)
    check_outputs(results, summary)
    lock = ResultsLock(results)
    lock.acquire()  # before the file is emptied: a second run on it is refused, not let loose on it
    config.stash[_LOCK] = lock
    if str(results) == os.devnull:
        return
    if config.getoption("conformance_resume"):
        _drop_torn_tail(results)
    else:
        kept = keep_previous(results)  # an earlier run's records are never emptied away without a copy
        if kept is not None:
            config.stash[_PREVIOUS] = [f"the previous run's results: {kept}"]
        with open(results, "r+b") as handle:  # records are appended as cells finish
            handle.truncate(0)


def _drop_torn_tail(path: Path) -> None:
    """Cut a record that an interrupted write left without its newline, so appends start clean."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _finished_cells(path: Path, chosen: list[str]) -> dict[Cell, dict[str, Any]]:
    """The cells a results file already holds (the latest record of each), for --resume.  Every line
    must be a record (a foreign line is refused, naming it), and the records of a framework this run
    runs must be of the version installed here: a resumed run never mixes two versions in one column."""
    kept: dict[Cell, dict[str, Any]] = {}
    if not path.exists() or str(path) == os.devnull:
        return kept
    try:
        records = list(read_records([path], torn_ok=True))
    except ResultsError as exc:
        raise OptionError(f"cannot resume from {exc}") from None
    versions = {name: installed(name)[1] for name in chosen}
    sources = {name: source_version(name) for name in chosen}  # a converter's column: the torch that wrote it
    for record in records:
        framework, version = record["framework"], split_build(record["framework_version"])[0]
        if framework in versions and versions[framework] not in (None, version):
            raise OptionError(f"cannot resume from {path}: it holds records of {framework} {version}, and this "
                              f"environment has {framework} {versions[framework]}; give this run its own --results")
        written_by = split_build(str((record.get("run_info") or {}).get("source_version") or ""))[0]
        if sources.get(framework) and written_by and written_by != sources[framework]:
            raise OptionError(f"cannot resume from {path}: its {framework} records are of programs written by "
                              f"{adapter_classes()[framework].source} {written_by}, and this environment has "
                              f"{sources[framework]}; give this run its own --results")
        kept[_cell(record)] = record
    return kept


def _results_file(config: pytest.Config) -> ResultsFile:
    """This process's results file, opened once for the run."""
    if _RESULTS_FILE not in config.stash:
        config.stash[_RESULTS_FILE] = ResultsFile(results_path(config), shared=hasattr(config, "workerinput"))
    return config.stash[_RESULTS_FILE]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _GC_THRESHOLDS in config.stash:
        gc.set_threshold(*config.stash[_GC_THRESHOLDS])
    results = config.stash.get(_RESULTS_FILE, None)
    if results is not None:
        results.close()
    lock = config.stash.get(_LOCK, None)
    if lock is not None:
        lock.release()
    engine = config.stash.get(_ENGINE, None)
    if engine is not None:
        engine.close()


# -- feeding the workers: started with the session, fed every collected cell at once -----------------

def _runs_cells(config: pytest.Config) -> bool:
    """Whether this process runs cells itself (not an xdist controller, not --collect-only)."""
    distributing = getattr(config.option, "dist", "no") != "no" and _is_controller(config)
    return config.stash.get(_ACTIVE, False) and not distributing and not config.option.collectonly


def _engine(config: pytest.Config) -> Engine:
    if _ENGINE not in config.stash:
        config.stash[_ENGINE] = Engine(timeout=case_timeout(config))
    return config.stash[_ENGINE]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start every framework's worker and the reference service now: their imports (seconds) overlap
    pytest's collection."""
    config = session.config
    chosen = config.stash.get(_CHOSEN, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if chosen and reporter is not None:
        reporter.write_line(f"conformance: -n auto: {chosen}")
    if _ENGINE in config.stash:  # started by the conformance command: the run's timeout applies
        config.stash[_ENGINE].timeout = case_timeout(config)
    if _runs_cells(config):
        _engine(config).start(frameworks(config))


def _prefetches(config: pytest.Config) -> bool:
    """Whether this process knows the cells it runs as it collects them (not an xdist worker, which is
    handed its items one batch at a time)."""
    return _runs_cells(config) and not hasattr(config, "workerinput")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collection queued each case's cells on the workers as it read the case; now the cells the session
    will run are known (after -k, -m, deselection and reordering): queue the rest in that order, and
    forget those it will not run.  The case ids seen, which only collection checks, are let go."""
    session.config.stash[_SEEN_IDS] = {}
    if _prefetches(session.config):
        _engine(session.config).replan(_cell_of(item) for item in session.items
                                       if isinstance(item, CaseItem) and item._kept() is None)
    if _is_controller(session.config) and session.config.stash.get(_ACTIVE, False):
        terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        count_progress_only(terminal)
        if terminal is not None and session.items:  # what the progress line's letters stand for
            terminal.write_line("cells: " + "  ".join(f"{letter} {outcome}" for outcome, letter in LETTERS.items())
                                + "  s skipped  E error  F changed against its baseline")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """pytest's loop over the session's items, letting go of each item once it ran: an item, its file's
    node and its case would otherwise live to the end of the run, and the parent's memory would grow
    with the number of cells.  Only where this process runs every item itself (xdist has its own loop)."""
    if not _prefetches(session.config):
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
        _engine(item.config).prefetch(_cell_of(i) for i in (item, nextitem)
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


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder is collected once, whatever links lead back into it (``a/up -> ..`` would otherwise make
    collection endless): a second path to a folder already collected is passed over."""
    if not config.stash.get(_ACTIVE, False) or not collection_path.is_dir():
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
    if not parent.config.stash.get(_ACTIVE, False):
        return None
    parent.config.stash.setdefault(_WALKED, {}).setdefault(path.resolve(), path)
    if (path / "__init__.py").is_file():
        return None  # a package: pytest's own collector
    return CaseFolder.from_parent(parent, path=path)


class CaseFolder(pytest.Dir):
    """pytest's folder collector, which passes over whatever is not a regular file or a folder; a case
    file name on something else (a FIFO, a device, a broken link) is collected too, so that it fails
    with its reason as an invalid case file instead of vanishing from the run."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        yield from super().collect()
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.endswith((".yaml", ".yml")) and not _is_file_or_folder(entry):
                yield CaseFile.from_parent(self, path=Path(entry.path))


def _is_file_or_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file() or entry.is_dir()
    except OSError:
        return False


def _cell_of(item: "CaseItem") -> tuple[Case, str, str, str]:
    return item.case, item.framework, item.device, item.mode


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
    if not config.stash.get(_ACTIVE, False):
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


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml") and parent.config.stash.get(_ACTIVE, False):
        return CaseFile.from_parent(parent, path=file_path)
    return None


# -- the verdict: each cell counted as what it is ----------------------------------------------------

def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A cell that passed is counted under its outcome (``3 raises``), not as ``passed``."""
    if report.when != "call" or not report.passed or not config.stash.get(_ACTIVE, False):
        return None
    outcome = dict(report.user_properties).get("outcome")
    if not isinstance(outcome, str):
        return None
    colour = "red" if outcome in _DANGEROUS else "yellow" if outcome in ("warns", "raises") else "green"
    return outcome, LETTERS.get(outcome, "."), (outcome.upper(), {colour: True})


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(_RUN, None)
    if state is None:  # not asked for the matrix, or an xdist worker
        return
    state.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    if not state.reported and not state.interrupted:
        state.notes.append((f"error: no cell ran: {_why_no_cell_ran(config)}", {"red": True}))
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    failed = False
    try:
        records = _this_runs_records(config, state)  # slim, for as long as the end of the run needs them
        state.notes += _environment_faults(records) + _unchecked_columns(config, records)
        if records or state.interrupted:
            _write_summary(records, summary_path(config), state, config)
        if config.getoption("conformance_update_baselines") and records:
            Baselines(_baseline_dir(config)[0]).update(records)
        if records and not state.interrupted:
            _keep_programs(config, records)
        if config.getoption("conformance_prune_baselines"):
            failed = not _prune(config, state)
        for record in records:
            by_outcome = state.counts.setdefault(column_name(record), {})
            by_outcome[record.outcome] = by_outcome.get(record.outcome, 0) + 1
        state.stale = _stale(config, records)
    except OutputError as exc:  # a baseline or the summary that could not be written: the old one is whole
        state.notes.append((f"error: {exc}", {"red": True}))
        failed = True
    except OSError as exc:
        state.notes.append((f"error: cannot write {exc.filename}: {exc.strerror or exc}", {"red": True}))
        failed = True
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _keep_programs(config: pytest.Config, records: list[Record]) -> None:
    """The program of each cell this run recorded, kept beside its results file (records/programs.py), by
    the run's own workers: the reports show each framework's code from it.  A converter's are not kept.
    The cases are read again from the paths the run was given (a run lets go of each case as its cells end)."""
    path = results_path(config)
    if str(path) == os.devnull:
        return
    classes = adapter_classes()
    columns: dict[tuple[str, str, str, str], set[str]] = {}
    for record in records:
        cls = classes.get(record.framework)
        if record.outcome not in ("skipped", "error") and cls is not None and not cls.isolated:
            columns.setdefault((record.framework, record.framework_version, record.device, record.mode),
                               set()).add(record.case)
    if not columns:
        return
    where = config.invocation_params.dir
    paths = [Path(where, arg.split("::")[0]) for arg in config.args] or [Path(where, "cases")]
    cases = {case.id: case for case in load_cases(p for p in paths if p.exists())[0]}
    pool = _engine(config).pool
    entries = []
    for (framework, version, device, mode), names in sorted(columns.items()):
        chosen = [cases[name] for name in sorted(names) if name in cases]
        replies = render_all(functools.partial(pool.submit, framework), chosen, device, mode,
                             timeout=case_timeout(config), wait=pool.wait)
        entries += [{"framework": framework, "version": version, "device": device, "mode": mode, "case": case.id,
                     "case_digest": case.digest, **replies[case_key(case)]}
                    for case in chosen if case_key(case) in replies]
    if entries:
        write_programs(path, entries)


def _environment_faults(records: list[Record]) -> list[tuple[str, dict[str, bool]]]:
    """One line per column whose framework cannot work in this environment (every cell an error)."""
    faults: dict[str, tuple[str, int]] = {}
    for record in records:
        problem = record.details.get("environment")
        if isinstance(problem, str):
            label = record.column.label
            faults[label] = (problem, faults.get(label, ("", 0))[1] + 1)
    return [(f"error: {label}: {count} cell(s) not run, the environment is at fault: {problem}", {"red": True})
            for label, (problem, count) in sorted(faults.items())]


def _unchecked_columns(config: pytest.Config, records: list[Record]) -> list[tuple[str, dict[str, bool]]]:
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
               else f"no baseline folder {_baseline_dir(config)[0]}")
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
                          f"{store.file(column)} (--update-baselines records one)", {"yellow": True}))
    return lines


def _prune(config: pytest.Config, state: RunState) -> bool:
    """--prune-baselines: remove the entries of cases known to be gone from the whole catalogue, listing
    each; refuse (False, saying why) whenever that is not known."""
    known, problem = _catalogue(config)
    if problem is not None:
        state.notes.append((f"error: --prune-baselines removed nothing: {problem}", {"red": True}))
        return False
    removed = Baselines(_baseline_dir(config)[0]).prune(known)
    state.notes += [(f"pruned baseline entry: {path}: {case}", {"yellow": True}) for path, case in removed]
    if not removed:
        state.notes.append(("--prune-baselines: every baseline entry names a case of the catalogue", {}))
    return True


def _this_runs(config: pytest.Config, state: RunState) -> Iterator[dict[str, Any]]:
    """This run's records in their JSON form, read back from the results file a record at a time: those
    it appended, and (--resume) those of the cells it kept; never a cell of an earlier run it did not
    select.  A results file on /dev/null keeps nothing to read: the slim records kept in memory then."""
    path = results_path(config)
    if str(path) == os.devnull:
        yield from (record.to_dict() for record in config.stash.get(_PRODUCED, {}).values())
        return
    if not state.reported or not path.exists():
        return
    if state.kept:
        yield from (r for r in read_records([path], torn_ok=True, stop=state.start) if _cell(r) in state.kept)
    yield from read_records([path], torn_ok=True, start=state.start)


def _this_runs_records(config: pytest.Config, state: RunState) -> list[Record]:
    """The latest record of each cell this run reported, slim (what the summary, the baselines and the
    counts need); an unreadable results file is reported, never a traceback."""
    latest: dict[Cell, Record] = {}
    try:
        for record in _this_runs(config, state):
            latest[_cell(record)] = slim(record)
    except Exception as exc:  # noqa: BLE001 - an unreadable results file is reported, never a traceback
        state.notes.append((f"error: cannot read {results_path(config)}: {exc}", {"red": True}))
        return []
    return list(latest.values())


def _findings(config: pytest.Config, state: RunState) -> Iterator[str]:
    """The explanation of each cell a user must read (a dangerous outcome, or a warning beside a wrong
    result), from this run's records read back one at a time."""
    try:
        for record in _this_runs(config, state):
            outcome = record["outcome"]
            if outcome in _DANGEROUS or (outcome == "warns" and (record.get("details") or {}).get("correct") is False):
                yield describe(record)
    except Exception:  # noqa: BLE001 - reported once, by _this_runs_records
        return


def _write_summary(records: list[Record], path: Path, state: RunState, config: pytest.Config) -> None:
    text = render_summary(records, notes=[line for line, _ in state.notes
                                          if line.startswith(("unchecked:", "error:"))])
    if state.interrupted:
        title, _, rest = text.partition("\n")
        text = (f"{title}\n\n**Interrupted**: the run was stopped before every cell ran; "
                f"{len(records)} cell(s) finished and are shown below.\n{rest}")
    kept = keep_previous(path)
    if kept is not None:
        config.stash.setdefault(_PREVIOUS, []).append(f"the previous run's summary: {kept}")
    write_file(path, text)
    state.summary_written = True


def _why_no_cell_ran(config: pytest.Config) -> str:
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


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_RUN, None)
    if state is None:
        return
    if state.counts:
        terminalreporter.section("conformance outcomes")
        for column, by_outcome in sorted(state.counts.items()):
            terminalreporter.write_line(f"{column}: " + ", ".join(f"{n} {o}" for o, n in sorted(by_outcome.items())))
    findings = _findings(config, state)
    first = next(findings, None)
    if first is not None:
        terminalreporter.section("conformance findings")
        terminalreporter.write_line(first)
        for finding in findings:
            terminalreporter.write_line(finding)
    if state.counts:
        terminalreporter.write_line(f"results: {results_path(config)}")
        summary = summary_path(config)
        terminalreporter.write_line(f"summary: {summary}" + (" (interrupted)" if state.interrupted else ""))
        for entry in state.stale:
            terminalreporter.write_line(f"stale baseline entry (no such case): {entry}", yellow=True)
        for line in config.stash.get(_PREVIOUS, []):
            terminalreporter.write_line(f"kept {line}")
    for line, markup in state.notes:
        terminalreporter.write_line(line, **markup)


def _stale(config: pytest.Config, records: list[Record]) -> list[str]:
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


# -- collection and items ----------------------------------------------------------------------------

class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            case = load_checked(self.path)  # slim: its items hold it until they ran
        except CaseError as exc:
            yield InvalidCase.from_parent(self, name=self.path.stem, error=exc)
            return
        seen = self.config.stash[_SEEN_IDS]
        if case.id in seen and seen[case.id] != case.path:
            yield InvalidCase.from_parent(self, name=case.id, error=CaseError(
                case.path, case.line, f"duplicate case id {case.id!r}, first defined in {seen[case.id]}"))
            return
        seen[case.id] = case.path
        items = [CaseItem.from_parent(self, name=f"{case.id}[{label}]", case=case, framework=framework,
                                      device=device, mode=mode)
                 for framework, device, mode, label in _columns(self.config)]
        if _prefetches(self.config):  # the workers start on this case while the next file is read
            _engine(self.config).prefetch(_cell_of(item) for item in items if item._kept() is None)
        yield from items


def _columns(config: pytest.Config) -> list[tuple[str, str, str, str]]:
    """(framework, device, mode, label) of every item a case expands to, worked out once per run (each
    lookup of the adapters reads every installed entry point)."""
    if _COLUMNS not in config.stash:
        classes = adapter_classes()
        config.stash[_COLUMNS] = [
            (framework, device, mode, "-".join([framework, device] + ([mode] if mode != EAGER else [])))
            for framework in frameworks(config) for device in devices(config)
            for mode in modes_for(modes(config), getattr(classes.get(framework), "modes", {}))]
    return config.stash[_COLUMNS]


class InvalidCase(pytest.Item):
    """A case file that could not be read: fails with the file, line and problem."""

    def __init__(self, *, error: CaseError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        path = Path(self.error.path)
        if path.is_absolute() and path.is_relative_to(self.config.invocation_params.dir):
            path = path.relative_to(self.config.invocation_params.dir)
        self.user_properties.append(("invalid_case", f"{path}:{self.error.line}: {self.error.message}"))
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return f"invalid case file: {excinfo.value}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.error.line - 1, f"invalid case file {self.path.name}"


class CellFailure(Exception):
    """A cell whose outcome changed against its baseline."""


class HarnessError(Exception):
    """The harness itself failed on this cell; never a framework behaviour."""


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, framework: str, device: str, mode: str = EAGER, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case: Case | None = case  # let go once the cell ran: an item lives to the end of the run
        self.case_id, self.case_line, self.case_digest = case.id, case.line, case.digest
        self.framework = framework
        self.device = device
        self.mode = mode
        self.record: dict[str, Any] | None = None

    def _engine(self) -> Engine:
        return _engine(self.config)

    @property
    def cell(self) -> Cell:
        """What identifies this item's cell in the results (as :func:`_cell` reads it from a record)."""
        return self.case_id, self.framework, self.device, self.mode

    def _kept(self) -> dict[str, Any] | None:
        """This cell's record from the results file, when --resume keeps it: only a record of the case as it
        is now (a case edited since it ran is run again)."""
        record = self.config.stash.get(_KEPT, {}).get(self.cell)
        return record if record is not None and record.get("case_digest") == self.case_digest else None

    def setup(self) -> None:
        record = kept = self._kept()
        if record is None:
            assert self.case is not None, "a cell runs once"
            try:
                record = _results_file(self.config).append(
                    _as_dict(self._engine().run_cell(self.case, self.framework, self.device, self.mode)))
            except ResultsWriteError as exc:  # the run stops at its first lost record: the rest would be lost too
                pytest.exit(f"{exc}: the run stopped at the first record it could not keep; the results file "
                            f"holds whole records of the cells before it (--resume runs the rest)",
                            returncode=pytest.ExitCode.TESTS_FAILED)
        if _keeps_records(self.config):
            self.config.stash.setdefault(_PRODUCED, {})[self.cell] = slim(record)
        self.record = record  # as written: bounded, whatever the cell observed
        outcome = record["outcome"]
        self.user_properties += [("outcome", outcome), ("case", self.case_id), ("framework", self.framework),
                                 ("device", self.device), ("mode", self.mode)]
        if kept is not None:
            self.user_properties.append(("kept", True))
        if outcome == "error":
            raise HarnessError(f"harness error: {record['details'].get('message')}")
        if outcome == "skipped":
            pytest.skip(record["details"].get("reason", "skipped"))

    def runtest(self) -> None:
        """Fails only on a change against the baseline: a finding is what the suite is for."""
        assert self.record is not None
        record, self.record = self.record, None  # judged once: an item keeps no record through the run
        store = baselines(self.config)
        change = store.check(record) if store is not None else None
        if change:
            raise CellFailure(change)

    def run_protocol(self, nextitem: pytest.Item | None) -> None:
        """pytest's protocol (setup, call and teardown through the session's setup state, a report of
        each, each logged) without the hooks around each phase (``pytest_runtest_setup``, ``_call``,
        ``_teardown`` and ``_makereport``): a cell runs in its worker and is judged here, so the plugins
        that wrap a test's phases (capture, logging, fixtures) have nothing to do, and their hooks would
        cost a cell more than its own bookkeeping.  Every report still goes through
        ``pytest_runtest_logreport`` (the terminal, xdist and junitxml see each cell as before) and a
        failure through ``pytest_exception_interact``."""
        ihook, state = self.ihook, self.session._setupstate  # ihook: one look-up (a stat() each) per cell
        reraise: tuple[type[BaseException], ...] = (pytest.exit.Exception,)
        if not self.config.getoption("usepdb", False):
            reraise += (KeyboardInterrupt,)
        ihook.pytest_runtest_logstart(nodeid=self.nodeid, location=self.location)
        if self._phase(ihook, pytest.CallInfo.from_call(lambda: state.setup(self), "setup", reraise)).passed:
            self._phase(ihook, pytest.CallInfo.from_call(self.runtest, "call", reraise))
        if self.session.shouldfail or self.session.shouldstop:
            nextitem = None  # as pytest does: tear everything down before the session ends
        self._phase(ihook, pytest.CallInfo.from_call(lambda: state.teardown_exact(nextitem), "teardown", reraise))
        ihook.pytest_runtest_logfinish(nodeid=self.nodeid, location=self.location)
        self.user_properties.clear()  # every report has had them: nothing of the cell stays on the item
        self.case = None  # nor of its case, once all its cells ran

    def _phase(self, ihook: Any, call: pytest.CallInfo[None]) -> pytest.TestReport:
        report = pytest.TestReport.from_item_and_call(self, call)
        ihook.pytest_runtest_logreport(report=report)
        if call.excinfo is not None and not isinstance(call.excinfo.value, pytest.skip.Exception):
            ihook.pytest_exception_interact(node=self, call=call, report=report)
        return report

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CellFailure, HarnessError)):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return self._repr_failure_py(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case_line - 1, f"{self.case_id} [{self.name.split('[', 1)[1]}"

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's (relative path, 0-based line, name), with the path worked out once per case file and
        kept by its node: the session's own cache of them would keep an entry per file to the end."""
        _, line, name = self.reportinfo()
        return _relative_path(self.parent), line, name


def _relative_path(node: Any) -> str:
    """A node's path relative to the run's root folder, as pytest's locations give it."""
    relative = getattr(node, "_relative_path", None)
    if relative is None:
        try:
            relative = os.path.relpath(node.path, node.config.rootpath)
        except ValueError:  # no relative path between them (another drive)
            relative = str(node.path)
        node._relative_path = relative
    return relative

