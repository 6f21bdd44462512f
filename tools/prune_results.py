#!/usr/bin/env python3
"""Drop what the committed columns hold of cases that are no longer in the catalogue, and the records of an
earlier form of a case that a record of the case as it is supersedes.

A case removed or renamed (a found case simplified under a new id) leaves its
records in every results and control file, its entries in every baseline and
its programs beside the results; ``tests/test_committed_results.py`` then calls
the column not current.  This removes exactly those (the records of cases still
in ``cases/`` are kept byte for byte) and says how many per file; a ``--resume``
of each column then runs the cases it lacks.

    .tox/tests/bin/python tools/prune_results.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case.load import load_cases  # noqa: E402
from conformance.records.baseline import Baselines  # noqa: E402
from conformance.records.programs import prune_programs  # noqa: E402


def main(argv: list[str]) -> int:
    if argv:
        print("usage: tools/prune_results.py (no arguments)", file=sys.stderr)
        return 2
    cases, problems = load_cases([ROOT / "cases"])
    if problems:
        print(f"error: {len(problems)} case file(s) do not load; nothing pruned", file=sys.stderr)
        return 2
    catalogue = {case.id for case in cases}
    digests = {case.id: case.digest for case in cases}
    results = ROOT / "reports" / "results"
    for path in sorted([*results.glob("*.jsonl"), *(ROOT / "reports" / "controls").glob("*.jsonl")]):
        if path.name == "latest.jsonl":
            continue
        lines = path.read_bytes().splitlines(keepends=True)
        kept = _kept(lines, catalogue, digests)
        if len(kept) != len(lines):
            path.write_bytes(b"".join(kept))
            print(f"{path.relative_to(ROOT)}: {len(lines) - len(kept)} record(s) removed")
        if (gone := prune_programs(path, catalogue)):
            print(f"{path.relative_to(ROOT)}: {gone} kept program(s) removed")
    for path, case in Baselines(ROOT / "reports" / "baselines").prune(catalogue):
        print(f"{path.relative_to(ROOT)}: baseline entry {case} removed")
    return 0


def _kept(lines: list[bytes], catalogue: set[str], digests: dict[str, str]) -> list[bytes]:
    """The lines of a results file to keep: its run lines, and the records of cases in the catalogue, except a
    record of an earlier form of a case (another digest) that a record of the case as it is supersedes (a
    found case simplified again keeps its id: its old record would otherwise stay beside the new one)."""
    parsed = _with_columns([json.loads(line) for line in lines])
    current = {(r["case"], r.get("framework"), r.get("device"), r.get("mode")) for r in parsed
               if "case" in r and r.get("case_digest") == digests.get(r["case"])}
    kept = []
    for line, record in zip(lines, parsed):
        if "case" not in record:  # a run line: the run information its records name
            kept.append(line)
            continue
        cell = (record["case"], record.get("framework"), record.get("device"), record.get("mode"))
        superseded = record.get("case_digest") != digests.get(record["case"]) and cell in current
        if record["case"] in catalogue and not superseded:
            kept.append(line)
    return kept


def _with_columns(parsed: list[dict]) -> list[dict]:
    """Each record with the column fields its run line holds for it (run lines as they are)."""
    columns: dict[str, dict] = {}
    out = []
    for entry in parsed:
        if "case" not in entry:
            columns[entry.get("run")] = entry.get("column") or {}
            out.append(entry)
        else:
            out.append({**columns.get(entry.get("run"), {}), **entry})
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
