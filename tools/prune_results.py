#!/usr/bin/env python3
"""Drop what the committed columns hold of cases that are no longer in the catalogue.

A case removed or renamed (a found case simplified under a new id) leaves its
records in every results file, its entries in every baseline and its programs
beside the results; ``tests/test_committed_results.py`` then calls the column
not current.  This removes exactly those (records of cases still in ``cases/``
are kept byte for byte) and says how many per file; a ``--resume`` of each
column then runs the cases it lacks.

    .tox/tests/bin/python tools/prune_results.py [--dry-run]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case.load import load_cases  # noqa: E402


def main(argv: list[str]) -> int:
    if argv not in ([], ["--dry-run"]):
        print("usage: tools/prune_results.py [--dry-run]", file=sys.stderr)
        return 2
    dry = bool(argv)
    cases, problems = load_cases([ROOT / "cases"])
    if problems:
        print(f"error: {len(problems)} case files do not load; nothing pruned", file=sys.stderr)
        return 2
    catalogue = {case.id for case in cases}
    for path in sorted([*(ROOT / "reports" / "results").glob("*.jsonl"), *(ROOT / "reports" / "controls").glob("*.jsonl")]):
        if path.name == "latest.jsonl":
            continue
        lines = path.read_bytes().splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line).get("case") in catalogue]
        _report(path, len(lines) - len(kept), dry, lambda: path.write_bytes(b"".join(kept)))
    for path in sorted((ROOT / "reports" / "results").glob("*.programs.json")):
        entries = json.loads(path.read_text())["programs"]
        kept_entries = [entry for entry in entries if entry.get("case") in catalogue]
        lines = [json.dumps(entry, sort_keys=True, ensure_ascii=False) for entry in kept_entries]
        _report(path, len(entries) - len(kept_entries), dry,  # as records/programs.write_programs lays it out
                lambda: path.write_text('{"programs": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8"))
    for path in sorted((ROOT / "reports" / "baselines").glob("*.json")):
        baseline = json.loads(path.read_text())
        cells = baseline.get("cells", {})
        gone = [case for case in cells if case not in catalogue]
        for case in gone:
            del cells[case]
        _report(path, len(gone), dry, lambda: path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n"))
    return 0


def _report(path: Path, removed: int, dry: bool, write) -> None:
    if removed:
        print(f"{path.relative_to(ROOT)}: {removed} {'would go' if dry else 'removed'}")
        if not dry:
            write()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
