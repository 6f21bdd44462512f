"""Nothing is lost while a command exits 0: results, summaries and baselines under attack, as a user
would attack them, through the ``conformance`` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conformance.outputs import ResultsLock, check_outputs
from conformance.settings import OptionError

from .conftest import INSTALLED, ROOT, SEED, fill
from .runs import FRAMEWORK, LONG, QUICK, cli_command, records_in, run_cli, write_case

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
ONE_COLUMN = ("--framework", FRAMEWORK, "--device", "cpu")


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _lines(path: Path) -> list[dict]:
    return records_in(path)


# -- the results file and the summary ----------------------------------------------------------------

@needs_framework
def test_a_second_run_on_the_same_results_file_is_refused_and_the_first_keeps_every_record(
        tmp_path: Path) -> None:
    for number in range(6):
        write_case(tmp_path / "cases", QUICK, f"quick_{number}")
    write_case(tmp_path / "cases", LONG.replace("1000000000", "400000"), "slow")
    first = subprocess.Popen(cli_command("run", "cases", *ONE_COLUMN, "--timeout", "120"), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    deadline = time.monotonic() + 120
    while (not results.exists() or not results.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)  # the first run has started writing
    second = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, "--summary", "other.md")
    out, err = first.communicate(timeout=600)
    assert second.returncode == 2
    [line] = [line for line in second.stderr.splitlines() if "another conformance run" in line]
    assert f"another conformance run is writing {results}" in line
    assert first.returncode == 0, out + err
    assert len(_lines(results)) == 7  # every record of the first run, none emptied away
    assert "7 silent-correct" in out or "6 silent-correct" in out


def test_the_results_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = ResultsLock(path)
    first.acquire()
    with pytest.raises(OptionError, match="another conformance run is writing"):
        ResultsLock(path).acquire()
    first.release()
    again = ResultsLock(path)
    again.acquire()
    again.release()


@pytest.mark.parametrize("kind", ["fifo", "character device", "folder"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "summary.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        target = Path("/dev/zero")  # a device node: deleting it is what the summary option once did
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "cases", "--summary", str(target), *ONE_COLUMN)
    assert run.returncode == 2
    [line] = error_lines(run.stderr)
    assert f"cannot write {target}: it is a" in line and "not a regular file" in line
    assert target.exists() or target.is_fifo()


def test_summary_and_results_naming_one_file_are_refused(tmp_path: Path) -> None:
    results = tmp_path / "both.jsonl"
    results.write_text('{"kept": "a record from before"}\n')
    with pytest.raises(OptionError, match="name the same file"):
        check_outputs(results, tmp_path / "." / "both.jsonl")
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "cases", "--results", "both.jsonl", "--summary", "both.jsonl", *ONE_COLUMN)
    assert run.returncode == 2 and "name the same file" in run.stderr
    assert results.read_text() == '{"kept": "a record from before"}\n'


@needs_framework
def test_a_summary_at_the_path_is_replaced_only_by_a_run_that_writes_one(tmp_path: Path) -> None:
    summary = tmp_path / "mine.md"
    summary.write_text("my notes\n")
    run = run_cli(tmp_path, "run", "nowhere", "--summary", "mine.md", *ONE_COLUMN)
    assert run.returncode == 2 and summary.read_text() == "my notes\n"  # a refused run deletes nothing
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "cases", "--summary", "mine.md", *ONE_COLUMN)
    assert run.returncode == 0 and "quick" in summary.read_text()


# -- baselines ---------------------------------------------------------------------------------------

def test_a_baseline_folder_that_does_not_exist_is_a_usage_error_not_a_gate_left_open(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    run = run_cli(tmp_path, "run", "cases", "--baselines", "no/such/folder", *ONE_COLUMN)
    assert run.returncode == 2
    assert "no baseline folder" in run.stderr + run.stdout


@needs_framework
def test_a_corrupted_baseline_is_one_clear_error_and_update_rewrites_it_keeping_its_bytes(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    assert run_cli(tmp_path, "run", "cases", "--baselines", "base", "--update-baselines", *ONE_COLUMN).returncode == 0
    [baseline] = (tmp_path / "base").glob("*.json")
    damaged = baseline.read_text()[:40]  # cut short, as a crashed editor leaves it
    baseline.write_text(damaged)
    run = run_cli(tmp_path, "run", "cases", "--baselines", "base", *ONE_COLUMN)
    assert run.returncode == 2
    output = run.stdout + run.stderr
    assert "Traceback" not in output and output.count(f"baseline file {baseline} cannot be read") == 1
    repaired = run_cli(tmp_path, "run", "cases", "--baselines", "base", "--update-baselines", *ONE_COLUMN)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert json.loads(baseline.read_text())["cells"]["quick"]["outcome"] == "silent-correct"
    assert (tmp_path / "base" / f"{baseline.name}.unreadable").read_text() == damaged
    assert run_cli(tmp_path, "run", "cases", "--baselines", "base", *ONE_COLUMN).returncode == 0


def _catalogue_copy(tmp_path: Path) -> Path:
    """A project with a copy of the seed cases as its catalogue and their entries of the committed
    baselines (every framework, version, device and mode)."""
    project = tmp_path / "project"
    shutil.copytree(SEED, project / "cases" / "seed")
    seed = {path.stem for path in SEED.glob("*.yaml")}
    (project / "reports" / "baselines").mkdir(parents=True)
    for path in (ROOT / "reports" / "baselines").glob("*.json"):
        content = json.loads(path.read_text())
        content["cells"] = {case: entry for case, entry in content["cells"].items() if case in seed}
        (project / "reports" / "baselines" / path.name).write_text(json.dumps(content))
    return project


def _baseline_entries(project: Path) -> int:
    return sum(len(json.loads(p.read_text())["cells"]) for p in (project / "reports" / "baselines").glob("*.json"))


@needs_framework
@pytest.mark.parametrize("how", ["a file outside cases", "a sibling folder", "a symlinked folder"])
def test_prune_after_a_partial_run_removes_only_entries_of_cases_gone_from_the_catalogue(
        tmp_path: Path, how: str) -> None:
    project = _catalogue_copy(tmp_path)
    if how == "a symlinked folder":
        shutil.move(project / "cases" / "seed", tmp_path / "elsewhere")
        (project / "cases" / "seed").symlink_to(tmp_path / "elsewhere")
    before = _baseline_entries(project)
    gone = json.loads(next((project / "reports" / "baselines").glob("paddle-3.3.1-cpu.json")).read_text())
    gone["cells"]["a_case_deleted_long_ago"] = {"outcome": "raises"}
    (project / "reports" / "baselines" / "paddle-3.3.1-cpu.json").write_text(json.dumps(gone))
    target = {"a file outside cases": "outside.yaml", "a sibling folder": "sibling",
              "a symlinked folder": "cases/seed"}[how]
    if how == "a file outside cases":
        write_case(project, QUICK, "outside")
    elif how == "a sibling folder":
        write_case(project / "sibling", QUICK, "in_sibling")
    run = run_cli(project, "run", target, *ONE_COLUMN, "--prune-baselines", "--no-baselines")
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert "pruned baseline entry" in run.stdout and "a_case_deleted_long_ago" in run.stdout
    assert run.stdout.count("pruned baseline entry") == 1
    assert _baseline_entries(project) == before  # every live entry kept, the one dead entry gone


@needs_framework
def test_prune_is_refused_when_a_case_file_of_the_catalogue_cannot_be_read(tmp_path: Path) -> None:
    project = _catalogue_copy(tmp_path)
    before = _baseline_entries(project)
    (project / "cases" / "seed" / "leaf_sin_inplace.yaml").write_text("id: leaf_sin_inplace\nsteps: [\n")
    run = run_cli(project, "run", "cases/seed/clone_grad_flow.yaml", *ONE_COLUMN, "--prune-baselines",
                  "--no-baselines")
    assert run.returncode != 0
    assert "--prune-baselines removed nothing" in run.stdout and "leaf_sin_inplace.yaml" in run.stdout
    assert _baseline_entries(project) == before


# -- resuming ----------------------------------------------------------------------------------------

@needs_framework
def test_resume_refuses_records_of_another_version_and_foreign_lines_with_one_line(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    assert run_cli(tmp_path, "run", "cases", *ONE_COLUMN).returncode == 0
    [record] = _lines(results)
    record.update(case="other", framework_version="0.0.1")
    with open(results, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    run = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, "--resume")
    assert run.returncode == 2 and "holds records of" in run.stderr + run.stdout and "0.0.1" in run.stderr + run.stdout
    results.write_text('["not", "a", "record"]\n')
    run = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, "--resume")
    output = run.stdout + run.stderr
    assert run.returncode == 2 and "Traceback" not in output and f"{results}:1" in output
    assert results.read_text() == '["not", "a", "record"]\n'  # refused, and left as it was


# -- signals -----------------------------------------------------------------------------------------

@needs_framework
def test_sigint_twice_still_ends_with_the_summary_of_the_cells_that_finished(tmp_path: Path) -> None:
    import signal

    for number in range(30):
        write_case(tmp_path / "cases", QUICK, f"quick_{number:02}")
    write_case(tmp_path / "cases", LONG, "zz_long")
    run = subprocess.Popen(cli_command("run", "cases", *ONE_COLUMN), cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    results = tmp_path / "reports" / "results" / "latest.jsonl"
    deadline = time.monotonic() + 120
    while (not results.exists() or len(_lines(results)) < 30) and time.monotonic() < deadline:
        time.sleep(0.1)  # every quick cell is in; the long one runs
    run.send_signal(signal.SIGINT)
    time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, out + err
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert "**Interrupted**" in summary and "30 cell(s) finished" in summary
    assert "deselected" not in out + err


@pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
def test_a_results_filesystem_that_fills_stops_the_run_at_the_first_lost_record(full_filesystem: Path,
                                                                                  tmp_path: Path) -> None:
    """A real tmpfs with room for a few records: the run stops with one line at the first write that fails,
    and the file holds whole records only (diff and report read it)."""
    for number in range(30):
        write_case(tmp_path / "cases", QUICK, f"quick_{number:02d}")
    fill(full_filesystem, leave=12 * 1024)
    results = full_filesystem / "r.jsonl"
    run = run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--device", "cpu", "--no-baselines",
                  "--results", str(results), "--summary", str(tmp_path / "s.md"))
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-3000:]
    assert output.count(f"cannot write {results}: No space left on device") == 1, output[-3000:]
    assert "Traceback" not in output
    lines = results.read_bytes().split(b"\n")
    assert lines[-1] == b""  # whole lines only: a record with its run line, or neither
    records = records_in(results)
    assert 0 < len(records) < 30 and all(record["case"].startswith("quick_") for record in records)
    assert run_cli(tmp_path, "diff", str(results), str(results)).returncode == 0


@needs_framework
def test_a_run_keeps_the_previous_runs_results_and_summary_and_says_where(tmp_path: Path) -> None:
    """A default run replaces reports/results/latest.jsonl and reports/summary.md: the previous run's are kept
    beside them (a run on one case once threw a whole matrix's results away without a word)."""
    for number in range(3):
        write_case(tmp_path / "cases" / "all", QUICK, f"quick_{number}")
    write_case(tmp_path / "cases" / "one", QUICK, "lonely")
    first = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, "--no-baselines")
    assert first.returncode == 0 and "kept the previous" not in first.stdout
    results, summary = tmp_path / "reports" / "results" / "latest.jsonl", tmp_path / "reports" / "summary.md"
    before = (results.read_bytes(), summary.read_bytes())
    second = run_cli(tmp_path, "run", "cases/one", *ONE_COLUMN, "--no-baselines")
    assert second.returncode == 0, second.stdout[-2000:]
    assert (results.with_name("latest.jsonl.previous").read_bytes(),
            summary.with_name("summary.md.previous").read_bytes()) == before
    assert len(records_in(results)) == 1
    assert f"kept the previous run's results: {results}.previous" in second.stdout
    assert f"kept the previous run's summary: {summary}.previous" in second.stdout


@needs_framework
def test_a_summary_on_a_full_filesystem_is_one_line_and_the_results_are_whole(full_filesystem: Path,
                                                                               tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick")
    summary = full_filesystem / "summary.md"
    fill(full_filesystem)
    run = run_cli(tmp_path, "run", "cases", *ONE_COLUMN, "--no-baselines", "--results", "r.jsonl",
                  "--summary", str(summary))
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    assert f"error: cannot write {summary}: No space left on device" in output
    assert [record["case"] for record in records_in(tmp_path / "r.jsonl")] == ["quick"]
