"""What ends a cell that is the machine's or the harness's doing, never the framework's.

A worker can fail a cell without the framework having done anything the matrix
is about: the framework could not be imported, the cell needed more memory
than the machine gives it, someone outside the run killed the worker.  Each of
these is an ``error`` with its cause; only a death the framework brought on
itself (a segfault, an abort) is a ``crash``.

Workers run under a memory limit: the parent watches each busy worker's resident
memory and ends the cell, as an ``error`` naming the limit, when it passes it, before
the kernel's out-of-memory killer picks some process of the machine.  (A limit on
what a process may map, ``RLIMIT_DATA`` or ``RLIMIT_AS``, would count memory never
used: paddle's to_static starts threads that stay, each with an 8 MB stack mapped,
so a worker that had compiled a few hundred programs held 15 GB mapped and 0.7 GB
resident, and a mapping limit made its next thread fail.)  A framework's own
allocation error, where the machine itself runs out, is recognised here too.
"""

from __future__ import annotations

import os
import re

from conformance.settings import OptionError

__all__ = ["MEMORY_ENV", "REFERENCE_MEMORY_ENV", "check_memory_settings", "death_cause", "memory_limit",
           "out_of_memory", "over_limit", "reference_memory_limit", "resident_bytes"]

#: Bytes a worker may write (0: no limit); by default a share of the machine's memory.
MEMORY_ENV = "CONFORMANCE_WORKER_MEMORY"
#: Address space the NumPy reference may use (0: no limit): far above what any case needs, far below the machine.
REFERENCE_MEMORY_ENV = "CONFORMANCE_REFERENCE_MEMORY"
_REFERENCE_DEFAULT = 4 << 30
#: The smallest default limit: a framework's import alone takes several hundred MB.
_FLOOR = 2 << 30
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

#: What the frameworks and the C++ runtime say when an allocation fails (torch's DefaultCPUAllocator and
#: CUDA allocator, paddle's ResourceExhausted, std::bad_alloc, NumPy's and Python's MemoryError).
_OUT_OF_MEMORY = re.compile(
    r"can't allocate memory|cannot allocate memory|not enough memory|out of memory|ResourceExhausted"
    r"|bad_alloc|Fail to alloc memory|failed to allocate", re.IGNORECASE)


def memory_limit(processes: int | None = None) -> int:
    """The bytes one worker may hold: ``CONFORMANCE_WORKER_MEMORY``, else 35% of the machine's memory
    shared among the run's pytest-xdist processes (each runs a worker per framework), at least 2 GiB."""
    chosen = _bytes_setting(MEMORY_ENV)
    if chosen is not None:
        return chosen
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0
    processes = processes or int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(_FLOOR, int(physical * 0.35) // max(1, processes))


def reference_memory_limit() -> int:
    """The bytes the reference process may address: ``CONFORMANCE_REFERENCE_MEMORY`` (0 for no limit, as
    for the workers), else 4 GiB."""
    chosen = _bytes_setting(REFERENCE_MEMORY_ENV)
    return _REFERENCE_DEFAULT if chosen is None else chosen


def check_memory_settings() -> None:
    """Refuse, in one line and before any work, a memory variable that is no whole number of bytes: read
    later, by a worker or the reference, it would make every cell an error with no usage line."""
    memory_limit()
    reference_memory_limit()


def _bytes_setting(name: str) -> int | None:
    """A whole number of bytes from the environment variable *name*, or None where it is unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()):  # checked before any work (run, fuzz, pytest --conformance)
        raise OptionError(f"{name}={raw!r}: not a whole number of bytes (0 for no limit)")
    return int(raw)


def resident_bytes(pid: int) -> int | None:
    """The memory *pid* holds now (its resident set), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def over_limit(framework: str, resident: int, limit: int) -> str:
    """The cause of a cell ended because its worker passed its memory limit."""
    return (f"the {framework} worker held {resident >> 20} MiB, past its limit of {limit >> 20} MiB ({MEMORY_ENV}), "
            f"and was stopped: a limit of the machine, not a behaviour of {framework}")


def out_of_memory(exception_type: str, message: str) -> bool:
    """Whether an exception says an allocation failed: the machine's limit, not a behaviour."""
    return exception_type.rsplit(".", 1)[-1] == "MemoryError" or bool(_OUT_OF_MEMORY.search(message))


def death_cause(framework: str, *, starting: bool, signal: str | None, returncode: int | None,
                output: str, cause: str | None = None) -> str | None:
    """Why a worker that died did so, when it was not the framework's doing (the cell is then an
    ``error`` with this cause); None for a crash of the framework itself.  *cause*: why the harness
    itself ended the worker (its memory limit, a line out of step with the protocol), when it did."""
    tail = _last_lines(output)
    if cause is not None:
        return cause
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
