"""Result records: one JSON line per cell, appended as soon as the cell is known.

Each record is appended in one write as its cell ends, so an interrupted run
keeps every record it wrote; pytest-xdist workers sharing one file also take
an exclusive record lock (``lockf``) for each write.  Reading is strict: a line that
is not a record (malformed, truncated, or JSON of another shape) is a
:class:`ResultsError` naming the file and line, never skipped, because a report
or diff built on a silently shortened file states false facts.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from conformance.records.record import Column, Record, RecordError, as_record

__all__ = ["ResultsError", "ResultsWriteError", "ResultsFile", "append_record", "read_records", "iter_records",
           "load_records", "recorded_path", "run_info", "latest_by_cell"]


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


class ResultsFile:
    """A results file held open for appending through a run: each record goes to disk in one write as
    its cell ends, without reopening the file for every cell.  *shared*: other processes append to the
    same file (pytest-xdist workers), so each write also takes the file's lock."""

    def __init__(self, path: Path | str, shared: bool = True) -> None:
        self.path = Path(path)
        self.shared = shared
        self._fd: int | None = None

    def append(self, record: Record | Mapping[str, Any]) -> dict[str, Any]:
        """Write one record; return it as written (bounded)."""
        written = as_record(record).to_dict()
        data = (json.dumps(written, sort_keys=True, allow_nan=True) + "\n").encode("utf-8")
        try:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ResultsWriteError(self.path, exc) from None
        if self.shared:  # a record lock: the run's own lock on the file (an flock, outputs.py) is another kind
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
        try:
            end = os.lseek(self._fd, 0, os.SEEK_END)
            view = memoryview(data)
            try:
                while view:  # a write to a regular file takes it all; a short one is finished, never lost
                    view = view[os.write(self._fd, view):]
            except OSError as exc:  # a full disk: the part written goes, so that the file holds whole records
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, end)
                raise ResultsWriteError(self.path, exc) from None
        finally:
            if self.shared:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
        return written

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parsed(path: Path, torn_ok: bool = False, start: int = 0,
            stop: int | None = None) -> Iterator[tuple[dict[str, Any], Record]]:
    """The records of *path* from byte *start* to *stop* (both at line starts), a line at a time: a
    large results file is never held whole."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise ResultsError(path, 0, f"cannot read: {exc.strerror or exc}") from None
    with handle:
        handle.seek(start)
        offset, read = start, 0
        for raw in handle:
            if stop is not None and offset >= stop:
                return
            offset += len(raw)
            read += 1
            if not raw.strip():
                continue
            torn = not raw.endswith(b"\n")  # the last line, without its newline: a write cut short
            problem = None
            try:
                data = json.loads(raw.decode("utf-8"))
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
                 stop: int | None = None) -> Iterator[dict[str, Any]]:
    """Every record in *paths* in its JSON form, checked like :func:`iter_records`; *torn_ok*: a last line
    without its newline that is not a whole record is passed over (a resumed run cuts it); *start* and
    *stop*: only the records between these byte offsets of each file (a run's own, say)."""
    for path in paths:
        for data, _ in _parsed(Path(path), torn_ok, start, stop):
            yield data


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
    try:
        return Path(path).absolute().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


@functools.lru_cache(maxsize=None)
def _host_info(cases_dir: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "python_executable": recorded_path(sys.executable),
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
