"""``conformance scan``: the catalogue's hazards in the user's own code, for a port, an upgrade or an audit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.settings import BAD_INPUT

__all__ = ["add_command"]

EPILOG = """\
Questions:
  audit    (no --to) what raises, is wrong, warns, hangs or crashes on the version the code is written for
  port     --to paddle==3.3.1 (another framework): what behaves otherwise there, and what PaConvert does
  upgrade  --from torch==2.4.1 --to torch==2.15.0: what changed between the two releases
Each answer comes from the committed results of the case a place stands for; a write inside a compiled
function is judged by the compiled columns.  `# noqa: IC101` on a line silences a code there.

Exit status: 0 nothing found; 1 something found; 2 bad input (one line)."""


def add_command(sub: Any) -> None:
    from conformance.scan.formats import FORMATS

    scan = sub.add_parser("scan", help="find the catalogue's hazards in your own torch or paddle code, line by line",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    scan.add_argument("paths", nargs="+", metavar="PATH", help="files or folders of Python code, or - for stdin")
    scan.add_argument("--from", dest="source", metavar="FW[==VERSION]",
                      help="what the code is written for (torch==2.4.1, torch==2.4, torch) [each file: the "
                           "framework it imports, at its newest version in the data]")
    scan.add_argument("--to", dest="target", metavar="FW[==VERSION]",
                      help="the framework and version the code moves to (another framework: a port; the same: "
                           "an upgrade); none: an audit")
    scan.add_argument("--select", default="", metavar="CODES", help="only these codes (comma-separated prefixes)")
    scan.add_argument("--ignore", default="", metavar="CODES", help="not these codes (comma-separated prefixes)")
    scan.add_argument("--format", default="text", choices=sorted(FORMATS), help="[text]")
    scan.add_argument("--output", metavar="FILE", help="write the report here instead of standard output")
    scan.add_argument("--data", metavar="FILE", help="the catalogue data to judge with [the package's own]")
    scan.add_argument("--list-rules", action="store_true", help="list the rules and the cases each stands for")
    scan.set_defaults(func=run)

    data = sub.add_parser("scan-data", help="write the scanner's data from the committed results, kept programs "
                                            "and cases (tox -e report)")
    data.add_argument("results", nargs="*", help="results files [default: reports/results/*.jsonl except "
                                                 "latest.jsonl]")
    data.add_argument("--cases", nargs="*", metavar="DIR", help="case folders [default: cases]")
    data.add_argument("--output", default=None, metavar="FILE",
                      help="where to write it [conformance/scan/catalogue.json of this package]")
    data.set_defaults(func=run_data)


def _codes(text: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def run(args: argparse.Namespace) -> int:
    from conformance.outputs import OutputError, check_writable, write_file
    from conformance.scan.catalogue import Catalogue, CatalogueError
    from conformance.scan.formats import render
    from conformance.scan.question import Question, QuestionError, parse_side
    from conformance.scan.rules import RULES
    from conformance.scan.scanner import Scanner

    try:
        catalogue = Catalogue.load(args.data)
        source = parse_side(args.source, catalogue, "--from") if args.source else None
        target = parse_side(args.target, catalogue, "--to") if args.target else None
        if source is not None and target is not None and source == target:
            raise QuestionError(f"--from and --to name the same version: {source}")
        known = tuple(r.code for r in RULES)
        for option, codes in (("--select", _codes(args.select)), ("--ignore", _codes(args.ignore))):
            for code in codes:
                if not any(k.startswith(code) for k in known):
                    raise QuestionError(f"{option}: no rule code starts with {code!r}; codes: {', '.join(known)}")
        missing = [p for p in args.paths if p != "-" and not Path(p).exists()]
        if missing:
            raise QuestionError(f"no such path: {', '.join(missing)}")
        if args.paths.count("-") > 1:
            raise QuestionError("- (standard input) can be given once")
        if args.output:
            folder = Path(args.output).parent
            if not folder.is_dir():
                raise QuestionError(f"--output {args.output}: no such folder {folder}")
            check_writable(args.output)
    except (CatalogueError, QuestionError, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    if args.list_rules:
        text = _rules(catalogue)
        print(text, end="")
        return 0
    scanner = Scanner(catalogue, source=source, target=target, select=_codes(args.select),
                      ignore=_codes(args.ignore))
    result = scanner.scan_paths(args.paths)
    described = (Question(source, target).describe() if source is not None
                 else f"{'port' if target else 'audit'} of code written for the framework each file imports"
                      + (f" to {target}" if target else "") + " (newest versions in the data)")
    report = render(result, described, args.format)
    if args.output:
        try:
            write_file(args.output, report)
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return BAD_INPUT
    else:
        sys.stdout.write(report)
    return 1 if result.findings else 0


def _rules(catalogue: Any) -> str:
    from conformance.scan.rules import RULES

    lines = []
    for rule in RULES:
        cases = sorted({k.case for fw in ("torch", "paddle") for k in catalogue.index(fw).get(rule.code, ())
                        if catalogue.cases[k.case].role == "hazard"})
        lines.append(f"{rule.code}  {rule.title}")
        lines.append(f"       cases: {', '.join(cases) if cases else '(none of the hazards)'}")
    return "\n".join(lines) + "\n"


def run_data(args: argparse.Namespace) -> int:
    from conformance.adapter import adapter_classes
    from conformance.case.load import load_cases
    from conformance.outputs import OutputError
    from conformance.records.programs import load_programs
    from conformance.records.results import ResultsError, latest_by_cell, load_records
    from conformance.report.render import default_results
    from conformance.scan.build import DATA_FILE, build_data, write_data

    paths = [Path(p) for p in args.results] or default_results("reports/results")
    if not paths:
        print("error: no results files in reports/results", file=sys.stderr)
        return BAD_INPUT
    try:
        records = list(latest_by_cell(load_records(paths)).values())
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    cases, errors = load_cases(args.cases or ["cases"])
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return BAD_INPUT
    data = build_data(cases, records, load_programs(paths), adapter_classes())
    try:
        written = write_data(data, args.output or DATA_FILE)
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(f"scanner data: {written} ({len(data['cases'])} cases, {sum(len(v) for v in data['spellings'].values())} "
          f"spellings, {len(data['ops'])} ops)")
    return 0
