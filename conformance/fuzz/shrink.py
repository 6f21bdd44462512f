"""Shrinking a finding to a minimal program that is the same finding: hypothesis's shrinker, then deletion.

The finding's input bytes go into an in-memory example database through the
test's ``fuzz_one_input`` (hypothesis's way to hand it a failure found outside
it); then the test runs with only the reuse and shrink phases: hypothesis
replays the finding and shrinks it, running each candidate program through the
frameworks and the reference.  A candidate "fails" when it is the same finding
(:meth:`Verdict.keeps`: the same kind, and per framework that could run the
finding the same outcome and what characterises it; a framework that could not,
``unsupported``, may do anything, so no step is kept only to keep it unable).

Hypothesis shrinks the bytes the program was drawn from, and a step other steps
were drawn around can outlive it; so the smallest program it gives is then
simplified edit by edit (``simplify.py``: steps deleted, blocks unwrapped, made
tensors replaced by literals, float32, smaller literals, simpler numbers) while
it stays the same finding, and what was tried is kept for the case to say.
"""

from __future__ import annotations

import json
from typing import Callable, Mapping

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky, HypothesisException

from conformance.fuzz.generate import GeneratorBug, Program, programs
from conformance.fuzz.simplify import Tried, simplify
from conformance.fuzz.verdict import Verdict
from conformance.ops import Op

__all__ = ["Shrunk", "shrink"]


class _SameSignature(Exception):
    """Raised by the shrinking test for a program that still has the finding's signature."""


class Shrunk:
    """The result of shrinking: the minimal program and its verdict, how many programs ran, and what the
    simplification tried on the program it ended with."""

    def __init__(self, program: Program, verdict: Verdict, evaluations: int, tried: Tried) -> None:
        self.program = program
        self.verdict = verdict
        self.evaluations = evaluations
        self.tried = tried


def shrink(buffer: bytes, ops: Mapping[str, Op], target: Verdict, evaluate: Callable[[Program], Verdict],
           *, random_seed: int = 0, max_evaluations: int = 500) -> Shrunk | None:
    """Shrink the program *buffer* draws (from ``programs(ops)``) while it stays the finding *target*.

    *evaluate* runs one program and judges it.  Returns None when the program does not reproduce the
    finding at all; with more than *max_evaluations* candidates, the smallest found so far.
    """
    cache: dict[str, Verdict] = {}
    failing: list[tuple[Program, Verdict]] = []
    count = [0]

    def verdict_of(program: Program) -> Verdict:
        key = json.dumps([program.dtype, list(program.steps)], sort_keys=True)
        if key not in cache:
            count[0] += 1
            cache[key] = evaluate(program)
        return cache[key]

    # settings outside seed: @seed alone turns the database off, and the database is how the finding gets in.
    @settings(database=InMemoryExampleDatabase(), phases=[Phase.reuse, Phase.shrink], deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, report_multiple_bugs=False,
              print_blob=False)
    @seed(random_seed)
    @given(programs(ops))
    def same_signature(program: Program) -> None:
        if count[0] >= max_evaluations and failing:  # out of budget: stop finding anything smaller
            return
        verdict = verdict_of(program)
        if verdict.keeps(target):
            failing.append((program, verdict))
            raise _SameSignature()

    try:  # the finding, into the database (it raises when it reproduces)
        same_signature.hypothesis.fuzz_one_input(buffer)
    except _SameSignature:
        pass
    except GeneratorBug:
        return None
    if not failing:
        return None
    try:
        same_signature()
    except _SameSignature:
        pass
    except (Flaky, HypothesisException, GeneratorBug):  # a flaky cell (a crash, a timeout), or out of budget
        pass
    # Hypothesis ends by replaying its minimal failing program; the smallest seen is kept either way.
    program, verdict = min(reversed(failing), key=lambda pair: pair[0].size())
    program, verdict, tried = simplify(program, verdict, target, verdict_of, max_evaluations)
    return Shrunk(program, verdict, count[0], tried)
