"""Worker processes, seen from the parent: start, ask, time out, restart.

The parent never imports a framework.  Each framework runs in a long-lived
worker (its import is paid once); a worker that dies or hangs costs the cell it
was running, is killed, and a fresh one starts for the next cell.

No worker outlives its run, whatever ends the run.  Both halves of that contract
are here: the parent starts each worker as the leader of a process group of its
own (a terminal's Ctrl-C reaches only the parent, which then ends the workers)
and kills the whole group on close; the worker (:func:`bind_to_parent`,
:func:`parent_lines`) asks the kernel to kill it when its parent dies, and exits
as soon as its stdin closes, even in the middle of a cell.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from queue import SimpleQueue
from typing import Any, BinaryIO, Iterator

__all__ = ["Worker", "WorkerPool", "WorkerCrashed", "WorkerTimeout", "bind_to_parent", "parent_lines"]

STARTUP_TIMEOUT = 300.0
#: How long an idle worker gets to exit by itself once its stdin is closed, before it is killed.
CLOSE_GRACE = 2.0
#: Set by the parent for the worker: its pid, and whether the parent-death signal can be used
#: (only when the worker is started from the parent's main thread: the kernel sends that signal when
#: the *thread* that started the child ends).
PARENT_PID_ENV = "CONFORMANCE_PARENT_PID"
PDEATHSIG_ENV = "CONFORMANCE_PDEATHSIG"
_PR_SET_PDEATHSIG = 1


class WorkerCrashed(Exception):
    def __init__(self, returncode: int | None, output: str) -> None:
        self.returncode = returncode
        self.signal = None
        if returncode is not None and returncode < 0:
            self.signal = signal.Signals(-returncode).name
        self.output = output
        how = f"killed by {self.signal}" if self.signal else f"exited with status {returncode}"
        super().__init__(f"worker {how}")


class WorkerTimeout(Exception):
    pass


class Worker:
    """One framework process speaking JSON lines."""

    def __init__(self, framework: str, module: str = "conformance.workers.worker") -> None:
        """Start ``python -m MODULE FRAMEWORK`` (the reference service is such a module too)."""
        self.framework = framework
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("GLOG_minloglevel", "0")
        env[PARENT_PID_ENV] = str(os.getpid())
        env[PDEATHSIG_ENV] = "1" if threading.current_thread() is threading.main_thread() else "0"
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, framework],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, start_new_session=True,
        )
        self.busy = False  # a request was sent and its reply not read yet
        self._buffer = b""
        self.info: dict[str, Any] = self._read(STARTUP_TIMEOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._crashed() from None
        self.busy = True
        reply = self._read(timeout)
        self.busy = False
        return reply

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    raise WorkerTimeout(f"no answer within {timeout:g} s")
                if not selector.select(min(remaining, 3600.0)):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._crashed()
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:  # a reply we cannot read: this worker is no longer in step with us
            self.kill()
            raise WorkerCrashed(self.process.returncode, f"unreadable reply: {line[:200]!r}") from None

    def _crashed(self) -> WorkerCrashed:
        try:
            returncode = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.process.returncode
        return WorkerCrashed(returncode, self.output_tail())

    def output_tail(self, limit: int = 4000) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-limit:]

    def kill(self) -> None:
        """Kill the worker's whole process group, then reap the worker."""
        if self.process.returncode is None:  # not reaped yet, so its pid (the group's id) is still ours
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()

    def close(self) -> None:
        """An idle worker exits when its stdin closes; a busy one (mid-cell) is killed at once."""
        if self.alive() and not self.busy:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=CLOSE_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class WorkerPool:
    """At most one live worker per framework in this process."""

    def __init__(self) -> None:
        self.workers: dict[str, Worker] = {}

    def get(self, framework: str, module: str = "conformance.workers.worker") -> Worker:
        worker = self.workers.get(framework)
        if worker is None or not worker.alive():
            if worker is not None:
                worker.close()
            worker = self.workers[framework] = Worker(framework, module)
        return worker

    def discard(self, framework: str) -> None:
        worker = self.workers.pop(framework, None)
        if worker is not None:
            worker.close()

    def close(self) -> None:
        for name in list(self.workers):
            self.discard(name)


# -- the worker's side of the contract ---------------------------------------------------------------

def bind_to_parent() -> None:
    """In a worker: die with the parent that started it (Linux's parent-death signal).

    Elsewhere, or when the parent started it from a thread other than its main one, :func:`parent_lines`
    still ends the worker when the parent's end of stdin closes."""
    if os.environ.get(PDEATHSIG_ENV) != "1" or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: stdin's end still ends the worker
        return
    parent = os.environ.get(PARENT_PID_ENV, "")
    if parent.isdigit() and not _running(int(parent)):
        os._exit(1)  # the parent died before the signal was armed, so it will never come


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parent_lines(stream: BinaryIO) -> Iterator[bytes]:
    """In a worker: the request lines from the parent.  When the parent closes the pipe (or dies), an
    idle worker's loop ends; a worker in the middle of a cell exits at once, since no one will read
    its reply."""
    lines: SimpleQueue[bytes | None] = SimpleQueue()
    busy = threading.Event()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        if busy.is_set():
            os._exit(0)
        lines.put(None)

    threading.Thread(target=pump, name="parent-lines", daemon=True).start()
    while (line := lines.get()) is not None:
        busy.set()
        yield line
        busy.clear()
