"""Running generated programs as the suite runs its cells, in batches, for a seed and a budget.

Each program runs as a case through the suite's own :class:`~conformance.engine.Engine`: its
cells are prefetched on every framework's long-lived worker (a crash or a hang costs that
program, the worker is replaced, the run goes on), the reference service judges them, and each
cell's outcome is exactly what ``conformance run`` gives the case.  The next batch is drawn
while the workers run the last one.

An engine keeps every case it has sent (so does each worker): right for a catalogue, unbounded
for tens of thousands of generated programs.  The runner therefore replaces its engine every
:data:`RECYCLE` programs, between batches; that costs one worker start and changes no verdict.

The programs, and so the verdicts, depend only on the seed and the budget: the batch size changes
how the work is spread, not what is run.

Modes (``docs/modes.md``): each framework runs every program eagerly, and in each compiled mode asked
for that it has; a compiled cell is named ``framework:mode`` among the verdict's cells, so a finding
that only compiling gives is told from one eager code gives too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from conformance.adapter import adapter_classes, installed_version
from conformance.case.model import Case
from conformance.engine import Engine
from conformance.fuzz import BATCH, DEFAULT_TIMEOUT, FOUND_FOLDER
from conformance.fuzz.generate import Drawn, Source
from conformance.fuzz.verdict import MODE_SEPARATOR, Cell, Verdict, judge
from conformance.settings import EAGER, modes_for

__all__ = ["Runner", "Tried", "campaign", "case_id", "RECYCLE"]

#: Where generated programs say they live (no file is written for them).
VIRTUAL_FOLDER = FOUND_FOLDER.as_posix()
#: Programs an engine (and its workers) runs before it is replaced by a fresh one.
RECYCLE = 4000


def case_id(seed: int, number: int) -> str:
    return f"fuzz_{seed}_{number}"


class Runner:
    """Runs programs through every given framework's worker and the reference service, and judges them."""

    def __init__(self, frameworks: Sequence[str], device: str = "cpu", timeout: float = DEFAULT_TIMEOUT,
                 recycle: int = RECYCLE, modes: Sequence[str] = (EAGER,)) -> None:
        self.frameworks = list(frameworks)
        self.device = device
        self.timeout = timeout
        self.recycle = recycle
        classes = adapter_classes()
        #: (cell name, framework, mode) of every cell a program runs as: eager first, then compiled modes
        self.cells = [(name if mode == EAGER else f"{name}{MODE_SEPARATOR}{mode}", name, mode) for name in self.frameworks
                      for mode in modes_for([EAGER, *modes], getattr(classes[name], "modes", {}))]
        #: seconds each cell's worker had programs (from each cell's timing), by cell name
        self.busy = {cell: 0.0 for cell, _, _ in self.cells}
        self.versions = {name: installed_version(classes[name]) or "unknown" for name in self.frameworks}
        self.engine: Engine | None = None
        self._sent = 0

    def start(self) -> dict[str, str]:
        """Start the workers and the reference service (their imports overlap what comes next); return the
        framework versions."""
        self.engine = Engine(timeout=self.timeout, keeps_compiled=False)  # each program runs once: none kept
        self.engine.start(self.frameworks)
        self._sent = 0
        return dict(self.versions)

    def submit(self, cases: Sequence[Case]) -> Callable[[], list[Verdict]]:
        """Queue *cases* on the workers; the returned function waits for their verdicts.  Call it before
        the next submit."""
        cases = list(cases)
        if self.engine is None or self._sent >= self.recycle:
            if self.engine is not None:
                self.engine.close()
            self.start()
        assert self.engine is not None
        engine = self.engine
        self._sent += len(cases)
        engine.prefetch([(case, name, self.device, mode) for case in cases for _, name, mode in self.cells])
        return lambda: [self._verdict(engine, case) for case in cases]

    def run(self, cases: Sequence[Case]) -> list[Verdict]:
        return self.submit(cases)()

    def _verdict(self, engine: Engine, case: Case) -> Verdict:
        cells = {}
        for cell, name, mode in self.cells:
            record = engine.run_cell(case, name, self.device, mode)
            self.busy[cell] += float(record["timings"].get("cell_seconds") or 0.0)
            if record.get("framework_version"):
                self.versions[name] = record["framework_version"]
            cells[cell] = Cell(record["outcome"], record["details"])
        return judge(case, cells)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def __enter__(self) -> "Runner":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
