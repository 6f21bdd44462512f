"""Benchmark: what the pytest process spends on each part of a cell, from the CPU of the thread doing it.

``benchmarks/floor.py`` says how much of a cell's CPU is the pytest process's; this says where in it.
It runs ``conformance run`` on the catalogue replicated 1x and 8x (as floor.py replicates it), in a
process that wraps a few of this package's functions and pytest's, and sums the CPU of the calling
thread (``time.thread_time``) spent inside each.  The slope between the two replications, in
microseconds a cell, is what each part costs a cell; a thread that waits for a worker costs nothing
while it waits, so waiting never shows as work.  Sampling profilers (``py-spy --gil``) count wall time
while holding the GIL instead, which on a machine of two cores shared with the worker inflates whatever
was descheduled.

The times are inclusive: an indented part is inside the one above it.  A benchmark, run by hand, never a
test: it asserts nothing, and what it wraps are internals that may move.

    python benchmarks/parent_phases.py [--cases cases] [--framework torch] [--replicas 1,8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import replicate  # noqa: E402 - the same replicas as floor.py's

from conformance.case.kept import load_checked  # noqa: E402
from conformance.case.load import find_case_files, load_cases  # noqa: E402

#: (module, owner or "", function, label): the parts timed, in the order printed; indentation in the label
#: says what is inside what.  Methods of pytest's own and of this package; generators are not timed
#: (their call returns at once).
PARTS = [
    ("_pytest.main", "Session", "perform_collect", "collection"),
    ("conformance.plugin", "", "pytest_collect_file", "  a case file's node (the hook: looked into, made)"),
    ("conformance.plugin", "", "_looks_like_a_case", "    its bytes read, looked into"),
    ("conformance.session.items", "", "load_checked", "  the checked case, from the cache"),
    ("conformance.engine", "Engine", "prefetch", "  queuing its cells on the workers"),
    ("conformance.plugin", "", "pytest_runtestloop", "the run loop"),
    ("conformance.session.items", "CaseItem", "run_protocol", "  a cell's protocol"),
    ("conformance.session.items", "CaseItem", "setup", "    running it (its setup)"),
    ("conformance.engine", "Engine", "run_cell", "      the engine's cell: the reply taken, judged"),
    ("conformance.engine", "Engine", "_judge", "        judging"),
    ("conformance.engine", "Engine", "_once_more", "        a wrong cell's second run"),
    ("conformance.records.results", "ResultsFile", "append", "      the record written"),
    ("conformance.session.items", "", "_spool", "      its program spooled"),
    ("conformance.session.items", "CaseItem", "runtest", "    the baseline checked"),
    ("conformance.session.items", "CaseItem", "_phase", "    pytest's three reports and their hooks"),
    ("conformance.plugin", "", "pytest_sessionfinish", "the end of the run"),
    ("conformance.workers.pool", "Worker", "_take", "reader threads: a reply taken"),
    ("conformance.engine", "Engine", "_answered", "  the next request sent"),
]

#: Runs ``conformance run`` with PARTS wrapped; prints their totals as JSON on the last line of stderr.
RUNNER = """
import atexit, functools, importlib, json, sys, threading, time
parts = json.loads(sys.argv[1])
totals = {label: 0.0 for *_, label in parts}
calls = dict.fromkeys(totals, 0)
inside = threading.local()

def wrap(owner, name, label):
    original = getattr(owner, name)
    @functools.wraps(original)  # pluggy reads a hook's arguments from its signature
    def timed(*args, **kwargs):
        active = inside.__dict__.setdefault("active", set())
        if label in active:  # a recursive call: the outermost counts
            return original(*args, **kwargs)
        active.add(label)
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            totals[label] += time.thread_time() - started
            calls[label] += 1
            active.discard(label)
    setattr(owner, name, timed)

for module, owner, name, label in parts:
    target = importlib.import_module(module)
    wrap(getattr(target, owner) if owner else target, name, label)
atexit.register(lambda: print(json.dumps({"totals": totals, "calls": calls, "main": time.thread_time()}),
                              file=sys.stderr))
from conformance.cli import main
sys.exit(main(sys.argv[2:]))
"""


def measure(folder: Path, framework: str, scratch: Path) -> dict:
    results = scratch / f"{folder.name}.jsonl"
    argv = [sys.executable, "-c", RUNNER, json.dumps(PARTS), "run", str(folder), "--framework", framework,
            "--device", "cpu", "--no-baselines", "--results", str(results),
            "--summary", str(results.with_suffix(".md"))]
    done = subprocess.run(argv, capture_output=True, text=True)
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    try:
        figures = json.loads(last)
    except ValueError:
        raise SystemExit(f"the run of {folder} printed no figures (exit {done.returncode}): {done.stderr[-500:]}")
    if done.returncode != 0:
        raise SystemExit(f"the run of {folder} ended with exit {done.returncode}: {done.stdout[-500:]}")
    figures["cells"] = figures["calls"]["  a cell's protocol"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="cases", help="the catalogue [cases]")
    parser.add_argument("--framework", default="torch", help="the framework [torch]")
    parser.add_argument("--replicas", default="1,8", help="the two replication factors [1,8]")
    args = parser.parse_args()
    low, high = (int(k) for k in args.replicas.split(","))
    with tempfile.TemporaryDirectory(prefix="conformance-phases-") as scratch_name:
        scratch = Path(scratch_name)
        case_files = find_case_files([args.cases])
        folders = {k: replicate(case_files, scratch / "replicas", k) for k in (low, high)}
        for folder in folders.values():
            load_cases([folder], load=load_checked)
        measure(folders[low], args.framework, scratch)  # the references kept, as after a first run
        runs = {k: measure(folders[k], args.framework, scratch) for k in (low, high)}
    cells = runs[high]["cells"] - runs[low]["cells"]
    if cells <= 0:
        raise SystemExit("no more cells at the higher replication: nothing to divide by")
    print(f"the pytest process of `conformance run` ({args.framework}, cpu, eager), catalogue x{low} -> x{high}: "
          f"{cells} cells more; microseconds of the calling thread's CPU a cell (inclusive)")
    main_us = (runs[high]["main"] - runs[low]["main"]) / cells * 1e6
    print(f"  {'the main thread, all of it':58s} {main_us:7.0f}")
    for *_, label in PARTS:
        us = (runs[high]["totals"][label] - runs[low]["totals"][label]) / cells * 1e6
        per_call = runs[high]["calls"][label] / max(1, runs[high]["cells"])
        print(f"  {label:58s} {us:7.0f}   ({per_call:.1f} calls a cell)")
    load = Path("/proc/loadavg").read_text().split()[:3] if os.path.exists("/proc/loadavg") else ["?"]
    print(f"load average after: {' '.join(load)}")


if __name__ == "__main__":
    main()
