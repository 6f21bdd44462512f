"""Running generated programs as the suite runs its cells, in batches, for a seed and a budget.

Each program runs in the suite's own long-lived workers (one per framework: a
crash or a hang costs that program, the worker is replaced, the run goes on) and
in the reference service, and each cell is judged by the suite's ``classify``:
a fuzzed program gets exactly the outcome ``conformance run`` would give it as a
case.  The frameworks and the reference work on a batch at the same time (one
thread waits on each process), while the next batch is drawn.

The programs, and so the verdicts, depend only on the seed and the budget: the
batch size changes how the work is spread, not what is run.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from conformance.case.load import Case
from conformance.engine import REFERENCE_SERVICE, Engine
from conformance.fuzz import BATCH, DEFAULT_TIMEOUT, FOUND_FOLDER
from conformance.fuzz.generate import Drawn, Source
from conformance.fuzz.verdict import Cell, Verdict, judge
from conformance.judge.classify import classify

__all__ = ["Runner", "Tried", "campaign", "case_id"]

#: Where generated programs say they live (no file is written for them).
VIRTUAL_FOLDER = FOUND_FOLDER.as_posix()


def case_id(seed: int, number: int) -> str:
    return f"fuzz_{seed}_{number}"


class Runner:
    """Runs programs through every given framework's worker and the reference service, and judges them."""

    def __init__(self, frameworks: Sequence[str], device: str = "cpu", timeout: float = DEFAULT_TIMEOUT) -> None:
        self.frameworks = list(frameworks)
        self.device = device
        self.engine = Engine(timeout=timeout)
        #: seconds each framework's worker spent on programs, and the reference service
        self.busy = {name: 0.0 for name in [*self.frameworks, REFERENCE_SERVICE]}
        self.versions: dict[str, str] = {}
        self._threads = ThreadPoolExecutor(max_workers=len(self.frameworks) + 1, thread_name_prefix="fuzz")

    def start(self) -> dict[str, str]:
        """Start the workers from this (the main) thread, so they are bound to this process; return the
        framework versions."""
        for name in self.frameworks:
            self.versions[name] = self.engine.pool.get(name).info.get("framework_version", "unknown")
        self.engine.pool.get(REFERENCE_SERVICE, module="conformance.judge.service")
        return dict(self.versions)

    def submit(self, cases: Sequence[Case]) -> Callable[[], list[Verdict]]:
        """Start running *cases*; the returned function waits for their verdicts."""
        cases = list(cases)
        references = self._threads.submit(self._references, cases)
        replies = {name: self._threads.submit(self._replies, name, cases) for name in self.frameworks}
        return lambda: self._verdicts(cases, references, replies)

    def run(self, cases: Sequence[Case]) -> list[Verdict]:
        return self.submit(cases)()

    def close(self) -> None:
        self._threads.shutdown(wait=True)
        self.engine.pool.close()

    def __enter__(self) -> "Runner":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the two halves of Engine.run_cell, per batch --------------------------------------------

    def _references(self, cases: list[Case]) -> list[tuple]:
        started = time.perf_counter()
        try:
            return [self.engine._ask_reference(case) for case in cases]  # noqa: SLF001 - run_cell's own path
        finally:
            self.busy[REFERENCE_SERVICE] += time.perf_counter() - started

    def _replies(self, framework: str, cases: list[Case]) -> list[dict[str, Any]]:
        started = time.perf_counter()
        try:
            return [self.engine._execute(case, framework, self.device, "eager")[0]  # noqa: SLF001
                    for case in cases]
        finally:
            self.busy[framework] += time.perf_counter() - started

    def _verdicts(self, cases: list[Case], references: Future, replies: dict[str, Future]) -> list[Verdict]:
        answers = references.result()
        by_framework = {name: future.result() for name, future in replies.items()}
        verdicts = []
        for i, case in enumerate(cases):
            cells = {}
            for name in self.frameworks:
                reply = by_framework[name][i]
                reference = failure = None
                if reply["status"] in ("completed", "raised"):  # as Engine.run_cell: only results are judged
                    reference, failure, harness_error = answers[i]
                    if harness_error is not None:
                        reply = {"status": "error", "message": harness_error}
                outcome, details = classify(case, reply, reference, failure)
                cells[name] = Cell(outcome, details)
            verdicts.append(judge(case, cells))
        return verdicts


@dataclass(frozen=True)
class Tried:
    """A program that ran: how it was drawn, the case it ran as, and its verdict."""

    drawn: Drawn
    case: Case
    verdict: Verdict


def campaign(source: Source, runner: Runner, budget: int, seed: int, batch: int = BATCH) -> Iterator[list[Tried]]:
    """Draw *budget* programs from *source* and run them, a batch at a time (the next batch is drawn
    while the last one runs); yield each batch's programs with their verdicts."""
    pending: tuple[list[Drawn], list[Case], Callable[[], list[Verdict]]] | None = None
    drawn_count = 0
    while drawn_count < budget or pending is not None:
        submitted = None
        if drawn_count < budget:
            drawn = [source.next() for _ in range(min(batch, budget - drawn_count))]
            drawn_count += len(drawn)
            cases = [d.program.case(case_id(seed, d.number), f"{VIRTUAL_FOLDER}/{case_id(seed, d.number)}.yaml")
                     for d in drawn]
            submitted = (drawn, cases, None)
        if pending is not None:
            done_drawn, done_cases, wait = pending
            yield [Tried(d, c, v) for d, c, v in zip(done_drawn, done_cases, wait())]
        pending = None if submitted is None else (submitted[0], submitted[1], runner.submit(submitted[1]))
