"""What a conformance run collects and runs: a case file becomes one item per cell (framework, device,
mode), a malformed one a single failing item that names its file and line, so every other case still runs;
an item runs its cell in the framework's worker and fails only when the outcome changed against its
baseline.

The hooks (``conformance/plugin.py``) make these collectors and run these items.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator

import pytest

from conformance.adapter import adapter_classes, installed
from conformance.case.kept import load_checked
from conformance.case.load import Case, CaseError
from conformance.engine import Engine
from conformance.records.programs import NO_PROGRAM
from conformance.records.record import slim, split_build
from conformance.records.results import ResultsWriteError
from conformance.session.start import keeps_records, program_spool, results_file
from conformance.session.state import (ABSENT, KEPT, PRODUCED, SEEN_IDS, Cell, baselines, devices, engine, frameworks,
                                       modes, prefetches, runs_cells)
from conformance.settings import EAGER, modes_for


class CaseFolder(pytest.Dir):
    """pytest's folder collector, which passes over whatever is not a regular file or a folder; a case
    file name on something else (a FIFO, a device, a broken link) is collected too, so that it fails
    with its reason as an invalid case file instead of vanishing from the run."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        whole = self._collected_whole()
        for node in super().collect():
            if whole and type(node) is CaseFile:  # its items, collected here: see CaseFile.collect_in_place
                yield from node.collect_in_place()
            else:
                yield node
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.endswith((".yaml", ".yml")) and not _is_file_or_folder(entry):
                yield CaseFile.from_parent(self, path=Path(entry.path))

    def _collected_whole(self) -> bool:
        """Whether the command line named this folder or one above it: then every case file in it is collected.
        A folder that only leads to a named file has its other files listed by pytest, never read."""
        return any(self.session.isinitpath(folder) for folder in (self.path, *self.path.parents))


def _is_file_or_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file() or entry.is_dir()
    except OSError:
        return False


class CaseFile(pytest.File):
    def __init__(self, *, raw: bytes | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.raw = raw  # the file's bytes, where collection has read them already; let go once collected

    def collect_in_place(self) -> list[pytest.Item | pytest.Collector]:
        """This file's items, for its folder to yield as its own: pytest's collection of each file as a node
        of its own (its hooks, its call record and its report) costs a catalogue's run more than reading
        the file does.  The items keep this file as their parent (their ids, locations and keywords are as
        before); a fault of collecting them makes the file a node pytest collects, and reports, itself."""
        try:
            return list(self.collect())
        except Exception:  # noqa: BLE001 - the harness's own fault: pytest collects the file again, and says it
            return [self]

    def collect(self) -> Iterator[pytest.Item]:
        try:
            raw, self.raw = self.raw, None
            case = load_checked(self.path, raw)  # slim: its items hold it until they ran
        except CaseError as exc:
            yield InvalidCase.from_parent(self, name=self.path.stem, error=exc)
            return
        seen = self.config.stash[SEEN_IDS]
        if case.id in seen and seen[case.id] != case.path:
            yield InvalidCase.from_parent(self, name=case.id, error=CaseError(
                case.path, case.line, f"duplicate case id {case.id!r}, first defined in {seen[case.id]}"))
            return
        seen[case.id] = case.path
        items = [CaseItem.from_parent(self, name=f"{case.id}[{label}]", case=case, framework=framework,
                                      device=device, mode=mode)
                 for framework, device, mode, label in _columns(self.config)]
        if prefetches(self.config):  # the workers start on this case while the next file is read
            engine(self.config).prefetch(cell_of(item) for item in items if item._kept() is None)
        yield from items


_COLUMNS = pytest.StashKey[list]()  # the (framework, device, mode, label) a case expands to


def _columns(config: pytest.Config) -> list[tuple[str, str, str, str]]:
    """(framework, device, mode, label) of every item a case expands to, worked out once per run (each
    lookup of the adapters reads every installed entry point).  A device the framework's worker says it
    cannot use (no GPU, a CPU-only build) makes no item at all: the run says so once, at its end."""
    if _COLUMNS not in config.stash:
        classes = adapter_classes()
        absent = config.stash.setdefault(ABSENT, {})
        columns = []
        for framework in frameworks(config):
            for device in devices(config):
                if device != "cpu" and runs_cells(config) and installed(framework)[0]:
                    problem = engine(config).device_problem(framework, device)
                    if problem is not None:
                        absent[(framework, device)] = problem
                        continue
                columns += [(framework, device, mode, "-".join([framework, device] + ([mode] if mode != EAGER else [])))
                            for mode in modes_for(modes(config), getattr(classes.get(framework), "modes", {}))]
        config.stash[_COLUMNS] = columns
    return config.stash[_COLUMNS]


def absent_columns(config: pytest.Config) -> list[str]:
    """One line per framework and device that ran no cell because the device cannot run them."""
    return [f"{device}: no cells of {framework} {version}: {problem}"
            for (framework, device), (version, problem) in sorted(config.stash.get(ABSENT, {}).items())]


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
        return engine(self.config)

    @property
    def cell(self) -> Cell:
        """What identifies this item's cell in the results (as :func:`cell` reads it from a record)."""
        return self.case_id, self.framework, self.device, self.mode

    def _kept(self) -> dict[str, Any] | None:
        """This cell's record from the results file, when --resume keeps it: only a record of the case as it
        is now (a case edited since it ran is run again)."""
        record = self.config.stash.get(KEPT, {}).get(self.cell)
        return record if record is not None and record.get("case_digest") == self.case_digest else None

    def setup(self) -> None:
        record = kept = self._kept()
        if record is None:
            assert self.case is not None, "a cell runs once"
            produced = _as_dict(self._engine().run_cell(self.case, self.framework, self.device, self.mode))
            program = produced.pop("program", None)
            try:
                record = results_file(self.config).append(produced)
            except ResultsWriteError as exc:  # the run stops at its first lost record: the rest would be lost too
                pytest.exit(f"{exc}: the run stopped at the first record it could not keep; the results file "
                            f"holds whole records of the cells before it (--resume runs the rest)",
                            returncode=pytest.ExitCode.TESTS_FAILED)
            if program is not None and record["outcome"] not in NO_PROGRAM:
                _spool(self.config, record, program)
        if keeps_records(self.config):
            self.config.stash.setdefault(PRODUCED, {})[self.cell] = slim(record)
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
        folder, name = os.path.split(os.fspath(node.path))
        inside = _relative_folder(folder, os.fspath(node.config.rootpath))
        relative = node._relative_path = (str(node.path) if inside is None else name if inside == "."
                                          else f"{inside}{os.sep}{name}")
    return relative


@functools.lru_cache(maxsize=256)
def _relative_folder(folder: str, root: str) -> str | None:
    """A folder relative to the run's root folder, worked out once per folder (a case file's location is
    asked for each of its cells); None where there is no relative path between them (another drive)."""
    try:
        return os.path.relpath(folder, root)
    except ValueError:
        return None


def cell_of(item: "CaseItem") -> tuple[Case, str, str, str]:
    return item.case, item.framework, item.device, item.mode


_SPOOL_FAILED = pytest.StashKey[bool]()


def _spool(config: pytest.Config, record: Mapping[str, Any], program: Mapping[str, Any]) -> None:
    """Append the program a cell's worker wrote (its reproducer) to the run's spool, under the column its
    record names.  A spool that cannot be written costs this process's programs, never a record: the end
    of the run counts the cells it kept no program for."""
    if config.stash.get(_SPOOL_FAILED, False):
        return
    entry = {"framework": record["framework"], "version": split_build(record["framework_version"])[0],
             "device": record["device"],
             "mode": record["mode"], "case": record["case"], "case_digest": record["case_digest"],
             "source": program.get("source"), "code": program.get("code"), "unsupported": program.get("unsupported")}
    try:
        program_spool(config).add(entry)
    except OSError:
        config.stash[_SPOOL_FAILED] = True


def _as_dict(record: Any) -> dict[str, Any]:
    """A record in its JSON form, whether the engine hands back a dict or a typed record."""
    return dict(record) if isinstance(record, Mapping) else record.to_dict()
