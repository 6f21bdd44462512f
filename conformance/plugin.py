"""pytest hooks: collect YAML cases as items, one per framework and device.

Registered through the ``pytest11`` entry point.  Collection (parse, check,
expand) is in :class:`CaseFile`; execution and reporting in :class:`CaseItem`.
A malformed case file becomes one failing item that names the file and line,
so every other case still runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from conformance.adapter import adapter_classes, installed_version, is_installed
from conformance.records.baseline import Baselines
from conformance.case.load import Case, CaseError, load_case, load_cases
from conformance.judge.classify import is_failing
from conformance.engine import DEFAULT_TIMEOUT, Engine
from conformance.records.results import append_record, read_records
from conformance.records.explain import explain as describe  # the one explanation of a cell
from conformance.settings import DEFAULT_BASELINES, DEFAULT_RESULTS, DEFAULT_SUMMARY, DEVICES
from conformance.report.summary import column_name, write_summary


_ENGINE = pytest.StashKey[Engine]()
_SEEN_IDS = pytest.StashKey[dict]()
_RUNS_CASES = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "in-place and aliasing conformance matrix")
    group.addoption("--framework", action="append", default=None, metavar="NAME",
                    help="framework to run (repeatable); default: every installed one "
                         "[env CONFORMANCE_FRAMEWORKS, comma-separated]")
    group.addoption("--device", action="append", default=None, choices=DEVICES,
                    help="device to run on (repeatable); default: cpu and gpu, gpu cells are skipped "
                         "with the reason when unavailable [env CONFORMANCE_DEVICES]")
    group.addoption("--results", default=None, metavar="FILE",
                    help=f"JSON-lines results file [env CONFORMANCE_RESULTS; default {DEFAULT_RESULTS}]")
    group.addoption("--summary", default=None, metavar="FILE",
                    help=f"markdown summary table written at the end [default {DEFAULT_SUMMARY}]")
    group.addoption("--case-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"seconds a cell may run before its worker is killed [default {DEFAULT_TIMEOUT:g}]")
    group.addoption("--baselines", default=None, metavar="DIR",
                    help="directory of baselines: a cell whose outcome differs from its baseline fails "
                         f"[env CONFORMANCE_BASELINES; default {DEFAULT_BASELINES} when it exists]")
    group.addoption("--no-baselines", action="store_true", default=False,
                    help="judge every cell on its own, ignoring baselines")
    group.addoption("--update-baselines", action="store_true", default=False,
                    help="rewrite the baselines from this run's results instead of checking them")


def _listed(config: pytest.Config, option: str, env: str) -> list[str] | None:
    values = config.getoption(option)
    if values:
        return list(dict.fromkeys(values))
    raw = os.environ.get(env, "").strip()
    return [v.strip() for v in raw.split(",") if v.strip()] or None


def frameworks(config: pytest.Config) -> list[str]:
    chosen = _listed(config, "framework", "CONFORMANCE_FRAMEWORKS")
    if chosen:
        return chosen
    classes = adapter_classes()
    return [name for name, cls in classes.items() if is_installed(cls)] or list(classes)


def devices(config: pytest.Config) -> list[str]:
    chosen = _listed(config, "device", "CONFORMANCE_DEVICES")
    for device in chosen or ():
        if device not in DEVICES:
            raise pytest.UsageError(f"unknown device {device!r}; choose from {list(DEVICES)}")
    return chosen or list(DEVICES)


def results_path(config: pytest.Config) -> Path:
    raw = config.getoption("results") or os.environ.get("CONFORMANCE_RESULTS") or DEFAULT_RESULTS
    return Path(config.invocation_params.dir, raw)


def summary_path(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir, config.getoption("summary") or DEFAULT_SUMMARY)


def _baseline_dir(config: pytest.Config) -> tuple[Path, bool]:
    """The baseline directory, and whether it was asked for (else it is the default)."""
    raw = config.getoption("baselines") or os.environ.get("CONFORMANCE_BASELINES")
    return Path(config.invocation_params.dir, raw or DEFAULT_BASELINES), bool(raw)


def baselines(config: pytest.Config) -> Baselines | None:
    """The baselines cells are checked against, or None (ignored, updating, or none present)."""
    if config.getoption("no_baselines") or config.getoption("update_baselines"):
        return None
    directory, asked = _baseline_dir(config)
    return Baselines(directory) if asked or directory.is_dir() else None


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def _targets_cases(config: pytest.Config) -> bool:
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if "cases" in path.parts or (path / "cases").is_dir():
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SEEN_IDS] = {}
    config.stash[_RUNS_CASES] = _targets_cases(config)
    if _is_controller(config) and config.stash[_RUNS_CASES]:
        path = results_path(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")  # a new run; records are appended as cells finish


def pytest_unconfigure(config: pytest.Config) -> None:
    engine = config.stash.get(_ENGINE, None)
    if engine is not None:
        engine.pool.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    classes = adapter_classes()
    parts = []
    for name in frameworks(config):
        cls = classes.get(name)
        version = installed_version(cls) if cls and is_installed(cls) else None
        parts.append(f"{name} {version}" if version else f"{name} (not installed)")
    return [f"conformance: frameworks: {', '.join(parts)}; devices: {', '.join(devices(config))}",
            f"conformance: results: {results_path(config)}"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix in (".yaml", ".yml") and "cases" in file_path.parts:
        return CaseFile.from_parent(parent, path=file_path)
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not _is_controller(config) or not config.stash.get(_RUNS_CASES, False):
        return
    path = results_path(config)
    if not path.exists() or not path.stat().st_size:
        return
    records = list(read_records([path]))
    write_summary(records, summary_path(config))
    if config.getoption("update_baselines"):
        Baselines(_baseline_dir(config)[0]).update(records)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    path = results_path(config)
    if not (_is_controller(config) and config.stash.get(_RUNS_CASES, False)
            and path.exists() and path.stat().st_size):
        return
    counts: dict[str, dict[str, int]] = {}
    for record in read_records([path]):
        column = column_name(record)
        counts.setdefault(column, {}).setdefault(record["outcome"], 0)
        counts[column][record["outcome"]] += 1
    terminalreporter.section("conformance outcomes")
    for column, by_outcome in sorted(counts.items()):
        line = ", ".join(f"{n} {outcome}" for outcome, n in sorted(by_outcome.items()))
        terminalreporter.write_line(f"{column}: {line}")
    terminalreporter.write_line(f"results: {path}")
    terminalreporter.write_line(f"summary: {summary_path(config)}")
    store = baselines(config)
    if store is not None:
        known = {case.id for case in load_cases(_case_roots(config))[0]}
        stale = [entry for entry in store.stale(read_records([path])) if entry.rsplit(": ", 1)[1] not in known]
        for entry in stale:
            terminalreporter.write_line(f"stale baseline entry (no such case): {entry}", yellow=True)


def _case_roots(config: pytest.Config) -> list[Path]:
    """The case directories the run's arguments lie in, to tell stale baseline entries."""
    roots = []
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if (path / "cases").is_dir():
            roots.append(path / "cases")
        elif "cases" in path.parts:
            parts = path.parts
            roots.append(Path(*parts[:len(parts) - parts[::-1].index("cases")]))
    return roots


class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        try:
            case = load_case(self.path)
        except CaseError as exc:
            yield InvalidCase.from_parent(self, name=self.path.stem, error=exc)
            return
        seen = self.config.stash[_SEEN_IDS]
        if case.id in seen and seen[case.id] != case.path:
            yield InvalidCase.from_parent(self, name=case.id, error=CaseError(
                case.path, case.line, f"duplicate case id {case.id!r}, first defined in {seen[case.id]}"))
            return
        seen[case.id] = case.path
        for framework in frameworks(self.config):
            for device in devices(self.config):
                yield CaseItem.from_parent(self, name=f"{case.id}[{framework}-{device}]", case=case,
                                           framework=framework, device=device)


class InvalidCase(pytest.Item):
    """A case file that could not be read: fails with the file, line and problem."""

    def __init__(self, *, error: CaseError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return f"invalid case file: {excinfo.value}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.error.line - 1, f"invalid case file {self.path.name}"


class CellFailure(Exception):
    """An outcome the suite exists to expose (wrong result, crash, hang), or a baseline change."""


class HarnessError(Exception):
    """The harness itself failed on this cell; never a framework behaviour."""


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, framework: str, device: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.framework = framework
        self.device = device
        self.record: dict[str, Any] | None = None

    def _engine(self) -> Engine:
        if _ENGINE not in self.config.stash:
            timeout = self.config.getoption("case_timeout") or DEFAULT_TIMEOUT
            self.config.stash[_ENGINE] = Engine(timeout=timeout)
        return self.config.stash[_ENGINE]

    def setup(self) -> None:
        record = self._engine().run_cell(self.case, self.framework, self.device)
        append_record(results_path(self.config), record)
        self.record = record
        self.user_properties.append(("outcome", record["outcome"]))
        if record["outcome"] == "error":
            raise HarnessError(f"harness error: {record['details'].get('message')}")
        if record["outcome"] == "skipped":
            pytest.skip(record["details"].get("reason", "skipped"))

    def runtest(self) -> None:
        assert self.record is not None
        outcome, details = self.record["outcome"], self.record["details"]
        store = baselines(self.config)
        if store is not None:
            change = store.check(self.record)
            if change:
                raise CellFailure(change)
            return
        if is_failing(outcome, details):
            raise CellFailure(describe(self.record))

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, (CellFailure, HarnessError)):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return self._repr_failure_py(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.line - 1, f"{self.case.id} [{self.framework}-{self.device}]"
