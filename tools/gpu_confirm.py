"""Confirm the GPU column by its reproducers: every cell whose outcome differs from the committed CPU column
of the same torch version is run again, alone, by ``conformance show`` on the GPU (a fresh worker, the
program a user would copy), and its verdict is set beside the recorded one.

    python tools/gpu_confirm.py OUTDIR [--device gpu] [--jobs 8] [--timeout 60] [--paths cases]
        [--against reports/results]

OUTDIR holds the GPU column's results (``torch-VERSION-gpu.jsonl`` and ``-gpu-compiled.jsonl``, as
tools/gpu_column.sh writes them); the comparison goes to ``OUTDIR/confirmations.txt``, one line per cell.
A cell agrees when ``show`` exits 1 (a wrong result) for a wrong record, and for any other record exits 0
with a verdict naming the recorded outcome (3: the harness could not run it, never an agreement).
Exit status: 0 when every differing cell agrees, 1 when one does not, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.records.results import load_records  # noqa: E402

def _outcomes(path: Path) -> dict[str, tuple[str, bool]]:
    """case -> (outcome, whether the result is wrong: what ``conformance show`` exits 1 for)."""
    return {record.case: (record.outcome, record.wrong) for record in load_records([path])}


def _show(case: str, device: str, mode: str, timeout: float, paths: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "conformance.cli", "show", case, "--framework", "torch", "--device", device,
               "--mode", mode, "--timeout", str(timeout), "--paths", paths]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return 3, "show did not finish"
    verdict = next((line.strip("# ").strip() for line in reversed(done.stdout.splitlines())
                    if "verdict" in line.lower()), (done.stderr.strip().splitlines() or [""])[-1][:200])
    return done.returncode, verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--paths", default="cases", help="where the cases are [cases]")
    parser.add_argument("--against", type=Path, default=ROOT / "reports" / "results",
                        help="the folder of the CPU columns compared with [reports/results]")
    args = parser.parse_args(argv)
    columns = sorted(args.outdir.glob(f"torch-*-{args.device}*.jsonl"))
    if not columns:
        print(f"error: no torch-*-{args.device}*.jsonl in {args.outdir}", file=sys.stderr)
        return 2
    work = []
    for column in columns:
        suffix = "-compiled" if column.name.endswith("-compiled.jsonl") else ""
        version = column.name[len("torch-"):].split(f"-{args.device}")[0]
        cpu = args.against / f"torch-{version}-cpu{suffix}.jsonl"
        if not cpu.is_file():
            print(f"{column.name}: no committed CPU column of torch {version} ({cpu.name}) to compare with")
            continue
        mode = "compile" if suffix else "eager"
        before, after = _outcomes(cpu), _outcomes(column)
        work += [(case, mode, before[case][0], outcome, wrong) for case, (outcome, wrong) in sorted(after.items())
                 if case in before and before[case][0] != outcome]
    work.sort(key=lambda item: (item[1] != "eager", item[0]))  # eager first: a run cut short keeps those
    table = args.outdir / "confirmations.txt"
    table.write_text("", encoding="utf-8")
    done, disagree = 0, 0
    pool = ThreadPoolExecutor(max(1, args.jobs))
    futures = {pool.submit(_show, case, args.device, mode, args.timeout, args.paths): (case, mode, before, outcome,
                                                                                          wrong)
               for case, mode, before, outcome, wrong in work}
    try:
        for future in as_completed(futures):
            case, mode, cpu_outcome, outcome, wrong = futures[future]
            status, verdict = future.result()
            # a wrong cell: show exits 1; any other: show exits 0 and its verdict names the recorded outcome
            agrees = status == 1 if wrong else (status == 0 and verdict.startswith(f"verdict: {outcome}"))
            disagree += not agrees
            done += 1
            with table.open("a", encoding="utf-8") as handle:  # each line as its cell ends: a cut keeps them
                handle.write(f"{'agrees' if agrees else 'DIFFERS'}\t{case}\t{mode}\tcpu {cpu_outcome}\t"
                             f"{args.device} {outcome}\tshow exit {status}\t{verdict}\n")
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        print(f"stopped after {done} of {len(work)} cell(s): {done - disagree} confirmed, {disagree} not: {table}")
        return 1
    pool.shutdown()
    print(f"{len(work)} cell(s) differ from the CPU column; {len(work) - disagree} confirmed by their reproducer, "
          f"{disagree} not: {table}")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
