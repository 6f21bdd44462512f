"""The ``conformance`` command: run, validate, list, show (and report, diff)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from conformance.records.baseline import Baselines
from conformance.case.load import load_cases
from conformance.settings import DEFAULT_BASELINES, DEFAULT_RESULTS, DEFAULT_SUMMARY, DEVICES

__all__ = ["main"]


def _bad_input(paths: Sequence[str]) -> int:
    """Print every case-file problem; return how many there were."""
    cases, errors = load_cases(paths)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return len(errors)


def cmd_run(args: argparse.Namespace) -> int:
    import pytest

    paths = args.paths or ["cases"]
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        print(f"error: no such path: {', '.join(missing)}", file=sys.stderr)
        return 2
    bad = _bad_input(paths)
    results = Path(args.results)
    argv = [*paths, "-p", "conformance.plugin", "-p", "no:cacheprovider", "--results", str(results),
            "--summary", args.summary, "-o", "python_files=", "--rootdir", ".", "-c", "/dev/null"]
    argv += [f"--framework={f}" for f in args.framework or []]
    argv += [f"--device={d}" for d in args.device or []]
    if args.timeout:
        argv += ["--case-timeout", str(args.timeout)]
    if args.workers:
        argv += ["-n", args.workers]
    if args.baselines:
        argv += ["--baselines", args.baselines]
    if args.update_baselines:
        argv += ["--update-baselines"]
    if args.no_baselines:
        argv += ["--no-baselines"]
    argv += ["-q", "--tb=short", "-rN"] if not args.verbose else ["-v"]
    status = pytest.main(argv)
    from conformance.records.results import read_records

    records = list(read_records([results])) if results.exists() else []
    errors = [r for r in records if r["outcome"] == "error"]
    print(Path(args.summary).read_text() if Path(args.summary).exists() else "no summary written")
    if bad:
        print(f"{bad} case file(s) could not be read (see above)", file=sys.stderr)
        return 2
    if status in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED):
        return int(status)
    if not records:
        print("error: no cell ran", file=sys.stderr)
        return 1
    if errors:
        print(f"{len(errors)} cell(s) hit a harness error", file=sys.stderr)
        return 1
    baseline_dir = Path(args.baselines or DEFAULT_BASELINES)
    if not (args.no_baselines or args.update_baselines) and baseline_dir.is_dir():
        store = Baselines(baseline_dir)
        changes = [change for record in records if (change := store.check(record))]
        if changes:
            print(f"{len(changes)} cell(s) changed against the baselines in {baseline_dir}", file=sys.stderr)
            return 1
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    paths = args.paths or ["cases"]
    cases, errors = load_cases(paths)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"{len(cases)} valid case(s), {len(errors)} invalid file(s)")
    return 1 if errors else 0


def cmd_list(args: argparse.Namespace) -> int:
    cases, errors = load_cases(args.paths or ["cases"])
    for case in sorted(cases, key=lambda c: (c.topic, c.id)):
        print(f"{case.topic}/{case.id}  {case.title}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


def cmd_show(args: argparse.Namespace) -> int:
    from conformance.adapter import adapter_classes, is_installed
    from conformance.workers.pool import Worker

    cases, errors = load_cases(args.paths or ["cases"])
    matches = [c for c in cases if c.id == args.case]
    if not matches:
        print(f"error: no case with id {args.case!r}", file=sys.stderr)
        return 2
    cls = adapter_classes().get(args.framework)
    if cls is None or not is_installed(cls):
        print(f"error: framework {args.framework!r} is not installed or has no adapter", file=sys.stderr)
        return 2
    case = matches[0]
    worker = Worker(args.framework)
    try:
        reply = worker.request({"cmd": "render", "device": args.device, **case.to_message()},
                               timeout=120)
    finally:
        worker.close()
    if "source" not in reply:
        print(f"error: {reply.get('message')}", file=sys.stderr)
        return 1
    print(reply["source"], end="")
    if reply.get("unsupported"):
        print(f"# unsupported from here on: {reply['unsupported']}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import os

    from conformance.records.results import ResultsError
    from conformance.report.heatmap import write_heatmap
    from conformance.report.output import OutputError, check_writable, write_text
    from conformance.report.render import case_attributions, default_results, load_sources, render_report

    paths = [Path(p) for p in args.results] or default_results(Path(DEFAULT_RESULTS).parent)
    if not paths:
        print(f"error: no results files in {Path(DEFAULT_RESULTS).parent}; run `conformance run` first",
              file=sys.stderr)
        return 2
    unreadable = [str(p) for p in paths if not p.is_file() or not os.access(p, os.R_OK)]
    if unreadable:
        print(f"error: cannot read results file(s): {', '.join(unreadable)}", file=sys.stderr)
        return 2
    try:
        records, sources = load_sources(paths)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: no records in {', '.join(map(str, paths))}", file=sys.stderr)
        return 2
    output = Path(args.output)
    if args.plot == "":  # default: beside the report, named after it
        args.plot = str(output.with_suffix(".png"))
    plot_link = plot_note = None
    try:
        check_writable(output)
        if args.plot:
            check_writable(args.plot)
            plot_note = write_heatmap(records, args.plot)
            if plot_note is None:
                plot_link = Path(os.path.relpath(Path(args.plot).resolve(), output.parent.resolve())).as_posix()
        write_text(output, render_report(records, sources, plot=plot_link, plot_note=plot_note,
                                         attributions=case_attributions(records), link_base=output.parent))
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {output}" + (f"\nplot: {args.plot}" if plot_link else ""))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from conformance.report.diff import BadInput, compare, exit_status, load_side, render_markdown, render_text
    from conformance.report.output import OutputError, check_writable, write_text

    try:
        comparison = compare(load_side(args.old), load_side(args.new))
        if args.markdown:
            check_writable(args.markdown)  # before printing, so a failed run prints only the error
    except (BadInput, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render_text(comparison), end="")
    if args.markdown:
        try:
            write_text(args.markdown, render_markdown(comparison))
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return exit_status(comparison)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the matrix and write results and the summary")
    run.add_argument("paths", nargs="*", help="case files or directories [default: cases]")
    run.add_argument("--framework", action="append", help="framework (repeatable) [default: installed]")
    run.add_argument("--device", action="append", choices=DEVICES, help="device (repeatable)")
    run.add_argument("--results", default=DEFAULT_RESULTS, help=f"results file [{DEFAULT_RESULTS}]")
    run.add_argument("--summary", default=DEFAULT_SUMMARY, help=f"summary table [{DEFAULT_SUMMARY}]")
    run.add_argument("--timeout", type=float, help="seconds per cell before the worker is killed")
    run.add_argument("-n", "--workers", help="pytest-xdist processes (a number or 'auto')")
    run.add_argument("--baselines", help="baseline directory to check outcomes against")
    run.add_argument("--update-baselines", action="store_true", help="rewrite the baselines from this run")
    run.add_argument("--no-baselines", action="store_true", help="ignore baselines")
    run.add_argument("-v", "--verbose", action="store_true", help="one line per cell")
    run.set_defaults(func=cmd_run)

    validate = sub.add_parser("validate", help="check case files without running them")
    validate.add_argument("paths", nargs="*")
    validate.set_defaults(func=cmd_validate)

    listing = sub.add_parser("list", help="list the cases")
    listing.add_argument("paths", nargs="*")
    listing.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="print the framework code the adapter runs for a case")
    show.add_argument("case")
    show.add_argument("--framework", required=True)
    show.add_argument("--device", default="cpu", choices=DEVICES)
    show.add_argument("--paths", nargs="*", help="where to look for the case [default: cases]")
    show.set_defaults(func=cmd_show)

    report = sub.add_parser("report", help="render the compatibility report from results files")
    report.add_argument("results", nargs="*",
                        help="results files [default: reports/results/*.jsonl except latest.jsonl, "
                             "else latest.jsonl]")
    report.add_argument("--output", default="reports/COMPATIBILITY.md", help="markdown report [%(default)s]")
    report.add_argument("--plot", default="",
                        help="heatmap PNG, drawn when matplotlib is installed [the output's name with .png]")
    report.add_argument("--no-plot", dest="plot", action="store_const", const=None, help="draw no heatmap")
    report.set_defaults(func=cmd_report)

    diff = sub.add_parser("diff", help="list every cell whose outcome changed between two files")
    diff.add_argument("old", help="results (.jsonl) or baseline (.json) file")
    diff.add_argument("new", help="results (.jsonl) or baseline (.json) file")
    diff.add_argument("--markdown", help="also write the changes as markdown tables to this file")
    diff.set_defaults(func=cmd_diff)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
