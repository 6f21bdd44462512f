"""Benchmark: ``conformance run`` against the floor, from one run of this script.

The floor of a framework is one plain interpreter that imports the framework
once and runs every case's ``conformance show`` program back to back (the
programs are generated once, beforehand, through the same worker command that
``conformance show`` uses; then only running them is timed).  Against it this
script prints, from one run, wall time and CPU (user + system seconds of every
process of the run: the pytest process, the workers and the reference service):

* per framework: the bare import time (``python -c "import torch"``) and the floor;
* the whole catalogue through ``conformance run`` (cpu device, eager mode) for
  each framework alone and for all of them, serially and with ``-n 2`` and
  ``-n auto``, each with its ratio to the floor (the sum of the frameworks' floors
  when they all run), and each framework's catalogue once more with the
  references kept between runs removed first: what the first run costs;
* the catalogue replicated 1x and 8x (copies with fresh ids in a temporary
  folder): cells per second, each replication's ratio to the floor replicated the
  same way, and the marginal milliseconds of wall time and of CPU per cell (the
  slope between replications) of the harness and of the floor, and their
  difference: what the harness costs per cell above the framework's own work;
* pytest's own cost per item, without this package: a plugin that collects each replicated case file as
  one item whose test does nothing, 1x and 8x, and its marginal milliseconds per item; what pytest costs a
  cell whatever the harness does (the harness passes over some of it: the hooks around each phase, a
  collection report per file);
* peak memory (VmHWM) of the pytest process and of each worker of the serial
  and ``-n 2`` catalogue runs, sampled from /proc every 0.25 s;
* where a cell's CPU goes: one more run of the floor and of the harness at each
  replication, the CPU of each process (and of the pytest process's main thread)
  sampled from /proc every 0.1 s, and the slope of each between replications: the
  pytest process, the framework's worker against the floor's interpreter running
  the same programs, the reference service (a profile that needs no profiler).

Every timing is taken ``--repeat`` times (3 by default), in rounds: each round
times every configuration once, floors and harness runs alternating, so a slow
spell of the machine falls on both sides of a ratio.  A figure is the median of
its timings, printed with their range (min-max): on a shared virtual machine one
timing varies by tens of percent, which the range shows.  Ratios and marginal
costs are worked out from the medians.  The machine's load average is printed
before and after.  A benchmark, run by hand, never a test: it asserts nothing.

The harness runs with the cases it checked before, the references it computed
before and the programs its workers wrote and compiled before kept in the user's
cache folder (conformance/case/kept.py, conformance/judge/kept.py,
conformance/workers/compiled.py), as every run of a catalogue but its first has
them: they are made once before the timings (the "first run" configurations
compute every reference afresh).

    python benchmarks/floor.py [--cases cases] [--framework torch] [--replicas 1,8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.adapter import adapter_classes, is_installed
from conformance.cache import cache_folder
from conformance.case.kept import load_checked
from conformance.case.load import find_case_files, load_cases
from conformance.workers.pool import Worker

PYTHON = sys.executable

#: Runs the programs of one framework back to back in one interpreter: the floor.
FLOOR_RUNNER = textwrap.dedent("""
    import importlib, os, sys
    framework, folder, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    importlib.import_module(framework)
    programs = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as handle:
            programs.append((path, handle.read()))
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the programs print their observations; the floor does not pay a terminal
    for _ in range(times):
        for path, source in programs:
            try:
                exec(compile(source, path, "exec"), {"__name__": "__main__"})
            except Exception:
                pass  # a raise is what some cases are about
    sys.stdout.flush()
""")


#: pytest's own cost per item, with nothing of this package: a plugin that collects each ``.yaml`` file as one
#: item whose test does nothing (the file's bytes read, as any collector reads them), reported as ``-q`` does.
BARE_PLUGIN = textwrap.dedent("""
    import pytest

    class BareItem(pytest.Item):
        def runtest(self):
            pass

        def reportinfo(self):
            return self.path, 0, self.name

    class BareFile(pytest.File):
        def collect(self):
            self.path.read_bytes()
            yield BareItem.from_parent(self, name=self.path.stem + "[cpu]")

    def pytest_collect_file(file_path, parent):
        if file_path.suffix == ".yaml":
            return BareFile.from_parent(parent, path=file_path)
""")


@dataclass
class Run:
    """One timed subprocess: wall seconds, exit status, cells written, peak memory by process."""

    label: str
    seconds: float
    returncode: int
    cpu: float = 0.0  # user + system seconds of the whole process tree (every descendant is waited for)
    cells: int = 0
    peaks: dict[str, int] = field(default_factory=dict)  # role -> VmHWM in KiB
    cpu_by_role: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds, where split
    output: str = ""


# -- sampling the peak memory of a process tree ------------------------------------------------------

def _stat(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    head, _, rest = text.rpartition(")")
    return int(rest.split()[1]), head


def _descendants(root: int) -> set[int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat:
                parents[int(name)] = stat[0]
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


#: The process ``conformance run`` is, and the floor's interpreter, by role.
PYTEST_ROLE = "pytest (conformance run)"
FLOOR_ROLE = "the floor's interpreter"
_KNOWN_ROLES = (PYTEST_ROLE, "reference service", "xdist process", FLOOR_ROLE)


def _role(pid: int, root: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in argv if a]
    if pid == root:
        return PYTEST_ROLE
    if "conformance.workers.worker" in words:
        return f"worker {words[-1]}"
    if "conformance.judge.service" in words:
        return "reference service"
    if any("execnet" in w or "exec(eval(" in w for w in words):
        return "xdist process"
    if "-c" in words[1:2]:  # a program given on the command line: torch starts some (its compiler's helpers)
        return f"{Path(words[0]).name} -c"
    return Path(words[0]).name if words else "?"


def _known_role(seen: str | None, pid: int, root: int, root_role: str) -> str:
    """The role of *pid*: the one *seen* before, unless that was read before the process ran its program
    (a fork that has not exec'd yet reads as its parent, or as nothing)."""
    if seen is not None and (seen in _KNOWN_ROLES or seen.startswith("worker ")):
        return seen
    return root_role if pid == root else _role(pid, root)


def _peak_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakSampler(threading.Thread):
    """Samples the high-water mark of every process under *root* until stopped."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.seen: dict[int, tuple[str, int]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for pid in {self.root} | _descendants(self.root):
                peak = _peak_kib(pid)
                if peak is not None:
                    role = _known_role(self.seen.get(pid, (None, 0))[0], pid, self.root, PYTEST_ROLE)
                    self.seen[pid] = (role, max(peak, self.seen.get(pid, ("", 0))[1]))
            self.done.wait(self.interval)

    def peaks(self) -> dict[str, int]:
        """The largest peak per role, with the number of processes of that role."""
        by_role: dict[str, list[int]] = {}
        for role, peak in self.seen.values():
            by_role.setdefault(role, []).append(peak)
        return {f"{role} (x{len(v)})" if len(v) > 1 else role: max(v) for role, v in sorted(by_role.items())}


def _cpu_seconds(stat_path: str) -> float | None:
    """User + system seconds of a process or thread, from its ``stat`` under /proc."""
    try:
        with open(stat_path, encoding="utf-8") as handle:
            fields = handle.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class CpuSampler(threading.Thread):
    """The CPU of every process under *root*, by role, and of the root's main thread alone (the pytest
    process's own work; its other threads read the workers' replies): sampled every *interval* seconds,
    so what a process spends in its last interval is missed, alike in every run, and cancels from the
    slope between replications."""

    def __init__(self, root: int, root_role: str, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.root, self.root_role, self.interval = root, root_role, interval
        self.seen: dict[int, tuple[str, float]] = {}
        self.main_thread = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            main = _cpu_seconds(f"/proc/{self.root}/task/{self.root}/stat")
            if main is not None:
                self.main_thread = main
            for pid in {self.root} | _descendants(self.root):
                cpu = _cpu_seconds(f"/proc/{pid}/stat")
                if cpu is not None:
                    role = _known_role(self.seen.get(pid, (None, 0.0))[0], pid, self.root, self.root_role)
                    self.seen[pid] = (role, cpu)
            self.done.wait(self.interval)

    def by_role(self) -> dict[str, float]:
        """CPU seconds per role (processes of one role summed), with the root's main thread apart."""
        totals: dict[str, float] = {}
        for role, cpu in self.seen.values():
            totals[role] = totals.get(role, 0.0) + cpu
        if self.root_role in totals:
            totals[f"{self.root_role}, main thread"] = self.main_thread
        return totals


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(label: str, argv: list[str], cwd: Path, sample: bool = False, env: dict | None = None,
          split: str | None = None) -> Run:
    """Run *argv*, alone: its CPU is what this process's waited-for descendants gained meanwhile, which
    counts every process of its tree (workers and the reference service are waited for by their parent).
    *sample*: the peak memory of each process; *split*: the CPU of each, *split* naming the process run (both
    sample /proc as it runs, so neither is asked of a run whose time is a figure)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=None if env is None else {**os.environ, **env})
    proc = Path("/proc/self/status").exists()
    samplers = [s for s in (PeakSampler(process.pid) if sample and proc else None,
                            CpuSampler(process.pid, split) if split and proc else None) if s is not None]
    for sampler in samplers:
        sampler.start()
    output = process.communicate()[0]
    seconds = time.perf_counter() - started
    for sampler in samplers:
        sampler.done.set()
        sampler.join()
    run = Run(label, seconds, process.returncode, _children_cpu() - cpu_before, output=output)
    for sampler in samplers:
        if isinstance(sampler, PeakSampler):
            run.peaks = sampler.peaks()
        else:
            run.cpu_by_role = sampler.by_role()
    return run


# -- the floor ---------------------------------------------------------------------------------------

def generate_programs(framework: str, cases: list, folder: Path) -> int:
    """Every case's ``conformance show`` program (cpu, eager), written once; how many."""
    folder.mkdir(parents=True, exist_ok=True)
    worker = Worker(framework)
    try:
        for number, case in enumerate(sorted(cases, key=lambda c: c.path)):
            reply = worker.request({"cmd": "render", "device": "cpu", "mode": "eager", **case.to_message()},
                                   timeout=120)
            source = reply.get("source")
            if source is None:
                raise SystemExit(f"cannot render {case.id} for {framework}: {reply.get('message')}")
            (folder / f"{number:05d}_{case.id}.py").write_text(source, encoding="utf-8")
    finally:
        worker.close()
    return len(cases)


def floor(framework: str, folder: Path, times: int, cwd: Path, split: bool = False) -> Run:
    return timed(f"floor {framework} x{times}", [PYTHON, "-c", FLOOR_RUNNER, framework, str(folder), str(times)], cwd,
                 split=FLOOR_ROLE if split else None)


def bare_import(framework: str, cwd: Path) -> Run:
    return timed(f"import {framework}", [PYTHON, "-c", f"import {framework}"], cwd)


def bare_pytest(folder: Path, times: int, cwd: Path, scratch: Path) -> Run:
    """pytest alone on a replica: no configuration file, no cache, this package's plugin inactive (it acts
    only when a run asks for it)."""
    plugin = scratch / "bare_items.py"
    if not plugin.exists():
        plugin.write_text(BARE_PLUGIN, encoding="utf-8")
    argv = [PYTHON, "-m", "pytest", "-p", "bare_items", "-p", "no:cacheprovider", "-q", "-c", os.devnull,
            "--rootdir", str(folder.parent), str(folder)]
    return timed(f"bare pytest x{times}", argv, cwd, env={"PYTHONPATH": str(scratch)})


# -- the harness -------------------------------------------------------------------------------------

def conformance_run(label: str, paths: list[str], frameworks: list[str], cwd: Path, scratch: Path,
                    extra: tuple[str, ...] = (), sample: bool = False, split: bool = False) -> Run:
    results = scratch / f"{re.sub(r'[^a-z0-9]+', '-', label.lower())}.jsonl"
    argv = [PYTHON, "-m", "conformance.cli", "run", *paths, "--device", "cpu", "--no-baselines",
            "--results", str(results), "--summary", str(results.with_suffix(".md"))]
    argv += [f"--framework={f}" for f in frameworks] + list(extra)
    run = timed(label, argv, cwd, sample=sample, split=PYTEST_ROLE if split else None)
    run.cells = sum(1 for line in results.read_text().splitlines() if line.strip()) if results.exists() else 0
    return run


def replicate(case_files: list[Path], root: Path, times: int) -> Path:
    """*times* copies of every case, each with a fresh id, one folder per topic as in the catalogue."""
    target = root / f"x{times}"
    for path in case_files:
        text = path.read_text(encoding="utf-8")
        match = re.search(r"^id:\s*([A-Za-z0-9_]+)\s*$", text, flags=re.M)
        if match is None:
            raise SystemExit(f"{path}: no top-level 'id:' line to rewrite")
        folder = target / path.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        for copy in range(times):
            fresh = f"{match.group(1)}_r{copy}"
            (folder / f"{fresh}.yaml").write_text(text[:match.start(1)] + fresh + text[match.end(1):], encoding="utf-8")
    return target


def forget_references() -> None:
    """Remove the references kept in the user's cache: the next run computes each case's afresh."""
    shutil.rmtree(cache_folder() / "references", ignore_errors=True)


# -- printing ----------------------------------------------------------------------------------------

def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def check(run: Run) -> str:
    """A note when a run did not end as a clean run does (0: every cell ran; 1: a harness error)."""
    if run.returncode == 0:
        return ""
    tail = [line for line in run.output.splitlines() if line.strip()][-3:]
    return f"   [exit {run.returncode}: {' | '.join(tail)[:300]}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="cases", help="the catalogue [cases]")
    parser.add_argument("--framework", action="append", help="framework (repeatable) [every installed one]")
    parser.add_argument("--replicas", default="1,8", help="replication factors [1,8]")
    parser.add_argument("--repeat", type=int, default=3, help="timings of each configuration; the median is "
                                                             "printed [3]")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args()

    cwd = Path.cwd()
    frameworks = args.framework or [n for n, c in adapter_classes().items() if is_installed(c)]
    factors = [int(f) for f in args.replicas.split(",")]
    cases, errors = load_cases([args.cases])
    if errors:
        raise SystemExit(f"{len(errors)} invalid case file(s) under {args.cases}; fix them first: {errors[0]}")
    case_files = find_case_files([args.cases])
    scratch = Path(tempfile.mkdtemp(prefix="conformance-bench-"))
    print(f"benchmark: {len(cases)} cases under {args.cases}; frameworks {', '.join(frameworks)}; cpu, eager; "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"load average before: {load_average()}")
    try:
        _measure(frameworks, factors, cases, case_files, cwd, scratch, args.cases, max(1, args.repeat))
    finally:
        print(f"load average after: {load_average()}")
        if args.keep:
            print(f"kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\nreproduce: cd <checkout> && python benchmarks/floor.py "
          + (f"--cases {args.cases} " if args.cases != "cases" else "")
          + "".join(f"--framework {f} " for f in args.framework or [])
          + (f"--replicas {args.replicas} " if args.replicas != "1,8" else "")
          + (f"--repeat {args.repeat}" if args.repeat != 3 else "")
          + "\n  (medians of interleaved timings, never the best; check `uptime` first: other processes on the "
            "machine change every figure)")


class Timings:
    """Every timing of each configuration, by label: the median is the figure, min-max its range."""

    def __init__(self) -> None:
        self.runs: dict[str, list[Run]] = {}

    def add(self, run: Run) -> Run:
        self.runs.setdefault(run.label, []).append(run)
        return run

    def seconds(self, label: str) -> float:
        return statistics.median(r.seconds for r in self.runs[label])

    def cpu(self, label: str) -> float:
        return statistics.median(r.cpu for r in self.runs[label])

    def spread(self, label: str) -> str:
        values = [r.seconds for r in self.runs[label]]
        return f"[{min(values):.2f}-{max(values):.2f}]" if len(values) > 1 else ""

    def first(self, label: str) -> Run:
        return self.runs[label][0]

    def problems(self, label: str) -> str:
        return "".join(check(r) for r in self.runs[label])[:400]


def _measure(frameworks: list[str], factors: list[int], cases: list, case_files: list[Path], cwd: Path,
             scratch: Path, catalogue: str, repeat: int) -> None:
    for framework in frameworks:  # the programs of the floor, generated once
        generate_programs(framework, cases, scratch / "programs" / framework)
    replicas = {k: replicate(case_files, scratch / "replicas", k) for k in factors}
    for folder in [catalogue, *replicas.values()]:  # kept, as a run finds them after the first
        load_cases([folder], load=load_checked)
    # The references kept too (conformance/judge/kept.py), as every run but a catalogue's first finds them
    # (the copies share the catalogue's references, but not its float32 spreads, which their ids seed); a
    # configuration of its own times the first run, with every reference computed afresh.
    conformance_run("references kept", [catalogue, *map(str, replicas.values())], frameworks, cwd, scratch)
    groups = [[f] for f in frameworks] + ([frameworks] if len(frameworks) > 1 else [])
    catalogue_runs = [(f"{f} serial", [f], ()) for f in frameworks]
    if len(frameworks) > 1:
        catalogue_runs.append(("all serial", frameworks, ()))
    catalogue_runs += [("all -n 2", frameworks, ("-n", "2")), ("all -n auto", frameworks, ("-n", "auto"))]
    catalogue_runs += [(f"{f} first run", [f], ()) for f in frameworks]  # the references computed afresh
    sampled = {"all serial" if len(frameworks) > 1 else f"{frameworks[0]} serial", "all -n 2"}
    timings = Timings()
    for round_number in range(repeat):  # every configuration once per round, floors and harness alternating
        print(f"  round {round_number + 1} of {repeat} ...", file=sys.stderr, flush=True)
        timings.add(timed("python -c pass", [PYTHON, "-c", "pass"], cwd))
        for framework in frameworks:
            timings.add(bare_import(framework, cwd))
        for label, group, extra in catalogue_runs:
            for framework in group:
                timings.add(floor(framework, scratch / "programs" / framework, 1, cwd))
            if label.endswith(" first run"):
                forget_references()
            timings.add(conformance_run(label, [catalogue], group, cwd, scratch, extra,
                                        sample=round_number == 0 and label in sampled))
        for group in groups:
            for k in factors:
                for framework in group:
                    timings.add(floor(framework, scratch / "programs" / framework, k, cwd))
                timings.add(conformance_run(f"{'+'.join(group)} x{k}", [str(replicas[k])], group, cwd, scratch))
        for k in factors:
            timings.add(bare_pytest(replicas[k], k, cwd, scratch))
    print("  the CPU by process ...", file=sys.stderr, flush=True)
    splits = {(framework, k): (floor(framework, scratch / "programs" / framework, k, cwd, split=True),
                               conformance_run(f"{framework} x{k} by process", [str(replicas[k])], [framework], cwd,
                                               scratch, split=True))
              for framework in frameworks for k in factors}  # one more run of each, its processes sampled

    def floor_of(group: list[str], k: int, measure=timings.seconds) -> float:
        return sum(measure(f"floor {f} x{k}") for f in group)

    print("\n== the floor (one interpreter per framework: import once, run every case's program) ==")
    print(f"  figures: the median of {repeat} timing(s), [min-max] of the wall time beside it; cpu is user + "
          f"system seconds of every process of the run")
    print(f"  bare interpreter start                {timings.seconds('python -c pass'):7.2f} s")
    for framework in frameworks:
        imported, one = f"import {framework}", f"floor {framework} x1"
        print(f"  {framework:8s} bare import             {timings.seconds(imported):7.2f} s {timings.spread(imported)}"
              f"  cpu {timings.cpu(imported):6.2f} s{timings.problems(imported)}")
        print(f"  {framework:8s} floor, {len(cases)} programs      {timings.seconds(one):7.2f} s {timings.spread(one)}"
              f"  cpu {timings.cpu(one):6.2f} s  ({(timings.seconds(one) - timings.seconds(imported)) / len(cases) * 1000:.1f}"
              f" ms per program above the import){timings.problems(one)}")
    if len(frameworks) > 1:
        print(f"  all frameworks, one after the other   {floor_of(frameworks, 1):7.2f} s  "
              f"cpu {floor_of(frameworks, 1, timings.cpu):6.2f} s")

    print(f"\n== the catalogue through `conformance run {catalogue} --device cpu` ==")
    for label, group, _ in catalogue_runs:
        wall, cpu = floor_of(group, 1), floor_of(group, 1, timings.cpu)
        first = timings.first(label)
        print(f"  {label:14s} {first.cells:5d} cells {timings.seconds(label):7.2f} s {timings.spread(label):13s} "
              f"{timings.seconds(label) / wall:5.2f}x the floor's wall ({wall:.2f} s); cpu {timings.cpu(label):6.2f} s, "
              f"{timings.cpu(label) / cpu:5.2f}x the floor's ({cpu:.2f} s){timings.problems(label)}")
        chosen = [line for line in first.output.splitlines() if line.startswith("conformance: -n")]
        if chosen:
            print(f"      {chosen[0]}")
    print("  peak memory (VmHWM), sampled every 0.25 s, in the first round:")
    for label in sorted(sampled):
        run = timings.first(label)
        if run.peaks:
            print(f"    {label}: " + "; ".join(f"{role} {kib / 1024:.0f} MiB" for role, kib in run.peaks.items()))

    print(f"\n== the catalogue replicated {', '.join(f'{k}x' for k in factors)} (fresh ids, temporary folder) ==")
    for group in groups:
        name = "+".join(group)
        for k in factors:
            label = f"{name} x{k}"
            cells, wall, cpu = timings.first(label).cells, timings.seconds(label), timings.cpu(label)
            print(f"  {name:13s} x{k:<3d} {cells:6d} cells  wall {wall:7.2f} s {timings.spread(label):13s} "
                  f"{wall / floor_of(group, k):5.2f}x the floor ({floor_of(group, k):.2f} s)   cpu {cpu:7.2f} s "
                  f"{cpu / floor_of(group, k, timings.cpu):5.2f}x the floor ({floor_of(group, k, timings.cpu):.2f} s)"
                  f"   {cells / wall:6.1f} cells/s{timings.problems(label)}")
        for low, high in zip(factors, factors[1:]):
            cells = timings.first(f"{name} x{high}").cells - timings.first(f"{name} x{low}").cells
            if cells <= 0:
                continue
            slope = {what: ((measure(f"{name} x{high}") - measure(f"{name} x{low}")) / cells * 1000,
                            (floor_of(group, high, measure) - floor_of(group, low, measure)) / cells * 1000)
                     for what, measure in (("wall", timings.seconds), ("cpu", timings.cpu))}
            print(f"  {name:13s} marginal x{low}->x{high}, ms per cell: "
                  + "; ".join(f"{what} harness {harness:5.2f}, floor {own:5.2f}, above the floor {harness - own:+5.2f}"
                              for what, (harness, own) in slope.items()))

    print_split(splits, frameworks, factors)

    print("\n== pytest's own cost per item: each case file one item whose test does nothing, nothing of this "
          "package ==")
    for k in factors:
        label = f"bare pytest x{k}"
        print(f"  x{k:<3d} wall {timings.seconds(label):7.2f} s {timings.spread(label):13s} cpu "
              f"{timings.cpu(label):7.2f} s{timings.problems(label)}")
    for low, high in zip(factors, factors[1:]):
        items = len(case_files) * (high - low)
        slope = {what: (measure(f"bare pytest x{high}") - measure(f"bare pytest x{low}")) / items * 1000
                 for what, measure in (("wall", timings.seconds), ("cpu", timings.cpu))}
        print(f"  marginal x{low}->x{high}, ms per item: "
              + "; ".join(f"{what} {ms:5.2f}" for what, ms in slope.items())
              + "  (a bound on what pytest's collection and reports cost a cell; the harness bypasses some of it)")


def print_split(splits: dict[tuple[str, int], tuple[Run, Run]], frameworks: list[str], factors: list[int]) -> None:
    """Where a cell's CPU goes, process by process: the slope of each between replications, the worker's
    set against the floor's interpreter, which runs the same programs (one run each, not a median)."""
    print("\n== where a cell's CPU goes, by process: one more run of the floor and of the harness at each "
          "replication, every process's CPU sampled from /proc every 0.1 s ==")
    for framework in frameworks:
        for low, high in zip(factors, factors[1:]):
            (floor_low, low_run), (floor_high, high_run) = splits[(framework, low)], splits[(framework, high)]
            cells = high_run.cells - low_run.cells
            if cells <= 0 or not high_run.cpu_by_role or not floor_high.cpu_by_role:
                print(f"  {framework}: no split (no /proc, or no cell ran)")
                continue

            def slope(low_roles: dict[str, float], high_roles: dict[str, float], role: str) -> float:
                return (high_roles.get(role, 0.0) - low_roles.get(role, 0.0)) / cells * 1000

            floor_ms = slope(floor_low.cpu_by_role, floor_high.cpu_by_role, FLOOR_ROLE)
            floor_main = slope(floor_low.cpu_by_role, floor_high.cpu_by_role, f"{FLOOR_ROLE}, main thread")
            print(f"  {framework} marginal x{low}->x{high}, ms of CPU per cell ({cells} cells):")
            print(f"    {FLOOR_ROLE:37s} {floor_ms:6.2f}  (its main thread {floor_main:.2f})")
            roles = sorted(set(low_run.cpu_by_role) | set(high_run.cpu_by_role))
            total = others = 0.0
            for role in roles:
                if role.endswith(", main thread"):
                    continue
                ms = slope(low_run.cpu_by_role, high_run.cpu_by_role, role)
                total += ms
                if role not in (PYTEST_ROLE, f"worker {framework}", "reference service"):
                    others += ms  # the compiler, git, the helpers torch starts: a few, whatever the cells
                    continue
                if role == PYTEST_ROLE:
                    main = slope(low_run.cpu_by_role, high_run.cpu_by_role, f"{role}, main thread")
                    note = f"  (its main thread {main:.2f}; its other threads, which read replies and send requests, " \
                           f"{ms - main:.2f})"
                elif role == f"worker {framework}":
                    note = f"  ({ms - floor_ms:+.2f} against the floor's interpreter, which runs the same programs)"
                else:
                    note = ""
                print(f"    {role:37s} {ms:6.2f}{note}")
            print(f"    {'other processes (short-lived helpers)':37s} {others:6.2f}")
            print(f"    {'all of the harness':37s} {total:6.2f}  ({total - floor_ms:+.2f} above the floor)")


if __name__ == "__main__":
    main()
