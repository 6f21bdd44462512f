"""Benchmark: what keeping a framework worker alive saves, measured in one run.

Runs every case under cases/ once per framework on the CPU, first through one
long-lived worker per framework (how the suite runs), then with a fresh worker
for every cell (what a process per cell would cost), and prints seconds per
cell and the ratio.  A benchmark, not a test: it asserts nothing about speed.

    python benchmarks/worker_reuse.py [--framework torch] [--repeat 1]
"""

from __future__ import annotations

import argparse
import time

from conformance.adapter import adapter_classes, is_installed
from conformance.case.load import load_cases
from conformance.engine import Engine


def measure(cases: list, framework: str, fresh_worker_per_cell: bool) -> float:
    engine = Engine()
    started = time.perf_counter()
    try:
        for case in cases:
            engine.run_cell(case, framework, "cpu")
            if fresh_worker_per_cell:
                engine.pool.discard(framework)
    finally:
        engine.pool.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", action="append")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    cases, _ = load_cases(["cases"])
    cases = cases * args.repeat
    frameworks = args.framework or [n for n, c in adapter_classes().items() if is_installed(c)]
    for framework in frameworks:
        kept = measure(cases, framework, fresh_worker_per_cell=False)
        fresh = measure(cases, framework, fresh_worker_per_cell=True)
        n = len(cases)
        print(f"{framework}: {n} cells; kept-alive worker {kept:.2f} s ({kept / n * 1000:.0f} ms/cell), "
              f"fresh worker per cell {fresh:.2f} s ({fresh / n * 1000:.0f} ms/cell); "
              f"ratio {fresh / kept:.1f}x")


if __name__ == "__main__":
    main()
