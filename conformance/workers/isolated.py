"""Run one program in a process of its own: a fork of the worker, which dies with the program.

A converted program may change its framework for every program after it (PaConvert's helper code sets
attributes of ``paddle.Tensor``), and a converter may keep state between files (PaConvert's helper-code
store is a process-wide singleton).  A fork starts each program from the worker as it was after importing
the frameworks, in milliseconds, and whatever the program changed ends with it.

The child sends its reply as JSON over a pipe and exits without running Python's exit handlers (they
belong to the worker).  What ends the child otherwise is reported as the worker's own death would be:
a signal is a ``crash`` of the framework, unless the cause was the machine's (``workers/faults.py``); the
child is held to the worker's memory limit, which the parent watches only on the worker itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import traceback
from typing import Any, Callable

from conformance.workers.faults import death_cause, memory_limit, over_limit, resident_bytes

__all__ = ["in_fork"]

#: How often the worker looks at its child's memory while it waits for the reply.
POLL_SECONDS = 0.05
#: Bound now: the program may patch modules of its process (the json module too) before the child replies.
_dumps = json.dumps


def in_fork(run: Callable[[], dict[str, Any]], framework: str) -> dict[str, Any]:
    """*run*'s reply, computed in a fork of this process."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, reply, and leave without the parent's exit handlers
        os.close(read_end)
        status = 0
        try:
            try:
                reply = run()
            except Exception:  # noqa: BLE001 - a harness fault, reported as such
                reply = {"status": "error", "message": traceback.format_exc(limit=6)}
            data = _dumps(reply).encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:  # noqa: BLE001 - nothing may escape into the parent's loop
            status = 70
        finally:
            os._exit(status)
    os.close(write_end)
    return _collect(pid, read_end, framework)


def _collect(pid: int, fd: int, framework: str) -> dict[str, Any]:
    """Read the child's reply while watching its memory, then reap it."""
    chunks: list[bytes] = []
    limit = memory_limit()
    over = None
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                continue
            resident = resident_bytes(pid)
            if limit and resident is not None and resident > limit:
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
    return _died(status, framework)


def _died(status: int, framework: str) -> dict[str, Any]:
    """The reply for a child that ended without replying."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        cause = death_cause(framework, starting=False, signal=name, returncode=-number, output="")
        if cause is not None:
            return {"status": "error", "message": cause, "signal": name, "returncode": -number}
        return {"status": "crash", "message": f"the program's process died of {name}", "signal": name,
                "returncode": -number}
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return {"status": "error", "message": f"the program's process exited with status {code} without a reply",
            "returncode": code}
