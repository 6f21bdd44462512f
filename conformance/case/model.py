"""The case model: a framework-neutral program of steps, as the loader (``case/load.py``) checked it.

Below the ops (``conformance/ops``), which spell and model each step: this module knows no op, so
every layer of the pipeline (ops, program, workers, judge, records, report) can name a case and its
steps without importing the loader, which checks a case against the ops.
"""

from __future__ import annotations

import base64
import dataclasses
import operator
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.case.index import Index

__all__ = ["GENERATED_SOURCE", "MEASURED", "Case", "CaseError", "Step", "Tolerance", "case_from_message"]

#: The kind of the bytes a ``measure_allocated`` block records: a case may state them (``expected:``).
MEASURED = "allocated_bytes"

#: The ``source:`` of a case the differential fuzzer wrote.
GENERATED_SOURCE = "found by fuzzing"


class CaseError(Exception):
    """A problem in a case file, at a line."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = str(path)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True, slots=True)
class Step:
    """One step; ``op == "observe"`` for observations (then ``kind``/``of``/``name``)."""

    op: str
    line: int
    number: int
    args: tuple[Any, ...] = ()
    out: tuple[str, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple["Step", ...] = ()
    index: Index | None = None
    kind: str = ""
    of: tuple[str, ...] = ()
    name: str = ""
    judged: bool = False  # an observation compared with the reference (``judge: false`` turns it off)

    def walk(self) -> Iterable["Step"]:
        yield self
        for step in self.steps:
            yield from step.walk()

    def __reduce__(self) -> tuple[type["Step"], tuple[Any, ...]]:
        # Pickled as its constructor's arguments: the dataclass's own state functions for a slotted class
        # look its fields up for every step, twice the cost of a case's whole pickle (a run sends every
        # case to a worker and reads every kept case back).
        return Step, _step_values(self)


_step_values = operator.attrgetter(*(f.name for f in dataclasses.fields(Step)))


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    topic: str
    path: str
    line: int
    steps: tuple[Step, ...]
    raw: Mapping[str, Any]
    source: str = ""
    description: str = ""
    tolerance: Tolerance | None = None
    timeout: float | None = None
    expected: Mapping[str, Any] | None = None
    #: One line: why the frameworks differ (or go wrong) on this program, for the porting guide.
    cause: str = ""
    #: One line, where the reference follows one framework's documented behaviour rather than arithmetic
    #: (a retained .grad that accumulates, a leaf's grad_fn): whose documentation a silent-wrong rests on.
    judged_against: str = ""
    #: The ids of the cases that are this one's safe spelling, checked against results (``report/remedies.py``).
    remedy: tuple[str, ...] = ()
    #: Why no safe spelling exists, where none does (exclusive with ``remedy``).
    no_remedy: str = ""
    #: Why no static rule of ``conformance scan`` can find this hazard in code, where none can.
    not_scanned: str = ""
    #: One line, where the value a framework computes depends on the machine's kernels rather than on the
    #: framework's version (a BLAS that reads an aliased input before or after writing, by CPU): why.  A
    #: baseline then takes silent-correct and silent-wrong of the case for the same behaviour.
    varies_by_machine: str = ""
    lines: Mapping[tuple, int] = field(default_factory=dict, repr=False, compare=False)
    #: What decides a cell's result (steps, tolerance, timeout), hashed: a record carries it, so a result
    #: of a case edited since it ran is known to be stale.  Titles and prose do not change it.
    digest: str = ""

    def slim(self) -> "Case":
        """The case without its YAML data and line map, which only checking it needed: what a run keeps
        (an item holds its case to the end of the run) and what other processes are sent."""
        return dataclasses.replace(self, raw={}, lines={}) if self.raw or self.lines else self

    def to_message(self) -> dict[str, Any]:
        """The case for a worker or the reference service, which are processes of this package started
        by this one: the checked case itself, pickled (rebuilding it from its YAML data would check it
        once more in every process, for every case), slim (a worker keeps every case it is sent)."""
        return {"case": base64.b64encode(self.pickled()).decode("ascii")}

    def pickled(self) -> bytes:
        """The slim case, pickled without its path (a file name means nothing to another process): made
        once per case object; a case read from the cache (``case/kept.py``) comes with the bytes it was
        read from."""
        data = self.__dict__.get("_pickled")
        if data is None:
            data = pickle.dumps(dataclasses.replace(self.slim(), path=""), protocol=pickle.HIGHEST_PROTOCOL)
            self.__dict__["_pickled"] = data  # not a field: equality and replace() never see it
        return data

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__  # the fields, and what was cached beside them: not pickled
        return {k: v for k, v in state.items() if k != "_pickled"} if "_pickled" in state else state

    def walk(self) -> Iterable[Step]:
        for step in self.steps:
            yield from step.walk()

    @property
    def steps_by_number(self) -> dict[int, Step]:
        return {step.number: step for step in self.walk()}

    def step(self, number: int) -> Step:
        return self.steps_by_number[number]

    @property
    def generated(self) -> bool:
        """Whether the differential fuzzer wrote this case (a hazard by construction: it needs no remedy)."""
        return self.source.startswith(GENERATED_SOURCE)

    @property
    def ops(self) -> frozenset[str]:
        """The ops its steps use, blocks walked."""
        return frozenset(s.op for s in self.walk())


def case_from_message(message: Mapping[str, Any]) -> Case:
    """The case a :meth:`Case.to_message` carries (only ever from the process that started this one)."""
    data = base64.b64decode(message["case"])
    case = pickle.loads(data)
    if not isinstance(case, Case):
        raise TypeError(f"the message carries a {type(case).__name__}, not a case")
    case.__dict__["_pickled"] = data  # what Case.pickled() would make again: these very bytes
    return case
