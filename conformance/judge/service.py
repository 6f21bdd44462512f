"""The reference in a process of its own, under the cell's time limit and a memory limit.

A case can make the reference slow or large (a long ``repeat``, a broadcast to
a huge shape); run in the pytest process it would stall or swell the run.  Here
it runs like a framework worker: one JSON request per line on stdin, one reply
per line on stdout; the parent kills it past its time limit, and an address
space limit turns a runaway allocation into a ``MemoryError`` reply.

Run as ``python -m conformance.judge.service reference``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

import numpy as np

from conformance.ops.observations import MAX_OBSERVED_ELEMENTS
from conformance.settings import OptionError
from conformance.workers.arrays import pack
from conformance.workers.faults import reference_memory_limit

__all__ = ["MEMORY_LIMIT_BYTES", "main"]

#: Address space the reference may use (0: no limit); a value that is no number was refused before any
#: work by :func:`conformance.workers.faults.check_memory_settings`, and is taken as the default here.
try:
    MEMORY_LIMIT_BYTES = reference_memory_limit()
except OptionError:
    MEMORY_LIMIT_BYTES = 4 << 30


def _jsonable(value: np.ndarray | None) -> Any:
    return None if value is None else pack(value)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The reference observations of the request's case, with where the value model stopped (``stopped``)
    and the observations it cannot give (``unjudged``); with ``"spread": true``, instead, how far float32
    arithmetic can move each of them (:func:`conformance.judge.reference.float32_spread`).  With
    ``"copies": [ops]``, both for a storage model where those ops' results are copies (a framework's
    documented copies); ``"approximate": {kernel: relative error}`` widens the spread by the kernels of the
    cell's device that are less exact than float32 rounding."""
    from conformance.case.model import case_from_message
    from conformance.judge.reference import ReferenceFailure, ReferenceLimit, float32_spread, run_reference

    limit = float(request.get("time_limit", 60))
    try:
        case = case_from_message(request)
        copies = request.get("copies") or ()
        result = run_reference(case, time_limit=limit, partial=True, copies=copies)
        if request.get("spread"):
            spread = float32_spread(case, result, limit, copies=copies, approximate=request.get("approximate"))
            return {"status": "ok", "spread": {k: _jsonable(v) for k, v in spread.items()}}
    except ReferenceFailure as exc:
        return {"status": "failed", "message": str(exc)}
    except ReferenceLimit as exc:
        return {"status": "limit", "message": str(exc)}
    except MemoryError:
        return {"status": "limit", "message": f"the reference needs more than its memory limit "
                                             f"({MEMORY_LIMIT_BYTES >> 20} MiB) for this case"}
    large = [k for k, v in result.observations.items() if v is not None and np.size(v) > MAX_OBSERVED_ELEMENTS]
    if large:
        return {"status": "limit", "message": f"the reference's observation {large[0]!r} has "
                f"{np.size(result.observations[large[0]])} elements; the harness compares at most "
                f"{MAX_OBSERVED_ELEMENTS} per observation"}
    reply: dict[str, Any] = {"status": "ok", "observations": {k: _jsonable(v) for k, v in result.observations.items()}}
    if result.stopped is not None:
        reply["stopped"] = result.stopped
    if result.unjudged:
        reply["unjudged"] = result.unjudged
    if result.undetermined:
        reply["undetermined"] = result.undetermined
    if result.any_of:  # JSON keys are strings: the flat indices come back as such
        reply["any_of"] = {name: {str(i): values for i, values in choices.items()}
                           for name, choices in result.any_of.items()}
    return reply


#: glibc's mallopt parameters.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory() -> bool:
    """Let glibc keep the memory this process frees, for its next allocation.

    By default glibc maps every block over 32 MiB afresh and unmaps it when freed (and gives back a freed
    heap top over 128 KiB), so a case that makes such arrays pays for zeroed pages on every request: on
    the catalogue's 2048 x 2048 cases, most of the reference's time.  The memory limit still bounds
    what the process may hold.  False where the C library has no ``mallopt``."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    size = min(MEMORY_LIMIT_BYTES or 1 << 30, 1 << 30)  # a C int
    return bool(mallopt(_M_MMAP_THRESHOLD, size) & mallopt(_M_TRIM_THRESHOLD, size))


def main() -> int:
    from conformance.workers.pool import bind_to_parent, parent_lines  # the workers' lifecycle contract

    bind_to_parent()
    keep_freed_memory()
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints never reach the protocol
    try:
        if MEMORY_LIMIT_BYTES:  # 0: no limit, as for the workers
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ValueError, OSError):  # a platform without the limit: time still bounds it
        pass
    protocol.write(json.dumps({"service": "reference", "pid": os.getpid()}) + "\n")
    for line in parent_lines(sys.stdin.buffer):
        try:
            reply = answer(json.loads(line))
        except MemoryError:
            reply = {"status": "limit", "message": "the reference ran out of memory"}
        except Exception as exc:  # noqa: BLE001 - a fault of the harness, reported as such
            reply = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
        protocol.write(json.dumps(reply, allow_nan=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
