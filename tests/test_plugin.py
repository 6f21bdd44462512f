"""The pytest plugin and the command line, run as a user would, in subprocesses."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conformance.records.results import read_records

from .conftest import CONVERTERS, INSTALLED, SEED
from .runs import FRAMEWORK, QUICK, WRONG, closing_line, run_cli, write_case

pytestmark = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A directory holding a copy of the seed cases, as a user's checkout would."""
    shutil.copytree(SEED, pytester.path / "cases" / "seed")
    return pytester.path


def counts(line: str) -> dict[str, int]:
    """``1 raises, 2 silent-correct in 1.5s`` -> {"raises": 1, "silent-correct": 2}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) ([a-z][a-z-]*)", line.split(" in ")[0])}


def outcomes(path: Path) -> dict[tuple[str, str, str], str]:
    return {(r["case"], r["framework"], r["device"]): r["outcome"] for r in read_records([path])}


def test_items_are_named_by_file_case_framework_and_device(pytester, project) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml", "--collect-only",
                                           "-q", "--conformance-framework", "torch",
                                           "--conformance-framework", "paddle")
    result.stdout.fnmatch_lines([
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]torch-cpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]torch-gpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]paddle-cpu[]]",
        "cases/seed/leaf_sin_inplace.yaml::leaf_sin_inplace[[]paddle-gpu[]]",
    ])


def test_environment_variables_choose_framework_and_device(pytester, project, monkeypatch) -> None:
    monkeypatch.setenv("CONFORMANCE_FRAMEWORKS", FRAMEWORK)
    monkeypatch.setenv("CONFORMANCE_DEVICES", "cpu")
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml", "--collect-only",
                                           "-q")
    result.stdout.fnmatch_lines([f"*leaf_sin_inplace[[]{FRAMEWORK}-cpu[]]", "1 test collected*"])


def test_header_names_versions_and_results_hold_one_record_per_cell(pytester, project) -> None:
    results = project / "out.jsonl"
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/clone_then_requires_grad.yaml",
                                           "cases/seed/leaf_sin_inplace.yaml", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu", "--conformance-device", "gpu",
                                           "--conformance-results", str(results))
    result.stdout.fnmatch_lines([f"conformance: frameworks: {FRAMEWORK} *; devices: cpu, gpu; modes: eager"])
    records = list(read_records([results]))
    absent = f"gpu: no cells of {FRAMEWORK}" in result.stdout.str()  # a machine without a GPU runs no GPU cell
    assert len(records) == (2 if absent else 4)
    assert {r["device"] for r in records} == ({"cpu"} if absent else {"cpu", "gpu"})
    summary = (project / "reports" / "summary.md").read_text(encoding="utf-8")
    assert ("gpu: no cells of" in summary) == absent


def test_a_bad_case_file_fails_alone_with_file_and_line(pytester, project) -> None:
    (project / "cases" / "seed" / "broken.yaml").write_text("id: broken\ntitle: t\nsteps:\n  - {op: sinn}\n")
    results = project / "out.jsonl"
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/broken.yaml",
                                           "cases/seed/clone_grad_flow.yaml", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu", "--conformance-results", str(results))
    result.stdout.fnmatch_lines(["*broken.yaml:4: unknown op 'sinn'*"])
    [record] = read_records([results])
    assert counts(closing_line(result.stdout.str())) == {"failed": 1, record["outcome"]: 1}
    assert "Traceback" not in result.stdout.str()


def test_a_silent_wrong_cell_is_a_finding_counted_and_explained_not_a_failure(pytester, project) -> None:
    write_case(project / "cases" / "seed", WRONG, "wrong")
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/wrong.yaml",
                                           "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu")
    assert result.ret == 0
    assert counts(closing_line(result.stdout.str())) == {"silent-wrong": 1}
    result.stdout.fnmatch_lines(["*conformance findings*", "*wrong on * (cpu): silent-wrong*",
                                 "*value(y): got [[]2.0[]], reference*"])


def test_the_closing_line_counts_each_outcome(pytester, project) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml",
                                           "cases/seed/clone_then_requires_grad.yaml",
                                           "cases/seed/detach_shares_memory.yaml", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu", "--conformance-device", "gpu")
    assert result.ret == 0
    line = closing_line(result.stdout.str())
    absent = f"gpu: no cells of {FRAMEWORK}" in result.stdout.str()  # said once, and no cell skipped for it
    expected = {"raises": 1, "silent-correct": 1, "aliases": 1} if absent else {"raises": 2, "silent-correct": 2,
                                                                                 "aliases": 2}
    assert counts(line) == expected, line


def test_a_harness_error_is_an_error_and_fails_the_run(pytester, project) -> None:
    pytester.makeconftest("""
        import conformance.engine

        def run_cell(self, case, framework, device, mode="eager"):
            return {"case": case.id, "case_file": case.path, "topic": case.topic, "title": case.title,
                    "framework": framework, "framework_version": "1.0", "device": device,
                    "outcome": "error", "details": {"message": "the harness broke"}, "timings": {},
                    "run_info": {}}

        conformance.engine.Engine.run_cell = run_cell
    """)
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml",
                                           "--conformance-framework",
                                           FRAMEWORK, "--conformance-device", "cpu")
    assert result.ret == 1
    assert counts(closing_line(result.stdout.str())) == {"error": 1}
    result.stdout.fnmatch_lines(["*harness error: the harness broke*"])


@pytest.mark.skipif(len(INSTALLED) < 2, reason="needs both torch and paddle")
def test_xdist_gives_the_same_outcomes_as_a_serial_run(pytester, project) -> None:
    serial, parallel = project / "serial.jsonl", project / "parallel.jsonl"
    pytester.runpytest_subprocess("--conformance", "cases", "--conformance-device", "cpu",
                                  "--conformance-results", str(serial))
    pytester.runpytest_subprocess("--conformance", "cases", "--conformance-device", "cpu",
                                  "--conformance-results", str(parallel), "-n", "2")
    columns = len(INSTALLED) + len(CONVERTERS)  # a run without --framework runs every installed adapter
    assert len(outcomes(serial)) == columns * len(list((project / "cases" / "seed").glob("*.yaml")))
    assert outcomes(parallel) == outcomes(serial)


def test_conformance_run_exits_0_whatever_the_frameworks_do(project) -> None:
    run = run_cli(project, "run", "--framework", FRAMEWORK, "--device", "cpu")
    assert run.returncode == 0, run.stdout + run.stderr
    cells = len(list((project / "cases").rglob("*.yaml")))
    # the terminal: the legend, a letter per cell with the running count, the counts, where the table is
    lines = run.stdout.splitlines()
    assert lines[0].startswith("cells: . silent-correct  W silent-wrong")
    assert f"[{cells}/{cells}]" in run.stdout and "| case |" not in run.stdout
    assert "summary: " in run.stdout and "| case |" in (project / "reports" / "summary.md").read_text()
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
    # the seed cases alone name remedies that live in other topics: validate says so, at each line
    partial = run_cli(project, "validate")
    assert partial.returncode == 1 and "remedy 'residual_skip_clone' is not a case of this catalogue" in partial.stderr
    shutil.copytree(SEED.parent, project / "cases", dirs_exist_ok=True)  # the whole catalogue: every link holds
    assert run_cli(project, "validate").returncode == 0
    listing = run_cli(project, "list").stdout
    assert "seed/rnn_hidden_reuse" in listing
    shown = run_cli(project, "show", "from_numpy_aliasing", "--framework", FRAMEWORK, "--no-run")
    assert shown.returncode == 0 and "from_numpy(a)" in shown.stdout
    assert run_cli(project, "show", "no_such_case", "--framework", FRAMEWORK).returncode == 2


def test_an_unrelated_project_is_left_alone(pytester) -> None:
    """Installed in an environment, the plugin collects nothing and writes nothing unless asked."""
    write_case(pytester.path / "cases", QUICK, "looks_like_a_case")
    (pytester.path / "config.yaml").write_text("key: value\n")
    pytester.makepyfile(test_unrelated="def test_one(record_property):\n    record_property('outcome', 'raises')\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == 0
    assert counts(closing_line(result.stdout.str())) == {"passed": 1}
    assert "conformance:" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_an_ini_setting_asks_for_the_matrix(pytester) -> None:
    write_case(pytester.path / "checks", QUICK, "quick")
    pytester.makeini("[pytest]\nconformance = true\n")
    result = pytester.runpytest_subprocess("checks", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu")
    assert result.ret == 0
    assert counts(closing_line(result.stdout.str())) == {"silent-correct": 1}
    assert len(list(read_records([pytester.path / "reports" / "results" / "latest.jsonl"]))) == 1


def test_a_path_given_explicitly_is_collected_whatever_its_folder_is_called(pytester) -> None:
    write_case(pytester.path / "my stuff", QUICK, "quick")
    result = pytester.runpytest_subprocess("--conformance", "my stuff", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu")
    assert result.ret == 0
    assert counts(closing_line(result.stdout.str())) == {"silent-correct": 1}


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--conformance-framework", "jax", "unknown framework 'jax'; installed adapters: "),
    ("--conformance-device", "tpu", "unknown device 'tpu'; choose from cpu, gpu"),
])
def test_an_unknown_framework_or_device_is_one_usage_error_line(pytester, project, option, value,
                                                                expected) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, errors
    assert expected in errors[0]
    if option == "--conformance-framework":
        assert FRAMEWORK in errors[0]


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_a_case_timeout_that_is_not_a_positive_number_is_a_usage_error(pytester, project, value) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml",
                                           "--conformance-framework", FRAMEWORK, "--conformance-case-timeout", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1 and repr(value) in errors[0], errors
    assert not (project / "reports").exists()


def test_an_unwritable_results_path_is_one_error_line(pytester, project) -> None:
    (project / "taken").mkdir()
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/leaf_sin_inplace.yaml",
                                           "--conformance-framework", FRAMEWORK, "--conformance-results", "taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert f"cannot write {project / 'taken'}: it is a folder, not a regular file" in output


def test_modes_make_one_column_each_and_compiled_names_every_compiled_mode(pytester, project) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases/seed/clone_then_requires_grad.yaml",
                                           "--conformance-device", "cpu", "--conformance-framework", FRAMEWORK,
                                           "--conformance-mode", "eager", "--conformance-mode", "compiled",
                                           "--collect-only", "-q")
    from conformance.adapter import adapter_classes

    compiled = list(adapter_classes()[FRAMEWORK].modes)
    names = [line for line in result.stdout.lines if "clone_then_requires_grad[" in line]
    assert len(names) == 1 + len(compiled), names
    assert any(f"[{FRAMEWORK}-cpu]" in n for n in names)
    for mode in compiled:
        assert any(f"[{FRAMEWORK}-cpu-{mode}]" in n for n in names)


def test_an_unknown_mode_is_a_one_line_usage_error(pytester, project) -> None:
    result = pytester.runpytest_subprocess("--conformance", "cases", "--conformance-mode", "jit")
    assert result.ret != 0
    assert "unknown mode 'jit'" in result.stderr.str() + result.stdout.str()


def test_cells_run_among_python_tests_with_fixtures_and_reach_junit_xml(pytester) -> None:
    """A cell's own protocol (no per-phase hooks) keeps pytest's setup state: Python tests before and
    after it, in other folders, get their fixtures set up and torn down, and every cell is reported."""
    (pytester.path / "a").mkdir()
    log = pytester.path / "teardowns.txt"
    fixture = ("import pytest\n\n@pytest.fixture(scope='module')\ndef res():\n    yield 1\n"
               f"    open({str(log)!r}, 'a').write('down\\n')\n\n")
    (pytester.path / "a" / "test_one.py").write_text(fixture + "def test_one(res):\n    assert res == 1\n")
    (pytester.path / "a" / "test_two.py").write_text(fixture + "def test_two(res):\n    assert res == 1\n")
    write_case(pytester.path / "b", QUICK, "quick")
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess("--conformance", "a/test_one.py", "b", "a/test_two.py",
                                           "--conformance-framework", FRAMEWORK, "--conformance-device", "cpu",
                                           f"--junitxml={junit}")
    assert result.ret == 0, result.stdout.str()
    assert counts(closing_line(result.stdout.str())) == {"passed": 2, "silent-correct": 1}
    assert log.read_text().splitlines() == ["down", "down"]
    assert junit.read_text().count("<testcase ") == 3 and f"quick[{FRAMEWORK}-cpu]" in junit.read_text()


def test_show_keeps_what_it_rendered_and_never_shows_a_program_of_another_case(project, tmp_path) -> None:
    """The first show renders every case it loaded and keeps the programs, sealed with the user's key; a
    later show reads them (the file is not written again); a program edited in the cache folder is rendered
    afresh, never printed as the reproducer; --no-cache renders afresh; an edited case is a different case."""
    env = {"CONFORMANCE_CACHE_DIR": str(tmp_path / "cache")}
    first = run_cli(project, "show", "from_numpy_aliasing", "--framework", FRAMEWORK, "--no-run", env=env)
    assert first.returncode == 0 and "from_numpy(a)" in first.stdout
    kept = sorted((tmp_path / "cache" / "programs").rglob(f"{FRAMEWORK}-*-cpu-eager-*.json"))
    assert len(kept) == len(list((project / "cases").rglob("*.yaml")))  # every case, from one worker
    sealed = {path: path.read_bytes().partition(b"\n") for path in kept}
    assert all(re.fullmatch(rb"[0-9a-f]{64}", mac) for mac, _, _ in sealed.values())
    written = {path: path.stat().st_mtime_ns for path in kept}
    again = run_cli(project, "show", "leaf_sin_inplace", "--framework", FRAMEWORK, "--no-run", env=env)
    assert again.returncode == 0 and "sin_()" in again.stdout
    assert {path: path.stat().st_mtime_ns for path in kept} == written  # read, not written again
    for path, (mac, _, body) in sealed.items():
        reply = json.loads(body)
        reply["source"] = "import os  # planted\n" + reply["source"]
        path.write_bytes(mac + b"\n" + json.dumps(reply).encode())  # the old seal on new content
    tampered = run_cli(project, "show", "leaf_sin_inplace", "--framework", FRAMEWORK, "--no-run", env=env)
    assert tampered.returncode == 0 and "planted" not in tampered.stdout and tampered.stdout == again.stdout
    assert any(b"planted" not in path.read_bytes() for path in kept)  # rendered afresh, and kept anew
    fresh = run_cli(project, "show", "leaf_sin_inplace", "--framework", FRAMEWORK, "--no-cache", "--no-run", env=env)
    assert fresh.returncode == 0 and fresh.stdout == again.stdout
    [path] = (project / "cases").rglob("leaf_sin_inplace.yaml")
    path.write_text(path.read_text().replace("title: ", "title: Edited, ", 1))
    edited = run_cli(project, "show", "leaf_sin_inplace", "--framework", FRAMEWORK, "--no-run", env=env)
    assert edited.returncode == 0 and "Edited, " in edited.stdout


def test_the_progress_count_counts_each_cell_once(pytester) -> None:
    """The terminal's progress count keeps only the node ids in flight (the parent's memory is flat); it
    still counts each cell once, whatever its phases report (a silent-wrong cell among them)."""
    for name in ("a", "b", "c"):
        write_case(pytester.path / "checks", QUICK, name)
    write_case(pytester.path / "checks", WRONG, "d_wrong")
    result = pytester.runpytest_subprocess("checks", "--conformance", "--conformance-framework", FRAMEWORK,
                                           "--conformance-device", "cpu", "--conformance-no-baselines", "-v")
    assert re.findall(r"\[\s*(\d+)%\]", result.stdout.str()) == ["25", "50", "75", "100"]


def test_a_case_file_found_in_a_folder_is_read_once(pytester, monkeypatch) -> None:
    """Collection looks into each YAML file of a folder for a case's key; the case is then checked from those
    bytes, never read a second time.  A file named on the command line is not looked into: it is read once,
    when its case is checked."""
    from conformance.case import _yaml

    for name in ("a", "b"):
        write_case(pytester.path / "checks", QUICK, name)
    read = []
    real = _yaml.read_bounded
    monkeypatch.setattr(_yaml, "read_bounded", lambda path: read.append(Path(path).name) or real(path))
    result = pytester.runpytest_inprocess("checks", "--conformance", "--conformance-framework", FRAMEWORK,
                                          "--conformance-device", "cpu", "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"*a.yaml::a[[]{FRAMEWORK}-cpu[]]", f"*b.yaml::b[[]{FRAMEWORK}-cpu[]]"])
    assert read == []
    result = pytester.runpytest_inprocess("checks/a.yaml", "--conformance", "--conformance-framework", FRAMEWORK,
                                          "--conformance-device", "cpu", "--collect-only", "-q")
    result.stdout.fnmatch_lines([f"*a.yaml::a[[]{FRAMEWORK}-cpu[]]"])
    assert read == ["a.yaml"]
