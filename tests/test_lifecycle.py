"""How a run ends: whatever signal stops ``conformance run``, no framework worker outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import INSTALLED
from .runs import FRAMEWORK, LONG, QUICK, cli_command, write_case

pytestmark = [pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed"),
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")]

WORKER_MODULE = "conformance.workers.worker"
#: The status ``conformance run`` exits with when it was interrupted (SIGINT or SIGTERM).
INTERRUPTED = 130


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(root: int) -> set[int]:
    """Every process below *root* now (children, grandchildren...)."""
    parents = {int(p.name): _parent(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def workers_of(root: int) -> set[int]:
    return {pid for pid in descendants(root) if WORKER_MODULE in _cmdline(pid)}


def is_gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet (it no longer runs)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.fixture
def tracked():
    """Worker pids a test watches; any still running at the end are killed, pass or fail."""
    pids: set[int] = set()
    yield pids
    for pid in pids:
        if not is_gone(pid):
            os.kill(pid, signal.SIGKILL)


def start_long_run(project: Path, tracked: set[int], *extra: str) -> tuple[subprocess.Popen, set[int]]:
    """``conformance run`` on a quick cell and then a cell that runs for hours; returns once the second
    cell is running, with the pids of the framework workers."""
    write_case(project / "cases", QUICK, "a_quick")
    write_case(project / "cases", LONG, "b_long")
    results = project / "reports" / "results" / "latest.jsonl"
    process = subprocess.Popen(cli_command("run", "--framework", FRAMEWORK, "--device", "cpu", "--timeout",
                                           "600", *extra), cwd=project, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and results.read_text().count("\n") >= 1 and workers_of(process.pid):
            time.sleep(0.5)  # inside the long cell's loop
            tracked |= workers_of(process.pid)
            return process, set(tracked)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"the long cell never started: {process.communicate()[0]}")


def assert_gone_soon(pids: set[int], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(is_gone(pid) for pid in pids):
        time.sleep(0.1)
    alive = {pid: _cmdline(pid) for pid in pids if not is_gone(pid)}
    assert not alive, f"workers outlived their run: {alive}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_ends_its_workers_and_says_it_was_interrupted(tmp_path: Path, tracked, sig) -> None:
    process, workers = start_long_run(tmp_path, tracked)
    assert workers
    process.send_signal(sig)
    output = process.communicate(timeout=60)[0]
    assert_gone_soon(workers)
    assert process.returncode == INTERRUPTED, output
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert "interrupted" in summary.lower()
    assert "a_quick" in summary and "b_long" not in summary


def test_a_killed_run_leaves_no_worker_behind(tmp_path: Path, tracked) -> None:
    process, workers = start_long_run(tmp_path, tracked)
    assert workers
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert_gone_soon(workers)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_parallel_run_leaves_no_worker_behind(tmp_path: Path, tracked, sig) -> None:
    process, workers = start_long_run(tmp_path, tracked, "-n", "2")
    assert workers
    process.send_signal(sig)
    process.communicate(timeout=60)
    assert_gone_soon(workers, seconds=10.0)
