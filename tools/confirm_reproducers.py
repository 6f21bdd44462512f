"""Confirm cells by their reproducers: each one run in a fresh interpreter, as a bug report's reader would.

    python tools/confirm_reproducers.py RESULTS.jsonl [...] [--modes | --converted | --since OLD.jsonl [...]]
                                        [--cases cases] [--record reports/confirmations.jsonl]

Which cells: with ``--modes``, every cell whose outcome differs between eager and a compiled mode of the
same build (both reproducers run); with ``--converted``, every cell of a converter's column (PaConvert's)
whose converted program does not keep the meaning of the torch program it converted (give the torch
results beside the converter's; ``report/porting.py`` says how it is compared); with ``--since``, every
cell whose outcome (or correctness) differs
from the same cell (case, framework, device, mode) in the OLD results, of the same version (a rerun) or of
another (an upgrade: OLD holds one version of each framework); otherwise every cell given.

A reproducer (``conformance show CASE --framework F --mode M``) runs in a fresh interpreter that records
what it prints and the warnings it raises.  It confirms its cell when it does what the record says the
framework did: it raises the recorded exception type where the program raised (``raises``, or a wrong
observation before the raise); otherwise it runs to the end, every value it prints equals the value the
record observed (so the verdict on the record is a verdict on what the framework computes), and every
warning the record counted is raised.  Prints one markdown row per reproducer, with the warnings the
record set aside (``ignored_warnings``) that the reproducer raised as well.  With ``--record FILE``, each
cell's confirmation is also appended to FILE, where ``conformance mode-changes`` reads it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from conformance.adapter import installed
from conformance.case.load import load_cases
from conformance.records.bounds import is_summary
from conformance.records.record import Record
from conformance.records.results import latest_by_cell, load_records
from conformance.report.modes import confirmation_line, mode_changes
from conformance.report.conversions import conversions
from conformance.workers.pool import Worker

#: Runs a reproducer as a script (``__main__``, from its file) and appends, on stderr, what it printed as
#: (name, value) pairs and the warnings it raised.
_RECORDING = r'''
import builtins, json, sys, warnings
import numpy as np
seen, plain_print = [], builtins.print
def recording_print(*args, **kwargs):
    if len(args) == 2 and isinstance(args[0], str):
        value = args[1]
        try:  # a complex value as its (real, imag) pairs, as the harness records it
            value = None if value is None else np.asarray(value)
            if value is not None and np.iscomplexobj(value):
                value = np.stack((value.real, value.imag), axis=-1)
            value = None if value is None else np.asarray(value, dtype=np.float64).tolist()
        except Exception:
            value = repr(value)
        seen.append([args[0], value])
    plain_print(*args, **kwargs)
builtins.print = recording_print
with warnings.catch_warnings(record=True) as log:
    warnings.simplefilter("always")
    try:
        source = open(sys.argv[1], encoding="utf-8").read()
        exec(compile(source, sys.argv[1], "exec"), {"__name__": "__main__", "__file__": sys.argv[1]})
    finally:
        sys.stderr.write("\nRECORDED " + json.dumps({"printed": seen, "warnings": [str(w.message) for w in log]},
                                                  default=str) + "\n")
'''


def _changes_since(old: list[Record], new: list[Record]) -> list[tuple[Record, Record]]:
    """(old, new) for every cell of *new* whose outcome or correctness differs from the same cell in *old*:
    the same case, framework, device and mode, of the same version (a rerun) or of another (an upgrade)."""
    before: dict[tuple[str, ...], Record] = {}
    for record in old:
        key = (record.case, record.framework, record.device, record.mode)
        if key in before and before[key].framework_version != record.framework_version:
            raise SystemExit(f"error: OLD holds {record.framework} {before[key].framework_version} and "
                             f"{record.framework_version}; give one version of each framework")
        before[key] = record
    pairs = []
    for record in new:
        previous = before.get((record.case, record.framework, record.device, record.mode))
        if previous is not None and (previous.outcome, previous.correct) != (record.outcome, record.correct):
            pairs.append((previous, record))
    return pairs


def _run(source: str, folder: Path, name: str) -> tuple[bool, str, dict[str, Any]]:
    """Whether the reproducer ran to the end, its stderr, and what it printed and warned."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    try:
        run = subprocess.run([sys.executable, "-c", _RECORDING, str(path)], capture_output=True, text=True,
                             timeout=600, cwd=folder)
    except subprocess.TimeoutExpired:
        return False, "timed out", {}
    recorded: dict[str, Any] = {}
    for line in run.stderr.splitlines():
        if line.startswith("RECORDED "):
            recorded = json.loads(line[len("RECORDED "):])
    return run.returncode == 0, run.stderr, recorded


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("RECORDED ")]
    return lines[-1][:160] if lines else "failed"


def _same_values(record: Record, printed: dict[str, Any]) -> tuple[bool, str]:
    """Whether every value the record observed (values and gradients) is what the reproducer printed."""
    compared = differing = 0
    for observation in record.observations:
        if observation.get("kind") not in ("value", "grad") or observation.get("name") not in printed:
            continue
        kept, shown = observation.get("value"), printed[observation["name"]]
        if is_summary(kept) or isinstance(shown, str):
            continue  # the record keeps a digest of a large array; the reproducer printed something else
        compared += 1
        if (kept is None) != (shown is None):
            differing += 1
        elif kept is not None:
            a, b = np.asarray(kept, dtype=np.float64), np.asarray(shown, dtype=np.float64)
            # the harness reads a parameter stored transposed (paddle's Linear weight) in the neutral layout
            candidates = [b, b.T] if b.ndim == 2 else [b]
            if not any(a.size == c.size and np.allclose(a.reshape(-1), c.reshape(-1), rtol=1e-6, atol=0.0,
                                                        equal_nan=True) for c in candidates):
                differing += 1
    return differing == 0, f"{compared - differing} of {compared} values as recorded"


def confirm(record: Record, source: str, unsupported: str | None, folder: Path) -> tuple[bool, str]:
    """Whether the reproducer does what the record says, and what it did."""
    if unsupported:
        return record.outcome == "unsupported", f"unsupported: {unsupported[:80]}"
    ran, stderr, recorded = _run(source, folder, f"{record.case}_{record.framework}_{record.mode}")
    exception = record.exception.type if record.exception else ""
    short = exception.rsplit(".", 1)[-1]
    if exception:  # the program raised (after a wrong observation, too): it must raise it again
        # the traceback's last line: "AssertionError: message", or the name alone for an empty message
        raised = re.search(rf"(^|[\s.]){re.escape(short)}(:|$)", stderr, re.MULTILINE) if short else None
        return bool(not ran and raised), f"raised {short}" if raised else _last_line(stderr)
    if not ran:
        return False, _last_line(stderr)
    printed = {name: value for name, value in recorded.get("printed", [])}
    values_ok, values = _same_values(record, printed)
    warned = recorded.get("warnings", [])
    missing = [w["message"] for w in record.warnings if not any(w["message"][:60] in m for m in warned)]
    also = sorted({w["message"][:50] for w in record.details.get("ignored_warnings") or []
                   if any(w["message"][:60] in m for m in warned)})
    said = f"ran to the end; {values}" + (f"; counted warnings missing: {missing}" if missing else "")
    said += f"; also raised (set aside): {also}" if also else ""
    return values_ok and not missing, said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--modes", action="store_true", help="only cells whose outcome depends on the mode")
    parser.add_argument("--converted", action="store_true",
                        help="only a converter's cells whose conversion changed or broke the torch program")
    parser.add_argument("--since", nargs="+", metavar="OLD", help="only cells whose outcome differs from these")
    parser.add_argument("--cases", default="cases", help="where the case files are [cases]")
    parser.add_argument("--record", help="append each cell's confirmation to this file")
    args = parser.parse_args(argv)
    records = list(latest_by_cell(load_records(args.results)).values())
    if args.since:
        pairs = _changes_since(list(latest_by_cell(load_records(args.since)).values()), records)
    elif args.converted:
        pairs = [(c.torch, c.converted) for c in conversions(records).values() if c.verdict != "keeps"]
    else:
        chosen = [cell for eager, differ in mode_changes(records) for cell in (eager, *differ)] if args.modes \
            else records
        pairs = [(None, r) for r in chosen]
    elsewhere = sorted({f"{r.framework} {r.framework_version}" for _, r in pairs
                        if installed(r.framework)[1] != r.framework_version})
    if elsewhere:  # a reproducer confirms a cell only on the version that gave it
        print(f"error: records of {', '.join(elsewhere)}, which this environment does not have; run the tool in "
              f"the environment of that version (e.g. .tox/<env>/bin/python)", file=sys.stderr)
        return 2
    cases = {c.id: c for c in load_cases([args.cases])[0]}
    workers: dict[str, Worker] = {}
    print("| case | framework | mode | outcome | reproducer | confirms |")
    print("|---|---|---|---|---|---|")
    confirmed = 0
    with tempfile.TemporaryDirectory() as folder:
        for old, record in pairs:
            worker = workers.get(record.framework) or workers.setdefault(record.framework, Worker(record.framework))
            reply = worker.request({"cmd": "render", "device": record.device, "mode": record.mode,
                                    **cases[record.case].to_message()}, timeout=120)
            ok, got = confirm(record, reply["source"], reply.get("unsupported"), Path(folder))
            confirmed += ok
            if args.record:
                with open(args.record, "a", encoding="utf-8") as handle:
                    handle.write(confirmation_line(record, ok, got) + "\n")
            outcome = f"{old.outcome_label} → {record.outcome_label}" if old is not None else record.outcome_label
            print(f"| `{record.case}` | {record.framework} {record.framework_version} | {record.mode} | "
                  f"{outcome} | {got.replace('|', '/')} | {'yes' if ok else 'NO'} |", flush=True)
    for worker in workers.values():
        worker.close()
    print(f"\n{confirmed} of {len(pairs)} reproducers confirm their cell")
    return 0 if confirmed == len(pairs) else 1


if __name__ == "__main__":
    sys.exit(main())
