"""Worker processes, seen from the parent: start, ask, time out, restart.

The parent never imports a framework.  Each framework runs in a long-lived
worker (its import is paid once); a worker that dies or hangs costs the cell it
was running, is killed, and a fresh one starts for the next cell.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

__all__ = ["Worker", "WorkerPool", "WorkerCrashed", "WorkerTimeout"]

STARTUP_TIMEOUT = 300.0


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
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, framework],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
        )
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
        return self._read(timeout)

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
        if self.alive():
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        if self.alive():
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self.log.close()


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
