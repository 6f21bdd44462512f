"""Result records: one JSON line per cell, appended as soon as the cell is known.

Appends take an exclusive lock, so pytest-xdist workers can share one file and
an interrupted run keeps every record it wrote.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

__all__ = ["append_record", "read_records", "run_info", "latest_by_cell"]


def append_record(path: Path | str, record: dict[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, allow_nan=True) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(line)
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_records(paths: Iterable[Path | str]) -> Iterator[dict[str, Any]]:
    """Every record in *paths*; a torn last line (an interrupted write) is skipped."""
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def cell_key(record: dict[str, Any]) -> tuple[str, str, str, str]:
    return record["case"], record["framework"], record["framework_version"], record["device"]


def latest_by_cell(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """One record per cell; a later record for the same cell replaces an earlier one."""
    return {cell_key(r): r for r in records}


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


@functools.lru_cache(maxsize=None)
def _host_info(cases_dir: str) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
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
    return info
