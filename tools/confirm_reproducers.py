"""Confirm cells by their reproducers: each one run in a fresh interpreter, as a bug report's reader would.

    python tools/confirm_reproducers.py RESULTS.jsonl [...] [--modes] [--cases cases]

With ``--modes`` it takes every cell whose outcome differs between eager and a
compiled mode of the same build, and runs both reproducers (``conformance show
CASE --framework F --mode M``); otherwise every cell given.  A reproducer
confirms a cell whose program raised (``raises``, or ``silent-wrong`` after a wrong
observation) when it raises that exception type, and any other cell when it runs to
the end.  Prints one markdown row per reproducer.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.case.load import load_cases
from conformance.records.results import load_records, latest_by_cell
from conformance.workers.pool import Worker


def _changed(records) -> list:
    """Cells whose outcome in a compiled mode differs from eager in the same build, with their eager cell."""
    by_build: dict = {}
    for record in records:
        by_build.setdefault((record.case, record.framework, record.framework_version, record.device), {})[
            record.mode] = record
    chosen = []
    for modes in by_build.values():
        eager = modes.get("eager")
        for mode, record in sorted(modes.items()):
            if mode != "eager" and eager and (record.outcome, record.correct) != (eager.outcome, eager.correct):
                chosen += [eager, record] if eager not in chosen else [record]
    return chosen


def _run(source: str, folder: Path, name: str) -> tuple[bool, str]:
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    try:
        run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600, cwd=folder)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    if run.returncode == 0:
        return True, ""
    return False, run.stderr


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][:160] if lines else "failed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--modes", action="store_true", help="only cells whose outcome depends on the mode")
    parser.add_argument("--cases", default="cases", help="where the case files are [cases]")
    args = parser.parse_args(argv)
    records = list(latest_by_cell(load_records(args.results)).values())
    cells = _changed(records) if args.modes else records
    cases = {c.id: c for c in load_cases([args.cases])[0]}
    workers: dict[str, Worker] = {}
    print("| case | framework | mode | outcome | reproducer | confirms |")
    print("|---|---|---|---|---|---|")
    confirmed = 0
    with tempfile.TemporaryDirectory() as folder:
        for record in cells:
            worker = workers.get(record.framework) or workers.setdefault(record.framework, Worker(record.framework))
            reply = worker.request({"cmd": "render", "device": record.device, "mode": record.mode,
                                    **cases[record.case].to_message()}, timeout=120)
            if reply.get("unsupported"):
                ok, got = record.outcome == "unsupported", f"unsupported: {reply['unsupported'][:80]}"
            else:
                ran, stderr = _run(reply["source"], Path(folder), f"{record.case}_{record.framework}_{record.mode}")
                exception = (record.details.get("exception") or {}).get("type", "")
                short = exception.rsplit(".", 1)[-1]
                raised = re.search(rf"(^|[\s.]){re.escape(short)}:", stderr, re.MULTILINE) if short else None
                # a cell whose program raised (after a wrong observation, too) must raise it again
                ok = bool(not ran and raised) if exception else ran
                got = "ran to the end" if ran else (f"raised {short}" if raised else _last_line(stderr))
            confirmed += ok
            print(f"| `{record.case}` | {record.framework} {record.framework_version} | {record.mode} | "
                  f"{record.outcome} | {got.replace('|', '/')} | {'yes' if ok else 'NO'} |", flush=True)
    for worker in workers.values():
        worker.close()
    print(f"\n{confirmed} of {len(cells)} reproducers confirm their cell")
    return 0 if confirmed == len(cells) else 1


if __name__ == "__main__":
    sys.exit(main())
