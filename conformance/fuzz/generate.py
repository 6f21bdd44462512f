"""Hypothesis strategies for programs drawn from the op table: :func:`programs`, and :class:`Source`, the
programs of a seed (each with the bytes that replay it).

A program is drawn step by step while the reference runs it, valid by construction (draw.py); which ops
are drawn is fuzzable.py's; the program as data is model.py's.  Their names are importable from here, as
the fuzzer's other modules and the tests import them.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.fuzz.draw import MAX_STEPS, Builder, Draw
from conformance.fuzz.fuzzable import ARG_KINDS, fuzzable_observations, fuzzable_ops
from conformance.fuzz.model import Facts, GeneratorBug, Program, outs, walk
from conformance.ops import Op

__all__ = ["ARG_KINDS", "Draw", "Drawn", "Facts", "GeneratorBug", "Program", "Source", "fuzzable_observations",
           "fuzzable_ops", "outs", "programs", "walk"]


def programs(ops: Mapping[str, Op] | None = None, *, max_steps: int = MAX_STEPS) -> st.SearchStrategy[Program]:
    """Programs over *ops* (default: every fuzzable op of the table, read when a program is drawn)."""
    return _programs(_Table(ops), max_steps)


class _Table:
    """The ops a strategy draws from, with a short repr (hypothesis shows strategy arguments)."""

    def __init__(self, ops: Mapping[str, Op] | None) -> None:
        self.ops = ops

    def __repr__(self) -> str:
        return "the op table" if self.ops is None else f"{len(self.ops)} ops"


@st.composite
def _programs(draw: Callable, table: _Table, max_steps: int) -> Program:
    ops = fuzzable_ops(table.ops)[0]
    with np.errstate(all="ignore"):  # overflow and 0/0 are values here (inf, nan), judged like any other
        return Builder(draw, ops, max_steps).build()


#: Bytes of input per program: far more than a program draws (a program that needs more is not made).
INPUT_BYTES = 4096


@dataclass(frozen=True)
class Drawn:
    """A program drawn by a :class:`Source`, the ops it was drawn from, and the input that replays it
    through the same strategy (``programs(ops)``)."""

    number: int
    program: Program
    buffer: bytes
    ops: Mapping[str, Op]


class Source:
    """Programs for a seed: hypothesis's strategy (:func:`programs`) interpreting a byte stream from
    ``random.Random(seed)``, through ``fuzz_one_input``, hypothesis's entry point for external fuzzers.
    The same seed gives the same programs in the same order; each comes with the bytes that replay it
    (what :mod:`conformance.fuzz.shrink` starts from).  Inputs the strategy rejects are skipped and
    counted.

    A :class:`GeneratorBug` is kept in :attr:`bugs`; with *exclude_faulty*, an op whose drawn step the
    checker refused (it needs a ``fuzz`` rule) is left out from then on, with the reason in
    :attr:`excluded` (the programs stay a function of the seed).  Without it, :meth:`next` raises it."""

    def __init__(self, seed: int, ops: Mapping[str, Op] | None = None, *, exclude_faulty: bool = True) -> None:
        self.random = random.Random(seed)
        self.exclude_faulty = exclude_faulty
        self.tried = 0
        self.rejected = 0
        #: seconds spent drawing (hypothesis and the live reference), for the throughput report
        self.seconds = 0.0
        self.made = 0
        self.bugs: list[GeneratorBug] = []
        self.excluded: dict[str, str] = {}
        self._last: list[Program] = []
        self._use(fuzzable_ops(ops)[0])

    def _use(self, ops: dict[str, Op]) -> None:
        self.ops = ops

        @settings(database=None, deadline=None)
        @given(programs(ops))
        def take(program: Program) -> None:
            self._last.append(program)

        self._fuzz = take.hypothesis.fuzz_one_input

    def next(self) -> Drawn:
        started = time.perf_counter()
        try:
            return self._next()
        finally:
            self.seconds += time.perf_counter() - started

    def _next(self) -> Drawn:
        while True:
            self.tried += 1
            self._last.clear()
            try:
                buffer = self._fuzz(self.random.randbytes(INPUT_BYTES))
            except Exception as exc:  # noqa: BLE001 - a fault of the fuzzer costs one program, never the run
                if not self.exclude_faulty:
                    raise
                bug = exc if isinstance(exc, GeneratorBug) else GeneratorBug(f"{type(exc).__name__}: {exc}")
                self.bugs.append(bug)
                if bug.op in self.ops and bug.op != "tensor":  # "tensor": the generator's own fresh operands
                    self.excluded[bug.op] = f"its drawn steps need a fuzz rule: {bug.message}"
                    self._use({name: op for name, op in self.ops.items() if name != bug.op})
                continue
            if buffer is None or not self._last:
                self.rejected += 1
                continue
            self.made += 1
            return Drawn(self.made, self._last[-1], bytes(buffer), self.ops)
