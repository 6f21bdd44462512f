"""Write results files again in the current form, record for record (``records.results.rewrite_results``):
each run's information once, in a run line, instead of in every record.

    python tools/rewrite_results.py reports/results/*.jsonl reports/controls/*.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.records.record import Record  # noqa: E402
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
        if _stored(before) != [Record.from_dict(data) for data in after]:  # the same records, as stored
            print(f"error: {path}: the records read back differ; the file is left rewritten for a look", file=sys.stderr)
            return 1
        print(f"{path}: {count} records, {size} -> {Path(path).stat().st_size} bytes")
    return 0


def _stored(records: list[dict]) -> list[Record]:
    """The records as a results file stores them (records/storage.py), read back."""
    return [Record.from_dict(Record.from_dict(data).to_dict()) for data in records]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
