"""Result records: one JSON line per cell, appended as soon as the cell is known.

Each record is appended in one write as its cell ends, so an interrupted run
keeps every record it wrote; pytest-xdist workers sharing one file also take
an exclusive record lock (``lockf``) for each write.  Reading is strict: a line that
is not a record (malformed, truncated, or JSON of another shape) is a
:class:`ResultsError` naming the file and line, never skipped, because a report
or diff built on a silently shortened file states false facts.

What a run ran on (``run_info``: host, OS, CPU, Python, NumPy, the framework's build, the cases'
revision) and the column its records fill (framework, version, device, mode) are written once per run,
column and file, as a *run line* ``{"run": ID, "run_info": {...}, "column": {...}}`` (the ID a digest
of both) before the first record that refers to it by ``"run": ID``; a record read back carries its
run's information and its column again (a field the record holds itself wins).  A record that holds
its ``run_info`` itself (the form before run lines), or a run line without ``column`` (the form before
columns moved there), is read as it is.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from conformance.outputs import AppendFile
from conformance.records.record import Column, Record, RecordError, as_record

__all__ = ["ResultsError", "ResultsWriteError", "ResultsFile", "append_record", "read_records", "iter_records",
           "load_records", "recorded_path", "rewrite_results", "run_info", "latest_by_cell"]


class ResultsError(Exception):
    """A results file that cannot be read as records: which file, which line (1-based; 0: the whole file)."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")
        self.path, self.line, self.message = str(path), line, message


class ResultsWriteError(Exception):
    """A record that could not be written (a full or read-only disk): the file is left as it was before it,
    whole records only."""

    def __init__(self, path: Path | str, error: OSError) -> None:
        super().__init__(f"cannot write {path}: {error.strerror or error}")
        self.path = str(path)


def append_record(path: Path | str, record: Record | Mapping[str, Any]) -> None:
    """Append one record, bounded (:meth:`Record.to_dict`): one cell never writes more than a few KB."""
    with ResultsFile(path) as results:
        results.append(record)


#: The fields of a record its run line holds for it: every record of a column shares them, and written in
#: each record they would cost as much again with each of the catalogue's cases.
COLUMN_FIELDS = ("framework", "framework_version", "device", "mode")


def run_id(info: Mapping[str, Any], column: Mapping[str, Any] | None = None) -> str:
    """The ID of a run line: a digest of the run's information and column (the same both, the same ID)."""
    shared: Any = info if column is None else {"column": dict(column), "run_info": dict(info)}
    text = json.dumps(shared, sort_keys=True, allow_nan=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def column_of(written: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a written record that its run line holds."""
    return {key: written[key] for key in COLUMN_FIELDS if key in written}


#: Records are written without spaces after separators: the committed columns are most of what the
#: repository weighs (tests/test_repository.py bounds it), and no reader needs the spaces.
_COMPACT = (",", ":")


def run_line(written: Mapping[str, Any]) -> str:
    """The run line a written record refers to: its run's information and its column."""
    info, column = written.get("run_info") or {}, column_of(written)
    return json.dumps({"run": run_id(info, column), "run_info": dict(info), "column": column}, sort_keys=True,
                      allow_nan=True, separators=_COMPACT) + "\n"


def record_line(written: Mapping[str, Any], ident: str | None = None) -> str:
    """A record as its line: its run's information and its column replaced by the run line's ID (*ident*,
    when the caller has it)."""
    line = {k: v for k, v in written.items() if k != "run_info" and k not in COLUMN_FIELDS}
    line["run"] = ident or run_id(written.get("run_info") or {}, column_of(written))
    return json.dumps(line, sort_keys=True, allow_nan=True, separators=_COMPACT) + "\n"


class ResultsFile:
    """A results file held open for appending through a run: each record goes to disk in one write as
    its cell ends, without reopening the file for every cell (with its run line, the first time it refers to
    a run).  *shared*: other processes append to the same file (pytest-xdist workers), so each write also
    takes the file's record lock."""

    def __init__(self, path: Path | str, shared: bool = True) -> None:
        self.path = Path(path)
        self._file = AppendFile(path, shared)
        self._runs: set[str] = set()  # the runs this writer has written the line of
        self._last_run: tuple[dict[str, Any], dict[str, Any], str] | None = None  # the last run's ID, and of what

    def append(self, record: Record | Mapping[str, Any]) -> dict[str, Any]:
        """Write one record (after its run line, the first time); return it as written (bounded)."""
        written = as_record(record).to_dict()
        info, column = written.get("run_info") or {}, column_of(written)
        last = self._last_run
        if last is not None and last[0] == info and last[1] == column:  # a run's cells come one after another
            ident = last[2]
        else:
            ident = run_id(info, column)
            self._last_run = (dict(info), column, ident)
        text = ("" if ident in self._runs else run_line(written)) + record_line(written, ident)
        try:
            self._file.write(text.encode("utf-8"))
        except OSError as exc:
            raise ResultsWriteError(self.path, exc) from None
        self._runs.add(ident)
        return written

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parsed(path: Path, torn_ok: bool = False, start: int = 0, stop: int | None = None,
            mentioning: tuple[bytes, ...] = ()) -> Iterator[tuple[dict[str, Any], Record]]:
    """The records of *path* from byte *start* to *stop* (both at line starts), a line at a time: a
    large results file is never held whole.  Each carries its run's information (its run line's).
    *mentioning*: only the records whose line holds one of these bytes, looked for before the line is
    parsed (run lines, which hold ``"run_info"``, are always read)."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise ResultsError(path, 0, f"cannot read: {exc.strerror or exc}") from None
    runs: dict[str, dict[str, Any]] = {}  # run ID -> what its records share (run_info, column fields)
    with handle:
        handle.seek(start)
        offset, read = start, 0
        for raw in handle:
            if stop is not None and offset >= stop:
                return
            offset += len(raw)
            read += 1
            if not raw.strip() or (mentioning and b'"run_info"' not in raw
                                   and not any(word in raw for word in mentioning)):
                continue
            torn = not raw.endswith(b"\n")  # the last line, without its newline: a write cut short
            problem = None
            try:
                data = json.loads(raw.decode("utf-8"))
                if _is_run_line(data):
                    runs[data["run"]] = _shared(data)
                    continue
                if isinstance(data, dict) and isinstance(data.get("run"), str) and "run_info" not in data:
                    shared = runs.get(data["run"])
                    if shared is None and start > 0:  # its run line lies before the part asked for
                        runs.update(_run_lines(path, start))
                        shared = runs.get(data["run"])
                    if shared is None:
                        raise RecordError(f"the record refers to run {data['run']!r}, which no run line of the "
                                          f"file before it describes")
                    data = {**shared, **{k: v for k, v in data.items() if k != "run"}}
                record = Record.from_dict(data)
            except UnicodeDecodeError:
                problem = "not UTF-8 text"
            except json.JSONDecodeError as exc:
                if torn and torn_ok:
                    continue  # a record an interrupted write cut short: its cell runs again
                problem = ("truncated record at the end of the file (the run that wrote it may have been "
                           "interrupted); remove the line or rerun" if torn
                           else f"not a JSON record ({exc.msg}, column {exc.colno})")
            except RecordError as exc:
                problem = str(exc)
            if problem is not None:  # the line's number, counted from the start of the file only now
                raise ResultsError(path, _line_number(path, start) + read, problem) from None
            yield data, record


def _is_run_line(data: Any) -> bool:
    return (isinstance(data, dict) and "case" not in data and isinstance(data.get("run"), str)
            and isinstance(data.get("run_info"), dict))


def _shared(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a run line gives each record that refers to it: the run's information and the column fields."""
    column = run.get("column")
    if column is not None and not isinstance(column, dict):
        raise RecordError(f"the run line's column is a {type(column).__name__}, not an object")
    return {**{k: v for k, v in (column or {}).items() if k in COLUMN_FIELDS}, "run_info": run["run_info"]}


def _run_lines(path: Path, stop: int) -> dict[str, dict[str, Any]]:
    """The run lines of *path* before byte *stop*."""
    found: dict[str, dict[str, Any]] = {}
    with open(path, "rb") as handle:
        for raw in handle:
            stop -= len(raw)
            if stop < 0:
                break
            if b'"run_info"' in raw and b'"case"' not in raw:
                try:
                    data = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    continue
                if _is_run_line(data):
                    found[data["run"]] = _shared(data)
    return found


def _line_number(path: Path, offset: int) -> int:
    """How many lines of *path* come before byte *offset* (0 at the start, read only when not)."""
    if offset == 0:
        return 0
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(min(1 << 20, offset - handle.tell())), b""))


def iter_records(paths: Iterable[Path | str]) -> Iterator[Record]:
    """Every record in *paths*, in order; :class:`ResultsError` at the first line that is not one."""
    for path in paths:
        for _, record in _parsed(Path(path)):
            yield record


def load_records(paths: Iterable[Path | str]) -> list[Record]:
    return list(iter_records(paths))


def read_records(paths: Iterable[Path | str], torn_ok: bool = False, start: int = 0,
                 stop: int | None = None, mentioning: tuple[bytes, ...] = ()) -> Iterator[dict[str, Any]]:
    """Every record in *paths* in its JSON form, checked like :func:`iter_records`; *torn_ok*: a last line
    without its newline that is not a whole record is passed over (a resumed run cuts it); *start* and
    *stop*: only the records between these byte offsets of each file (a run's own, say); *mentioning*:
    only those whose line holds one of these bytes (an outcome's name, say), the others never parsed."""
    for path in paths:
        for data, _ in _parsed(Path(path), torn_ok, start, stop, mentioning):
            yield data


def rewrite_results(path: Path | str) -> int:
    """Write *path* again in the current form (run lines), record for record in its order, replacing it in
    one rename; the number of records."""
    from conformance.outputs import write_file

    path = Path(path)
    lines: list[str] = []
    seen: set[str] = set()
    for data in read_records([path]):
        written = as_record(data).to_dict()
        ident = run_id(written.get("run_info") or {}, column_of(written))
        if ident not in seen:
            seen.add(ident)
            lines.append(run_line(written))
        lines.append(record_line(written))
    write_file(path, "".join(lines))
    return sum(1 for line in lines if '"case"' in line)


def latest_by_cell(records: Iterable[Record | Mapping[str, Any]]) -> dict[tuple[str, Column], Record]:
    """One record per cell (case and column); a later record for the same cell replaces an earlier one."""
    cells: dict[tuple[str, Column], Record] = {}
    for record in records:
        record = as_record(record)
        cells[record.cell] = record
    return cells


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_revision(directory: Path) -> str | None:
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True,
                                  text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=directory,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return revision + ("+dirty" if dirty else "")


def recorded_path(path: Path | str) -> str:
    """A path as a record keeps it: relative to the directory the run started in (the repository, for a run
    of its tox envs) when it lies inside it, so committed records name no folder of the machine that ran
    them; otherwise as given."""
    folder, name = os.path.split(os.fspath(path))
    recorded = _recorded_folder(folder, os.getcwd())  # a record a cell: its case's folder worked out once
    if recorded is None:
        return str(path)
    return name if recorded == "." else f"{recorded}/{name}"


@functools.lru_cache(maxsize=256)
def _recorded_folder(folder: str, cwd: str) -> str | None:
    """:func:`recorded_path` of a folder, from *cwd*; None where it does not lie inside it."""
    try:
        return Path(folder).absolute().relative_to(cwd).as_posix()
    except ValueError:
        return None


def _executable(path: str) -> str:
    """The interpreter as a record keeps it: relative to the run's folder (a tox env's), else its name alone,
    so a committed record names no folder of the machine that ran it (a GPU machine's /opt/... venv)."""
    recorded = recorded_path(path)
    return Path(recorded).name if Path(recorded).is_absolute() else recorded


@functools.lru_cache(maxsize=None)
def _host_info(cases_dir: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "python_executable": _executable(sys.executable),
        "os": platform.platform(),
        "numpy": np.__version__,
        "cpu": _cpu_model(),
        "cases_revision": _git_revision(Path(cases_dir)),
        "hostname": platform.node(),
        "pid": os.getpid(),
    }


def run_info(cases_dir: Path | str, worker_info: dict[str, Any] | None, device: str) -> dict[str, Any]:
    info = dict(_host_info(str(Path(cases_dir).resolve())))
    if worker_info:
        info["gpu"] = (worker_info.get("device_names") or {}).get(device)
        info["framework_import_warnings"] = worker_info.get("import_warnings", [])
        info["numpy"] = worker_info.get("numpy") or info["numpy"]  # the NumPy the framework ran with
        if worker_info.get("build"):
            info["build"] = worker_info["build"]
        info.update(worker_info.get("facts") or {})  # what the adapter adds (a converter: what it converts)
    return info
