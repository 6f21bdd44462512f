"""conformance fuzz: draw programs, run them on every framework and the reference, shrink and write findings.

Exit statuses: 0 the run finished (findings are not failures); 1 a harness error or a generator bug
was met (each is listed); 2 a usage error; 130 interrupted by SIGINT or SIGTERM (what was found so far
is still reported; nothing is written unshrunk).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TextIO

from conformance.fuzz import BATCH, DEFAULT_TIMEOUT, ERROR, FINDING, FOUND_FOLDER, OUT_OF_SCOPE, REFERENCE
from conformance.outputs import OutputError, check_writable, write_file
from conformance.settings import timeout_argument
from conformance.workers.faults import check_memory_settings

if TYPE_CHECKING:  # the command line imports this module; hypothesis (and NumPy) only when fuzzing
    from conformance.case.model import Case
    from conformance.fuzz.cause import Cause, Families
    from conformance.fuzz.write import KnownCases
    from conformance.fuzz.generate import Program
    from conformance.fuzz.run import Tried
    from conformance.fuzz.verdict import Verdict

__all__ = ["add_command", "cmd_fuzz", "Report", "fuzz"]

#: Findings of one signature that are shrunk (the smallest programs first): more finds the same bug again.
SHRINK_PER_SIGNATURE = 1
#: Signatures shrunk per behaviour (each cell wrong, raising with a kind, or its outcome: a signature without
#: the op that raised or the kinds of what is wrong), the most frequent first; the others are counted.  One
#: cause shows as many signatures (a dropped write after sin_, cos_, mul_ ...), each costing a shrink.
SHRINK_PER_BEHAVIOUR = 8
PROGRESS_SECONDS = 2.0
#: Set by SIGINT or SIGTERM during ``conformance fuzz``; the run checks it between programs and candidates.
SIGNALLED = threading.Event()
#: Candidate programs hypothesis may run while shrinking one finding (then its smallest so far is kept).
SHRINK_BUDGET = 500


def add_command(sub: Any) -> None:
    """Register ``fuzz`` on the ``conformance`` command's subparsers."""
    from conformance.settings import DEVICES

    parser = sub.add_parser("fuzz", help="generate programs from the op table and report where a framework "
                                         "(or the reference) is wrong",
                            description=__doc__.split("\n\n", 1)[0], epilog=__doc__.split("\n\n", 1)[1],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=_positive, default=1000, help="programs to run [%(default)s]")
    parser.add_argument("--seed", type=_seed, default=0, help="the same seed and budget run the same programs "
                                                              "(a whole number, 0 or more) [%(default)s]")
    parser.add_argument("--framework", action="append", help="framework (repeatable) [default: installed]")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="[%(default)s]")
    parser.add_argument("--mode", action="append", default=[],
                        help="also run every program in this compiled mode (repeatable): compiled (every one of "
                             "each framework), compile (torch), to_static, to_static_full_graph (paddle)")
    parser.add_argument("--batch", type=_positive, default=BATCH, help="programs per batch [%(default)s]")
    parser.add_argument("--timeout", type=timeout_argument, default=DEFAULT_TIMEOUT,
                        help="seconds a program may run before its worker is killed [%(default)s]")
    parser.add_argument("--shrink-budget", type=_positive, default=SHRINK_BUDGET,
                        help="candidate programs run while shrinking one finding [%(default)s]")
    parser.add_argument("--shrink-per-behaviour", type=_positive, default=SHRINK_PER_BEHAVIOUR,
                        help="signatures shrunk per behaviour, the most frequent first [%(default)s]")
    parser.add_argument("--out", default=str(FOUND_FOLDER), help="where new findings are written [%(default)s]")
    parser.add_argument("--cases", action="append",
                        help="case folders whose programs count as known (repeatable) [default: cases]")
    parser.add_argument("--no-write", action="store_true", help="report findings without writing cases")
    parser.add_argument("--report", help="also write the whole report as JSON to this file")
    parser.add_argument("--list-ops", action="store_true",
                        help="list the ops and observations fuzzed, and those left out with the reason")
    parser.set_defaults(func=cmd_fuzz)


def _seed(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a whole number, 0 or more: {raw!r}")
    return value


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {raw!r}")
    return value


# -- the run ----------------------------------------------------------------------------------------


@dataclass
class Group:
    """The programs of one signature: how many, and the smallest ones (to shrink)."""

    signature: tuple
    kind: str
    count: int = 0
    smallest: list[Tried] = field(default_factory=list)

    def add(self, tried: Tried) -> None:
        self.count += 1
        self.smallest.append(tried)
        self.smallest.sort(key=lambda t: (t.drawn.program.size(), t.drawn.number))
        del self.smallest[SHRINK_PER_SIGNATURE:]


@dataclass
class Result:
    """One shrunk program: what it is and what became of it."""

    kind: str
    signature: tuple
    count: int
    number: int
    program: Program
    verdict: Verdict
    status: str = ""  # new (written), known (the case id), another reproducer, duplicate, reported
    path: str | None = None
    reproduces: bool | None = None
    evaluations: int = 0
    cause: Cause | None = None
    known: str | None = None  # the existing case with this finding's hazard


@dataclass
class Report:
    seed: int
    budget: int
    frameworks: list[str]
    versions: dict[str, str] = field(default_factory=dict)
    cells: list[str] = field(default_factory=list)
    ran: int = 0
    seconds: float = 0.0
    run_seconds: float = 0.0
    draw_seconds: float = 0.0
    shrink_seconds: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)
    generator_bugs: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)
    rejected: int = 0
    interrupted: bool = False
    #: why the found cases could not be written (a full disk): the rest are shown in the report instead
    write_error: str | None = None
    #: findings not shrunk: their behaviour had per_behaviour signatures shrunk already
    unshrunk: int = 0
    per_behaviour: int = SHRINK_PER_BEHAVIOUR

    @property
    def per_second(self) -> float:
        return self.ran / self.run_seconds if self.run_seconds else 0.0

    def of(self, kind: str) -> list[Result]:
        return [r for r in self.results if r.kind == kind]


def fuzz(*, seed: int, budget: int, frameworks: list[str], device: str = "cpu", batch: int = BATCH,
         timeout: float = DEFAULT_TIMEOUT, out: Path | None = FOUND_FOLDER, known_paths: list[str] | None = None,
         progress: Callable[[str], None] | None = None, modes: Sequence[str] = (),
         shrink_budget: int = SHRINK_BUDGET, per_behaviour: int = SHRINK_PER_BEHAVIOUR) -> Report:
    """Run the fuzzer; write new findings under *out* (None: write nothing); return the report.  *modes*:
    compiled modes each framework also runs every program in (``compiled``: all of its own).  *shrink_budget*:
    candidate programs hypothesis may run while shrinking one finding; *per_behaviour*: signatures shrunk per
    behaviour (:data:`SHRINK_PER_BEHAVIOUR`)."""
    from conformance.fuzz.generate import Source
    from conformance.fuzz.run import Runner, campaign
    from conformance.fuzz.shrink import shrink
    from conformance.fuzz.cause import Families
    from conformance.fuzz.observe import observing_finding
    from conformance.fuzz.scope import out_of_scope
    from conformance.fuzz.write import PROVENANCE, KnownCases, canonical, write_case

    say = progress or (lambda line: None)
    report = Report(seed, budget, list(frameworks), per_behaviour=per_behaviour)
    groups: dict[tuple, Group] = {}
    started = time.perf_counter()
    source = Source(seed)
    with Runner(frameworks, device, timeout, modes=modes) as runner:
        report.versions = dict(runner.versions)
        report.cells = [cell for cell, _, _ in runner.cells]
        say(f"fuzzing {', '.join(f'{n} {v}' for n, v in runner.versions.items())} on {device} "
            f"({', '.join(report.cells)}): budget {budget}, seed {seed}")
        run_started = time.perf_counter()
        last = run_started
        try:
            for tried_batch in campaign(source, runner, budget, seed, batch):
                _stop_if_signalled()
                for tried in tried_batch:
                    report.ran += 1
                    for outcome in tried.verdict.outcomes().values():
                        report.outcomes[outcome] = report.outcomes.get(outcome, 0) + 1
                    if tried.verdict.kind:
                        key = tried.verdict.signature
                        groups.setdefault(key, Group(key, tried.verdict.kind)).add(tried)
                now = time.perf_counter()
                if now - last >= PROGRESS_SECONDS or report.ran == budget:
                    last = now
                    say(_progress(report, groups, now - run_started))
        except KeyboardInterrupt:
            report.interrupted = True
            SIGNALLED.clear()  # handled: a second signal stops what follows
            say("interrupted: reporting what was found so far, unshrunk")
        report.run_seconds = time.perf_counter() - run_started
        report.busy = {name: round(seconds, 3) for name, seconds in runner.busy.items()}
        report.draw_seconds = source.seconds
        report.generator_bugs = [str(bug) for bug in source.bugs]
        report.excluded = dict(source.excluded)
        report.rejected = source.rejected

        shrink_started = time.perf_counter()
        evaluated = [0]

        def evaluate(program: Program) -> Verdict:
            _stop_if_signalled()
            evaluated[0] += 1
            return runner.run([program.case(f"fuzz_shrink_{evaluated[0]}")])[0]

        known = KnownCases(known_paths or ["cases"] + ([str(out)] if out else []))
        families = Families(case for case in known.cases if not case.source.startswith(PROVENANCE))
        verdicts: dict[str, Verdict] = {}  # existing cases' verdicts, run when one could be a finding's hazard

        def verdict_of(case: Case) -> Verdict:
            if case.id not in verdicts:
                verdicts[case.id] = runner.run([case])[0]
            return verdicts[case.id]

        new_causes: dict[tuple, Result] = {}  # this run's new causes, with the finding that showed each first
        seen: dict[str, Result] = {}
        order = {FINDING: 0, REFERENCE: 1, ERROR: 2}
        shrunk_per_behaviour: dict[tuple, int] = {}
        try:  # an interrupt after shrinking (observing, checking, writing) ends the run there too
            for group in sorted(groups.values(), key=lambda g: (order.get(g.kind, 3), -g.count, repr(g.signature))):
                behaviour = (group.kind, _behaviour(group.smallest[0].verdict))
                shrunk_per_behaviour[behaviour] = shrunk_per_behaviour.get(behaviour, 0) + 1
                if group.kind == FINDING and shrunk_per_behaviour[behaviour] > per_behaviour:
                    report.unshrunk += group.count
                    continue
                for tried in group.smallest:
                    _stop_if_signalled()
                    say(f"shrinking {_signature_text(group.signature)} (program {tried.drawn.number}, "
                        f"{tried.drawn.program.size()} steps)")
                    try:
                        shrunk = None if report.interrupted else shrink(tried.drawn.buffer, tried.drawn.ops,
                                                                        tried.verdict, evaluate, random_seed=seed,
                                                                        max_evaluations=shrink_budget)
                    except KeyboardInterrupt:  # the rest is reported as drawn
                        report.interrupted, shrunk = True, None
                        SIGNALLED.clear()
                        say("interrupted: the remaining findings are reported unshrunk")
                    program, verdict = (shrunk.program, shrunk.verdict) if shrunk else (tried.drawn.program,
                                                                                        tried.verdict)
                    if group.kind == FINDING and not report.interrupted:
                        program, verdict = observing_finding(program, verdict, evaluate)
                    cause = families.cause(program.ops(), verdict)
                    result = Result(group.kind, verdict.signature, group.count, tried.drawn.number, program, verdict,
                                    evaluations=shrunk.evaluations if shrunk else 0, cause=cause)
                    report.results.append(result)
                    text = json.dumps([program.dtype, canonical(program.steps)[0]])
                    if text in seen:
                        result.status = f"duplicate of program {seen[text].number}"
                        continue
                    seen[text] = result
                    if group.kind != FINDING:
                        result.status = "reported"
                        continue
                    if shrunk is None and report.interrupted:  # never written as drawn: a case is minimal
                        result.status = "not shrunk (interrupted)"
                        continue
                    beside_the_point = out_of_scope(program.case("fuzz_scope"))
                    if beside_the_point:  # no write, no shared memory: arithmetic, not this matrix's subject
                        result.kind, result.status = OUT_OF_SCOPE, f"out of scope: {beside_the_point}"
                        continue
                    known_id = known.has(program.steps) or _known_hazard(families, known, cause, verdict_of)
                    first = new_causes.get(cause.key)
                    if known_id:
                        result.status, result.known = f"known: {known_id}", known_id
                    elif first is not None:
                        result.status = f"another reproducer of {first.path or f'program {first.number}'}"
                    elif out is None:
                        result.status = "new (not written)"
                        new_causes[cause.key] = result
                    else:
                        try:
                            case = write_case(out, program, verdict, seed=seed, budget=budget,
                                              number=tried.drawn.number, versions=runner.versions, cause=cause,
                                              modes=modes, tried=shrunk.tried if shrunk else None)
                        except OSError as exc:  # a full disk: no part of a case is left; the report shows it
                            report.write_error = f"cannot write a found case in {out}: {exc.strerror or exc}"
                            if progress is not None:
                                progress(f"error: {report.write_error}; the findings are shown in the report")
                            out = None
                            result.status = "new (not written)"
                            new_causes[cause.key] = result
                            continue
                        new_causes[cause.key] = result
                        result.status, result.path = "new", case.path
                        again = runner.run([case])[0]  # the written file, through the same path as the suite
                        result.reproduces = again.signature == verdict.signature
        except KeyboardInterrupt:
            report.interrupted = True
            SIGNALLED.clear()
            say("interrupted: the findings not yet handled are left out")
        report.shrink_seconds = time.perf_counter() - shrink_started
    report.seconds = time.perf_counter() - started
    return report


def _known_hazard(families: Families, known: KnownCases, cause: Cause,
                  verdict_of: Callable[[Case], Verdict]) -> str | None:
    """The id of an existing case with the finding's hazard: a hand-written case of its family that uses an
    op of its pivot's interface and behaves alike, or a found case of the same cause."""
    from conformance.fuzz.write import PROVENANCE

    hand_written = families.candidates(cause)
    alike = families.known(cause, {case.id: verdict_of(case) for case in hand_written})
    if alike:
        return alike
    for case in known.cases:
        if case.source.startswith(PROVENANCE) and cause.pivot in case.ops:
            theirs = families.cause([step.op for step in case.walk()], verdict_of(case))
            if theirs.key == cause.key:
                return case.id
    return None


def _behaviour(verdict: Verdict) -> tuple:
    from conformance.fuzz.cause import behaviour_class

    return tuple((name, behaviour_class(cell)) for name, cell in sorted(verdict.cells.items()))


def _signature_text(signature: tuple) -> str:
    kind, *cells = signature
    return f"{kind or 'nothing'}: " + ", ".join(" ".join(str(part) for part in cell if part) for cell in cells)


def _progress(report: Report, groups: dict[tuple, Group], seconds: float) -> str:
    count = {kind: sum(g.count for g in groups.values() if g.kind == kind) for kind in (FINDING, REFERENCE, ERROR)}
    signatures = sum(1 for g in groups.values() if g.kind == FINDING)
    return (f"[{report.ran:>6}/{report.budget}] {seconds:7.1f} s  {report.ran / max(seconds, 1e-9):6.1f} programs/s  "
            f"findings {count[FINDING]} ({signatures} signatures)  suspected reference bugs {count[REFERENCE]}  "
            f"harness errors {count[ERROR]}")


# -- the command ------------------------------------------------------------------------------------


def cmd_fuzz(args: argparse.Namespace) -> int:
    from conformance.adapter import adapter_classes, is_installed
    from conformance.settings import OptionError, check_frameworks, check_modes

    if args.list_ops:
        _list_ops(sys.stdout)
        return 0
    classes = adapter_classes()
    try:
        chosen = check_frameworks(args.framework or [], classes)
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Differential fuzzing compares frameworks; a converter's column (PaConvert's) is fuzzed only when named.
    frameworks = chosen or [name for name, cls in classes.items() if is_installed(cls) and not cls.converter]
    missing = [name for name in frameworks if not is_installed(classes[name])]
    if missing or not frameworks:
        print(f"error: not installed: {', '.join(missing) or 'any framework'}", file=sys.stderr)
        return 2
    out = None if args.no_write else Path(args.out)
    if args.report:
        try:
            check_writable(args.report)  # before the run: never a run's report lost for want of a folder
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    def say(line: str) -> None:
        print(line, flush=True)

    # SIGINT and SIGTERM end the run as Ctrl-C does (what was found so far is reported, exit 130), as for
    # ``conformance run``, also where the process was started with SIGINT ignored (a job, a test runner).
    SIGNALLED.clear()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)

    try:
        modes = check_modes(args.mode, classes)
        check_memory_settings()  # CONFORMANCE_*_MEMORY, read now rather than by a worker or the reference
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = fuzz(seed=args.seed, budget=args.budget, frameworks=sorted(frameworks), device=args.device,
                  batch=args.batch, timeout=args.timeout, out=out, known_paths=args.cases, progress=say, modes=modes,
                  shrink_budget=args.shrink_budget, per_behaviour=args.shrink_per_behaviour)
    print(render(report), end="", flush=True)
    if args.report:
        try:
            write_file(args.report, json.dumps(report_json(report), indent=1, default=str))
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if report.write_error:
        print(f"error: {report.write_error}", file=sys.stderr)
    if report.interrupted:
        return 130
    return 1 if report.of(ERROR) or report.generator_bugs or report.write_error else 0


def _interrupt(signum: int, frame: Any) -> None:
    SIGNALLED.set()
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _stop_if_signalled() -> None:
    """Raise KeyboardInterrupt once a signal came: the handler's own raise is lost where it lands in code
    that swallows exceptions (a garbage collector callback, a ``__del__``)."""
    if SIGNALLED.is_set():
        raise KeyboardInterrupt("signalled")


def render(report: Report) -> str:
    """The closing report: throughput, the findings grouped by cause (new ones, then known hazards with
    their new evidence), suspected reference bugs and harness errors."""
    from conformance.fuzz.write import case_text

    draw = 1000 * report.draw_seconds / report.ran if report.ran else 0.0
    lines = ["", f"seed {report.seed}, budget {report.budget}: {report.ran} programs in {report.run_seconds:.1f} s "
             f"({report.per_second:.1f} programs/s; drawing {draw:.1f} ms a program; shrinking "
             f"{report.shrink_seconds:.1f} s; total {report.seconds:.1f} s)"]
    for name, busy in report.busy.items():
        rate = report.ran / busy if busy else 0.0
        lines.append(f"  {name}: {busy:.1f} s busy, {rate:.1f} programs/s")
    lines.append("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(report.outcomes.items())))
    findings, suspects, errors = report.of(FINDING), report.of(REFERENCE), report.of(ERROR)
    beside = report.of(OUT_OF_SCOPE)
    causes = _by_cause(findings)
    new = [key for key, results in causes.items() if not results[0].known]
    lines.append(f"found: {len(causes)} distinct cause(s) in {len(findings)} finding(s): {len(new)} new, "
                 f"{len(causes) - len(new)} of a known hazard; {len(suspects)} suspected reference bug(s), "
                 f"{len(errors)} harness error(s); {len(beside)} out of scope (no write, no shared memory); "
                 f"{report.unshrunk} more finding(s) not shrunk (their behaviour had {report.per_behaviour} "
                 f"signatures shrunk)")
    for title, keys in (("new causes", new), ("known hazards, with new evidence",
                                              [key for key in causes if key not in new])):
        if not keys:
            continue
        lines += ["", f"{title}:"]
        for key in keys:
            results = causes[key]
            first = results[0]
            cause = first.cause
            programs = sum(r.count for r in results)
            lines.append(f"- [{cause.family if cause else '?'}] {cause.sentence if cause else first.verdict.reason}")
            lines.append(f"  {programs} program(s), {len(results)} shrunk; pivot `{cause.pivot if cause else '?'}`")
            for r in results:
                where = f" -> {r.path}" + ("" if r.reproduces is None else
                                           " (reproduces)" if r.reproduces else " (DOES NOT REPRODUCE)") if r.path else ""
                lines.append(f"  * {_signature_text(r.signature)}  [{r.status}{where}]")
                if not r.path:
                    body = case_text(r.program, r.verdict, case_id_="shown", seed=report.seed, budget=report.budget,
                                     number=r.number, versions=report.versions).split("steps:\n", 1)[1]
                    lines += ["    " + line for line in body.rstrip().splitlines()]
    for title, results in (("suspected reference bugs (not written)", suspects), ("harness errors", errors),
                           ("out of scope: no write and no shared memory, a difference of arithmetic (not written)",
                            beside)):
        if not results:
            continue
        lines += ["", f"{title}:"]
        for r in results:
            lines.append(f"- {_signature_text(r.signature)}  [{r.count} program(s); {r.status}]")
            lines.append(f"  {r.verdict.reason}" if r.kind != OUT_OF_SCOPE or r.cause is None
                         else f"  [{r.cause.family}] {r.cause.sentence}")
            body = case_text(r.program, r.verdict, case_id_="shown", seed=report.seed, budget=report.budget,
                             number=r.number, versions=report.versions).split("steps:\n", 1)[1]
            lines += ["  " + line for line in body.rstrip().splitlines()]
            if r.kind == REFERENCE:
                lines += ["  " + line for line in _values(r.verdict)]
    if report.excluded:
        lines += ["", "ops left out during this run (they need a fuzz rule):"]
        lines += [f"- {name}: {reason}" for name, reason in sorted(report.excluded.items())]
    if report.generator_bugs:
        lines += ["", f"generator bugs: {len(report.generator_bugs)} (first: {report.generator_bugs[0][:300]})"]
    return "\n".join(lines) + "\n"


def _by_cause(findings: list[Result]) -> dict[tuple, list[Result]]:
    """Shrunk findings (duplicates left out) by cause, the causes in the order they were first met."""
    causes: dict[tuple, list[Result]] = {}
    for result in findings:
        if result.status.startswith("duplicate") or result.cause is None:
            continue
        causes.setdefault(result.cause.key, []).append(result)
    return causes


def _values(verdict: Verdict) -> list[str]:
    lines = []
    for name, cell in sorted(verdict.cells.items()):
        for key, observation in cell.wrong_observations().items():
            lines.append(f"{name} {key}: {observation.get('value')} (reference {observation.get('reference')})")
    return lines


def report_json(report: Report) -> dict[str, Any]:
    return {
        "seed": report.seed, "budget": report.budget, "versions": report.versions, "ran": report.ran,
        "seconds": report.seconds, "run_seconds": report.run_seconds, "shrink_seconds": report.shrink_seconds,
        "programs_per_second": report.per_second, "draw_seconds": report.draw_seconds, "cells": report.cells,
        "busy_seconds": report.busy, "outcomes": report.outcomes,
        "excluded_ops": report.excluded, "generator_bugs": report.generator_bugs, "rejected_inputs": report.rejected,
        "interrupted": report.interrupted, "unshrunk": report.unshrunk, "write_error": report.write_error,
        "results": [{"kind": r.kind, "signature": r.signature, "programs": r.count, "program_number": r.number,
                     "status": r.status, "path": r.path, "reproduces": r.reproduces, "reason": r.verdict.reason,
                     "evaluations": r.evaluations, "outcomes": r.verdict.outcomes(), "dtype": r.program.dtype,
                     "family": r.cause.family if r.cause else None, "pivot": r.cause.pivot if r.cause else None,
                     "cause": r.cause.sentence if r.cause else None, "known": r.known,
                     "steps": list(r.program.steps)} for r in report.results],
    }


def _list_ops(stream: TextIO) -> None:
    from conformance.fuzz.generate import fuzzable_observations, fuzzable_ops

    fuzzed, left_out = fuzzable_ops()
    drawn, not_drawn = fuzzable_observations()
    print(f"ops fuzzed ({len(fuzzed)}):", file=stream)
    for name, op in fuzzed.items():
        how = "its own fuzz rule" if callable(op.fuzz) else "derived from its arguments and fields"
        print(f"  {name:<20} {how}", file=stream)
    print(f"ops left out ({len(left_out)}):", file=stream)
    for name, reason in left_out.items():
        print(f"  {name:<20} {reason}", file=stream)
    print(f"observations made: {', '.join(drawn)}", file=stream)
    for name, reason in not_drawn.items():
        print(f"  {name:<20} not made: {reason}", file=stream)
