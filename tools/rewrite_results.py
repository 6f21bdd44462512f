"""Write results files again in the current form, record for record (``records.results.rewrite_results``):
each run's information once, in a run line, instead of in every record.

    python tools/rewrite_results.py reports/results/*.jsonl reports/controls/*.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.records.results import ResultsError, read_records, rewrite_results  # noqa: E402


def main(paths: list[str]) -> int:
    if not paths:
        print("usage: python tools/rewrite_results.py RESULTS.jsonl [...]", file=sys.stderr)
        return 2
    for path in paths:
        try:
            before = list(read_records([path]))
            size = Path(path).stat().st_size
            count = rewrite_results(path)
            after = list(read_records([path]))
        except (ResultsError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if before != after:  # the records read back must be the same, to the letter
            print(f"error: {path}: the records read back differ; the file is left rewritten for a look", file=sys.stderr)
            return 1
        print(f"{path}: {count} records, {size} -> {Path(path).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
