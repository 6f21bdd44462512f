"""The pytest plugin and the command line, run as a user would, in subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.records.results import read_records

from .conftest import INSTALLED, SEED

pytestmark = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
FRAMEWORK = INSTALLED[0] if INSTALLED else "torch"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A directory holding a copy of the seed cases, as a user's checkout would."""
    shutil.copytree(SEED, pytester.path / "cases" / "seed")
    return pytester.path


def outcomes(path: Path) -> dict[tuple[str, str, str], str]:
    return {(r["case"], r["framework"], r["device"]): r["outcome"] for r in read_records([path])}


def test_items_are_named_by_file_case_framework_and_device(pytester, project) -> None:
    result = pytester.runpytest_subprocess("cases/seed/leaf_sin_inplace.yaml", "--collect-only", "-q",
                                           "--framework", "torch", "--framework", "paddle")
    result.stdout.fnmatch_lines([
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]torch-cpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]torch-gpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]paddle-cpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]paddle-gpu[]]",
    ])


def test_environment_variables_choose_framework_and_device(pytester, project, monkeypatch) -> None:
    monkeypatch.setenv("CONFORMANCE_FRAMEWORKS", FRAMEWORK)
    monkeypatch.setenv("CONFORMANCE_DEVICES", "cpu")
    result = pytester.runpytest_subprocess("cases/seed/leaf_sin_inplace.yaml", "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"*leaf_sin_inplace[[]{FRAMEWORK}-cpu[]]", "1 test collected*"])


def test_header_names_versions_and_results_hold_one_record_per_cell(pytester, project) -> None:
    results = project / "out.jsonl"
    result = pytester.runpytest_subprocess("cases/seed/clone_then_requires_grad.yaml",
                                           "cases/seed/leaf_sin_inplace.yaml", "--framework", FRAMEWORK,
                                           "--device", "cpu", "--device", "gpu", "--results", str(results))
    result.stdout.fnmatch_lines([f"conformance: frameworks: {FRAMEWORK} *; devices: cpu, gpu"])
    records = list(read_records([results]))
    assert len(records) == 4
    assert {r["device"] for r in records} == {"cpu", "gpu"}
    assert (project / "reports" / "summary.md").exists()


def test_a_bad_case_file_fails_alone_with_file_and_line(pytester, project) -> None:
    (project / "cases" / "seed" / "broken.yaml").write_text("id: broken\ntitle: t\nsteps:\n  - {op: sinn}\n")
    result = pytester.runpytest_subprocess("cases/seed/broken.yaml", "cases/seed/clone_grad_flow.yaml",
                                           "--framework", FRAMEWORK, "--device", "cpu")
    result.stdout.fnmatch_lines(["*broken.yaml:4: unknown op 'sinn'*"])
    result.assert_outcomes(passed=1, failed=1)
    assert "Traceback" not in result.stdout.str()


def test_a_silent_wrong_cell_fails_its_item_with_the_error(pytester, project) -> None:
    (project / "cases" / "seed" / "wrong.yaml").write_text(
        "id: wrong\ntitle: t\nexpected: {value(y): [2.0003]}\nsteps:\n"
        "  - {op: tensor, out: x, value: [1.0]}\n  - {op: add, args: [x, x], out: y}\n"
        "  - {observe: value, of: y}\n")
    result = pytester.runpytest_subprocess("cases/seed/wrong.yaml", "--framework", FRAMEWORK, "--device", "cpu")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*wrong on * (cpu): silent-wrong*", "*value(y): got [[]2.0[]], reference*"])


@pytest.mark.skipif(len(INSTALLED) < 2, reason="needs both torch and paddle")
def test_xdist_gives_the_same_outcomes_as_a_serial_run(pytester, project) -> None:
    serial, parallel = project / "serial.jsonl", project / "parallel.jsonl"
    pytester.runpytest_subprocess("cases", "--device", "cpu", "--results", str(serial))
    pytester.runpytest_subprocess("cases", "--device", "cpu", "--results", str(parallel), "-n", "2")
    assert len(outcomes(serial)) == 2 * len(list((project / "cases" / "seed").glob("*.yaml")))
    assert outcomes(parallel) == outcomes(serial)


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=project,
                          capture_output=True, text=True, timeout=600)


def test_conformance_run_exits_0_whatever_the_frameworks_do(project) -> None:
    run = run_cli(project, "run", "--framework", FRAMEWORK, "--device", "cpu")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "| case |" in run.stdout
    assert (project / "reports" / "results" / "latest.jsonl").exists()


def test_conformance_run_exits_2_on_bad_input_but_runs_the_rest(project) -> None:
    (project / "cases" / "seed" / "broken.yaml").write_text("id: Broken\ntitle: t\nsteps: []\n")
    run = run_cli(project, "run", "--framework", FRAMEWORK, "--device", "cpu")
    assert run.returncode == 2
    assert "broken.yaml:1: id 'Broken' must be snake_case" in run.stderr
    assert len(list(read_records([project / "reports" / "results" / "latest.jsonl"]))) >= 12


def test_an_edited_baseline_fails_with_old_and_new(project) -> None:
    run = run_cli(project, "run", "cases/seed/leaf_sin_inplace.yaml", "--framework", FRAMEWORK,
                  "--device", "cpu", "--baselines", "reports/baselines", "--update-baselines")
    assert run.returncode == 0, run.stdout + run.stderr
    [baseline] = (project / "reports" / "baselines").glob(f"{FRAMEWORK}-*-cpu.json")
    data = json.loads(baseline.read_text())
    assert data["cells"]["leaf_sin_inplace"]["outcome"] == "raises"
    assert run_cli(project, "run", "cases/seed/leaf_sin_inplace.yaml", "--framework", FRAMEWORK,
                   "--device", "cpu", "--baselines", "reports/baselines").returncode == 0
    data["cells"]["leaf_sin_inplace"] = {"outcome": "silent-correct"}
    data["cells"]["case_that_was_removed"] = {"outcome": "raises"}
    baseline.write_text(json.dumps(data))
    run = run_cli(project, "run", "cases/seed/leaf_sin_inplace.yaml", "--framework", FRAMEWORK,
                  "--device", "cpu", "--baselines", "reports/baselines")
    assert run.returncode == 1
    assert "changed against baseline" in run.stdout
    assert 'old: {"outcome": "silent-correct"}' in run.stdout
    assert '"outcome": "raises"' in run.stdout.split("new:", 1)[1]
    assert "stale baseline entry (no such case)" in run.stdout and "case_that_was_removed" in run.stdout


def test_validate_list_and_show(project) -> None:
    assert run_cli(project, "validate").returncode == 0
    listing = run_cli(project, "list").stdout
    assert "seed/rnn_hidden_reuse" in listing
    shown = run_cli(project, "show", "from_numpy_aliasing", "--framework", FRAMEWORK)
    assert shown.returncode == 0 and "from_numpy(a)" in shown.stdout
    assert run_cli(project, "show", "no_such_case", "--framework", FRAMEWORK).returncode == 2
