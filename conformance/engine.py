"""Run cells (case x framework x device x mode) end to end and build their result records.

Execution happens in a worker; judging (reference, comparison, outcome) happens
here, in the parent, so every framework is judged by the same code.

A run that knows its cells up front hands them to :meth:`Engine.prefetch`: each
framework's worker then gets its requests queued ahead, and the reference service
the cases, in the order the run takes them, so the workers and the reference run
while the parent collects, judges and records.  How far ahead is bounded twice: at
most :data:`WINDOW` requests planned and not yet taken per process, and at most
:data:`REPLY_BYTES_AHEAD` of replies read and not yet taken (a reply's size has no
small bound: a cell may observe inside a long loop).  Of a worker's planned requests,
at most :data:`IN_FLIGHT` are in its pipe unanswered; each reply sends the next, so
a request sent out of turn is answered soon.  :meth:`Engine.run_cell` then
only waits for a cell's reply; a cell that was not prefetched is sent when it is
asked for, and a case's reference as soon as a worker has answered one of its cells
with a result to judge.  Either way a cell's outcome is the same.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import pickle
import sys
import threading
import time
import weakref
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any, Iterable, Mapping

from conformance.adapter import adapter_classes, installed, missing_modules
from conformance.case.model import Case
from conformance.judge.classify import Partly, Unjudged, classify, misses_in_float32, wrong_result
from conformance.judge.kept import is_kept, keep_answer, kept_answer
from conformance.outcomes import MACHINE_VALUE_OUTCOMES
from conformance.program.rendered import RunPrograms
from conformance.recent import Recent
from conformance.records.results import recorded_path, run_info
from conformance.settings import CELLS_PER_PROCESS, parallel_processes
from conformance.workers.arrays import unpack
from conformance.workers.faults import death_cause
from conformance.workers.pool import (REFERENCE_MODULE, REFERENCE_SERVICE, Ticket, WorkerCrashed, WorkerPool,
                                       WorkerTimeout)

__all__ = ["Engine", "CELLS_PER_PROCESS", "DEFAULT_TIMEOUT", "IN_FLIGHT", "REFERENCE_SERVICE", "REPLY_BYTES_AHEAD",
           "WINDOW", "Prepared", "parallel_processes"]

DEFAULT_TIMEOUT = 120.0
#: The most requests queued ahead on one process (a worker, or the reference service) and not yet taken
#: by the parent: enough that no process waits while the parent collects a large catalogue.
WINDOW = 4096
#: The most bytes of replies read from one process and not yet taken: what bounds the parent's memory.
REPLY_BYTES_AHEAD = 64 << 20
#: The most requests sent to a worker and not answered yet.  The rest of the window waits here, and each
#: reply sends the next: a request sent now (a wrong cell run a second time, a cell asked for out of turn)
#: waits for this many cells at most, not for every cell queued ahead of it, while the worker is never
#: without its next request.
IN_FLIGHT = 16
#: A reference asked for this many references before the one being taken, and not taken itself, is let go.
UNTAKEN_REFERENCES = 256

Cell = tuple[Case, str, str, str]  # case, framework, device, mode
#: The request for a case's plain reference (the case itself travels beside it).
_REFERENCE: dict[str, Any] = {}


@functools.lru_cache(maxsize=None)
def _adapters() -> dict[str, Any]:
    """The registered adapters, looked up once per process (each lookup scans every entry point)."""
    return adapter_classes()


def _case_key(case: Case) -> str:
    """What the reference is kept under: one reference per case file and id."""
    return f"{case.path}::{case.id}"


def _copying(case: Case, framework: str, device: str = "cpu") -> dict[str, Any]:
    """The ops of *case* whose results *framework* copies on *device* where the storage model has views,
    with what its documentation says of each (``Adapter.copies``, ``Adapter.device_copies``)."""
    cls = _adapters().get(framework)
    table = {**(getattr(cls, "copies", None) or {}), **(getattr(cls, "device_copies", None) or {}).get(device, {})}
    return {op: table[op] for op in case.ops if op in table} if table else {}


def _same_values(a: Any, b: Any) -> bool:
    """Two observed values alike, NaN for NaN (an observation read twice by one program)."""
    import numpy as np

    if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    try:
        return bool(np.array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), equal_nan=True))
    except (TypeError, ValueError):
        return a == b


def _unpack_values(reply: dict[str, Any]) -> None:
    """A reply's observed values in the form judging reads: a large array came as its bytes."""
    for observation in reply.get("observations") or ():
        if "value" in observation:
            observation["value"] = unpack(observation["value"])


#: What a worker's reply carries that judging never reads (how long it ran, the cell's program).
_UNJUDGED = frozenset({"run_seconds", "kept"})


def _same_reply(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether two replies of one cell are alike, bit for bit, in everything judging reads (a large
    observation compared as its array, as judging reads it): judging is a function of the reply, so the
    second has the first's outcome.  Unlike-looking replies (another key order, a NaN's other payload) are
    only judged, never taken for alike."""
    _unpack_values(second)  # as the first run's were, when it was judged
    try:
        return (pickle.dumps({k: v for k, v in first.items() if k not in _UNJUDGED}, protocol=5)
                == pickle.dumps({k: v for k, v in second.items() if k not in _UNJUDGED}, protocol=5))
    except Exception:  # noqa: BLE001 - what cannot be pickled is judged as it always was
        return False


def _approximate(framework: str, device: str) -> dict[str, float]:
    """The kernels *framework* computes less exactly than float32 rounding on *device*, with their relative
    error (``Adapter.kernel_precision``)."""
    cls = _adapters().get(framework)
    table = (getattr(cls, "kernel_precision", None) or {}).get(device, {})
    return {kernel: bound for kernel, (bound, _) in table.items()}


def _reference_reply(reply: dict[str, Any]) -> tuple[dict | None, str | None, str | None]:
    """The reference service's reply as (observations, failure, harness_error) (:meth:`Engine.reference`)."""
    if reply.get("status") == "ok":  # where the value model stopped, what it gave before is judged
        observations = {name: unpack(value) for name, value in reply["observations"].items()}
        observations.update({name: Unjudged(why) for name, why in reply.get("unjudged", {}).items()})
        undetermined, any_of = reply.get("undetermined", {}), reply.get("any_of", {})
        observations.update({name: Partly(observations[name], tuple(undetermined.get(name, ())),
                                          {int(i): tuple(values) for i, values in any_of.get(name, {}).items()})
                             for name in {*undetermined, *any_of} if name in observations})
        return observations, reply.get("stopped"), None
    if reply.get("status") == "failed":
        return None, reply["message"], None
    return None, None, reply.get("message", "the reference service gave no answer")


def _rounded(seconds: Any, digits: int) -> float | None:
    """A duration as a record keeps it: to a tenth of a millisecond (a worker's import, to 10 ms)."""
    return None if seconds is None else round(float(seconds), digits)


class Engine:
    def __init__(self, pool: WorkerPool | None = None, timeout: float = DEFAULT_TIMEOUT,
                 keeps_programs: bool = False, keeps_compiled: bool = True) -> None:
        self.pool = pool or WorkerPool()
        self.timeout = timeout
        #: Whether a cell's worker takes the cell's program compiled from the cache, and keeps it there
        #: (workers/compiled.py): right for a catalogue, run again and again; a fuzzer's programs run once.
        self.keeps_compiled = keeps_compiled
        #: Whether each cell's worker also writes the cell's reproducer, which the cell's result then carries
        #: (``program``): a run that keeps its programs (records/programs.py) gets them as its cells end.
        self.keeps_programs = keeps_programs
        self._programs: RunPrograms | None = None  # the programs kept for the cells, and those written now
        self._programs_ahead: dict[tuple[str, str, str, str], dict[str, Any]] = {}  # cells sent, not yet taken
        self._lock = threading.RLock()  # the bookkeeping below; callers may run cells from several threads
        # What is kept per case, for the most recent cases only (a case's cells run one after another; one
        # asked for again after it left is computed again): the parent's memory stays flat in the cases.
        self._references: Recent[str, tuple[dict | None, str | None, str | None]] = Recent(256)
        self._spreads: Recent[tuple, tuple[dict | None, str | None]] = Recent(64)
        self._copy_references: Recent[tuple, tuple[dict | None, str | None, str | None]] = Recent(64)
        self._messages: Recent[str, str] = Recent(256)
        self._kept_digests: Recent[str, None] = Recent(WINDOW)  # cases whose reference an earlier run kept
        # References asked for and not taken yet, in the order they were asked for (with that number).
        self._reference_tickets: dict[str, tuple[Ticket, float, int]] = {}
        self._reference_numbers = itertools.count()
        self._reference_sent: set[str] = set()  # asked for, not taken yet
        self._wanted: SimpleQueue[Case] = SimpleQueue()  # cases a worker answered for: their reference is due
        self._planned_references: deque[Case] = deque()  # cases whose reference prefetch asks for in turn
        self._reference_planned: set[str] = set()
        self._bytes_lock = threading.Lock()  # the counts below, which reader threads add to
        self._unread: dict[str, int] = {}  # per process: bytes of replies read and not yet taken
        self._counted: dict[int, tuple[str, int]] = {}  # ticket id -> (process, bytes) in those counts
        self._tickets: dict[tuple[str, str, str, str], Ticket] = {}
        # Cells waiting in _planned (how many times), and those of them asked for before their turn came
        # (they ran; their turn sends nothing).  With _tickets, every set here holds cells not yet taken
        # only: none grows with the number of cells a run has taken.
        self._queued: dict[tuple[str, str, str, str], int] = {}
        self._taken_early: set[tuple[str, str, str, str]] = set()
        self._case_keys: dict[int, tuple[weakref.ref, str]] = {}  # the key each live case is sent to workers under
        self._numbers = itertools.count(1)
        self._planned: dict[str, deque] = {}  # per framework: cells prefetch sends once the window has room
        self._ahead: dict[str, int] = {}  # per framework: cells sent and not yet taken
        self._run_info: dict[str, Future] = {}
        self._run_infos: dict[tuple, tuple[dict | None, dict[str, Any]]] = {}
        self._background: ThreadPoolExecutor | None = None

    def _timeout(self, case: Case) -> float:
        """A case's own timeout, capped by the run's."""
        return min(case.timeout, self.timeout) if case.timeout else self.timeout

    # -- starting and feeding the workers ahead of the cells ----------------------------------------

    def start(self, frameworks: Iterable[str]) -> None:
        """Start the workers of *frameworks* and the reference service now, without waiting for them:
        their imports overlap whatever the caller does next (pytest's collection, for one)."""
        self.pool.start_run(frameworks)

    def device_problem(self, framework: str, device: str) -> tuple[str, str] | None:
        """(the framework's version, why *device* cannot run its cells) from its worker's hello, or None when
        it can (or when the worker could not start: its cells then say why, each)."""
        try:
            hello = self.pool.get(framework).info
        except Exception:  # noqa: BLE001 - a worker that cannot start fails its cells with the reason
            return None
        problem = (hello.get("devices") or {}).get(device)
        return (str(hello.get("framework_version", "")), problem) if problem else None

    def prefetch(self, cells: Iterable[Cell]) -> None:
        """Queue *cells* on their workers, and their cases on the reference service, in this order and
        within the bounds of the window, so each runs before the parent asks for it."""
        with self._lock:
            for case, framework, device, mode in cells:
                key = (self._worker_key(case), framework, device, mode)
                if key in self._tickets or key in self._queued or not installed(framework)[0]:
                    continue
                self._planned.setdefault(framework, deque()).append((key, case, framework, device, mode))
                self._queued[key] = 1
                self._plan_reference(case)
                self._warm_run_info(case)
            for name in list(self._planned):
                self._refill(name)
            self._refill_references()

    def replan(self, cells: Iterable[Cell]) -> None:
        """The cells the run will take, in the order it takes them: those not sent yet are queued in
        that order; those sent and no longer wanted (deselected) stop holding a place in the window."""
        with self._lock:
            planned: dict[str, deque] = {}
            wanted = set()
            cells_in_order = list(cells)
            self._queued.clear()
            self._taken_early.clear()  # they stood for entries of the plans replaced here
            for case, framework, device, mode in cells_in_order:
                key = (self._worker_key(case), framework, device, mode)
                wanted.add(key)
                if key not in self._tickets and installed(framework)[0]:
                    planned.setdefault(framework, deque()).append((key, case, framework, device, mode))
                    self._queued[key] = self._queued.get(key, 0) + 1
            for key in [k for k in self._tickets if k not in wanted]:
                self._release(self._tickets.pop(key), dropped=True)
                self._programs_ahead.pop(key, None)
                self._ahead[key[1]] -= 1
            self._planned = planned
            self._planned_references.clear()
            self._reference_planned.clear()
            for case, framework, _, _ in cells_in_order:
                if installed(framework)[0]:
                    self._plan_reference(case)
            for key in [k for k in self._reference_tickets if k not in self._reference_planned]:
                self._release(self._reference_tickets.pop(key)[0], dropped=True)
                self._reference_sent.discard(key)
            for name in list(self._ahead):
                self._refill(name)
            self._refill_references()

    def _refill(self, framework: str) -> None:
        planned = self._planned.get(framework)
        while planned and self._ahead.get(framework, 0) < WINDOW and self._has_room(framework) \
                and self.pool.unanswered(framework) < IN_FLIGHT:
            entry = planned.popleft()
            key = entry[0]
            self._queued[key] -= 1
            if not self._queued[key]:
                del self._queued[key]
            if key in self._taken_early:  # asked for before its turn came: it ran
                self._taken_early.discard(key)
            elif key not in self._tickets:
                self._send_cell(*entry)

    def _plan_reference(self, case: Case) -> None:
        """Plan a case's reference (once); those already asked for count as planned, for :meth:`replan`."""
        key = _case_key(case)
        if key not in self._reference_planned and key not in self._references:
            self._reference_planned.add(key)
            if key not in self._reference_sent:
                self._planned_references.append(case)

    def _refill_references(self) -> None:
        planned = self._planned_references
        while planned and len(self._reference_tickets) < WINDOW and self._has_room(REFERENCE_SERVICE) \
                and self.pool.unanswered(REFERENCE_SERVICE) < IN_FLIGHT:
            case = planned.popleft()
            key = _case_key(case)
            if key in self._reference_sent or key in self._references:
                continue
            if self._kept(case):  # judged from what an earlier run kept: no longer waiting for the service
                self._reference_planned.discard(key)
            else:
                self._reference_tickets[key] = self._submit_reference(case)

    # -- the bytes of replies read and not yet taken -------------------------------------------------

    def _has_room(self, process: str) -> bool:
        return self._unread.get(process, 0) < REPLY_BYTES_AHEAD

    def _count(self, process: str, ticket: Ticket) -> None:
        """A reader thread, on a reply: its bytes count against its process's room until it is taken."""
        with self._bytes_lock:
            if ticket.on_reply is not None:  # else it was dropped, unanswered, and nobody will take it
                self._counted[ticket.id] = (process, ticket.size)
                self._unread[process] = self._unread.get(process, 0) + ticket.size

    def _taken(self, ticket: Ticket, process: str) -> None:
        """The parent has a reply (or its failure) in hand: its bytes make room for more requests."""
        with self._lock:
            self._release(ticket)
            if process == REFERENCE_SERVICE:
                self._refill_references()
            else:
                self._refill(process)
            self._shrink()

    def _shrink(self) -> None:
        """Replace each emptied table of the bookkeeping by a new one: a dict or a set keeps the room it
        grew to (all of a large run's cells are planned at once, while pytest collects), and an empty
        one made anew gives it back."""
        for name in ("_queued", "_taken_early", "_tickets", "_reference_tickets", "_reference_sent",
                     "_reference_planned"):
            table = getattr(self, name)
            if not table and sys.getsizeof(table) > 1024:
                setattr(self, name, type(table)())
        with self._bytes_lock:  # reader threads add to this one
            if not self._counted and sys.getsizeof(self._counted) > 1024:
                self._counted = {}

    def _release(self, ticket: Ticket, dropped: bool = False) -> None:
        """A reply taken (or a request no longer wanted): its bytes no longer count."""
        with self._bytes_lock:
            if dropped:
                ticket.on_reply = None
            process, size = self._counted.pop(ticket.id, ("", 0))
            if size:
                self._unread[process] -= size

    def _worker_key(self, case: Case) -> str:
        """The key a case is sent to a worker under (once per worker process): one per case object, so a
        file rewritten between two runs of one engine is never run as its stale copy."""
        entry = self._case_keys.get(id(case))
        if entry is None or entry[0]() is not case:
            entry = self._case_keys[id(case)] = (weakref.ref(case), f"{next(self._numbers)}:{case.id}")
            weakref.finalize(case, self._case_keys.pop, id(case), None)  # the engine never keeps a case alive
        return entry[1]

    def _message(self, case: Case) -> str:
        """A case's message as JSON, encoded once while its cells are being sent (to each worker and the
        reference) and kept for the most recent cases only, so the parent's memory does not grow with the
        number of cases."""
        key = self._worker_key(case)
        message = self._messages.get(key)
        if message is None:
            message = self._messages[key] = json.dumps(case.to_message())
        return message

    def _send_cell(self, key: tuple[str, str, str, str], case: Case, framework: str, device: str,
                   mode: str) -> Ticket:
        request: dict[str, Any] = {"cmd": "run", "device": device, "mode": mode}
        if self.keeps_compiled:
            request["keep_compiled"] = True
        if self._keeps(framework):
            kept = self._kept_programs().kept(case, framework, device, mode)
            if kept is None:
                request["keep"] = True  # written by the worker that runs the cell, right after it
            else:  # until the cell is taken: a few cells in flight at a time
                self._programs_ahead[key] = kept
        ticket = self.pool.submit(framework, request, self._timeout(case),
                                  case=(key[0], functools.partial(self._message, case)),
                                  on_reply=functools.partial(self._answered, case, framework))
        self._tickets[key] = ticket
        self._ahead[framework] = self._ahead.get(framework, 0) + 1
        return ticket

    def _keeps(self, framework: str) -> bool:
        """Whether a cell of *framework* keeps its program (a converter's program is its conversion of
        another's: never kept)."""
        return self.keeps_programs and not getattr(_adapters().get(framework), "isolated", True)

    def _kept_programs(self) -> RunPrograms:
        if self._programs is None:
            self._programs = RunPrograms()
        return self._programs

    def _program(self, case: Case, framework: str, device: str, mode: str, reply: dict[str, Any]) -> None:
        """The cell's program into its reply (``kept``): the one its worker wrote (kept for the next run), or
        the one kept for the case as it is; a cell whose worker died gets one written by its successor."""
        programs = self._kept_programs()
        with self._lock:
            kept = self._programs_ahead.pop((self._worker_key(case), framework, device, mode), None)
        if isinstance(reply.get("kept"), dict):
            programs.wrote(case, framework, device, mode, reply["kept"])
        elif reply.get("status") in ("completed", "raised", "unsupported"):
            if kept is not None:
                reply["kept"] = kept
        elif reply.get("status") in ("crash", "timeout"):
            reply["kept"] = kept if kept is not None else self._reproducer(case, framework, device, mode)

    def _answered(self, case: Case, framework: str, ticket: Ticket) -> None:
        """A worker's reader thread, on a reply: a result to judge makes the case's reference due, and the
        worker gets its next planned request (:data:`IN_FLIGHT`)."""
        self._count(framework, ticket)
        if ticket.reply is not None and ticket.reply.get("status") in ("completed", "raised"):
            self._wanted.put(case)
        if self._planned.get(framework):
            with self._lock:
                self._refill(framework)

    def _take_cell(self, case: Case, framework: str, device: str, mode: str) -> Ticket:
        """The ticket of a cell: prefetched, or sent now."""
        with self._lock:
            key = (self._worker_key(case), framework, device, mode)
            ticket = self._tickets.pop(key, None)
            if ticket is None:
                ticket = self._send_cell(key, case, framework, device, mode)
                self._tickets.pop(key)
                if key in self._queued:
                    self._taken_early.add(key)
            self._ahead[framework] -= 1
            self._refill(framework)
        return ticket

    def _send_due_references(self) -> None:
        """Ask the reference service for every case a worker has answered (called by whoever waits)."""
        while not self._wanted.empty():
            self._send_reference(self._wanted.get())

    def _send_reference(self, case: Case) -> None:
        """Ask for a case's reference ahead of judging, once."""
        key = _case_key(case)
        with self._lock:
            if key not in self._reference_sent and key not in self._references and not self._kept(case):
                self._reference_tickets[key] = self._submit_reference(case)

    def _reference_answered(self, ticket: Ticket) -> None:
        """The reference service's reader thread, on a reply: the service gets its next planned request."""
        self._count(REFERENCE_SERVICE, ticket)
        if self._planned_references:
            with self._lock:
                self._refill_references()

    def _kept(self, case: Case) -> bool:
        """Whether the case's reference is kept from an earlier run (conformance/judge/kept.py): then no
        process is asked for it.  Looked up once per recent case (each reply to judge asks again)."""
        if case.digest in self._kept_digests:
            return True
        if is_kept(_REFERENCE, case.digest):
            self._kept_digests[case.digest] = None
            return True
        return False

    def _submit_reference(self, case: Case) -> tuple[Ticket, float, int]:
        limit = self._timeout(case)
        ticket = self.pool.submit(REFERENCE_SERVICE, {"time_limit": limit}, limit + 5,
                                  case=(None, self._message(case)), module=REFERENCE_MODULE,
                                  on_reply=self._reference_answered)
        self._reference_sent.add(_case_key(case))
        return ticket, limit, next(self._reference_numbers)

    def _drop_references_before(self, number: int) -> None:
        """Let go of the references asked for before the *number*-th and never taken: cases whose cells all
        ended without a result to judge (unsupported, crashed, skipped).  Cases run in the order their
        references were asked for, so one that is wanted after all (reordered items) is asked for again."""
        while self._reference_tickets:
            key, (ticket, _, asked) = next(iter(self._reference_tickets.items()))
            if asked >= number:
                return
            del self._reference_tickets[key]
            self._reference_sent.discard(key)
            self._reference_planned.discard(key)
            self._release(ticket, dropped=True)

    def _wait(self, ticket: Ticket) -> dict[str, Any]:
        return self.pool.wait(ticket, idle=self._send_due_references)

    def _warm_run_info(self, case: Case) -> None:
        """Look up the run information of a case's folder (git revision, host) in the background."""
        folder = os.path.dirname(case.path)
        if folder not in self._run_info:
            if self._background is None:
                self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-info")
            self._run_info[folder] = self._background.submit(run_info, folder, None, "cpu")

    def _run_info_of(self, case: Case, worker_info: dict | None, device: str) -> dict[str, Any]:
        """A record's run information: worked out once per folder, worker and device, copied per cell."""
        folder = os.path.dirname(case.path)
        key = (folder, id(worker_info), device)
        cached = self._run_infos.get(key)
        if cached is None or cached[0] is not worker_info:
            future = self._run_info.get(folder)
            if future is not None:
                future.result()  # the folder's git revision and host, looked up in the background
            cached = self._run_infos[key] = (worker_info, run_info(folder, worker_info, device))
        return dict(cached[1])

    # -- the reference ------------------------------------------------------------------------------

    def reference(self, case: Case) -> tuple[dict | None, str | None, str | None]:
        """The reference observations of *case*, or why the reference cannot give them.

        Returns (observations, failure, harness_error): *failure* says which step the
        reference cannot model, and why (the observations before it are still given,
        and one it cannot give is an :class:`Unjudged` with the reason); *harness_error*
        that the reference went past its limits or broke.  Computed once per case, in
        the reference service.
        """
        key = _case_key(case)
        if key not in self._references:
            self._references[key] = self._ask_reference(case)
        return self._references[key]

    def _ask_reference(self, case: Case) -> tuple[dict | None, str | None, str | None]:
        key = _case_key(case)
        with self._lock:
            asked = self._reference_tickets.pop(key, None)
            kept = kept_answer(_REFERENCE, case.digest) if asked is None else None
            if kept is None:
                ticket, limit, number = asked or self._submit_reference(case)
            self._reference_sent.discard(key)
            self._reference_planned.discard(key)
            if kept is None:
                self._drop_references_before(number - UNTAKEN_REFERENCES)
            self._refill_references()
        if kept is not None:
            return _reference_reply(kept)
        try:
            reply = self._wait(ticket)
        except WorkerTimeout:
            return None, None, f"the reference did not finish within the cell's limit of {limit:g} s"
        except WorkerCrashed as exc:
            return None, None, f"the reference process died ({exc}); it runs under a memory limit"
        finally:
            self._taken(ticket, REFERENCE_SERVICE)
        keep_answer(_REFERENCE, case.digest, reply)
        return _reference_reply(reply)

    def spread(self, case: Case, copies: tuple[str, ...] = (),
               approximate: Mapping[str, float] | None = None) -> tuple[dict | None, str | None]:
        """How far float32 arithmetic can move each reference observation of *case*, or why it is not known;
        asked for only when a float32 observation misses the float64 reference (most cells never need it).
        *copies*: of the storage model where those ops copy (:meth:`copy_reference`); *approximate*: the
        device's kernels that are less exact than float32 rounding (``Adapter.kernel_precision``)."""
        approximate = dict(approximate or {})
        key = (_case_key(case), copies, tuple(sorted(approximate.items())))
        if key not in self._spreads:
            reply = self._ask_service(case, {"spread": True, "copies": list(copies), "approximate": approximate})
            self._spreads[key] = (({name: unpack(value) for name, value in reply["spread"].items()}, None)
                                  if reply.get("status") == "ok"
                                  else (None, reply.get("message", "the reference service gave no answer")))
        return self._spreads[key]

    def copy_reference(self, case: Case, copies: tuple[str, ...]) -> tuple[dict | None, str | None, str | None]:
        """:meth:`reference` for a storage model where the results of the ops *copies* are copies, not
        views: asked for only when a framework that documents those copies is wrong on a case using them."""
        key = (_case_key(case), copies)
        if key not in self._copy_references:
            reply = self._ask_service(case, {"copies": list(copies)})
            self._copy_references[key] = _reference_reply(reply)
        return self._copy_references[key]

    def _ask_service(self, case: Case, request: dict[str, Any]) -> dict[str, Any]:
        """One request to the reference service about *case*, waited for (or its answer kept from an earlier
        run)."""
        limit = self._timeout(case)
        kept = kept_answer(request, case.digest, case.id)
        if kept is not None:
            return kept
        ticket = self.pool.submit(REFERENCE_SERVICE, {"time_limit": limit, **request}, limit + 5,
                                  case=(None, self._message(case)), module=REFERENCE_MODULE,
                                  on_reply=functools.partial(self._count, REFERENCE_SERVICE))
        try:
            reply = self._wait(ticket)
        except (WorkerTimeout, WorkerCrashed) as exc:
            return {"status": "limit", "message": f"the reference service failed ({exc})"}
        finally:
            self._taken(ticket, REFERENCE_SERVICE)
        keep_answer(request, case.digest, reply, case.id)
        return reply

    # -- one cell -----------------------------------------------------------------------------------

    def run_cell(self, case: Case, framework: str, device: str, mode: str = "eager") -> dict[str, Any]:
        started = time.perf_counter()
        worker_info: dict[str, Any] | None = None
        version = "not installed"
        cls = _adapters().get(framework)
        seconds = None
        if cls is None:
            reply: dict[str, Any] = {"status": "error", "message": f"no adapter named {framework!r}"}
        elif not installed(framework)[0]:
            missing = ", ".join(repr(name) for name in missing_modules(cls))
            reply = {"status": "skipped", "reason": f"{framework} is not installed (no module {missing})"}
        else:
            version = installed(framework)[1] or "unknown"
            try:
                reply, worker_info, seconds = self._execute_timed(case, framework, device, mode)
                if self._keeps(framework):
                    self._program(case, framework, device, mode, reply)
            except Exception as exc:  # noqa: BLE001 - a fault of the harness's own bookkeeping: one cell
                reply = {"status": "error", "message": f"the harness could not run this cell: "
                                                       f"{type(exc).__name__}: {exc}"}
            if seconds is not None:  # the cell's time: the worker's, from when it could begin it, then judging
                started = time.perf_counter() - seconds
            if worker_info:
                version = worker_info["framework_version"]
        try:
            outcome, details = self._judge(case, reply, framework, device)
            details.pop("kept", None)  # the cell's program goes beside the results (``program``), not in its details
            if outcome == "silent-wrong" and cls is not None:  # a wrong value is looked at twice
                details = self._once_more(case, framework, device, mode, reply, details)
            if case.varies_by_machine and outcome in MACHINE_VALUE_OUTCOMES:  # what another machine may compute
                details["varies_by_machine"] = case.varies_by_machine
        except Exception as exc:  # noqa: BLE001 - a fault of the judging (or a limit of this process): one cell
            outcome, details = "error", {"message": f"the harness could not judge this cell: "
                                                    f"{type(exc).__name__}: {exc}"}
        return {
            "case": case.id,
            "case_file": recorded_path(case.path) if case.path else case.path,
            "case_digest": case.digest,
            "topic": case.topic,
            "title": case.title,
            "framework": framework,
            "framework_version": version,
            "device": device,
            "mode": mode,
            "outcome": outcome,
            "details": details,
            "timings": {"cell_seconds": round(time.perf_counter() - started, 4),
                        "run_seconds": _rounded(reply.get("run_seconds"), 4)},
            "run_info": self._run_info_of(case, worker_info, device),
            **({"program": reply["kept"]} if isinstance(reply.get("kept"), dict) else {}),
        }

    def _judge(self, case: Case, reply: dict[str, Any], framework: str = "",
               device: str = "cpu") -> tuple[str, dict[str, Any]]:
        """The outcome of a worker's reply: judged against the reference (and, for float32 values that miss
        it, against what float32 arithmetic can do to it; for a framework whose documented copies the case
        uses, against the storage model with those copies)."""
        reference, reference_error = None, None
        _unpack_values(reply)
        if reply["status"] in ("completed", "raised"):  # only a result needs judging
            reference, reference_error, harness_error = self.reference(case)
            if harness_error is not None:
                reply = {"status": "error", "message": harness_error}
        approximate = _approximate(framework, device)
        outcome, details = self._classified(case, reply, reference, reference_error, approximate=approximate)
        copying = _copying(case, framework, device)
        # The storage model with the framework's copies is tried wherever the view model fails the cell: a
        # wrong result, values a memory case recorded that do not fit, or a step the view model cannot
        # write (an in-place write through a view that overlaps itself, which a copy does not have).
        missed = (wrong_result(outcome, details) or _values_miss(outcome, details)
                  or (outcome == "error" and reference_error is not None))
        if copying and missed:
            return self._judge_copies(case, reply, copying, outcome, details, approximate)
        return outcome, details

    def _classified(self, case: Case, reply: dict[str, Any], reference: dict | None, reference_error: str | None,
                    copies: tuple[str, ...] = (), approximate: Mapping[str, float] | None = None
                    ) -> tuple[str, dict[str, Any]]:
        outcome, details = classify(case, reply, reference, reference_error)
        if misses_in_float32(details):  # judged again, knowing what float32 arithmetic can do to the values
            spread, why_not = self.spread(case, copies, approximate)
            if spread is not None:
                outcome, details = classify(case, reply, reference, reference_error, spread=spread)
                if approximate:  # the spread counted the device's approximate kernels: said beside the values
                    details["approximate_kernels"] = dict(approximate)
            else:
                details["float32_spread_unknown"] = why_not
        return outcome, details

    def _judge_copies(self, case: Case, reply: dict[str, Any], copying: dict[str, Any], outcome: str,
                      details: dict[str, Any], approximate: Mapping[str, float] | None = None
                      ) -> tuple[str, dict[str, Any]]:
        """A wrong cell judged again where the ops the framework copies (``Adapter.copies``) copy.

        When that storage model explains every value, a copy the framework documents makes the cell
        ``copies`` (``raises`` or ``warns`` stay, with a right result); a copy where its documentation
        promises a view stays wrong, and says so.  Anything else wrong stays as it was judged."""
        copies = tuple(sorted(copying))
        reference, reference_error, harness_error = self.copy_reference(case, copies)
        if harness_error is not None or reference is None:
            return outcome, details
        again, judged = self._classified(case, reply, reference, reference_error, copies, approximate)
        if wrong_result(again, judged) or again == "error" or _values_miss(again, judged):
            return outcome, details
        documented = {op: why.source for op, why in copying.items() if why.documented}
        promised = {op: why.source for op, why in copying.items() if not why.documented}
        if promised:  # a copy where the documentation promises sharing: a hazard wherever it shows
            details["copies_where_documented_as_view"] = promised
            if _values_miss(outcome, details):  # a memory case's values: as wrong as any other case's
                missing = [o for o in details.get("observations", []) if o.get("matches_reference") is False]
                for observation in missing:
                    observation["ok"] = False
                details["max_error"] = max(float(o.get("max_rel_error", float("inf"))) for o in missing)
                return "silent-wrong", details
            return outcome, details
        judged["documented_copies"] = documented
        return ("copies" if again == "silent-correct" else again), judged

    def _once_more(self, case: Case, framework: str, device: str, mode: str, first: dict[str, Any],
                   details: dict[str, Any]) -> dict[str, Any]:
        """A wrong cell run a second time in a fresh program: where its observations differ from the first
        run's (a read of freed memory, a race between duplicate writes), the record says so
        (``nondeterministic``: the observations that differ and the second outcome), and a baseline or a
        diff never takes such a cell for a change of the framework.  *first*: the first run's reply, as
        judged; a second reply that is the same in all judging reads is the same outcome, not judged again."""
        again, _, _ = self._execute_timed(case, framework, device, mode)
        with self._lock:  # its program was taken with the first run's reply
            self._programs_ahead.pop((self._worker_key(case), framework, device, mode), None)
        if again.get("status") not in ("completed", "raised"):
            differing, second = ["(the second run: " + str(again.get("status")) + ")"], again.get("status")
        elif _same_reply(first, again):
            differing, second = [], "silent-wrong"
        else:
            second, second_details = self._judge(case, again, framework, device)
            first_values = {o["name"]: o.get("value") for o in details.get("observations", ()) if "name" in o}
            then = {o["name"]: o.get("value") for o in second_details.get("observations", ()) if "name" in o}
            differing = sorted(name for name in first_values.keys() | then.keys()
                               if not _same_values(first_values.get(name), then.get(name)))
        if differing or second != "silent-wrong":
            details["nondeterministic"] = {"second_outcome": second, "differing": differing}
        return details

    def _reproducer(self, case: Case, framework: str, device: str, mode: str) -> dict[str, Any] | None:
        """The reproducer of a cell whose worker died running it (the reply that carries it died with it),
        written by the worker that replaces it: the program of a crash is the one a user most needs."""
        from conformance.program.rendered import case_key, render_all

        replies = render_all(functools.partial(self.pool.submit, framework), [case], device, mode,
                             timeout=self._timeout(case), wait=self.pool.wait)
        return replies.get(case_key(case))

    def _execute_timed(self, case: Case, framework: str, device: str,
                       mode: str) -> tuple[dict[str, Any], dict | None, float | None]:
        """The worker's reply for a cell, the worker's hello, and how long the worker had the cell."""
        timeout = self._timeout(case)
        ticket = self._take_cell(case, framework, device, mode)
        try:
            reply = self._wait(ticket)
        except WorkerCrashed as exc:
            cause = death_cause(framework, starting=exc.starting, signal=exc.signal, returncode=exc.returncode,
                                output=exc.output, cause=exc.cause)
            info = None if exc.starting else ticket.info
            died = {"signal": exc.signal, "returncode": exc.returncode, "output": exc.output}
            if cause is not None:  # the machine's or the harness's doing: never a finding
                return {"status": "error", "message": cause, **died}, info, None
            return {"status": "crash", "message": str(exc), **died}, info, ticket.seconds
        except WorkerTimeout as exc:
            if exc.starting:
                return {"status": "error", "message": f"the {framework} worker did not start: {exc}; no case "
                                                      f"can cause that"}, None, None
            return {"status": "timeout", "message": f"no result within {timeout:g} s; worker killed",
                    "timeout_seconds": timeout}, ticket.info, ticket.seconds
        finally:
            self._taken(ticket, framework)
        return reply, ticket.info, ticket.seconds

    def close(self) -> None:
        self.pool.close()
        if self._background is not None:
            self._background.shutdown(wait=False, cancel_futures=True)


def _values_miss(outcome: str, details: dict[str, Any]) -> bool:
    """Whether a memory case's cell recorded values that do not fit the reference."""
    return outcome in ("aliases", "copies") and any(o.get("matches_reference") is False
                                                    for o in details.get("observations", []))


class Prepared:
    """What the ``conformance`` command prepares before pytest starts, handed to pytest as a plugin
    object: an engine whose workers are already importing their frameworks (None when the run is
    distributed), which the plugin takes over; and, after the run, the problems of the case files that
    could not be read, from their items' reports (which xdist forwards)."""

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine
        self.invalid: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        problem = dict(report.user_properties).get("invalid_case")
        if report.failed and problem and problem not in self.invalid:
            self.invalid.append(problem)
