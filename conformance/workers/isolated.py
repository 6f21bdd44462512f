"""Run one program in a process of its own: a fork of the worker, which dies with the program.

A converted program may change its framework for every program after it (PaConvert's helper code sets
attributes of ``paddle.Tensor``), and a converter may keep state between files (PaConvert's helper-code
store is a process-wide singleton).  A fork starts each program from the worker as it was after importing
the frameworks, in milliseconds, and whatever the program changed ends with it.

The child sends its reply as JSON over a pipe and exits without running Python's exit handlers (they
belong to the worker); it dies with the worker (Linux's parent-death signal) as the worker dies with
the run.  What ends the child otherwise is reported as the worker's own death would be: a signal, or an
exit the program asked for, is a ``crash`` of the framework, unless its output or the signal says the
cause was the machine's (``workers/faults.py``); the child is held to the worker's memory limit, which
the run's parent watches only on the worker itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import traceback
from typing import IO, Callable

from conformance.workers.faults import death_cause, memory_limit, over_limit, resident_bytes

__all__ = ["in_fork"]

#: How often the worker looks at its child's memory while it waits for the reply (milliseconds).
POLL_MS = 50
#: Bound now: the program may patch modules of its process (the json module too) before the child replies.
_dumps = json.dumps
#: The most of a dead child's output kept with its cell.
OUTPUT_KEPT = 4000


def in_fork(run: Callable[[], dict], framework: str, output: IO[bytes] | None = None) -> dict:
    """*run*'s reply, computed in a fork of this process.  *output*: the file the child's native output goes
    to (the worker's capture file, made before the fork), read when the child dies without a reply."""
    from conformance.workers.pool import bind_to_parent

    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, reply, and leave without the parent's exit handlers
        os.close(read_end)
        status = 70
        try:
            bind_to_parent(parent)
            try:
                reply = run()
            except SystemExit as exc:  # the program asked its process to end: what the worker itself would do
                reply = {"status": "crash", "message": f"the program exited (SystemExit: {exc.code!r})",
                         "returncode": exc.code if isinstance(exc.code, int) else 1}
            except Exception:  # noqa: BLE001 - a harness fault, reported as such
                reply = {"status": "error", "message": traceback.format_exc(limit=6)}
            view = memoryview(_dumps(reply).encode("utf-8"))
            while view:
                view = view[os.write(write_end, view):]
            status = 0
        finally:  # nothing may escape into the worker's own loop
            os._exit(status)
    os.close(write_end)
    try:
        return _collect(pid, read_end, framework, output)
    finally:
        _reap(pid)


def _collect(pid: int, fd: int, framework: str, output: IO[bytes] | None) -> dict:
    """Read the child's reply while watching its memory, then wait for it."""
    chunks: list[bytes] = []
    limit = memory_limit()
    over = None
    watcher = select.poll()
    watcher.register(fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            if watcher.poll(POLL_MS):
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                continue
            resident = resident_bytes(pid)
            if limit and resident is not None and resident > limit and over is None:
                over = over_limit(framework, resident, limit)
                os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    if over is not None:
        return {"status": "error", "message": over}
    if chunks and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            return {"status": "error", "message": "the program's process sent a reply that is not JSON"}
    return _died(status, framework, _tail(output))


def _reap(pid: int) -> None:
    """Kill and wait for the child if it is still there (the worker itself failed while waiting)."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _tail(output: IO[bytes] | None) -> str:
    if output is None:
        return ""
    try:
        output.flush()
        size = output.seek(0, os.SEEK_END)
        output.seek(max(0, size - 4 * OUTPUT_KEPT))
        return output.read().decode("utf-8", "replace")[-OUTPUT_KEPT:]
    except (OSError, ValueError):
        return ""


def _died(status: int, framework: str, output: str) -> dict:
    """The reply for a child that ended without replying."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        cause = death_cause(framework, starting=False, signal=name, returncode=-number, output=output)
        if cause is not None:
            return {"status": "error", "message": cause, "signal": name, "returncode": -number, "output": output}
        return {"status": "crash", "message": f"the program's process died of {name}", "signal": name,
                "returncode": -number, "output": output}
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return {"status": "error", "message": f"the program's process exited with status {code} without a reply",
            "returncode": code, "output": output}
