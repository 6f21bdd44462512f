"""The programs ``conformance show`` prints and ``conformance run`` keeps beside its results, kept between
calls.

Rendering a case's program needs its framework imported (an adapter asks the framework which
spellings it has), and importing torch or paddle takes seconds: a reproducer should not.  So the
first ``show`` for a framework version, device and mode renders every case it loaded in the one
worker it starts, and keeps the programs in the user's cache folder; a later ``show`` of any of
those cases reads it there.  A run keeps the programs its workers write the same way, and takes
the kept one of each cell instead of having its worker write it again (a worker's time on every cell
of every run).  A kept program is used only for the same case (its exact content), framework version,
device, mode, Python and harness code: anything else renders afresh.  Each is a file of its own (a run
looks up one per cell, and its memory stays flat in the number of cells), sealed with the user's own
key (kept outside the cache folder): a program edited in the folder, or written there by anyone else,
is rendered afresh, never printed as the case's reproducer.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Iterable

from conformance.cache import code_folder, name_part, read_sealed, write_sealed
from conformance.case.model import Case

__all__ = ["Rendered", "RunPrograms", "answer", "case_key", "render_all", "sent_to"]


def case_key(case: Case) -> str:
    """What identifies a case's program: its whole checked content, as the bytes its worker receives
    (``Case.pickled``, made once per case, or read with it from the cache): a program is rendered from
    exactly those, and hashing them costs microseconds where writing the case out field by field cost
    half a millisecond, which a run asking once per cell cannot pay."""
    return hashlib.sha256(case.pickled()).hexdigest()[:32]


class Rendered:
    """The kept programs of one framework version, device and mode, a sealed file per case (by its key), in
    this code's folder of the cache (``conformance.cache.code_folder``)."""

    def __init__(self, framework: str, version: str | None, device: str, mode: str) -> None:
        column = f"{framework}-{version or 'unknown'}-{device}-{mode}"
        self._prefix = name_part(column)
        self._folder: str | None = None  # worked out once: a run asks for every cell

    def path(self, key: str) -> str:
        """Where the program of the case of *key* is kept (a string: pathlib interns every name it parses)."""
        if self._folder is None:
            self._folder = code_folder("programs")
        return f"{self._folder}{os.sep}{self._prefix}-{key}.json"

    def get(self, case: Case) -> dict[str, Any] | None:
        data = read_sealed(self.path(case_key(case)))  # None unless this package kept it, as it kept it
        try:
            reply = json.loads(data) if data is not None else None
        except ValueError:
            return None
        return reply if isinstance(reply, dict) and isinstance(reply.get("source"), str) else None

    def add(self, replies: dict[str, dict[str, Any]]) -> None:
        """Keep *replies* (by case key); a folder that cannot be written keeps nothing."""
        for key, reply in replies.items():
            write_sealed(self.path(key), json.dumps(reply).encode("utf-8"))


class RunPrograms:
    """The programs a run keeps (``conformance run`` keeps each cell's reproducer beside its results), shared
    with ``conformance show``: a cell whose program is kept for its framework version, device and mode needs
    none written by its worker, and a program a run's worker writes is kept at once, for the next run (and
    every ``show``).  One per engine."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, str], Rendered | None] = {}

    def _rendered(self, framework: str, device: str, mode: str) -> Rendered | None:
        key = (framework, device, mode)
        if key not in self._kept:
            from conformance.adapter import installed

            found, version = installed(framework)
            self._kept[key] = Rendered(framework, version, device, mode) if found else None
        return self._kept[key]

    def kept(self, case: Case, framework: str, device: str, mode: str) -> dict[str, Any] | None:
        """The cell's program, when one is kept for the case as it is."""
        rendered = self._rendered(framework, device, mode)
        return rendered.get(case) if rendered is not None else None

    def wrote(self, case: Case, framework: str, device: str, mode: str, program: dict[str, Any]) -> None:
        """Keep a program a worker wrote for the cell."""
        rendered = self._rendered(framework, device, mode)
        if rendered is not None and isinstance(program.get("source"), str) and isinstance(program.get("code"), str):
            rendered.add({case_key(case): {"source": program["source"], "code": program["code"],
                                           "unsupported": program.get("unsupported")}})


#: Queues a request on a framework's worker: (message, timeout, case fields) -> its ticket, or None when
#: the worker takes no more (``WorkerPool.submit`` for one framework, or :func:`sent_to`).
Submit = Callable[[dict, float, tuple], Any]


def sent_to(worker: Any) -> Submit:
    """Requests sent to one *worker* of its own (``conformance show``'s)."""
    from conformance.workers.pool import Ticket

    def submit(message: dict, timeout: float, case: tuple) -> Any:
        ticket = Ticket(message, timeout, case=case)
        return ticket if worker.send(ticket) else None

    return submit


def answer(ticket: Any) -> dict[str, Any]:
    """A ticket's reply, waited for (WorkerCrashed or WorkerTimeout for its request)."""
    ticket.done.wait()
    return ticket.result()


def render_all(submit: Submit, cases: Iterable[Case], device: str, mode: str, timeout: float = 120.0,
               wait: Callable[[Any], dict[str, Any]] = answer) -> dict[str, dict[str, Any]]:
    """Every case's program (by :func:`case_key`): its reproducer (``source``) and its user's code alone
    (``code``), requests pipelined; replies without a program (a harness error) are left out, so they
    are never kept or shown."""
    from conformance.workers.pool import WorkerCrashed, WorkerTimeout

    tickets = []
    for case in cases:
        ticket = submit({"cmd": "render", "device": device, "mode": mode}, timeout,
                        (None, json.dumps(case.to_message())))
        if ticket is None:
            break
        tickets.append((case_key(case), ticket))
    replies = {}
    for key, ticket in tickets:
        try:
            reply = wait(ticket)
        except (WorkerCrashed, WorkerTimeout):
            continue
        if isinstance(reply.get("source"), str) and isinstance(reply.get("code"), str):
            replies[key] = {"source": reply["source"], "code": reply["code"], "unsupported": reply.get("unsupported")}
    return replies
