"""``conformance run`` and ``validate`` as a user runs them: one verdict, only this run, usage errors."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conformance.records.results import read_records

from .conftest import INSTALLED, SEED
from .runs import FRAMEWORK, QUICK, WRONG, closing_line, run_cli, run_pytest, write_case

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
ONE_CELL = ("--framework", FRAMEWORK, "--device", "cpu")
PYTEST_ONE_CELL = ("--conformance-framework", FRAMEWORK, "--conformance-device", "cpu")  # the plugin's own spelling


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@needs_framework
def test_a_baseline_named_by_the_variable_fails_the_cli_as_it_fails_pytest(tmp_path: Path) -> None:
    shutil.copy(SEED / "leaf_sin_inplace.yaml", tmp_path / "leaf_sin_inplace.yaml")
    env = {"CONFORMANCE_BASELINES": str(tmp_path / "base")}
    first = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", *ONE_CELL, "--update-baselines", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    [baseline] = (tmp_path / "base").glob(f"{FRAMEWORK}-*-cpu.json")
    data = json.loads(baseline.read_text())
    data["cells"]["leaf_sin_inplace"] = {"outcome": "silent-correct"}
    baseline.write_text(json.dumps(data))
    pytest_run = run_pytest(tmp_path, "--conformance", "leaf_sin_inplace.yaml", *PYTEST_ONE_CELL, env=env)
    cli_run = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", *ONE_CELL, env=env)
    assert pytest_run.returncode == 1, pytest_run.stdout
    assert cli_run.returncode == 1, cli_run.stdout + cli_run.stderr
    assert "changed against baseline" in cli_run.stdout
    assert "1 failed" in closing_line(cli_run.stdout.split("# Conformance summary")[0])


@needs_framework
def test_updating_baselines_says_what_it_wrote_and_the_hint_names_each_front_s_option(tmp_path: Path) -> None:
    """--update-baselines says, file by file, what it added or changed (or that nothing changed); a cell
    missing from a baseline is hinted with the option as the command and as pytest spell it."""
    write_case(tmp_path / "cases", QUICK, "first")
    run = run_cli(tmp_path, "run", *ONE_CELL, "--update-baselines", "--baselines", "base")
    assert run.returncode == 0, run.stdout + run.stderr
    [baseline] = (tmp_path / "base").glob(f"{FRAMEWORK}-*-cpu.json")
    assert f"baseline {baseline}: 1 new" in run.stdout, run.stdout[-3000:]
    again = run_cli(tmp_path, "run", *ONE_CELL, "--update-baselines", "--baselines", "base")
    assert f"baseline {baseline}: unchanged (1 cell(s) as recorded)" in again.stdout
    data = json.loads(baseline.read_text())
    data["cells"]["first"] = {"outcome": "raises"}
    baseline.write_text(json.dumps(data))
    changed = run_cli(tmp_path, "run", *ONE_CELL, "--update-baselines", "--baselines", "base")
    assert f"baseline {baseline}: 1 changed (first: raises -> silent-correct)" in changed.stdout
    write_case(tmp_path / "cases", QUICK, "second")
    hinted = run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL, "--conformance-baselines", "base")
    assert hinted.returncode == 1 and "Run with --update-baselines (under pytest: --conformance-update-baselines)" \
        in hinted.stdout, hinted.stdout[-3000:]


@needs_framework
def test_a_folder_with_any_name_runs_and_only_this_run_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "my stuff"
    write_case(folder, QUICK, "first")
    write_case(folder, QUICK, "second")
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"case": "old_case", "framework": FRAMEWORK, "framework_version": "0.1",
                                   "device": "cpu", "outcome": "raises", "details": {}}) + "\n")
    run = run_cli(tmp_path, "run", "my stuff", *ONE_CELL)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(r["case"] for r in read_records([results])) == ["first", "second"]
    assert "old_case" not in run.stdout
    assert "2 silent-correct" in closing_line(run.stdout.split("# Conformance summary")[0])


@needs_framework
def test_a_run_where_no_cell_ran_is_an_error_that_says_why_and_leaves_the_old_summary_unprinted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no cases here\n")
    summary = tmp_path / "reports" / "summary.md"
    summary.parent.mkdir(parents=True)
    summary.write_text("# Conformance summary\n\n| case | STALE TABLE |\n")
    run = run_cli(tmp_path, "run", "empty", *ONE_CELL)
    assert run.returncode == 5, run.stdout + run.stderr
    assert "no cell ran: no case file (*.yaml, *.yml) under empty" in run.stdout + run.stderr
    assert "STALE TABLE" not in run.stdout + run.stderr  # not printed as this run's
    assert summary.read_text() == "# Conformance summary\n\n| case | STALE TABLE |\n"  # and never deleted


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(tmp_path: Path, value: str) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "--timeout", value, *ONE_CELL)
    assert run.returncode == 2
    [line] = error_lines(run.stderr)
    assert repr(value) in line and "--timeout" in line
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--framework", "jax", "unknown framework 'jax'; installed adapters: "),
    ("--device", "tpu", "'tpu'"),
])
def test_an_unknown_framework_or_device_is_one_usage_error_line(tmp_path: Path, option: str, value: str,
                                                                expected: str) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", option, value)
    assert run.returncode == 2
    [line] = error_lines(run.stderr)
    assert expected in line
    assert not (tmp_path / "reports").exists()


def _unwritable(tmp_path: Path, kind: str) -> Path:
    if kind == "a directory":
        (tmp_path / "out").mkdir()
        return tmp_path / "out"
    if kind == "a folder that cannot be created":
        (tmp_path / "plain_file").write_text("")
        return tmp_path / "plain_file" / "sub" / "out.jsonl"
    if os.geteuid() == 0:  # root writes into any folder of a normal file system, not into sysfs
        if not Path("/sys/kernel").is_dir():
            pytest.skip("root writes into read-only folders and there is no sysfs")
        return Path("/sys/conformance-out.jsonl")
    (tmp_path / "locked").mkdir(mode=0o500)
    return tmp_path / "locked" / "out.jsonl"


@pytest.mark.parametrize("option", ["--results", "--summary"])
@pytest.mark.parametrize("kind", ["a directory", "a folder that cannot be created", "a read-only folder"])
def test_an_unwritable_output_is_one_error_line(tmp_path: Path, option: str, kind: str) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    path = _unwritable(tmp_path, kind)
    run = run_cli(tmp_path, "run", option, str(path), *ONE_CELL)
    assert run.returncode == 2
    [line] = error_lines(run.stderr)
    assert line.startswith(f"error: cannot write {path}: "), line
    assert "Traceback" not in run.stdout + run.stderr and "INTERNALERROR" not in run.stdout + run.stderr


def test_validate_on_a_folder_without_case_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = run_cli(tmp_path, "validate", "empty")
    assert run.returncode == 1
    assert "no case file (*.yaml, *.yml) under empty" in run.stderr


def test_validate_refuses_a_remedy_that_names_no_case_and_finds_one_in_another_file(tmp_path: Path) -> None:
    """A ``remedy:`` naming no case is a broken link of the porting guide: validate says so, at its line,
    and exits 1; a remedy in another file of the folder (or of cases/) is found when one file is given."""
    hazard = write_case(tmp_path / "cases" / "topic", QUICK.replace("steps:", "remedy: [the_safe_one]\nsteps:"),
                        "the_hazard")
    run = run_cli(tmp_path, "validate", "cases")
    assert run.returncode == 1
    assert "cases/topic/the_hazard.yaml:3: remedy 'the_safe_one' is not a case of this catalogue" in run.stderr
    assert "0 valid case(s), 1 invalid file(s)" in run.stdout
    write_case(tmp_path / "cases" / "other", QUICK, "the_safe_one")
    for given in ("cases", str(hazard.relative_to(tmp_path))):
        run = run_cli(tmp_path, "validate", given)
        assert run.returncode == 0, run.stderr


@needs_framework
def test_resume_runs_only_the_missing_cells_and_keeps_the_finished_ones(tmp_path: Path) -> None:
    for name in ("first", "second", "third"):
        write_case(tmp_path / "cases", QUICK, name)
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    assert run_cli(tmp_path, "run", *ONE_CELL).returncode == 0
    kept = "".join(results.read_text().splitlines(keepends=True)[:2])  # its run line and its first record
    # as an interrupted run leaves it: one finished cell and a record cut short
    results.write_text(kept + '{"case": "second", "fram')
    run = run_cli(tmp_path, "run", "--resume", *ONE_CELL)
    assert run.returncode == 0, run.stdout + run.stderr
    assert results.read_text().startswith(kept)
    assert sorted(r["case"] for r in read_records([results])) == ["first", "second", "third"]
    assert "3 silent-correct" in closing_line(run.stdout.split("# Conformance summary")[0])


@needs_framework
def test_a_run_that_selects_no_cell_leaves_the_results_as_they_were(tmp_path: Path) -> None:
    """``--collect-only`` or a ``-k`` that matches nothing runs no cell: the results file is as it was (it
    was emptied, with the records only in ``.previous``)."""
    write_case(tmp_path / "cases", QUICK, "first")
    assert run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL).returncode == 0
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    before = results.read_bytes()
    collected = run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL, "--collect-only")
    assert collected.returncode == 0 and "no cell ran" not in collected.stdout, collected.stdout[-2000:]
    assert results.read_bytes() == before
    nothing = run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL, "-k", "no_such_case")
    assert nothing.returncode == 5 and "every cell was deselected" in nothing.stdout
    assert results.read_bytes() == before


@needs_framework
def test_a_run_stopped_by_x_says_so_and_how_many_cells_ran(tmp_path: Path) -> None:
    """With -x the run stops at its first failure: the terminal and the summary say it stopped early and
    how many of the selected cells ran, never a summary that looks whole."""
    for name in ("first", "second", "third"):
        write_case(tmp_path / "cases", QUICK, name)
    assert run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL, "--conformance-update-baselines",
                      "--conformance-baselines", "base").returncode == 0
    [baseline] = (tmp_path / "base").glob("*.json")
    data = json.loads(baseline.read_text())
    data["cells"]["first"] = {"outcome": "raises"}  # a changed behaviour: the first cell fails
    baseline.write_text(json.dumps(data))
    run = run_pytest(tmp_path, "--conformance", "cases", *PYTEST_ONE_CELL, "--conformance-baselines", "base", "-x",
                     "-p", "no:randomly")
    assert run.returncode == 1
    assert "stopped early (pytest stopping after 1 failures): 1 of 3 cell(s) ran" in run.stdout, run.stdout[-3000:]
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert "**Stopped early**: pytest stopping after 1 failures before every cell ran; 1 cell(s) finished" in summary


@needs_framework
def test_resume_drops_the_records_of_a_case_the_catalogue_no_longer_has(tmp_path: Path) -> None:
    """A case removed (or renamed) between a run and its --resume leaves the results file, which then
    describes the catalogue as it is; the file as it was is kept beside it and the case is named."""
    for name in ("kept_one", "removed_one"):
        write_case(tmp_path / "cases", QUICK, name)
    assert run_cli(tmp_path, "run", *ONE_CELL).returncode == 0
    (tmp_path / "cases" / "removed_one.yaml").unlink()
    run = run_cli(tmp_path, "run", *ONE_CELL, "--resume")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    assert "records of 1 case(s) no longer in the catalogue (removed_one)" in run.stdout
    assert [r["case"] for r in read_records([results])] == ["kept_one"]
    assert "removed_one" in results.with_name("latest.jsonl.previous").read_text()


@needs_framework
def test_resume_runs_a_case_again_whose_file_changed_since(tmp_path: Path) -> None:
    """--resume kept the record of a case edited since it ran: its summary said 'raises' where a fresh run
    said 'silent-correct'.  A kept record is of the case as it is now, by its digest."""
    write_case(tmp_path / "cases", QUICK, "stays")
    edited = write_case(tmp_path / "cases", WRONG, "edited")
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    assert run_cli(tmp_path, "run", *ONE_CELL).returncode == 0
    assert {r["case"]: r["outcome"] for r in read_records([results])}["edited"] == "silent-wrong"
    edited.write_text(edited.read_text().replace("[2.0003]", "[2.0]"))  # now the right expected value
    run = run_cli(tmp_path, "run", "--resume", *ONE_CELL)
    assert run.returncode == 0, run.stdout + run.stderr
    latest = {}
    for record in read_records([results]):
        latest[record["case"]] = record["outcome"]
    assert latest == {"stays": "silent-correct", "edited": "silent-correct"}
    assert len(list(read_records([results]))) == 3  # stays kept; edited run again


@needs_framework
def test_updating_baselines_takes_only_this_runs_cells(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "first")
    write_case(tmp_path / "other", QUICK, "second")
    assert run_cli(tmp_path, "run", "cases", *ONE_CELL).returncode == 0
    run = run_cli(tmp_path, "run", "other", "--resume", "--update-baselines", "--baselines", "base", *ONE_CELL)
    assert run.returncode == 0, run.stdout + run.stderr
    [baseline] = (tmp_path / "base").glob(f"{FRAMEWORK}-*-cpu.json")
    assert set(json.loads(baseline.read_text())["cells"]) == {"second"}


@needs_framework
def test_prune_removes_the_entries_of_deleted_cases_and_says_so(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "first")
    write_case(tmp_path / "cases", QUICK, "second")
    assert run_cli(tmp_path, "run", *ONE_CELL, "--update-baselines", "--baselines", "base").returncode == 0
    (tmp_path / "cases" / "second.yaml").unlink()
    run = run_cli(tmp_path, "run", *ONE_CELL, "--baselines", "base", "--prune-baselines")
    assert run.returncode == 0, run.stdout + run.stderr
    [baseline] = (tmp_path / "base").glob(f"{FRAMEWORK}-*-cpu.json")
    assert set(json.loads(baseline.read_text())["cells"]) == {"first"}
    assert f"pruned baseline entry: {baseline}: second" in run.stdout


def test_every_command_and_argument_says_what_it_is_in_plain_text() -> None:
    """Each subcommand has a description, each of its arguments a help, and no help text carries
    reStructuredText markup; show lists its frameworks and diff states its exit statuses."""
    import argparse

    from conformance.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing, markup = [], []
    for name, command in sub.choices.items():
        if not command.description:
            missing.append(f"{name}: no description")
        for action in command._actions:
            if action.dest != "help" and not action.help:
                missing.append(f"{name} {action.option_strings or action.dest}: no help")
        text = command.format_help()
        markup += [name for token in ("``", ":class:", ":func:", ":meth:") if token in text]
    assert not missing and not markup, (missing, markup)
    assert "``" not in parser.format_help()
    from conformance.adapter import adapter_classes

    choices = "{" + ",".join(sorted(adapter_classes())) + "}"
    assert f"--framework {choices}" in " ".join(sub.choices["show"].format_help().split())
    assert "Exit status: 0 when no cell became wrong" in " ".join(sub.choices["diff"].format_help().split())


def test_show_of_a_case_outside_the_catalogue_points_to_paths(tmp_path: Path) -> None:
    run = run_cli(tmp_path, "show", "elsewhere_case", "--framework", "torch")
    assert run.returncode == 2
    assert "no case with id 'elsewhere_case' in cases; a case elsewhere is found with --paths DIR" in run.stderr


def test_show_of_an_invalid_case_file_says_what_is_wrong_with_it(tmp_path: Path) -> None:
    """A user writing a case and asking for its program is told why it is not a case, not that none exists."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_case.yaml").write_text(
        "id: my_case\ntitle: t\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n"
        "  - {observe: value, of: x}\n  - {observe: value, of: x}\n")
    run = run_cli(tmp_path, "show", "my_case", "--paths", str(folder), "--framework", "torch")
    assert run.returncode == 2, run.stderr
    assert "my_case.yaml:6: observation name 'value(x)' is already used on line 5" in run.stderr
    other = run_cli(tmp_path, "show", "another_case", "--paths", str(folder), "--framework", "torch")
    assert other.returncode == 2
    assert f"(1 invalid file(s) there: conformance validate {folder})" in other.stderr


@needs_framework
def test_a_machine_without_a_gpu_prints_no_letter_for_it_and_says_so_once(tmp_path: Path) -> None:
    """A column that cannot run is one line at the end, not a skipped cell per case (a fresh machine's
    terminal was half `s`)."""
    for name in ("first", "second"):
        write_case(tmp_path / "cases", QUICK, name)
    run = run_cli(tmp_path, "run", "--framework", FRAMEWORK)  # every device: cpu and gpu
    assert run.returncode == 0, run.stdout + run.stderr
    if f"gpu: no cells of {FRAMEWORK}" not in run.stdout:
        pytest.skip("this machine has a GPU: its column runs")
    [progress] = [line for line in run.stdout.splitlines() if line.rstrip().endswith("[2/2]")]
    assert progress.split()[0] == ".." and "s" not in progress.split()[0]
    assert run.stdout.count(f"gpu: no cells of {FRAMEWORK}") == 1
    summary = (tmp_path / "reports" / "summary.md").read_text(encoding="utf-8")
    assert f"gpu: no cells of {FRAMEWORK}" in summary and "skipped" not in summary.split("Legend")[0]


@pytest.mark.parametrize("resume", [False, True])
def test_a_run_on_a_device_this_machine_lacks_leaves_no_results_file(tmp_path: Path, resume: bool) -> None:
    """A tox env runs each column, GPU included, with --resume when a column gains cases: on a machine with
    no GPU, that column's run runs nothing and must leave no empty file for the reports to trip over."""
    if FRAMEWORK is None:
        pytest.skip("no framework is installed")
    shutil.copy(SEED / "leaf_sin_inplace.yaml", tmp_path)
    run = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "--framework", FRAMEWORK, "--device", "gpu",
                  "--results", "gpu.jsonl", "--summary", "gpu.md", *(["--resume"] if resume else []))
    if "gpu: no cells of" not in run.stdout:
        pytest.skip("this machine has a GPU the framework can use")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    assert not (tmp_path / "gpu.jsonl").exists()
