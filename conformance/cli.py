"""The ``conformance`` command: run, validate, list, show (and report, diff, upgrades, mode-changes, remedies,
porting, fuzz).

`conformance run` is pytest with the plugin asked for (`--conformance`): its exit status is
pytest's, except for the statuses of its own below, so the command and a plain pytest run always
agree on the verdict.

Exit statuses of `conformance run`:
  0    every cell ran and matched its baseline, or has none: a column no baseline checked is named
       at the end ("unchecked: ...") and in the summary; findings are not failures
  1    a cell changed against its baseline, or the harness failed on a cell (outcome error)
  2    bad case files (the other cases still ran), or a usage error (one line)
  3    pytest's internal error
  5    no cell ran (the message says why)
  130  interrupted by SIGINT or SIGTERM; the summary is marked interrupted
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

from conformance.settings import (BAD_INPUT, DEFAULT_RESULTS, DEFAULT_SUMMARY, DEVICES, INTERRUPTED, OptionError,
                                  check_framework_modes, check_frameworks, check_modes, results_file,
                                  timeout_argument)

__all__ = ["main"]


def _check_run(args: argparse.Namespace, paths: Sequence[str]) -> None:
    """Refuse, in one line, what would only fail after the frameworks were imported."""
    from conformance.adapter import adapter_classes

    from conformance.outputs import check_outputs

    from conformance.workers.faults import check_memory_settings

    check_frameworks(args.framework or [], adapter_classes())
    check_memory_settings()  # CONFORMANCE_*_MEMORY, read now rather than by a worker or the reference
    environment_modes = [m.strip() for m in os.environ.get("CONFORMANCE_MODES", "").split(",") if m.strip()]
    check_modes(args.mode or environment_modes, adapter_classes())
    check_framework_modes(args.framework or [], args.mode or environment_modes, adapter_classes())
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise OptionError(f"no such path: {', '.join(missing)}")
    check_outputs(Path(results_file(args.results)), Path(args.summary))


#: pytest's own plugins a conformance run has no use for; each costs time per cell or per run.
_UNUSED_PYTEST_PLUGINS = ("cacheprovider", "unraisableexception", "threadexception", "logging", "warnings",
                          "junitxml", "doctest", "unittest", "skipping", "subtests", "stepwise", "pastebin",
                          "legacypath", "tmpdir", "monkeypatch", "recwarn", "setuponly", "setupplan")


def _pytest_args(args: argparse.Namespace, paths: Sequence[str]) -> list[str]:
    # Only what a run needs: our plugin, and xdist's for -n (others installed beside them, such as
    # hypothesis's, would only add their start-up and closing time to every run); no capture of the
    # file descriptors, log records or warnings around each cell (the cells run in the workers, which
    # record their output and warnings; sys-level capture only, which costs a swap of sys.stdout and is
    # what lets pytest print the running count of cells, [120/240]) and no hunt for unraisable exceptions
    # (full garbage collections) at the end; no conftest.py files looked for beside every case file.
    argv = [*paths, "--conformance", "--disable-plugin-autoload", "-p", "conformance.plugin", "--capture=sys",
            "--noconftest",
            *(f"-pno:{name}" for name in _UNUSED_PYTEST_PLUGINS),
            f"--conformance-summary={args.summary}", "-o", "python_files=", "-o", "console_output_style=count",
            "--rootdir", ".", "-c", "/dev/null"]
    argv += [f"--conformance-results={args.results}"] if args.results else []
    argv += [f"--conformance-framework={f}" for f in args.framework or []]
    argv += [f"--conformance-device={d}" for d in args.device or []]
    argv += [f"--conformance-mode={m}" for m in args.mode or []]
    argv += [f"--conformance-case-timeout={args.timeout!r}"] if args.timeout is not None else []
    argv += ["-p", "xdist.plugin", "-n", args.workers] if args.workers else []
    argv += [f"--conformance-baselines={args.baselines}"] if args.baselines else []
    for flag in ("update_baselines", "prune_baselines", "no_baselines", "resume"):
        argv += [f"--conformance-{flag.replace('_', '-')}"] if getattr(args, flag) else []
    return argv + (["-v"] if args.verbose else ["-q", "--tb=short", "-rN"])


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM takes the path of Ctrl-C (KeyboardInterrupt): pytest ends the run, writes a summary
    marked interrupted and closes the workers.  SIGINT is re-armed in case it was inherited ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    stopping = False

    def interrupt(signum: int, frame: Any) -> None:
        nonlocal stopping
        if stopping:  # the run is already stopping: a second signal must not cut its summary short
            os.write(2, b"conformance: already stopping; writing the summary of the cells that finished\n")
            return
        stopping = True
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_status(status: int, bad: int) -> int:
    """pytest's exit status, with ``conformance run``'s own statuses for interrupts and bad input."""
    import pytest

    if status == pytest.ExitCode.INTERRUPTED:
        print("error: interrupted; the summary holds only the cells that finished", file=sys.stderr)
        return INTERRUPTED
    if status == pytest.ExitCode.USAGE_ERROR:
        return BAD_INPUT
    if bad and status != pytest.ExitCode.INTERNAL_ERROR:
        print(f"{bad} case file(s) could not be read (see above)", file=sys.stderr)
        return BAD_INPUT
    return int(status)


def _frameworks(args: argparse.Namespace) -> list[str]:
    from conformance.adapter import adapter_classes, is_installed

    classes = adapter_classes()
    if args.framework:
        return list(dict.fromkeys(args.framework))
    if os.environ.get("CONFORMANCE_FRAMEWORKS", "").strip():
        return [f.strip() for f in os.environ["CONFORMANCE_FRAMEWORKS"].split(",") if f.strip()]
    return [name for name, cls in classes.items() if is_installed(cls)] or list(classes)


def _cells(args: argparse.Namespace, paths: Sequence[str], frameworks: list[str]) -> int:
    """How many cells the run will collect: case files x devices x each framework's modes."""
    from conformance.adapter import adapter_classes
    from conformance.case.files import find_case_files
    from conformance.settings import EAGER, modes_for

    classes = adapter_classes()
    devices = args.device or [d for d in os.environ.get("CONFORMANCE_DEVICES", "").split(",") if d.strip()] or DEVICES
    modes = args.mode or [m for m in os.environ.get("CONFORMANCE_MODES", "").split(",") if m.strip()] or [EAGER]
    per_case = len(devices) * sum(len(modes_for(modes, getattr(classes.get(f), "modes", {}))) for f in frameworks)
    return len(find_case_files(paths)) * per_case


def cmd_run(args: argparse.Namespace) -> int:
    from conformance.settings import parallel_processes
    from conformance.workers.pool import WorkerPool

    paths = args.paths or ["cases"]
    try:
        _check_run(args, paths)
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    frameworks = _frameworks(args)
    if args.workers == "auto":  # as many processes as can pay, and say what was chosen
        count, why = parallel_processes(_cells(args, paths, frameworks), len(frameworks))
        print(f"conformance: -n auto: {why}")
        args.workers = str(count) if count > 1 else None
    pool = None
    invalid: list[str] = []
    with _interruptible():
        try:
            if args.workers in (None, "0"):
                # A serial run: the workers and the reference start first, before this process imports
                # the rest of the package and pytest, so that their imports overlap all of it; the
                # plugin's engine takes them over.
                pool = WorkerPool()
                pool.start_run(frameworks)
            from conformance.engine import Engine, Prepared

            prepared = Prepared(Engine(pool) if pool is not None else None)
            invalid = prepared.invalid
            import pytest

            status = pytest.main(_pytest_args(args, paths), plugins=[prepared])
        finally:
            if pool is not None:
                pool.close()
    for error in invalid:  # reported by the items of the files that could not be read
        print(f"error: {printable(error)}", file=sys.stderr)
    # The counts, the findings and where the table is were printed by the run itself (the table has a row
    # per case: it is in the summary file, not on the terminal).
    return _run_status(status, len(invalid))


def printable(text: object) -> str:
    """Text for a terminal: characters that are not printable (an escape sequence in a case's title, a
    bidirectional override) are shown as escapes instead of acting on the terminal."""
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))


def _missing(paths: list[str]) -> int | None:
    """Exit 2, with one line, when a path named to read cases from is not there at all."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if not missing:
        return None
    print(f"error: no such file or folder: {printable(', '.join(missing))}", file=sys.stderr)
    return 2


def cmd_validate(args: argparse.Namespace) -> int:
    from conformance.case.load import find_case_files, load_cases

    paths = args.paths or ["cases"]
    if (status := _missing(paths)) is not None:
        return status
    if not find_case_files(p for p in paths if Path(p).exists()) and all(Path(p).exists() for p in paths):
        print(f"error: no case file (*.yaml, *.yml) under {', '.join(paths)}", file=sys.stderr)
        return 1
    cases, errors = load_cases(paths)
    unknown = _unknown_remedies(cases, paths)
    for error in [*errors, *unknown]:
        print(f"error: {printable(error)}", file=sys.stderr)
    invalid = {str(e.path) for e in errors} | {str(p.path) for p in unknown}
    print(f"{len(cases) - len({str(p.path) for p in unknown})} valid case(s), {len(invalid)} invalid file(s)")
    return 1 if invalid else 0


def _unknown_remedies(cases: Sequence[Any], paths: Sequence[str]) -> list[Any]:
    """The ``remedy:`` entries of *cases* that name no case: of those given, of the folder a case file given
    alone lies in, or of ``cases/`` where there is one (a remedy is often in another file)."""
    from conformance.case.load import load_cases
    from conformance.report.remedies import check_remedies

    known = {case.id: case for case in cases}
    catalogues = {Path(p).parent for p in paths if Path(p).is_file()} | ({Path("cases")} if Path("cases").is_dir()
                                                                         else set())
    for folder in sorted(catalogues):
        known.update({case.id: case for case in load_cases([folder])[0] if case.id not in known})
    mine = {str(case.path) for case in cases}
    return [p for p in check_remedies(list(known.values()), []).unknown if str(p.path) in mine]


def cmd_list(args: argparse.Namespace) -> int:
    from conformance.case.load import load_cases

    if (status := _missing(args.paths or ["cases"])) is not None:
        return status
    cases, errors = load_cases(args.paths or ["cases"])
    for case in sorted(cases, key=lambda c: (c.topic, c.id)):
        print(printable(f"{case.topic}/{case.id}  {case.title}"))
    for error in errors:
        print(f"error: {printable(error)}", file=sys.stderr)
    return 1 if errors else 0


def cmd_show(args: argparse.Namespace) -> int:
    from conformance.adapter import adapter_classes, installed, is_installed, source_version
    from conformance.case.load import load_cases
    from conformance.case.kept import load_checked
    from conformance.program.rendered import Rendered, case_key, render_all, sent_to
    from conformance.workers.pool import Worker

    cases, errors = load_cases(args.paths or ["cases"], load=load_checked)
    topic, _, wanted = args.case.rpartition("/")  # "seed/rnn_hidden_reuse", as `conformance list` prints it
    matches = [c for c in cases if c.id == wanted and (not topic or c.topic == topic)]
    twice = [e for e in errors if f"duplicate case id {wanted!r}" in str(e)]
    if matches and twice:  # as run refuses it: which file is the case is the user's to say
        print(f"error: case id {wanted!r} is defined in {1 + len(twice)} files ({matches[0].path}, "
              f"{', '.join(str(e.path) for e in twice)}); give --paths the one you mean", file=sys.stderr)
        return 2
    if not matches:
        where = ", ".join(args.paths or ["cases"])
        invalid = [e for e in errors if Path(str(getattr(e, "path", ""))).stem == wanted]
        if invalid:  # the file is there, and not a case: what is wrong with it is the answer
            print(f"error: {printable(str(invalid[0]))}", file=sys.stderr)
            return 2
        files = [e for e in errors if Path(str(getattr(e, "path", ""))).is_file()]
        hint = f" ({len(files)} invalid file(s) there: conformance validate {where})" if files else ""
        print(f"error: no case with id {args.case!r} in {where}{hint}; a case elsewhere is found with --paths DIR",
              file=sys.stderr)
        return 2
    cls = adapter_classes().get(args.framework)
    if cls is None or not is_installed(cls):
        print(f"error: framework {args.framework!r} is not installed or has no adapter", file=sys.stderr)
        return 2
    own_modes = list(getattr(cls, "modes", {}))
    if args.mode != "eager" and args.mode not in own_modes:  # as run refuses it: no cell of this mode exists
        print(f"error: {args.framework} has no mode {args.mode!r} (its modes: {', '.join(['eager', *own_modes])})",
              file=sys.stderr)
        return 2
    case = matches[0]
    written_by = source_version(args.framework)  # a converter's programs are also the torch that wrote them
    version = f"{installed(args.framework)[1]}" + (f"+{cls.source}{written_by}" if written_by else "")
    kept = None if args.no_cache else Rendered(args.framework, version, args.device, args.mode)
    reply = kept.get(case) if kept is not None else None
    if reply is None:  # the framework is imported: every case loaded is rendered now, and kept
        worker = Worker(args.framework)
        # A converter converts each program in a process of its own, seconds a case: only this one is rendered.
        others = [] if cls.isolated else [c for c in cases if c is not case]
        try:
            if kept is not None:
                rendered = render_all(sent_to(worker), [case, *others], args.device, args.mode)
                kept.add(rendered)
                reply = rendered.get(case_key(case))
            if reply is None:
                reply = worker.request({"cmd": "render", "device": args.device, "mode": args.mode,
                                        **case.to_message()}, timeout=120)
        finally:
            worker.close()
    if "source" not in reply:
        print(f"error: {reply.get('message')}", file=sys.stderr)
        return 1
    if args.no_run:
        print(reply["source"], end="")  # comments and literals hold no character that acts on a terminal
        if reply.get("unsupported"):
            print(printable(f"# unsupported from here on: {reply['unsupported']}"))
        return 0
    return _show_judged(case, args, reply)


#: ``conformance show``'s exit status for a cell the harness could not run or judge (not a framework's doing).
SHOW_HARNESS_ERROR = 3


def _show_judged(case: Any, args: argparse.Namespace, reply: dict[str, Any]) -> int:
    """The reproducer with the reference's value beside each print, then the cell run and judged as
    ``conformance run`` does, ending with the verdict: exit 1 when the framework is wrong."""
    from conformance.engine import Engine
    from conformance.judge.classify import Partly, Unjudged
    from conformance.records.record import Record
    from conformance.records.selfcheck import self_checking
    from conformance.records.verdict import annotate, differs_from_memory_model, memory_model, verdict

    engine = Engine(timeout=args.timeout)
    try:
        record = Record.from_dict(engine.run_cell(case, args.framework, args.device, args.mode))
        reference = engine.reference(case)[0] if record.outcome != "unsupported" else None
    finally:
        engine.close()
    expected = {name: value for name, value in (reference or {}).items()
                if not isinstance(value, (Unjudged, Partly))}
    # Where the judge used a framework's documented copies (a storage model of its own), its values are
    # the ones beside the prints; of a value partly undetermined, None stands for an element no one wrote.
    expected.update({str(o["name"]): o["reference"] for o in record.observations if "reference" in o})
    follows_memory = {name: memory_model(record) for name in differs_from_memory_model(record)}
    text = annotate(reply["source"], expected, follows_memory)
    if reply.get("unsupported"):
        text += printable(f"# unsupported from here on: {reply['unsupported']}") + "\n"
    lines, wrong = verdict(record, expected)
    text += printable("\n".join(lines)) + "\n"
    print(self_checking(text, record), end="")  # python repro.py exits 1 where the framework is wrong
    if wrong or record.outcome in ("crash", "timeout"):  # the cells a user must read (run's findings)
        return 1
    return SHOW_HARNESS_ERROR if record.outcome in ("error", "skipped") else 0


def cmd_report(args: argparse.Namespace) -> int:
    import os

    from conformance.records.results import ResultsError
    from conformance.report.heatmap import write_heatmap, write_overview
    from conformance.outputs import OutputError, check_writable, write_file
    from conformance.report.render import (case_attributions, default_results, load_sources, plot_name,
                                           render_pages, render_report, topic_pages)

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
            plot_note = write_overview(records, args.plot)
            if plot_note is None:
                plot_link = Path(os.path.relpath(Path(args.plot).resolve(), output.parent.resolve())).as_posix()
        attributions = case_attributions(records)
        if args.one_page:
            write_file(output, render_report(records, sources, plot=plot_link, plot_note=plot_note,
                                             attributions=attributions, link_base=output.parent))
        else:
            folder = output.parent / pages_folder(output)
            drawn = set()
            if plot_link is not None:  # each topic's cases against the eager columns, beside its page
                for name, (topic, cases) in topic_pages(records).items():
                    if write_heatmap(records, folder / plot_name(name), cases=cases,
                                     title=f"{topic or 'no topic'}: eager outcome per case and column") is None:
                        drawn.add(name)
            index, pages = render_pages(records, sources, index=output.name, pages=folder.name, plot=plot_link,
                                        plot_note=plot_note, attributions=attributions, link_base=output.parent,
                                        topic_plots=drawn)
            for name in pages:
                check_writable(folder / name)
            write_file(output, index)
            for name, page in pages.items():
                write_file(folder / name, page)
            _remove_stale_pages(folder, set(pages))
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {output}" + ("" if args.one_page else f" (topic pages in {folder}{os.sep})")
          + (f"\nplot: {args.plot}" if plot_link else ""))
    return 0


def pages_folder(output: Path) -> str:
    """The folder beside the index that holds its topic pages: ``COMPATIBILITY.md`` -> ``compatibility``."""
    name = output.stem.lower()
    return name if name != output.name else f"{name}-pages"


def _remove_stale_pages(folder: Path, written: set[str], marker: str | None = None) -> None:
    """Remove the pages an earlier report wrote for topics that are gone: files of the folder that start
    with the report's own first line (*marker*, by default ``conformance report``'s).  Anything else in the
    folder is left as it is."""
    from conformance.report.render import GENERATED

    for path in folder.glob("*.md"):
        if path.name in written or not path.is_file() or path.is_symlink():
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                first = handle.readline().rstrip("\n")
        except (OSError, UnicodeDecodeError):
            continue
        if first == (marker or GENERATED):
            path.unlink()
            from conformance.report.render import plot_name

            picture = path.parent / plot_name(path.name)  # its heatmap, drawn beside it
            if picture.is_file() and not picture.is_symlink():
                picture.unlink()


def cmd_diff(args: argparse.Namespace) -> int:
    from conformance.report.diff import (BadInput, compare, exit_status, load_side, render_markdown, render_text,
                                         split_modes)
    from conformance.outputs import OutputError, check_writable, write_file

    from conformance.report.upgrades import committed_side

    def side(name: str) -> Any:
        """A file, or a framework version by name (``torch==2.4.1``): its committed results files."""
        return committed_side(name, args.committed) if "==" in name and not Path(name).exists() else load_side(name)

    try:
        control = side(args.numpy_control) if args.numpy_control else None
        if args.modes:
            if args.new is not None:
                raise BadInput("--modes compares the eager and compiled columns of ONE results file")
            if control is not None:
                raise BadInput("--numpy-control controls nothing with --modes: its two sides are one results "
                               "file, run under one NumPy")
            comparison = compare(*split_modes(side(args.old)))
        elif args.nearest:
            if args.new is not None:
                raise BadInput("--nearest compares ONE results file with the committed columns nearest it")
            from conformance.report.upgrades import nearest_side

            mine = side(args.old)
            comparison = compare(nearest_side(mine, args.committed), mine, control, named=True)
        elif args.new is None:
            raise BadInput("diff needs two files or versions (or one file with --modes or --nearest)")
        else:
            comparison = compare(side(args.old), side(args.new), control, named=True)
        if args.markdown:
            check_writable(args.markdown)  # before printing, so a failed run prints only the error
    except (BadInput, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render_text(comparison), end="")
    if args.markdown:
        try:
            write_file(args.markdown, render_markdown(comparison))
        except OutputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return exit_status(comparison)


def cmd_upgrades(args: argparse.Namespace) -> int:
    from conformance.outputs import OutputError, check_writable, write_file
    from conformance.report.diff import BadInput
    from conformance.report.upgrades import render_upgrades, upgrade_chain

    paths = _results_paths(args.results)
    controls = sorted(Path(args.controls).glob("*.jsonl")) if Path(args.controls).is_dir() else []
    try:
        check_writable(args.output)
        chain = upgrade_chain(paths, controls)
        if not chain:
            raise BadInput(f"no framework has two versions in {', '.join(map(str, paths)) or 'no files'}")
        write_file(args.output, render_upgrades(chain))
    except (BadInput, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for comparison in chain:
        old, new = comparison.pairs[0]
        print(f"{new.framework} {old.version} -> {new.version} ({new.device}, {new.mode}): "
              f"{len(comparison.changes)} changed of {comparison.compared}")
    print(f"upgrades: {args.output}")
    return 0


def cmd_mode_changes(args: argparse.Namespace) -> int:
    from conformance.outputs import OutputError, check_writable, write_file
    from conformance.records.results import ResultsError, latest_by_cell, load_records
    from conformance.report.modes import load_confirmations, mode_changes, render_mode_changes

    try:
        check_writable(args.output)
        records = list(latest_by_cell(load_records(args.results)).values())
        confirmations = load_confirmations(args.confirmations)
        write_file(args.output, render_mode_changes(records, confirmations, args.results))
    except (ResultsError, OutputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cells = sum(1 + len(differ) for _, differ in mode_changes(records))
    print(f"mode changes: {cells} cells in {args.output}")
    return 0


def _results_paths(given: Sequence[str]) -> list[Path]:
    """The results files named, else every committed one (not the last run's latest.jsonl)."""
    from conformance.report.render import default_results

    return [Path(p) for p in given] or [p for p in default_results(Path(DEFAULT_RESULTS).parent)
                                        if p.name != Path(DEFAULT_RESULTS).name]


def cmd_remedies(args: argparse.Namespace) -> int:
    from conformance.case.load import load_cases
    from conformance.records.results import ResultsError, load_records
    from conformance.report.remedies import check_remedies

    paths = _results_paths(args.results)
    if not paths:
        print(f"error: no results files in {Path(DEFAULT_RESULTS).parent}", file=sys.stderr)
        return 2
    try:
        records = load_records(paths)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cases, errors = load_cases(args.cases or ["cases"])
    for error in errors:
        print(f"error: {printable(error)}", file=sys.stderr)
    checked = check_remedies(cases, records)
    for problem in checked.problems:
        print(printable(str(problem)))
    hazards = checked.hazards.values()
    written = [h for h in hazards if not h.case.generated]
    print(f"{len(written)} hand-written hazard(s): {len(checked.remedied)} with a remedy verified on every column "
          f"where they ran, {sum(1 for h in written if h.case.no_remedy)} with none (the reason given); "
          f"{len(checked.problems)} problem(s)")
    if checked.unrun:  # never left out in silence: a case that did not run is neither safe nor a hazard
        shown = ", ".join(checked.unrun[:8]) + (", ..." if len(checked.unrun) > 8 else "")
        print(printable(f"not checked: {len(checked.unrun)} case(s) with no eager result in these files, so "
                        f"neither hazard nor remedy is known ({shown})"))
    return 1 if checked.problems or errors else 0


def cmd_porting(args: argparse.Namespace) -> int:
    from conformance.case.load import load_cases
    from conformance.outputs import OutputError, check_writable, write_file
    from conformance.records.results import ResultsError, latest_by_cell, load_records
    from conformance.report.modes import load_confirmations
    from conformance.report.porting import render_porting, topic_titles
    from conformance.report.remedies import check_remedies

    paths = _results_paths(args.results)
    try:
        check_writable(args.output)
        records = list(latest_by_cell(load_records(paths)).values())
        confirmations = load_confirmations(args.confirmations)
    except (ResultsError, OutputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    folders = args.cases or ["cases"]
    cases, errors = load_cases(folders)
    for error in errors:
        print(f"error: {printable(error)}", file=sys.stderr)
    remedies = check_remedies(cases, records)
    if remedies.unknown:  # a remedy that names no case (or one whose file did not load): no guide over it
        for problem in remedies.unknown:
            print(f"error: {printable(str(problem))}", file=sys.stderr)
        return 2
    titles = {topic: title for folder in folders if Path(folder).is_dir()
              for topic, title in topic_titles(folder).items()}
    pages = Path(os.path.relpath(Path(args.report).parent / pages_folder(Path(args.report)),
                                 Path(args.output).parent)).as_posix()
    from conformance.records.programs import load_programs

    from conformance.report.porting import GENERATED as PORTING_GENERATED
    from conformance.report.porting_pages import split_guide

    output = Path(args.output)
    folder = output.parent / pages_folder(output)
    guide = render_porting(cases, records, remedies, confirmations, titles, pages=pages, programs=load_programs(paths))
    index, family_pages = split_guide(guide, output.name, folder.name)
    try:
        for name in family_pages:
            check_writable(folder / name)
        write_file(output, index)
        for name, text in family_pages.items():
            write_file(folder / name, text)
        _remove_stale_pages(folder, set(family_pages), PORTING_GENERATED)
    except OutputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"porting guide: {args.output} and {len(family_pages)} page(s) in {folder} ({len(remedies.hazards)} "
          f"hazards; {len(remedies.problems)} remedy problem(s): `conformance remedies` lists them)")
    return 2 if errors else 0


def cmd_site(args: argparse.Namespace) -> int:
    from conformance.site import SiteError, build_site
    from conformance.outputs import OutputError

    controls = sorted(Path(args.controls).glob("*.jsonl")) if Path(args.controls).is_dir() else []
    try:
        built = build_site(_results_paths(args.results or []), args.cases or ["cases"], args.output, controls)
    except (SiteError, OutputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for error in built.errors:
        print(f"error: {printable(error)}", file=sys.stderr)
    print(f"site: {built.output / 'index.html'} ({built.cases} case pages, {built.steps} upgrade pages"
          + (f"; {len(built.removed)} stale page(s) removed" if built.removed else "") + ")")
    return 2 if built.errors else 0


def build_parser() -> argparse.ArgumentParser:
    from conformance.adapter import adapter_classes

    parser = _Parser(prog="conformance", description="The conformance matrix of in-place and aliasing semantics: "
                                                     "run the cases on each installed framework, judge them against "
                                                     "a NumPy reference, and report.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the matrix and write results and the summary",
                         description="Run the matrix through pytest: a letter per cell (a legend first) with the running "
                                     "count, then the counts per column, the findings, and where the results and the "
                                     "summary table are.",
                         epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("paths", nargs="*", help="case files or directories, any name [default: cases]")
    run.add_argument("--framework", action="append", help="framework (repeatable) [default: installed]")
    run.add_argument("--device", action="append", choices=DEVICES, help="device (repeatable)")
    run.add_argument("--mode", action="append", metavar="MODE",
                     help="eager (default), compiled (every compiled mode of each framework), or one by name: "
                          "compile (torch), to_static, to_static_full_graph (paddle); repeatable")
    run.add_argument("--results", help=f"results file [env CONFORMANCE_RESULTS; default {DEFAULT_RESULTS}]")
    run.add_argument("--summary", default=DEFAULT_SUMMARY, help=f"summary table [{DEFAULT_SUMMARY}]")
    run.add_argument("--timeout", type=timeout_argument, metavar="SECONDS",
                     help="the longest a cell may run before its worker is killed; caps a case's own timeout")
    run.add_argument("-n", "--workers", help="pytest-xdist processes (a number or 'auto')")
    run.add_argument("--baselines", help="baseline directory to check outcomes against "
                                         "[env CONFORMANCE_BASELINES; default reports/baselines when it exists]")
    run.add_argument("--update-baselines", action="store_true",
                     help="record this run's outcomes in the baselines (entries of cases not run are kept)")
    run.add_argument("--prune-baselines", action="store_true",
                     help="remove baseline entries of cases that no longer exist (says what it removes)")
    run.add_argument("--no-baselines", action="store_true", help="ignore baselines")
    run.add_argument("--resume", action="store_true",
                     help="keep the results file and run only the cells missing from it")
    run.add_argument("-v", "--verbose", action="store_true", help="one line per cell")
    run.set_defaults(func=cmd_run)

    validate = sub.add_parser("validate", help="check case files without running them")
    validate.add_argument("paths", nargs="*", help="case files or directories [default: cases]")
    validate.set_defaults(func=cmd_validate)

    listing = sub.add_parser("list", help="list the cases")
    listing.add_argument("paths", nargs="*", help="case files or directories [default: cases]")
    listing.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="print the program a user of the framework writes for a case (a "
                                       "reproducer that prints what it observes), the reference's value beside "
                                       "each print, then run and judge it and say what was expected and what "
                                       "came",
                          description="Print a case's program as a user of the framework writes it, with the "
                                      "reference's value beside each print; then run it on the installed "
                                      "framework as `conformance run` does and end with the verdict (all of it "
                                      "comments: the output still runs).",
                          epilog="Exit status: 0 when the framework is not wrong (right, raises, warns with a "
                                 "right result, shares or copies memory as the reference says); 1 when its result "
                                 "is wrong (silent-wrong, or a warning beside a wrong result); 2 on bad input; "
                                 f"{SHOW_HARNESS_ERROR} when the harness could not run or judge the cell.")
    show.add_argument("case", help="the case's id (its id: field), as conformance list prints it")
    show.add_argument("--framework", required=True, choices=sorted(adapter_classes()), help="whose program")
    show.add_argument("--device", default="cpu", choices=DEVICES, help="[cpu]")
    show.add_argument("--mode", default="eager", help="eager, or a compiled mode of the framework [eager]")
    show.add_argument("--paths", nargs="*", help="where to look for the case [default: cases]")
    show.add_argument("--no-cache", action="store_true",
                      help="render afresh, neither reading nor keeping programs in the cache folder "
                           "[$CONFORMANCE_CACHE_DIR, else ~/.cache/conformance]")
    show.add_argument("--no-run", action="store_true",
                      help="print the program only: neither run nor judge it (exit 0)")
    show.add_argument("--timeout", type=timeout_argument, default=120.0, metavar="SECONDS",
                      help="the cell's time limit when it is run [120]")
    show.set_defaults(func=cmd_show)

    report = sub.add_parser("report", help="render the compatibility report from results files")
    report.add_argument("results", nargs="*",
                        help="results files [default: reports/results/*.jsonl except latest.jsonl, "
                             "else latest.jsonl]")
    report.add_argument("--output", action=_InAFolderThatExists,
                        default="reports/COMPATIBILITY.md", help="markdown report [%(default)s]")
    report.add_argument("--plot", default="", action=_InAFolderThatExists,
                        help="heatmap PNG, drawn when matplotlib is installed [the output's name with .png]")
    report.add_argument("--no-plot", dest="plot", action="store_const", const=None, help="draw no heatmap")
    report.add_argument("--one-page", action="store_true",
                        help="everything on the one page OUTPUT [default: OUTPUT is an index, with a page per "
                             "topic in the folder beside it named after it: COMPATIBILITY.md -> compatibility/]")
    report.set_defaults(func=cmd_report)

    diff = sub.add_parser("diff", help="list every cell whose outcome changed between two files or versions")
    diff.add_argument("old", help="results (.jsonl) or baseline (.json) file, or a committed version by name "
                                  "(torch==2.4.1, paddle==3.0.0; torch==2.4 for the newest 2.4.x committed)")
    diff.add_argument("new", nargs="?", help="the same, for the newer side")
    diff.add_argument("--numpy-control", metavar="FILE",
                      help="where the two sides ran with different NumPy: results of one side's framework "
                           "version under the other side's NumPy, to tell a change NumPy made from one the "
                           "framework made (without it, the diff says it cannot tell them apart)")
    diff.add_argument("--modes", action="store_true",
                      help="the eager -> compiled view of one results file: each compiled column against the "
                           "eager column of the same framework, version and device")
    diff.add_argument("--nearest", action="store_true",
                      help="compare ONE results file (e.g. of the version you have) with the committed column "
                           "of the same framework, device and mode nearest its version: the same version, else "
                           "the newest below, else the oldest above")
    diff.add_argument("--committed", default=str(Path(DEFAULT_RESULTS).parent), metavar="DIR",
                      help="where --nearest and versions by name look for committed results [%(default)s]")
    diff.add_argument("--markdown", action=_InAFolderThatExists,
                      help="also write the changes as markdown tables to this file")
    diff.epilog = ("Exit status: 0 when no cell became wrong (for a spelling that existed before), crashed or "
                   "timed out; 1 when one did (the upgrade gate: the change is listed first); 2 for bad input "
                   "(one line).")
    diff.set_defaults(func=cmd_diff)

    upgrades = sub.add_parser("upgrades", help="each framework release against the one before it, "
                                               "from results files, as one markdown page")
    _committed_results_argument(upgrades)
    upgrades.add_argument("--controls", default="reports/controls", metavar="DIR",
                          help="results of a version run under another NumPy (tox -e torch23-numpy1): where a step's "
                               "two versions ran with different NumPy, they tell its changes apart [%(default)s]")
    upgrades.add_argument("--output", action=_InAFolderThatExists,
                          default="reports/UPGRADES.md", help="markdown page [%(default)s]")
    upgrades.set_defaults(func=cmd_upgrades)

    changes = sub.add_parser("mode-changes", help="every cell whose outcome depends on the mode, from results "
                                                  "files with their compiled columns, as one markdown page")
    changes.add_argument("results", nargs="+", help="results files: eager and compiled columns of the builds")
    _confirmations_argument(changes)
    changes.add_argument("--output", action=_InAFolderThatExists,
                         default="reports/MODE-CHANGES.md", help="markdown page [%(default)s]")
    changes.set_defaults(func=cmd_mode_changes)

    remedies = sub.add_parser("remedies", help="check that every hazard names a safe spelling verified on every "
                                               "column where the hazard ran (exit 1 on a problem)")
    _committed_results_argument(remedies)
    remedies.add_argument("--cases", nargs="*", help="case files or folders [default: cases]")
    remedies.set_defaults(func=cmd_remedies)

    porting = sub.add_parser("porting", help="the porting guide: every hazard in both directions, with its cause, "
                                             "its verified remedy and what PaConvert does to it")
    _committed_results_argument(porting)
    porting.add_argument("--cases", nargs="*", help="case folders [default: cases]")
    _confirmations_argument(porting)
    porting.add_argument("--report", default="reports/COMPATIBILITY.md",
                         help="the compatibility report whose topic pages the guide links to [%(default)s]")
    porting.add_argument("--output", action=_InAFolderThatExists,
                         default="reports/PORTING.md", help="markdown page [%(default)s]")
    porting.set_defaults(func=cmd_porting)

    site = sub.add_parser("site", help="the static site of the matrix: a page per case (the code of each framework, "
                                       "its safe spelling, a cell per version with its reproducer), a page per "
                                       "upgrade step, and an index that finds a case by the code you write")
    site.add_argument("--results", nargs="*", metavar="FILE",
                      help="results files [default: reports/results/*.jsonl except latest.jsonl]; the programs "
                           "kept beside them (NAME.programs.json) give each framework's code")
    site.add_argument("--cases", nargs="*", metavar="DIR", help="case folders [default: cases]")
    site.add_argument("--controls", default="reports/controls", metavar="DIR",
                      help="results of a version run under another NumPy, as for conformance upgrades [%(default)s]")
    site.add_argument("--output", action=_InAFolderThatExists, default="reports/site", metavar="DIR",
                      help="the site's folder, written whole: open DIR/index.html [%(default)s]")
    site.set_defaults(func=cmd_site)

    from conformance.fuzz.command import add_command as add_fuzz  # conformance fuzz: its own module
    add_fuzz(sub)
    from conformance.scan.command import add_command as add_scan  # conformance scan, scan-data: their own module
    add_scan(sub)
    for name, command in sub.choices.items():  # a command's --help opens with what `conformance --help` says
        if command.description is None:
            command.description = next(a.help for a in sub._choices_actions if a.dest == name)
    return parser


def _committed_results_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="*",
                        help="results files [default: reports/results/*.jsonl except latest.jsonl]")


def _confirmations_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--confirmations", default="reports/confirmations.jsonl",
                        help="what tools/confirm_reproducers.py --record wrote [%(default)s]")


class _InAFolderThatExists(argparse.Action):
    """An output the user names lies in a folder that exists: a typo in its path is refused in one line, never
    made into folders (a default's folder, reports/, is created)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        folder = Path(values).parent
        if not folder.is_dir():
            raise argparse.ArgumentError(self, f"no such folder: {printable(str(folder))} (create it first)")
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line that names the offending value (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    return _dispatch(build_parser().parse_args(argv))


def _dispatch(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except KeyboardInterrupt:  # outside pytest (which handles its own): still the interrupted status
        print("error: interrupted", file=sys.stderr)
        return INTERRUPTED


def script() -> NoReturn:
    """The ``conformance`` command.  After a run, the process ends without tearing the interpreter down:
    the workers are closed and every output is written and flushed, and freeing a run's objects one by
    one (its cells, cases and reports) would only add time that grows with the run."""
    args = build_parser().parse_args(sys.argv[1:])
    try:
        status = _dispatch(args)
    except BrokenPipeError:  # the reader of our output went away (`conformance run | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's advice: no second error
        os._exit(1)
    if args.func is cmd_run:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a reader that went away (a closed pipe): nothing to keep
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    script()
