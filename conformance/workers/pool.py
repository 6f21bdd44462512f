"""Worker processes, seen from the parent: start, feed, time out, restart.

The parent never imports a framework.  Each framework runs in a long-lived
worker (its import is paid once).  Requests are *pipelined*: the parent may
queue many requests (:class:`Ticket`) on a worker at once, so the worker goes
from one cell to the next without waiting for the parent, while the parent
judges and records the cells already answered.  The parent never blocks on a
pipe: a request is written at once as far as the pipe takes it, and a thread per
worker writes the rest as the worker reads (while it imports its framework, say);
another thread per worker reads the replies.

Every fault still costs one cell.  A cell's deadline counts from the moment the
worker could begin it (the previous reply, its hello, or the request, whichever
came last); the reader thread kills a worker whose cell passes its deadline.  A
worker that dies or is killed fails the cell it was running (``crash`` or
``timeout``); the requests queued behind it are sent again, in order, to a fresh
worker (:meth:`WorkerPool.wait` starts it), so each of them still gets its own
outcome.

A case is sent once per worker process, not once per cell: a request names the
case by a key, and carries the case itself only the first time that process sees
the key (a fresh worker after a crash gets it again).

No worker outlives its run, whatever ends the run.  Both halves of that contract
are here: the parent starts each worker as the leader of a process group of its
own (a terminal's Ctrl-C reaches only the parent, which then ends the workers)
and kills the whole group on close; the worker (:func:`bind_to_parent`,
:class:`ParentLines`) asks the kernel to kill it when its parent dies, and exits
as soon as its stdin closes, even in the middle of a cell.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from conformance.recent import Recent
from conformance.workers.faults import memory_limit, over_limit, resident_bytes

__all__ = ["Worker", "WorkerPool", "WorkerCrashed", "WorkerTimeout", "Ticket", "bind_to_parent", "ParentLines",
           "parent_lines", "program_folder_prefix", "CASES_KEPT", "remove_orphaned_program_folders", "scratch_folder",
           "WORKER_MODULE", "REFERENCE_SERVICE", "REFERENCE_MODULE"]

STARTUP_TIMEOUT = 300.0
WORKER_MODULE = "conformance.workers.worker"
#: The reference service runs as a worker too, under this name (never a framework's: it has no adapter).
REFERENCE_SERVICE = "reference"
REFERENCE_MODULE = "conformance.judge.service"
#: Set by the parent for the worker: its pid, and whether the parent-death signal can be used
#: (only when the worker is started from the parent's main thread: the kernel sends that signal when
#: the *thread* that started the child ends).
PARENT_PID_ENV = "CONFORMANCE_PARENT_PID"
PDEATHSIG_ENV = "CONFORMANCE_PDEATHSIG"
#: The folder a worker writes its programs into: made for it by the parent, removed when it is closed.
PROGRAMS_ENV = "CONFORMANCE_PROGRAMS"
_PR_SET_PDEATHSIG = 1
#: How many cases a worker keeps, the most recently named: the parent's record of what a worker was sent
#: keeps as many, updated in the order the worker reads its requests, so both agree on which it still has.
CASES_KEPT = 1024
#: A case's fields in a request: a JSON object (text or dict), or a function that encodes them when needed.
CaseFields = str | dict[str, Any] | Callable[[], str]
#: How often a reader thread looks at its worker's deadline while no reply comes (seconds).
_TICK = 0.25
#: How often a busy worker's memory is looked at (seconds): a reading of /proc, some 20 microseconds.
_MEMORY_TICK = 0.1


def scratch_folder() -> str | None:
    """Where workers keep the files they rewrite for every cell (its program, its captured output):
    ``$CONFORMANCE_SCRATCH_DIR`` when set, else a file system in memory where the machine has one (creating a
    file there costs a tenth of what it costs on a disk's journal), else the system's temporary folder (None)."""
    return os.environ.get("CONFORMANCE_SCRATCH_DIR") or _memory_folder()


@functools.lru_cache(maxsize=None)
def _memory_folder() -> str | None:
    """``/dev/shm`` where it can be written (looked up once per process)."""
    folder = "/dev/shm"
    return folder if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK) else None


#: What a folder of a worker's programs is called: the pid of the process that made it comes first, so a
#: folder whose maker is gone (killed with SIGKILL, which nothing can clean up after) is known for one.
_PROGRAMS_PREFIX = "conformance-programs-"


def program_folder_prefix(framework: str) -> str:
    return f"{_PROGRAMS_PREFIX}{os.getpid()}-{framework}-"


def remove_orphaned_program_folders() -> list[str]:
    """Remove the program folders whose maker no longer runs (a run killed with SIGKILL leaves its
    workers' folders behind); return what was removed.  Folders of running processes are left alone."""
    removed = []
    for folder in dict.fromkeys(filter(None, (scratch_folder(), tempfile.gettempdir()))):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            pid = entry.name[len(_PROGRAMS_PREFIX):].split("-", 1)[0]
            if not entry.name.startswith(_PROGRAMS_PREFIX) or not pid.isdigit() or _running(int(pid)):
                continue
            try:
                if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid():
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.path)
            except OSError:
                continue
    return removed


class WorkerCrashed(Exception):
    def __init__(self, returncode: int | None, output: str, *, starting: bool = False,
                 reason: str | None = None, cause: str | None = None) -> None:
        self.returncode = returncode
        self.signal = None
        if returncode is not None and returncode < 0:
            self.signal = signal.Signals(-returncode).name
        self.output = output
        self.starting = starting  # died before it said hello
        self.cause = cause  # why the harness ended it (a line out of step, its memory limit), when it did
        how = f"killed by {self.signal}" if self.signal else f"exited with status {returncode}"
        super().__init__(reason or f"worker {how}")


def _out_of_step(framework: str, reason: str) -> str:
    return f"the {framework} worker was out of step with the harness ({reason}); it was killed"


class WorkerTimeout(Exception):
    def __init__(self, message: str, *, starting: bool = False) -> None:
        super().__init__(message)
        self.starting = starting  # never said hello


class Ticket:
    """One request on its way through a worker: queued, answered, or failed.

    *case* is ``(key, fields)``: the case the request runs (its fields as a JSON object, encoded once
    per case, or a function that encodes them), sent with the request only to a worker process that has
    not had that key yet (always, when the key is None)."""

    _ids = itertools.count(1)

    def __init__(self, message: dict[str, Any], timeout: float, case: tuple[Any, CaseFields] | None = None,
                 on_reply: Callable[["Ticket"], None] | None = None,
                 wakeup: threading.Event | None = None) -> None:
        self.id = next(self._ids)
        self.message = message
        self.case = case
        self.on_reply = on_reply  # called by the reader thread once answered: keep it short, no long lock
        self.wakeup = wakeup  # set, as well as done, when this ticket is answered or fails
        self.timeout = timeout
        self.reply: dict[str, Any] | None = None
        self.size = 0  # bytes of the reply's line
        self.error: WorkerCrashed | WorkerTimeout | None = None
        self.info: dict[str, Any] | None = None  # the hello of the worker that answered
        self.submitted = time.monotonic()
        self.started: float | None = None  # when the worker could begin it: its deadline counts from here
        self.finished: float | None = None
        self.done = threading.Event()

    def _fail(self, error: WorkerCrashed | WorkerTimeout) -> None:
        self.error = error
        self.finished = time.monotonic()
        self._finish()

    def _finish(self) -> None:
        self.done.set()
        if self.wakeup is not None:
            self.wakeup.set()

    def result(self) -> dict[str, Any]:
        """The reply of a ticket that is done, or the error it failed with, raised."""
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply

    @property
    def seconds(self) -> float | None:
        """How long the worker had it: from when it could begin it to its reply."""
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started


def _line(message: dict[str, Any], fields: str | dict[str, Any] | None) -> bytes:
    """One request line: *message*, and the case's *fields* (a JSON object, encoded once per case)."""
    text = json.dumps(message)
    if fields:
        fields = fields if isinstance(fields, str) else json.dumps(fields)
        if fields != "{}":
            text = f"{text[:-1]}, {fields[1:]}" if text != "{}" else fields
    return (text + "\n").encode()


class Worker:
    """One framework process speaking JSON lines, fed through a queue of tickets."""

    def __init__(self, framework: str, module: str = WORKER_MODULE, *, wait: bool = True) -> None:
        """Start ``python -m MODULE FRAMEWORK`` (the reference service is such a module too); with
        *wait*, return once it said hello (raising :class:`WorkerCrashed` or :class:`WorkerTimeout`)."""
        self.framework = framework
        self.module = module
        #: the memory the worker may hold while it runs a cell (faults.py); the reference service limits
        #: its own address space instead
        self.memory_limit = memory_limit() if module == WORKER_MODULE else 0
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("GLOG_minloglevel", "0")
        env[PARENT_PID_ENV] = str(os.getpid())
        env[PDEATHSIG_ENV] = "1" if threading.current_thread() is threading.main_thread() else "0"
        self.programs = env[PROGRAMS_ENV] = tempfile.mkdtemp(prefix=program_folder_prefix(framework),
                                                             dir=scratch_folder())
        self.spawned = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, framework],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, start_new_session=True,
        )
        self.busy = False  # a request was sent and its reply not read yet
        self.lock = threading.Lock()
        self.queue: deque[Ticket] = deque()  # sent, not answered yet, in the order the worker runs them
        self.defined: Recent[Any, None] = Recent(CASES_KEPT)  # the case keys this process keeps (in step)
        self.dead = False
        self.closing = False
        self._ended_by_us = False  # killed for a deadline or an unreadable reply: its ticket already failed
        self.exited = threading.Event()
        self._hello: dict[str, Any] | None = None
        self._startup_error: WorkerCrashed | WorkerTimeout | None = None
        self._hello_seen = threading.Event()
        assert self.process.stdin is not None
        self._stdin = self.process.stdin.fileno()
        os.set_blocking(self._stdin, False)  # a full pipe never blocks the sender: the writer thread waits
        self._unsent = bytearray()  # what the pipe could not take yet, in order
        self._stop_writing = False
        self._writer_due = threading.Event()  # set when there is something unsent, or writing must end
        threading.Thread(target=self._write_requests, name=f"{framework}-requests", daemon=True).start()
        self._reader = threading.Thread(target=self._read_replies, name=f"{framework}-replies", daemon=True)
        self._reader.start()
        if wait:
            self.info  # noqa: B018 - waits for the hello, raising if the worker did not start

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return not (self.dead or self.closing) and self.process.poll() is None

    @property
    def info(self) -> dict[str, Any]:
        """The worker's hello (framework version, devices...); waits for it."""
        self._hello_seen.wait()
        if self._hello is None:
            raise self._startup_error or WorkerCrashed(self.process.returncode, self.output_tail(), starting=True)
        return self._hello

    # -- the parent's side: queue requests, read replies ----------------------------------------

    def send(self, ticket: Ticket) -> bool:
        """Queue *ticket* on this worker; False when the worker is dead (the ticket is not taken)."""
        with self.lock:
            if self.dead or self.closing:
                return False
            message = dict(ticket.message, id=ticket.id)
            fields = None
            if ticket.case is not None:
                key, fields = ticket.case
                if key is not None:
                    message["case_key"] = key
                    if key in self.defined:
                        self.defined.move_to_end(key)
                        fields = None
                    else:
                        self.defined[key] = None
            if callable(fields):  # encoded only when this process has not had the case yet
                fields = fields()
            ticket.started = None
            self.queue.append(ticket)
            self.busy = True
            if len(self.queue) == 1 and self._hello is not None:
                ticket.started = time.monotonic()
            self._write(_line(message, fields))
        return True

    def _write(self, data: bytes) -> None:
        """Under the lock: write *data* now, as far as the pipe takes it (it usually takes all, and no
        thread need wake); the writer thread writes the rest as the worker reads."""
        if not self._unsent:
            try:
                data = data[os.write(self._stdin, data):]
            except BlockingIOError:
                pass
            except OSError:  # the worker is gone: its reader fails the tickets
                return
        if data:
            self._unsent += data
            self._writer_due.set()

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request, answered before returning (raises :class:`WorkerCrashed` or :class:`WorkerTimeout`)."""
        ticket = Ticket(message, timeout)
        if not self.send(ticket):
            raise self._startup_error or WorkerCrashed(self.process.returncode, self.output_tail())
        ticket.done.wait()
        return ticket.result()

    def _write_requests(self) -> None:
        """Write what the pipe could not take when it was sent, as the worker makes room; at the end,
        close the worker's stdin (an idle worker then exits)."""
        while True:
            self._writer_due.wait()
            with self.lock:
                if self._stop_writing:
                    break
                if not self._unsent:
                    self._writer_due.clear()
                    continue
            try:
                select.select([], [self._stdin], [], _TICK)  # room in the pipe, or the worker gone
            except (OSError, ValueError):
                break
            with self.lock:
                try:
                    del self._unsent[:os.write(self._stdin, self._unsent)]
                except BlockingIOError:
                    pass
                except OSError:  # the worker is gone: the reader tells the tickets
                    self._unsent.clear()
                    break
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    def _end_writing(self) -> None:
        with self.lock:
            self._stop_writing = True
        self._writer_due.set()

    def _deadline(self, receiving: float | None) -> tuple[float, Ticket | None] | None:
        """When the worker must have answered next (startup, or its running cell), and for which ticket.

        *receiving*: when the last bytes of a reply not yet complete arrived.  A worker that has begun
        its reply has finished its cell; only the transfer is left (a reply of many large observations
        takes seconds to read), so from then on the deadline counts from the last bytes received: a
        transfer that makes progress is never a timeout, one that stalls still is."""
        with self.lock:
            if self._hello is None:
                return self.spawned + STARTUP_TIMEOUT, self.queue[0] if self.queue else None
            if self.queue and self.queue[0].started is not None:
                head = self.queue[0]
                start = head.started if receiving is None else max(head.started, receiving)
                return start + head.timeout, head
        return None

    def _read_replies(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        buffer = bytearray()  # appended to in place and cut once per line: linear in the reply's size
        scanned = 0  # bytes of the buffer already searched for a line's end
        receiving: float | None = None
        watched = 0.0
        while True:
            due = self._deadline(receiving)
            if due is not None and time.monotonic() >= due[0]:
                self._expire(due[1])
                due = None
            elif due is not None and self.memory_limit and time.monotonic() - watched >= _MEMORY_TICK:
                watched = time.monotonic()
                self._watch_memory(due[1])
            try:
                ready, _, _ = select.select([fd], [], [], _MEMORY_TICK if due and self.memory_limit else _TICK)
            except (OSError, ValueError):
                break
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", max(scanned, start))) >= 0:
                line = bytes(buffer[start:end])
                start = scanned = end + 1
                if not self._take(line):
                    self._kill()
            del buffer[:start]
            scanned = len(buffer)
            receiving = time.monotonic() if buffer else None
        self._died()

    def _take(self, line: bytes) -> bool:
        """One reply line; False when it cannot be read (the worker is out of step with us)."""
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        now = time.monotonic()
        with self.lock:
            if self._ended_by_us:
                return True  # whatever it wrote before it was killed: nobody waits for it any more
            if self._hello is None:
                if not isinstance(reply, dict):
                    reason = f"unreadable hello from the worker: {line[:200]!r}"
                    self._startup_error = WorkerCrashed(None, "", starting=True, reason=reason,
                                                        cause=_out_of_step(self.framework, reason))
                    return False
                self._hello = reply
                if self.queue:
                    self.queue[0].started = now
                hello_seen, ticket = True, None
            else:
                hello_seen = False
                if not self.queue:
                    return True  # a reply to a request sent behind our back: nothing waits for it
                ticket = self.queue[0]
                if not isinstance(reply, dict) or reply.pop("id", ticket.id) != ticket.id:
                    self.queue.popleft()
                    self._ended_by_us = True
                    reason = f"unreadable reply from the worker: {line[:200]!r}"
                    ticket._fail(WorkerCrashed(None, self.output_tail(), reason=reason,
                                               cause=_out_of_step(self.framework, reason)))
                    return False
                self.queue.popleft()
                ticket.reply, ticket.info, ticket.finished, ticket.size = reply, self._hello, now, len(line)
                if self.queue:
                    self.queue[0].started = now
                self.busy = bool(self.queue)
        if hello_seen:
            self._hello_seen.set()
        if ticket is not None:
            on_reply = ticket.on_reply
            if on_reply is not None:
                try:
                    on_reply(ticket)
                except Exception:  # noqa: BLE001 - a hint for the parent; the reply itself still counts
                    pass
            ticket._finish()
        return True

    def _watch_memory(self, ticket: Ticket | None) -> None:
        """A busy worker past its memory limit is stopped, and its cell fails as the machine's limit."""
        resident = resident_bytes(self.process.pid)
        if resident is None or resident <= self.memory_limit or ticket is None:
            return
        with self.lock:
            if not self.queue or self.queue[0] is not ticket:
                return
            self.queue.popleft()
            self._ended_by_us = True
        self._kill()
        ticket._fail(WorkerCrashed(None, self.output_tail(), reason="past its memory limit",
                                   cause=over_limit(self.framework, resident, self.memory_limit)))

    def _expire(self, ticket: Ticket | None) -> None:
        """The deadline passed: kill the worker, and fail the ticket it was on (if any)."""
        starting = self._hello is None
        if starting:
            self._startup_error = WorkerTimeout(f"no hello within {STARTUP_TIMEOUT:g} s", starting=True)
        with self.lock:
            self._ended_by_us = True
            if ticket is not None and self.queue and self.queue[0] is ticket:
                self.queue.popleft()
            else:
                ticket = None
        self._kill()
        if ticket is not None:
            ticket._fail(WorkerTimeout(f"no answer within {ticket.timeout:g} s", starting=starting)
                         if not starting else WorkerTimeout(f"no hello within {STARTUP_TIMEOUT:g} s", starting=True))

    def _died(self) -> None:
        """The worker's stdout closed: it exited, crashed or was killed.  The ticket it was running
        fails as a crash; the tickets queued behind it stay queued for a fresh worker."""
        try:
            returncode = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()
            returncode = self.process.returncode
        starting = self._hello is None
        crash = WorkerCrashed(returncode, "" if self.closing else self.output_tail(), starting=starting)
        with self.lock:
            self.dead = True
            ticket = self.queue.popleft() if self.queue and not (self.closing or self._ended_by_us) else None
            self.busy = False
        if starting and self._startup_error is None:
            self._startup_error = crash
        self._hello_seen.set()
        self._end_writing()
        self.exited.set()
        if ticket is not None:
            ticket._fail(crash)

    def take_queue(self) -> list[Ticket]:
        """The tickets still queued on this (dead) worker, handed over to be sent again."""
        with self.lock:
            tickets = list(self.queue)
            self.queue.clear()
        return tickets

    def output_tail(self, limit: int = 4000) -> str:
        try:
            self.log.seek(0)
            return self.log.read().decode("utf-8", "replace")[-limit:]
        except (OSError, ValueError):
            return ""

    def _kill(self) -> None:
        if self.process.returncode is None:  # not reaped yet, so its pid (the group's id) is still ours
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def kill(self) -> None:
        """Kill the worker's whole process group, then reap the worker."""
        self._kill()
        self.process.wait()

    def close(self) -> None:
        """End the worker now, busy or idle: it has nothing left that anyone will read."""
        with self.lock:
            self.closing = True
        self._end_writing()
        self.kill()
        self._reader.join(timeout=5)
        for stream in (self.process.stdout, self.log):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        shutil.rmtree(self.programs, ignore_errors=True)


class WorkerPool:
    """At most one live worker per name (a framework, or the reference service) in this process."""

    _swept = False  # orphaned program folders are looked for once per process

    def __init__(self) -> None:
        if not WorkerPool._swept:
            WorkerPool._swept = True
            remove_orphaned_program_folders()
        self.workers: dict[str, Worker] = {}
        self.modules: dict[str, str] = {}
        self.lock = threading.RLock()
        self.wakeup = threading.Event()  # set whenever one of this pool's tickets is answered or fails

    def start(self, name: str, module: str = WORKER_MODULE) -> Worker:
        """The live worker for *name*, started now (without waiting for its hello) if there is none."""
        with self.lock:
            self.modules[name] = module
            worker = self.workers.get(name)
            if worker is not None and not worker.dead and worker.process.poll() is not None:
                worker.exited.wait(15)  # exited: let its reader fail the ticket it was on before the rest move
            if worker is None or not worker.alive():
                queued = worker.take_queue() if worker is not None else []
                if worker is not None:
                    worker.close()
                worker = self.workers[name] = Worker(name, module, wait=False)
                for ticket in queued:  # requests a dead worker never answered: a fresh one runs them
                    worker.send(ticket)
            return worker

    def start_run(self, frameworks: Iterable[str]) -> None:
        """Start a run's processes, without waiting for them: the worker of each installed framework among
        *frameworks*, and the reference service.  (Only the adapters' classes are looked up: this module
        and that lookup import nothing heavy, so a caller starts them before its own imports.)"""
        from conformance.adapter import installed

        for name in frameworks:
            if installed(name)[0]:
                self.start(name)
        self.start(REFERENCE_SERVICE, module=REFERENCE_MODULE)

    def get(self, name: str, module: str = WORKER_MODULE) -> Worker:
        """The live worker for *name*, once it said hello (:class:`WorkerCrashed`/:class:`WorkerTimeout`
        when it could not start)."""
        worker = self.start(name, module)
        worker.info  # noqa: B018 - raises when it did not start
        return worker

    def unanswered(self, name: str) -> int:
        """How many requests *name*'s worker has been sent and has not answered yet."""
        worker = self.workers.get(name)
        return len(worker.queue) if worker is not None else 0

    def submit(self, name: str, message: dict[str, Any], timeout: float,
               case: tuple[Any, CaseFields] | None = None, module: str = WORKER_MODULE,
               on_reply: Callable[[Ticket], None] | None = None) -> Ticket:
        """Queue a request on *name*'s worker (started if need be) and return its ticket at once."""
        ticket = Ticket(message, timeout, case, on_reply, self.wakeup)
        with self.lock:
            worker = self.workers.get(name)
            # A busy worker that died unnoticed may still take the ticket: its reader fails only the
            # request it was running, and the rest (this one too) go to a fresh worker.  An idle one is
            # asked whether it still runs (a system call, spared while requests are queued).
            if worker is None or (not worker.queue and not worker.alive()) or not worker.send(ticket):
                while not self.start(name, self.modules.get(name, module)).send(ticket):
                    pass  # it died just now: start another
        return ticket

    def wait(self, ticket: Ticket, idle: Callable[[], None] | None = None) -> dict[str, Any]:
        """The reply of *ticket* (:class:`WorkerCrashed`/:class:`WorkerTimeout` for its cell).  While
        waiting, a worker that died with requests still queued is replaced and they are sent again, and
        *idle* runs each time any ticket of the pool is answered."""
        while True:
            if idle is not None:
                idle()
            self.revive()
            if ticket.done.is_set():
                break
            self.wakeup.wait(_TICK)
            self.wakeup.clear()
        return ticket.result()

    def revive(self) -> None:
        """Replace each dead worker that still has requests queued, and send them to the new one."""
        with self.lock:
            for name, worker in list(self.workers.items()):
                if worker.dead and worker.queue:
                    self.start(name, self.modules.get(name, WORKER_MODULE))

    def discard(self, name: str) -> None:
        with self.lock:
            worker = self.workers.pop(name, None)
        if worker is not None:
            worker.close()
            for ticket in worker.take_queue():
                ticket._fail(WorkerCrashed(worker.process.returncode, "the worker was closed"))

    def close(self) -> None:
        for name in list(self.workers):
            self.discard(name)


# -- the worker's side of the contract ---------------------------------------------------------------

def bind_to_parent(parent: int | None = None) -> None:
    """In a worker: die with the parent that started it (Linux's parent-death signal); with *parent*, in a
    process the worker forked (``workers/isolated.py``): die with that worker, whose pid it is.

    Elsewhere, or when the parent started it from a thread other than its main one, :class:`ParentLines`
    still ends the worker when the parent's end of stdin closes."""
    if (parent is None and os.environ.get(PDEATHSIG_ENV) != "1") or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: stdin's end still ends the worker
        return
    expected = str(parent) if parent is not None else os.environ.get(PARENT_PID_ENV, "")
    if expected.isdigit() and (not _running(int(expected)) or (parent is not None and os.getppid() != parent)):
        os._exit(1)  # the parent died before the signal was armed, so it will never come


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ParentLines:
    """In a worker: the request lines from the parent, read by the worker's own thread.  When the parent
    closes the pipe (or dies), an idle worker's loop ends; a worker in the middle of a request exits at
    once, since no one will read its reply.

    A watcher thread waits for the pipe's hang-up (``poll`` with no event asked for reports only that),
    without reading: it wakes once, at the end, not once per request as a thread that moved every
    line would (a thread switch per request costs more than reading the line)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._busy = False
        self._closed = False
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            return  # not a file: its end is its last line
        threading.Thread(target=self._watch, args=(fd,), name="parent-hangup", daemon=True).start()

    def _watch(self, fd: int) -> None:
        watcher = select.poll()
        watcher.register(fd, 0)  # no event asked for: only a hang-up (or an error) ends the wait
        while not watcher.poll():
            pass
        self._closed = True  # set before looking at _busy, which the reader sets before looking at this
        if self._busy:
            os._exit(0)

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            self._busy = True
            if self._closed:  # the parent went while this line waited: nobody reads its reply
                return
            yield line
            self._busy = False


def parent_lines(stream: BinaryIO) -> Iterator[bytes]:
    """In a worker: the request lines from the parent (see :class:`ParentLines`)."""
    return iter(ParentLines(stream))
