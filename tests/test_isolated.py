"""A program in a process of its own (conformance/workers/isolated.py): what it changes ends with it, and
however it ends, the worker reports it as the worker's own death would be reported."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from conformance.workers import isolated
from conformance.workers.isolated import in_fork

from .conftest import ROOT


def test_the_reply_comes_back_and_what_the_program_changed_stays_in_its_process() -> None:
    def patch_and_reply() -> dict:
        json.dumps = None  # a converter's helper code patches a module of the process in the same way
        return {"status": "completed", "pid": os.getpid()}

    reply = in_fork(patch_and_reply, "paconvert")
    assert reply["status"] == "completed" and reply["pid"] != os.getpid()
    assert json.dumps({"a": 1}) == '{"a": 1}'


def test_a_large_reply_comes_back_whole() -> None:
    values = list(range(300_000))  # several times a pipe's buffer
    assert in_fork(lambda: {"status": "completed", "values": values}, "paconvert")["values"] == values


def test_a_program_that_dies_of_a_signal_is_a_crash() -> None:
    def segfault() -> dict:
        os.kill(os.getpid(), signal.SIGSEGV)
        return {}

    reply = in_fork(segfault, "paconvert")
    assert reply["status"] == "crash" and reply["signal"] == "SIGSEGV"


def test_a_kill_the_harness_did_not_send_is_an_error_not_a_crash() -> None:
    def killed() -> dict:
        os.kill(os.getpid(), signal.SIGKILL)
        return {}

    reply = in_fork(killed, "paconvert")
    assert reply["status"] == "error" and "SIGKILL, which the harness did not send" in reply["message"]


def test_a_process_that_exits_without_a_reply_is_an_error() -> None:
    reply = in_fork(lambda: os._exit(3), "paconvert")
    assert reply == {"status": "error", "message": "the program's process exited with status 3 without a reply",
                     "returncode": 3, "output": ""}


def test_a_program_that_asks_its_process_to_exit_is_a_crash_as_in_the_worker_itself() -> None:
    def leave() -> dict:
        raise SystemExit(4)

    assert in_fork(leave, "paconvert") == {"status": "crash", "message": "the program exited (SystemExit: 4)",
                                           "returncode": 4}


def test_what_a_dying_program_printed_is_kept_and_read_for_the_cause(tmp_path) -> None:
    capture = open(tmp_path / "capture", "w+b")

    def abort_out_of_memory() -> dict:
        os.write(capture.fileno(), b"terminate called after throwing an instance of 'std::bad_alloc'\n")
        os.kill(os.getpid(), signal.SIGABRT)
        return {}

    reply = in_fork(abort_out_of_memory, "paconvert", capture)
    assert reply["status"] == "error" and "died out of memory" in reply["message"]
    assert "std::bad_alloc" in reply["output"]


def test_the_child_dies_with_the_worker(tmp_path) -> None:
    import subprocess
    import time

    script = tmp_path / "worker.py"
    script.write_text(
        "import os, sys, time\n"
        "from conformance.workers.isolated import in_fork\n"
        "def hang():\n"
        "    open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "    time.sleep(600)\n"
        "in_fork(hang, 'paconvert')\n")
    pid_file = tmp_path / "child.pid"
    worker = subprocess.Popen([sys.executable, str(script), str(pid_file)], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    worker.kill()  # SIGKILL: the worker runs no handler of its own
    worker.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_harness_fault_in_the_child_is_an_error_with_its_traceback() -> None:
    def broken() -> dict:
        raise KeyError("no such case")

    reply = in_fork(broken, "paconvert")
    assert reply["status"] == "error" and "KeyError: 'no such case'" in reply["message"]


def test_the_child_is_held_to_the_worker_s_memory_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_WORKER_MEMORY", str(300 << 20))
    monkeypatch.setattr(isolated, "POLL_MS", 10)

    def hog() -> dict:
        held = []
        for _ in range(40):
            held.append(bytearray(50 << 20))  # written, so resident
            for i in range(0, len(held[-1]), 4096):
                held[-1][i] = 1
        return {"status": "completed"}

    reply = in_fork(hog, "paconvert")
    assert reply["status"] == "error" and "past its limit of 300 MiB" in reply["message"]
