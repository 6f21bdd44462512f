"""Input that would hang a run, eat its memory, run foreign code or break its output: each is refused
or made inert, and the rest of the run goes on."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.records.record import Record, RecordError
from conformance.report.render import GENERATED, render_pages, render_report
from conformance.report.summary import render_summary

from .conftest import INSTALLED, framework_params
from .runs import FRAMEWORK, QUICK, cli_command, records_in, run_cli, run_pytest, write_case

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
ONE_COLUMN = ("--framework", FRAMEWORK, "--device", "cpu")

#: In UTF-7, "+ACc-" is a quote and "+AAo-" a line break: read as UTF-7, this observation name closes its
#: string literal and opens a file, in any program that carries it in a string.
UTF7_CASE = """\
id: utf7
title: "coding: utf-7"
steps:
  - {{op: tensor, out: x, value: [1.0]}}
  - {{op: mul, args: [x, 2.0], out: y}}
  - {{observe: value, of: y, name: "+ACc-)+AAo-open(+ACI-{marker}+ACI-,+ACI-w+ACI-)+AAo-print(+ACc-"}}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_a_reproducer_stays_inert_whatever_encoding_its_text_names(tmp_path: Path, framework: str) -> None:
    marker = tmp_path / "PWNED"
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "utf7.yaml").write_text(UTF7_CASE.format(marker=marker))
    shown = run_cli(tmp_path, "show", "utf7", "--framework", framework, "--paths", "cases")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "# -*- coding: utf-8 -*-"
    reproducer = tmp_path / "reproducer.py"
    reproducer.write_text(shown.stdout, encoding="utf-8")
    ran = subprocess.run([sys.executable, str(reproducer)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert not marker.exists()


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_a_program_paddle_compiles_from_its_source_stays_inert_too(tmp_path: Path) -> None:
    """paddle.jit.to_static reads the program's source from its file, honouring an encoding cookie."""
    marker = tmp_path / "PWNED"
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "utf7.yaml").write_text(UTF7_CASE.format(marker=marker))
    run = run_cli(tmp_path, "run", "cases", "--framework", "paddle", "--device", "cpu", "--mode", "to_static")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not marker.exists()


def _record(**fields) -> Record:
    base = {"case": "c", "framework": "torch", "framework_version": "2.13.0", "device": "cpu", "outcome": "raises",
            "topic": "t", "case_file": "cases/t/c.yaml"}
    return Record.from_dict({**base, **fields})


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def _markup(text: str) -> str:
    """*text* without its code spans (whose content markdown shows as it is) and escaped characters."""
    return re.sub(r"\\.", "", re.sub(r"(`+).*?\1", "", text))


def test_names_from_files_and_results_cannot_become_markup_in_the_summary_or_the_report(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # case files inside the tree are linked, relative to the report
    (tmp_path / "reports").mkdir()
    hostile = [
        _record(case="a", topic="left|right", case_file=str(tmp_path / "cases" / "<img src=x onerror=alert(1)>.yaml")),
        # a results file cannot hold these (Record.from_dict refuses them: below); made in code, they are
        # still shown as text
        dataclasses.replace(_record(case="b", case_file=str(tmp_path / "cases" / "x) [y](javascript:alert(1).yaml")),
                            framework_version="2.0<script>alert(1)</script>", outcome="raises|pwned"),
        dataclasses.replace(_record(case="c", case_file=str(tmp_path / "javascript:alert(1)")), mode="<b>mode</b>"),
    ]
    for hostile_fields in ({"framework_version": "2.0<script>alert(1)</script>"}, {"outcome": "raises|pwned"},
                           {"mode": "<b>mode</b>"}, {"framework_version": "7.0/../../../escaped"}, {"case": "../up"}):
        with pytest.raises(RecordError, match="not a result record"):
            _record(**hostile_fields)
    summary = render_summary(hostile)
    rows = [line for line in summary.splitlines() if line.startswith("|")]
    assert len(rows) == 5 and len({_unescaped_pipes(line) for line in rows}) == 1  # every row: the header's columns
    report = render_report(hostile, [], link_base=tmp_path / "reports")
    index, pages = render_pages(hostile, [], index="COMPATIBILITY.md", pages="compatibility",
                                link_base=tmp_path / "reports")
    assert sorted(pages) == ["left-right.md", "t.md"]  # a topic names a plain file, whatever its folder is called
    split = "\n".join([index, *pages.values()]).replace(GENERATED, "")  # the report's own comment line
    for text in (summary, report, split):
        assert "<" not in _markup(text)  # no HTML outside code spans
    for text in (report, split):
        links = re.findall(r"\]\(([^)]*)\)", re.sub(r"(`+).*?\1", "", text))  # a code span holds no link
        assert len(links) >= 3 and all(link.startswith(("./", "#")) and " " not in link and "(" not in link
                                       for link in links), links
        assert "javascript%3A" in text


@needs_framework
def test_a_title_with_terminal_escapes_is_shown_escaped(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "esc.yaml").write_text(
        'id: esc\ntitle: "\\e[2J\\e]0;owned\\a red \\u202e"\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n'
        "  - {observe: value, of: x}\n")
    listed = run_cli(tmp_path, "list", "cases")
    shown = run_cli(tmp_path, "show", "esc", "--framework", FRAMEWORK, "--paths", "cases")
    assert listed.returncode == 0 and shown.returncode == 0
    for output in (listed.stdout, shown.stdout):
        assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
        assert "\\x1b[2J" in output


@needs_framework
def test_links_back_up_the_tree_are_followed_once(tmp_path: Path) -> None:
    (tmp_path / "cases" / "t").mkdir(parents=True)
    (tmp_path / "cases" / "t" / "quick.yaml").write_text(QUICK.format(id="quick"))
    (tmp_path / "cases" / "t" / "up").symlink_to("..")
    (tmp_path / "cases" / "t" / "again").symlink_to("..")
    validated = run_cli(tmp_path, "validate", "cases", timeout=120)
    assert validated.returncode == 0 and "1 valid case(s)" in validated.stdout
    run = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(records_in(tmp_path / "reports" / "results" / "latest.jsonl")) == 1


@needs_framework
def test_a_fifo_named_like_a_case_is_refused_without_blocking_and_the_rest_runs(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    os.mkfifo(tmp_path / "cases" / "pipe.yaml")
    validated = run_cli(tmp_path, "validate", "cases", timeout=60)
    assert validated.returncode == 1 and "pipe.yaml:1: not a regular file (a FIFO)" in validated.stderr
    run = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, timeout=300)
    assert run.returncode == 2 and "not a regular file (a FIFO)" in run.stderr
    assert len(records_in(tmp_path / "reports" / "results" / "latest.jsonl")) == 1


def test_an_endless_or_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "zero.yaml").symlink_to("/dev/zero")
    with open(tmp_path / "cases" / "sparse.yaml", "wb") as handle:
        handle.truncate(1 << 30)  # a gigabyte that takes no disk
    # A fresh wrapper process waits for the command alone, so its children's peak is the command's own
    # (this process's children include every worker an earlier test started).
    wrapper = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
               "print('peak-kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
               "sys.exit(code)")
    validated = subprocess.run([sys.executable, "-c", wrapper, *cli_command("validate", "cases")], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    assert validated.returncode == 1
    assert "zero.yaml:1: not a regular file (a character device)" in validated.stderr
    assert f"sparse.yaml:1: file is {1 << 30} bytes; case files are limited to" in validated.stderr
    peak = int(re.search(r"^peak-kib (\d+)$", validated.stderr, re.MULTILINE).group(1))
    assert 0 < peak < 400 * 1024  # kilobytes: the command never held the gigabyte


def test_an_unknown_mode_in_the_environment_is_a_usage_error_not_an_interrupted_run(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "cases", "--device", "cpu", env={"CONFORMANCE_MODES": "jit"})
    output = run.stdout + run.stderr
    assert run.returncode == 2
    assert "unknown mode 'jit'" in output and "Traceback" not in output and "nterrupted" not in output
    plain = run_pytest(tmp_path, "--conformance", "cases", env={"CONFORMANCE_MODES": "jit"})
    assert plain.returncode == pytest.ExitCode.USAGE_ERROR
    assert "unknown mode 'jit'" in plain.stdout + plain.stderr and "Traceback" not in plain.stdout + plain.stderr


def test_a_project_whose_conftest_adds_common_option_names_still_starts(tmp_path: Path) -> None:
    """Installed, the plugin loads in every project; its options must not take names a project uses."""
    names = ["--device", "--framework", "--mode", "--results", "--summary", "--baselines", "--resume"]
    (tmp_path / "conftest.py").write_text(
        "def pytest_addoption(parser):\n"
        + "".join(f"    parser.addoption({name!r}, default=None)\n" for name in names))
    (tmp_path / "test_mine.py").write_text("def test_one(request):\n    assert request.config.getoption('device') "
                                           "== 'tpu'\n")
    run = run_pytest(tmp_path, "--device", "tpu", "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


@needs_framework
def test_a_project_with_its_own_conftest_and_testpaths_runs_every_cell(tmp_path: Path) -> None:
    """pluggy keeps plugins in a set: the run's state, registered as one, must hash (it stopped at the first
    cell with INTERNALERROR 'unhashable type: RunState' in a project with its own tests/conftest.py)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("")
    (tmp_path / "tests" / "test_mine.py").write_text("def test_one():\n    assert True\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests cases\n")
    write_case(tmp_path / "cases", QUICK, "quick_one")
    write_case(tmp_path / "cases", QUICK, "quick_two")
    run = run_pytest(tmp_path, "--conformance", "--conformance-framework", FRAMEWORK,
                     "--conformance-device", "cpu", "--conformance-results", "r.jsonl",
                     "--conformance-summary", "s.md", "--conformance-no-baselines")
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "INTERNALERROR" not in output, output[-3000:]
    assert len(records_in(tmp_path / "r.jsonl")) == 2
    assert "1 passed" in output and (tmp_path / "s.md").is_file()


@needs_framework
def test_the_parents_memory_is_flat_in_the_number_of_cells(tmp_path: Path) -> None:
    """The parent lets go of each cell once it ran: its item (and with it its file's node and case), its
    reports (the terminal counts a shared stand-in, and its progress count keeps only the node ids in
    flight), its record (the end of the run reads the results file back), the case ids seen (once
    collected), and the engine's and the pool's bookkeeping of it (cells in flight only; emptied tables
    are made anew).  What the parent keeps is bounded: the 1,024 most recent cases, the 4,096 requests in
    flight.  Measured with tracemalloc at the end of runs of 2,000 and of 4,500 one-cell cases (the worst
    case: one cell per case file), both past those bounds: the growth per cell is nil (it was 28 KB,
    then 6 KB, then 1.2 KB)."""
    program = f"""
import gc, json, sys, tracemalloc
tracemalloc.start()
import pytest
from conformance.cli import _pytest_args, build_parser
peak = {{}}
class Measure:
    def pytest_sessionfinish(self):
        gc.collect()
        peak['now'] = tracemalloc.get_traced_memory()[0]
args = build_parser().parse_args(["run", sys.argv[1], "--framework", "{FRAMEWORK}", "--device", "cpu",
                                  "--results", sys.argv[1] + ".jsonl", "--summary", sys.argv[1] + ".md"])
status = pytest.main(_pytest_args(args, [sys.argv[1]]), plugins=[Measure()])
print(json.dumps({{"status": int(status), "bytes": peak['now']}}))
"""
    sizes = {}
    for count in (2000, 4500):
        for number in range(count):
            write_case(tmp_path / f"c{count}", QUICK, f"q{number}")
        ran = subprocess.run([sys.executable, "-c", program, f"c{count}"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
        result = json.loads(ran.stdout.strip().splitlines()[-1])
        assert result["status"] == 0, ran.stdout + ran.stderr
        sizes[count] = result["bytes"]
    per_cell = (sizes[4500] - sizes[2000]) / 2500
    assert per_cell < 100, f"{per_cell:.0f} bytes per cell"


@pytest.mark.parametrize(("args", "env", "says"), [
    (["fuzz", "--timeout", "0", "--budget", "1"], {}, "--timeout: not a positive, finite number of seconds: '0'"),
    (["fuzz", "--timeout", "-1", "--budget", "1"], {}, "--timeout: not a positive, finite number of seconds: '-1'"),
    (["fuzz", "--seed", "-1", "--budget", "1"], {}, "--seed: not a whole number, 0 or more: '-1'"),
    (["fuzz", "--timeout", "1e-9", "--budget", "1"], {}, "--timeout: '1e-9' seconds is shorter than any program"),
    (["run", "cases", "--timeout", "0.001"], {}, "--timeout: '0.001' seconds is shorter than any program"),
    (["fuzz", "--report", "/proc/no/such/report.json", "--budget", "1"], {}, "cannot write /proc/no/such/report.json"),
    (["fuzz", "--budget", "1"], {"CONFORMANCE_WORKER_MEMORY": "abc"}, "CONFORMANCE_WORKER_MEMORY='abc': not a whole"),
    (["run", "cases", "--device", "cpu"], {"CONFORMANCE_WORKER_MEMORY": "1e999"},
     "CONFORMANCE_WORKER_MEMORY='1e999': not a whole number of bytes"),
    (["fuzz", "--budget", "1"], {"CONFORMANCE_REFERENCE_MEMORY": "abc"},
     "CONFORMANCE_REFERENCE_MEMORY='abc': not a whole number of bytes"),
    (["run", "cases", "--device", "cpu"], {"CONFORMANCE_REFERENCE_MEMORY": "1e999"},
     "CONFORMANCE_REFERENCE_MEMORY='1e999': not a whole number of bytes"),
    (["run", "cases", "--framework", "paconvert", "--mode", "compile"], {},
     "paconvert has no mode 'compile' (its modes: eager), so it would run no cell"),
    (["run", "cases", "--framework", "torch", "--mode", "to_static"], {},
     "torch has no mode 'to_static' (its modes: eager, compile)"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_work(tmp_path: Path, args: list[str], env: dict[str, str],
                                                          says: str) -> None:
    write_case(tmp_path / "cases", QUICK, "quick_one")
    run = run_cli(tmp_path, *args, "--no-write" if args[0] == "fuzz" else "--no-baselines", env=env, timeout=120)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert says in run.stderr and run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr, run.stderr
    assert run.stdout == "" and not (tmp_path / "reports").exists()


def test_pytest_conformance_refuses_a_bad_worker_memory_before_any_cell(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick_one")
    run = run_pytest(tmp_path, "--conformance", "cases", "--conformance-results", "r.jsonl",
                     "--conformance-summary", "s.md", env={"CONFORMANCE_WORKER_MEMORY": "abc"})
    assert run.returncode == pytest.ExitCode.USAGE_ERROR
    assert "CONFORMANCE_WORKER_MEMORY='abc'" in run.stderr and "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "r.jsonl").exists()


@needs_framework
def test_a_case_file_whose_name_is_not_utf8_is_reported_with_a_working_link(tmp_path: Path) -> None:
    """The report wrote its index, then died on the topic page (UnicodeEncodeError); now the page shows the
    name readably and links to the file by its own bytes."""
    folder = tmp_path / "cases" / "t"
    folder.mkdir(parents=True)
    name = b"caf\xe9.yaml"
    with open(os.fsencode(folder) + b"/" + name, "w") as handle:
        handle.write(QUICK.format(id="cafe"))
    run = run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--device", "cpu", "--no-baselines",
                  "--results", "r.jsonl", "--summary", "s.md")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = run_cli(tmp_path, "report", "r.jsonl", "--output", "R.md", "--no-plot")
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr[-2000:]
    page = (tmp_path / "r" / "t.md").read_text(encoding="utf-8")
    assert "[`cases/t/caf\ufffd.yaml`](./../cases/t/caf%E9.yaml)" in page


@needs_framework
def test_the_project_s_own_yaml_is_not_taken_for_cases(tmp_path: Path) -> None:
    """pytest --conformance in a project walks its whole tree: a CI workflow and the project's own YAML test
    data are not cases (no top-level id: or steps:), and are neither run nor failed as invalid; a case file
    with a mistake still fails with its reason, and a file named on the command line is a case whatever it
    holds."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: [push]\njobs:\n  test:\n    runs-on: x\n")
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tests" / "data" / "config.yaml").write_text("learning_rate: 0.1\nlayers: [2, 3]\n")
    write_case(tmp_path / "cases", QUICK, "quick_one")
    (tmp_path / "cases" / "broken.yaml").write_text("id: broken\ntitle: t\nstep:\n  - {op: tensor}\n")
    args = ("--conformance", "--conformance-framework", FRAMEWORK, "--conformance-device", "cpu",
            "--conformance-results", "r.jsonl", "--conformance-summary", "s.md", "--conformance-no-baselines")
    run = run_pytest(tmp_path, *args)
    output = run.stdout + run.stderr
    assert "config.yaml" not in output and "ci.yml" not in output, output[-3000:]
    assert "broken.yaml" in output and run.returncode == 1, output[-3000:]
    assert [r["case"] for r in records_in(tmp_path / "r.jsonl")] == ["quick_one"]
    named = run_pytest(tmp_path, *args, "tests/data/config.yaml")
    assert named.returncode != 0 and "config.yaml" in named.stdout + named.stderr


def test_a_reference_memory_of_0_means_no_limit_as_for_the_workers(tmp_path: Path) -> None:
    """``CONFORMANCE_REFERENCE_MEMORY=0`` lifts the reference's limit, as ``CONFORMANCE_WORKER_MEMORY=0`` lifts
    the workers': the cell is judged, never an error because the reference could not even start."""
    write_case(tmp_path / "cases", QUICK, "quick_one")
    run = run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--no-baselines",
                  env={"CONFORMANCE_REFERENCE_MEMORY": "0"}, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    outcomes = {r["outcome"] for r in records_in(tmp_path / "reports" / "results" / "latest.jsonl")}
    assert outcomes == {"silent-correct"}, outcomes


@pytest.mark.parametrize("args", [
    ["porting", "--output", "{missing}/PORTING.md"],
    ["report", "--output", "{missing}/COMPATIBILITY.md"],
    ["upgrades", "--output", "{missing}/UPGRADES.md"],
    ["mode-changes", "results.jsonl", "--output", "{missing}/MODE-CHANGES.md"],
    ["diff", "a.jsonl", "b.jsonl", "--markdown", "{missing}/diff.md"],
    ["site", "--output", "{missing}/site"],
])
def test_an_output_in_a_folder_that_is_not_there_is_refused_not_created(tmp_path: Path, args: list[str]) -> None:
    """A typo in an output's folder (``--output /no/such/dir/x.md``) is one line and exit 2, and no folder is
    made: a page written under a tree the user never asked for is lost to them."""
    missing = tmp_path / "no" / "such" / "dir"
    run = run_cli(tmp_path, *[a.format(missing=missing) for a in args], timeout=120)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stderr.strip().count("\n") == 0 and f"no such folder: {missing}" in run.stderr, run.stderr
    assert not (tmp_path / "no").exists()
