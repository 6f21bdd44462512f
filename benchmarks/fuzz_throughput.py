"""Benchmark: programs per second of the fuzzer against the same programs run back to back in one interpreter.

Draws N programs for a seed, then, for each installed framework:

* **fuzzed**: runs them as ``conformance fuzz`` does (the framework's long-lived
  worker and the reference service, judged by the suite's classify), that
  framework alone, workers already started;
* **plain**: runs the same programs as a user's scripts (``conformance show``'s
  reproducers), compiled and executed one after another in a single fresh
  interpreter that imported the framework once, with nothing judged.

It also runs them on all the frameworks together (how a fuzz run goes), times
drawing alone, and measures one request's round trip to an idle worker, which
says whether batching programs per request could help.  Prints the figures of
this one run; asserts nothing.

    python benchmarks/fuzz_throughput.py [--programs 300] [--seed 0] [--framework torch]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
import time

from conformance.adapter import adapter_classes, is_installed
from conformance.fuzz.generate import Source
from conformance.fuzz.run import Runner


def fuzzed(programs: list, frameworks: list[str], batch: int = 32) -> tuple[float, dict[str, float], float]:
    """Programs per second through the fuzzer's runner, its per-process busy seconds, and the round trip of
    an empty request (seconds)."""
    cases = [p.case(f"bench_{i}") for i, p in enumerate(programs)]
    with Runner(frameworks) as runner:
        worker = runner.engine.pool.get(frameworks[0])
        trips = []
        for _ in range(50):
            started = time.perf_counter()
            worker.request({"cmd": "nothing"}, 10)
            trips.append(time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(0, len(cases), batch):
            runner.run(cases[i:i + batch])
        seconds = time.perf_counter() - started
        busy = dict(runner.busy)
    return len(cases) / seconds, busy, sorted(trips)[len(trips) // 2]


def plain(programs: list, framework: str) -> float:
    """Programs per second as plain scripts in one interpreter (a subprocess, as a user runs them)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump([{"steps": list(p.steps), "dtype": p.dtype} for p in programs], handle)
    out = subprocess.run([sys.executable, __file__, "--plain", framework, handle.name], capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _plain_child(framework: str, path: str) -> None:
    from conformance.adapter import load_adapter
    from conformance.fuzz.generate import Program
    from conformance.program.translate import translate

    adapter = load_adapter(framework)()
    exec("\n".join(adapter.prelude("cpu")), adapter.namespace)
    programs = [Program(tuple(p["steps"]), p["dtype"]) for p in json.load(open(path))]
    translated = [translate(p.case(f"plain_{i}"), adapter, "cpu", harness=False) for i, p in enumerate(programs)]
    # A program with a step the framework lacks is unsupported: not run (the worker answers it at once).
    codes = [compile(t.source, f"<plain {i}>", "exec") for i, t in enumerate(translated) if not t.unsupported]
    exec("\n".join(adapter.prelude("cpu")), {})  # the imports, once, before timing (already paid by a user)
    started = time.perf_counter()
    for code in codes:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(code, {})
            except Exception:  # noqa: BLE001 - a program that raises is still a program run
                pass
    print(len(codes) / (time.perf_counter() - started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--framework", action="append")
    parser.add_argument("--plain", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        _plain_child(*args.plain)
        return
    frameworks = args.framework or sorted(n for n, c in adapter_classes().items() if is_installed(c))
    source = Source(args.seed)
    started = time.perf_counter()
    programs = [source.next().program for _ in range(args.programs)]
    drawing = time.perf_counter() - started
    print(f"{len(programs)} programs (seed {args.seed}), {sum(p.size() for p in programs) / len(programs):.1f} steps "
          f"each on average; drawing them: {len(programs) / drawing:.0f} programs/s "
          f"({drawing / len(programs) * 1000:.1f} ms each)")
    for framework in frameworks:
        rate, busy, trip = fuzzed(programs, [framework])
        plain_rate = plain(programs, framework)
        per_program = busy[framework] / len(programs)
        print(f"{framework}: fuzzed {rate:.0f} programs/s (worker busy {per_program * 1000:.1f} ms per program; "
              f"an empty request's round trip {trip * 1e6:.0f} us), plain interpreter {plain_rate:.0f} programs/s; "
              f"plain/fuzzed {plain_rate / rate:.1f}x")
    if len(frameworks) > 1:
        rate, busy, _ = fuzzed(programs, frameworks)
        print(f"all of {', '.join(frameworks)} together: {rate:.0f} programs/s (busy seconds: "
              + ", ".join(f"{name} {seconds:.1f}" for name, seconds in busy.items()) + ")")


if __name__ == "__main__":
    main()
