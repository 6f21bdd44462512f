"""A generated program as data: its steps as a case file holds them (:class:`Program`, walked with
:func:`walk`, the names a step binds by :func:`outs`), what the reference knows of a name while one is
drawn (:class:`Facts`), and :class:`GeneratorBug`, a program the fuzzer should not have made.

Below the drawing (draw.py) and hypothesis: what reads, runs, shrinks or writes programs needs only this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from conformance.case.load import Case, check_case


class GeneratorBug(Exception):
    """The generator made a program the checker or the reference refuses: a fault of the fuzzer."""

    def __init__(self, message: str, steps: Sequence[Mapping[str, Any]] = (), op: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.steps = list(steps)
        self.op = op  # the op of a drawn step the checker refused, when that was the fault


@dataclass(frozen=True)
class Program:
    """A generated program: its steps as a case file holds them, and the dtype it computes in."""

    steps: tuple[Mapping[str, Any], ...]
    dtype: str = "float32"

    def data(self, case_id: str, title: str = "a generated program") -> dict[str, Any]:
        return {"id": case_id, "title": title, "steps": [dict(s) for s in self.steps]}

    def case(self, case_id: str, path: str = "cases/found/fuzz.yaml") -> Case:
        """The program as a checked case (CaseError if it is not one)."""
        return check_case(self.data(case_id), path)

    def ops(self) -> list[str]:
        """The ops it uses, in order, blocks walked."""
        return [s["op"] for s in walk(self.steps) if "op" in s]

    def size(self) -> int:
        return sum(1 for _ in walk(self.steps))


def walk(steps: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every step of a program as a case file holds it, blocks walked."""
    for step in steps:
        yield step
        yield from walk(step.get("steps", ()))


def outs(step: Mapping[str, Any]) -> list[str]:
    """The names one step binds (none for an observation)."""
    out = step.get("out")
    if isinstance(out, str):
        return [out]
    return [name for name in out if isinstance(name, str)] if isinstance(out, list) else []


@dataclass(frozen=True)
class Facts:
    """What the reference knows of a name now: its kind, and for tensors and arrays their shape and
    autograd state (``view``: a tracked view of another tensor)."""

    kind: str
    shape: tuple[int, ...] = ()
    requires_grad: bool = False
    is_leaf: bool = True
    view: bool = False

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))
