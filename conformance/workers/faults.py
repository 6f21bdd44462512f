"""What ends a cell that is the machine's or the harness's doing, never the framework's.

A worker can fail a cell without the framework having done anything the matrix
is about: the framework could not be imported, the cell needed more memory
than the machine gives it, someone outside the run killed the worker.  Each of
these is an ``error`` with its cause; only a death the framework brought on
itself (a segfault, an abort) is a ``crash``.

Workers run under a memory limit (``RLIMIT_DATA``: the memory they write, not
the address space a GPU driver reserves), so a cell that needs too much memory
fails with the framework's own allocation error, which is recognised here,
instead of drawing the kernel's out-of-memory killer onto some process.
"""

from __future__ import annotations

import os
import re
import resource

__all__ = ["MEMORY_ENV", "apply_memory_limit", "death_cause", "memory_limit", "out_of_memory"]

#: Bytes a worker may write (0: no limit); by default a share of the machine's memory.
MEMORY_ENV = "CONFORMANCE_WORKER_MEMORY"
#: The smallest default limit: a framework's import alone takes several hundred MB.
_FLOOR = 2 << 30

#: What the frameworks and the C++ runtime say when an allocation fails (torch's DefaultCPUAllocator and
#: CUDA allocator, paddle's ResourceExhausted, std::bad_alloc, NumPy's and Python's MemoryError).
_OUT_OF_MEMORY = re.compile(
    r"can't allocate memory|cannot allocate memory|not enough memory|out of memory|ResourceExhausted"
    r"|bad_alloc|Fail to alloc memory|failed to allocate", re.IGNORECASE)


def memory_limit(processes: int | None = None) -> int:
    """The bytes one worker may write: ``CONFORMANCE_WORKER_MEMORY``, else 35% of the machine's memory
    shared among the run's pytest-xdist processes (each runs a worker per framework), at least 2 GiB."""
    raw = os.environ.get(MEMORY_ENV, "").strip()
    if raw:
        return max(0, int(raw))
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0
    processes = processes or int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(_FLOOR, int(physical * 0.35) // max(1, processes))


def apply_memory_limit(limit: int) -> bool:
    """In a worker: cap the memory it may write at *limit* bytes (0: none); False where it cannot."""
    if limit <= 0:
        return False
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError, AttributeError):
        return False
    return True


def out_of_memory(exception_type: str, message: str) -> bool:
    """Whether an exception says an allocation failed: the machine's limit, not a behaviour."""
    return exception_type.rsplit(".", 1)[-1] == "MemoryError" or bool(_OUT_OF_MEMORY.search(message))


def death_cause(framework: str, *, starting: bool, signal: str | None, returncode: int | None,
                output: str, out_of_step: bool = False, reason: str = "") -> str | None:
    """Why a worker that died did so, when it was not the framework's doing (the cell is then an
    ``error`` with this cause); None for a crash of the framework itself."""
    tail = _last_lines(output)
    if out_of_step:  # the worker's protocol is the harness's: a line that is not a reply is its fault
        return f"the {framework} worker was out of step with the harness ({reason}); it was killed"
    if starting:
        how = f"killed by {signal}" if signal else f"exited with status {returncode}"
        return (f"the {framework} worker could not start ({how} before it was ready): the framework's import "
                f"or the worker's set-up failed, which no case can cause" + (f": {tail}" if tail else ""))
    if signal == "SIGKILL":  # the harness kills only for a deadline or at close, and then says so itself
        return (f"the {framework} worker was killed by SIGKILL, which the harness did not send: the kernel's "
                f"out-of-memory killer or someone outside the run; not a behaviour of {framework}")
    if _OUT_OF_MEMORY.search(output):
        return (f"the {framework} worker died out of memory (limit {_limit_text()}): a limit of the machine, "
                f"not a behaviour of {framework}" + (f": {tail}" if tail else ""))
    return None


def _limit_text() -> str:
    limit = memory_limit()
    return f"{limit >> 20} MiB, {MEMORY_ENV}" if limit else f"none set, {MEMORY_ENV}"


def _last_lines(output: str, count: int = 3) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(lines[-count:])[-600:]
