"""What a found program should observe: every tensor its writes touched, and the gradients of its leaves.

Shrinking keeps the observations a finding needs and deletes the others; a case
a framework developer reads should also show what else the writes did.  So the
shrunk program gets, at its end, a value observation of every name whose
storage an in-place write reached (through any alias), and, when it runs
backward, a gradient observation of every leaf that requires grad: each only
where the reference can judge it.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from conformance.case.model import CaseError
from conformance.fuzz.model import Program, outs, walk
from conformance.fuzz.verdict import FINDING, Verdict
from conformance.judge.reference import Machine, ReferenceFailure, ReferenceLimit, Tensor, run_reference
from conformance.ops import OBSERVATIONS, OPS

__all__ = ["observe_what_matters", "observing_finding"]

#: Seconds the reference may take on a found program (they are a few steps long).
TIME_LIMIT = 10.0


class _Watching(Machine):
    """The reference machine, noting which storages an in-place write reached."""

    def __init__(self) -> None:
        super().__init__(OPS, OBSERVATIONS, time.monotonic() + TIME_LIMIT, partial=True)
        self.written: set[int] = set()

    def write(self, tensor: Tensor, value: np.ndarray, node: Any) -> None:
        super().write(tensor, value, node)
        self.written.add(id(tensor.storage))


def observing_finding(program: Program, verdict: Verdict,
                      evaluate: Callable[[Program], Verdict]) -> tuple[Program, Verdict]:
    """The finding *program* with what matters observed (:func:`observe_what_matters`), run again: taken when
    it is still a finding, else *program* as it was."""
    observed = observe_what_matters(program)
    if observed != program:
        again = evaluate(observed)
        if again.kind == FINDING:
            return observed, again
    return program, verdict


def observe_what_matters(program: Program) -> Program:
    """*program* with value observations of the names its writes touched and, when it runs backward,
    gradient observations of its leaves that require grad, each added at the end where it is not already
    observed there and the reference judges it."""
    case = program.case("observed")
    machine = _Watching()
    try:
        machine.run(case.steps)
    except (ReferenceFailure, ReferenceLimit, MemoryError):
        return program
    last = _observed_at_end(program.steps)
    backward = any(step.get("op") == "backward" for step in walk(program.steps))
    wanted = []
    for name in dict.fromkeys(name for step in program.steps for name in outs(step)):  # top level only
        value = machine.env.get(name)
        if not isinstance(value, Tensor):
            continue
        if id(value.storage) in machine.written and ("value", name) not in last:
            wanted.append({"observe": "value", "of": name})
        if backward and value.kind == "tensor" and value.is_leaf and value.requires_grad and ("grad", name) not in last:
            wanted.append({"observe": "grad", "of": name})
    steps = tuple(program.steps)
    for observation in wanted:
        candidate = Program(steps + (observation,), program.dtype)
        if _judgeable(candidate):
            steps = candidate.steps
    return Program(steps, program.dtype)


def _judgeable(program: Program) -> bool:
    """Whether the last observation of *program* is one the reference gives (a valid case, a value known)."""
    try:
        case = program.case("observed")
        result = run_reference(case, TIME_LIMIT, partial=True)
    except (CaseError, ReferenceFailure, ReferenceLimit, MemoryError):
        return False
    last = case.steps[-1]
    return (result.stopped is None and last.name in result.observations and last.name not in result.unjudged
            and last.name not in result.undetermined)


def _observed_at_end(steps: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(kind, name) of the observations after the last step that is not one."""
    seen: set[tuple[str, str]] = set()
    for step in reversed(steps):
        if "observe" not in step:
            break
        targets = step["of"] if isinstance(step["of"], list) else [step["of"]]
        seen.update((step["observe"], target) for target in targets)
    return seen
