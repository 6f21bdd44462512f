"""The README's numbers, written from the catalogue and the committed results, never by hand.

The README says how many cases there are, how many are hazards with a verified remedy, and which
hand-written cases are silently wrong on the newest committed release of each framework: counts a reader
takes as true, which went stale as soon as a case was added.  They live between two markers in the
README, and ``python -m conformance.report.readme README.md`` (the report env runs it) writes them again;
a test holds the committed README to what the catalogue and the results give.  The set-up cost of the
quick start is written the same way, between markers of its own, from what ``benchmarks/setup_cost.py``
measured (``docs/setup-cost.json``).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from conformance.case.model import Case
from conformance.records.record import EAGER, Record

__all__ = ["BEGIN", "COST_BEGIN", "COST_END", "END", "current_block", "current_cost", "quick_start_commands",
           "render_block", "render_cost", "tox_dependencies", "with_block"]

BEGIN = "<!-- the numbers below are written by `python -m conformance.report.readme README.md` (tox -e report) -->"
END = "<!-- end of the written numbers -->"
COST_BEGIN = ("<!-- what the two commands cost, written from docs/setup-cost.json (benchmarks/setup_cost.py measures "
              "it) by `python -m conformance.report.readme README.md` -->")
COST_END = "<!-- end of the measured cost -->"
#: The measurements the README's cost is written from.
COST_FILE = Path("docs") / "setup-cost.json"

_MARKS = {"silent-wrong": "❌", "crash": "💥", "timeout": "⏱️", "warns": "⚠️", "raises": "🛑", "silent-correct": "✅",
          "aliases": "🔗", "copies": "📄", "unsupported": "➖", "error": "🐞", "skipped": "⏭️"}
#: The order the columns are shown in: the two frameworks, then torch's programs as PaConvert converts them.
_ORDER = ("paddle", "torch", "paconvert")


def _newest_columns(records: Sequence[Record]) -> dict[str, str]:
    """The newest version of each framework with an eager CPU column that ran (not only skips)."""
    from conformance.records.record import version_key

    ran: dict[str, set[str]] = {}
    for record in records:
        if record.mode == EAGER and record.device == "cpu" and record.outcome != "skipped":
            ran.setdefault(record.framework, set()).add(record.framework_version)
    return {framework: max(versions, key=version_key) for framework, versions in ran.items()}


def render_block(cases: Sequence[Case], records: Sequence[Record]) -> str:
    """The block: the catalogue's counts, the silent-wrong rows of the newest columns, and their counts."""
    from conformance.report.remedies import check_remedies

    written = [c for c in cases if not c.generated]
    found = [c for c in cases if c.generated]
    topics = sorted({c.topic for c in written})
    checked = check_remedies(cases, records)
    hazards = [h for h in checked.hazards.values() if not h.case.generated]
    none = sum(1 for h in hazards if h.case.no_remedy)
    newest = _newest_columns(records)
    frameworks = [f for f in _ORDER if f in newest] + sorted(f for f in newest if f not in _ORDER)
    cells: dict[str, dict[str, Record]] = {}
    for record in records:
        if (record.mode == EAGER and record.device == "cpu" and newest.get(record.framework) ==
                record.framework_version):
            cells.setdefault(record.case, {})[record.framework] = record
    by_id = {c.id: c for c in written}
    wrong = sorted((by_id[case].topic, case) for case, row in cells.items()
                   if case in by_id and any(r.outcome == "silent-wrong" for f, r in row.items() if f != "paconvert"))
    lines = [BEGIN, "",
             f"`cases/` holds **{len(written)} hand-written cases** in {len(topics)} topic folders and "
             f"**{len(found)} more** that the differential fuzzer found and shrank (`cases/found/`). "
             f"{len(hazards)} of the hand-written cases are hazards on some column (a framework raises, is silently "
             f"wrong, or copies memory that another shares): {len(checked.remedied)} name a safe spelling verified on "
             f"every column where they ran, {none} say{'s' if none == 1 else ''} why the case language has none.",
             "",
             "The hand-written cases where a framework is silently wrong, on the newest committed release of each "
             "(CPU, eager):", "",
             "| case | " + " | ".join(_label(f, newest[f]) for f in frameworks) + " |",
             "|---|" + "---|" * len(frameworks)]
    for topic, case in wrong:
        row = cells[case]
        lines.append(f"| {topic}/`{case}` | " + " | ".join(
            f"{_MARKS.get(row[f].outcome, '')} {row[f].outcome_label}" if f in row else "" for f in frameworks) + " |")
    lines += ["", f"Every case of the catalogue ({len(cases)}), by outcome:", ""]
    for framework in frameworks:
        counts = Counter(r.outcome for row in cells.values() for f, r in row.items() if f == framework)
        said = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"- {_label(framework, newest[framework])}: {said}")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _label(framework: str, version: str) -> str:
    if framework == "paconvert":
        converter, _, runs_on = version.partition("+")  # 3.3.1+paddle3.3.1
        runs_on = re.sub(r"^([a-z]+)(\d)", r"\1 \2", runs_on)
        return f"PaConvert {converter} (torch's program{' on ' + runs_on if runs_on else ''})"
    return f"{framework} {version}"


def with_block(readme: str, block: str, begin: str = BEGIN, end: str = END) -> str:
    """*readme* with its written block (between *begin* and *end*) replaced by *block*; a README without the
    markers is refused."""
    if begin not in readme or end not in readme:
        raise ValueError(f"the README has no block to write between {begin!r} and {end!r}")
    head, _, rest = readme.partition(begin)
    _, _, tail = rest.partition(end + "\n")
    return head + block + tail


def quick_start_commands(readme: str) -> list[tuple[str, str]]:
    """The quick start's two commands, each with the tox environment it runs: what a newcomer types."""
    return [(found.group(1), found.group(0))
            for found in re.finditer(r"^python3 -m venv \.venv && .*tox -e (\S+)$", readme, re.M)]


def tox_dependencies(tox_ini: str) -> dict[str, list[str]]:
    """The dependencies of the two environments the quick start builds (``[testenv:matrix]``, ``[testenv:tests]``):
    what decides their size and set-up time, so a measurement of other ones is stale."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(tox_ini)
    return {env: sorted(line.strip() for line in parser.get(f"testenv:{env}", "deps", fallback="").splitlines()
                        if line.strip() and not line.strip().startswith("#"))
            for env in ("matrix", "tests")}


def _gb(count: float) -> str:
    return f"{count / 1e9:.1f} GB"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 180 else f"{seconds:.0f} s"


def render_cost(measured: Sequence[dict], deps: dict[str, list[str]]) -> str:
    """The README's "What it costs", from the measurements of ``benchmarks/setup_cost.py``: from PyPI (the CUDA
    build of torch) and from a local CPU wheel, whichever were measured."""
    pins = dict(re.match(r"([A-Za-z0-9_.-]+)==(\S+)", d).groups() for d in deps.get("tests", []) if "==" in d)
    holding = f"torch {pins.get('torch', '?')} and paddle {pins.get('paddlepaddle', '?')}"
    lines = [COST_BEGIN, ""]
    said = [f"**What it costs.** Each command builds its own tox environment holding {holding} (the first adds "
            "PaConvert)."]
    by_source = {m["torch_from"]: m for m in measured}
    ran = None
    for source, where in (("PyPI", "From PyPI"), ("this machine's pip configuration", "Where pip finds torch's "
                                                  "CPU wheel (`PIP_FIND_LINKS` naming a folder that holds it)")):
        found = by_source.get(source)
        if found is None:
            continue
        total = sum(c["seconds"] for c in found["commands"])
        running = sum(c["ran_seconds"] or 0 for c in found["commands"])
        builds = sorted({c["torch_build"] or "?" for c in found["commands"]})
        envs = " and ".join(_gb(c["env_bytes"]) for c in found["commands"])
        disk = found["clone_bytes"] + found["pip_cache_growth_bytes"]
        kind = "its CUDA build" if any(b.startswith("cu") for b in builds) else "its CPU build"
        cache = found["pip_cache_growth_bytes"]
        said.append(f"{where}, torch is {kind} ({', '.join(builds)}; it runs on CPU) and the two commands took "
                    f"**{_gb(disk)} of disk and {_minutes(total)}** on a fresh {found['cores']}-core machine "
                    f"(the environments {envs}" + (f", pip's download cache {_gb(cache)}" if cache else "")
                    + f"; {_minutes(total - running)} of it downloading and installing).")
        ran = ran or found
    if ran is not None:
        matrix, tests = ran["commands"][0], ran["commands"][-1]
        said.append(f"Once installed, the matrix itself runs in {_minutes(matrix['ran_seconds'] or 0)} and the "
                    f"tests in {_minutes(tests['ran_seconds'] or 0)} on {ran['cores']} cores (measured by "
                    f"`benchmarks/setup_cost.py` on commit {ran['commit']}, {ran['date']}).")
    else:
        said.append("Not measured yet: run `python benchmarks/setup_cost.py --record docs/setup-cost.json`.")
    lines += _wrapped(" ".join(said)) + ["", COST_END]
    return "\n".join(lines) + "\n"


def _wrapped(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


def current_cost(root: Path | str = ".") -> str:
    """The cost block as ROOT/docs/setup-cost.json gives it."""
    import json

    root = Path(root)
    path = root / COST_FILE
    measured = json.loads(path.read_text(encoding="utf-8")).get("measured", []) if path.is_file() else []
    return render_cost(measured, tox_dependencies((root / "tox.ini").read_text(encoding="utf-8")))


def current_block(root: Path | str = ".") -> str:
    """The block as the catalogue in ROOT/cases and the committed results in ROOT/reports/results give it."""
    from conformance.case.load import load_cases
    from conformance.records.results import latest_by_cell, load_records
    from conformance.report.render import default_results

    root = Path(root)
    cases, _ = load_cases([root / "cases"])
    records = list(latest_by_cell(load_records(_committed(default_results(root / "reports" / "results")))).values())
    return render_block(cases, records)


def _committed(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if p.name != "latest.jsonl"]


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.report.readme README.md``: the block written into that README."""
    from conformance.outputs import OutputError, write_file

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m conformance.report.readme README.md", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        text = with_block(path.read_text(encoding="utf-8"), current_block(path.parent))
        text = with_block(text, current_cost(path.parent), COST_BEGIN, COST_END)
        write_file(path, text)
    except (OSError, ValueError, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"README numbers: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
