"""Benchmark: ``conformance scan`` against ``flake8 --select=F`` (pyflakes) over the same files, in one run.

pyflakes is the floor a Python user already pays on every file: the scanner should be no slower.  Both read
the same ``.py`` files of a tree (the scanner's own choice of files: no virtual environments, caches or
installed packages).  Each command runs as its user runs it, in a process of its own, ``--repeat`` times;
the medians are compared, and the scanner's lines per second printed.  flake8 runs twice: on one process
(``-j 1``, as the scanner does) and on every core (its default).  A benchmark, run by hand, never a test.

    python benchmarks/scan_speed.py PATH [--repeat 3] [--to paddle]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.scan.scanner import python_files  # noqa: E402


def timed(command: list[str], repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a tree of Python code")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--to", default="paddle", help="the question the scan answers [a port to paddle]")
    args = parser.parse_args()
    files = [str(p) for p in python_files(Path(args.path))]
    lines = sum(Path(f).read_text(encoding="utf-8", errors="replace").count("\n") for f in files)
    scan = timed([sys.executable, "-m", "conformance.cli", "scan", *files, "--to", args.to], args.repeat)
    one = timed([sys.executable, "-m", "flake8", "--select=F", "-j", "1", *files], args.repeat)
    every = timed([sys.executable, "-m", "flake8", "--select=F", *files], args.repeat)
    print(f"{len(files)} files, {lines} lines of {args.path} (medians of {args.repeat}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f})")
    print(f"conformance scan --to {args.to}:   {scan:7.2f} s  ({lines / scan:,.0f} lines/s)")
    print(f"flake8 --select=F -j 1:          {one:7.2f} s  ratio scan/flake8 {scan / one:.2f}")
    print(f"flake8 --select=F (every core):  {every:7.2f} s  ratio scan/flake8 {scan / every:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
