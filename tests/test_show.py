"""``conformance show`` as a framework developer pastes it into an upstream issue: the reference's value beside
each print, a verdict line that says what was expected and what came, and exit 1 exactly when the cell is wrong.

The cells are taken from the committed results of the versions the tests env installs, so each check is
against what the matrix recorded, on the real frameworks: a silent-wrong and a silent-correct cell of each.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from conformance.adapter import adapter_classes, installed, is_installed
from conformance.case.load import load_cases
from conformance.records.record import EAGER, Record
from conformance.records.results import latest_by_cell, load_records
from conformance.records.values import format_value
from conformance.records.verdict import annotate, verdict

from .committed import ROOT, results_file

FRAMEWORKS = ("torch", "paddle", "paconvert")


def _committed(framework: str) -> list[Record]:
    """The committed eager CPU records of the installed version of *framework* (none: not installed)."""
    cls = adapter_classes().get(framework)
    if cls is None or not is_installed(cls):
        return []
    version = cls.version_label(installed(framework)[1] or "")
    path = results_file(framework, version.split("+")[0], "cpu", (EAGER,))
    return list(latest_by_cell(load_records([path])).values()) if path.is_file() else []


@functools.lru_cache(maxsize=None)
def _varying_by_machine() -> frozenset[str]:
    """The cases whose value is the machine's kernels' (``varies_by_machine:``): a committed silent-wrong of one
    may be right on the machine the tests run on."""
    cases, _ = load_cases([ROOT / "cases"])
    return frozenset(case.id for case in cases if case.varies_by_machine)


def _cell(framework: str, outcome: str) -> Record:
    records = sorted((r for r in _committed(framework)
                      if r.outcome == outcome and r.mode == EAGER and r.case not in _varying_by_machine()),
                     key=lambda r: (r.case.startswith("found_"), len(r.observations), r.case))
    if not records:
        pytest.skip(f"{framework} is not installed, or its committed column has no {outcome} cell")
    return records[0]


def _show(case: str, framework: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "show", case, "--framework", framework],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_wrong_cell_says_what_was_expected_and_what_came_and_exits_1(framework: str, tmp_path) -> None:
    record = _cell(framework, "silent-wrong")
    shown = _show(record.case, framework)
    assert shown.returncode == 1, shown.stdout[-2000:] + shown.stderr
    verdict = _verdict_line(shown.stdout)
    assert verdict.startswith("# verdict: expected ") and verdict.endswith(": wrong"), verdict
    first = record.wrong_observations[0]
    assert f"expected {first['name']} = {format_value(first['reference'])}" in verdict
    assert f"got {format_value(first['value'])}" in verdict
    # the output is still the program, and, run as it is in a fresh interpreter, it fails by itself
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 1 and "self-check: wrong: " in ran.stderr, ran.stdout[-2000:] + ran.stderr[-2000:]
    named = ran.stderr.split("self-check: wrong: ")[1].splitlines()[0].split(", ")
    assert set(named) == {str(o["name"]) for o in record.wrong_observations}, (named, record.wrong_observations)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_right_cell_says_so_and_exits_0(framework: str, tmp_path) -> None:
    record = _cell(framework, "silent-correct")
    shown = _show(record.case, framework)
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    verdict = _verdict_line(shown.stdout)
    assert verdict == "# verdict: silent-correct: every observation as expected", verdict
    for observation in record.observations:
        if "reference" in observation:  # the reference's value beside the print of each observation it gives
            assert f"# expected: {format_value(observation['reference'])}" in shown.stdout, observation["name"]
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert ran.stdout.rstrip().endswith("self-check: every judged value is as the reference gives it")


def test_a_reproducer_checks_a_weight_in_the_layout_its_framework_prints_it(tmp_path) -> None:
    """paddle stores a Linear weight as in x out: the value beside its print, and the one its self-check
    compares, are in that layout, so a right cell's reproducer passes and its comment reads as printed."""
    right = [r for r in _committed("paddle") if r.outcome == "silent-correct" and r.mode == EAGER
             and any(str(o.get("name", "")).endswith(".weight)") and "ok" in o for o in r.observations)]
    if not right:
        pytest.skip("paddle is not installed, or its committed column has no right cell with a Linear weight")
    record = min(right, key=lambda r: (r.case.startswith("found_"), len(r.observations), r.case))
    shown = _show(record.case, "paddle")
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    weight = next(o for o in record.observations if str(o.get("name", "")).endswith(".weight)") and "ok" in o)
    import numpy as np

    laid_out = format_value(np.asarray(weight["reference"]).T.tolist())
    assert f"# stored transposed (in x out) in this framework  # expected: {laid_out}" in shown.stdout
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 0 and "self-check: every judged value" in ran.stdout, ran.stderr[-2000:]


def _verdict_line(shown: str) -> str:
    return [line for line in shown.splitlines() if line.startswith("# verdict: ")][-1]


def _run_reproducer(source: str, folder) -> subprocess.CompletedProcess:
    """The reproducer saved and run as a user would: ``python repro.py`` in a folder of its own."""
    path = folder / "repro.py"
    path.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, str(path)], cwd=folder, capture_output=True, text=True, timeout=600)


def test_a_refused_program_says_what_a_framework_that_computes_gives() -> None:
    record = _cell("torch", "raises")
    shown = _show(record.case, "torch")
    assert shown.returncode == 0, shown.stderr
    verdict = shown.stdout.rstrip().splitlines()[-1]
    assert verdict.startswith("# verdict: raises: "), verdict


def test_prints_in_a_loop_get_every_iteration_s_value() -> None:
    source = "for i in range(2):\n    print(f'loss[{i}]', loss)\nprint('grad(w)', w.grad)\nprint('other', 1)\n"
    shown = annotate(source, {"loss[0]": 1.5, "loss[1]": 2.25, "grad(w)": [0.0, 1e-7]})
    assert "print(f'loss[{i}]', loss)  # expected: [0] 1.5; [1] 2.25" in shown
    assert "print('grad(w)', w.grad)  # expected: [0, 1e-07]" in shown
    assert "print('other', 1)\n" in shown  # no reference value: nothing beside it


def test_values_are_bounded() -> None:
    assert format_value(list(range(1000))).endswith("…") and len(format_value(list(range(1000)))) == 160
    assert format_value(float("nan")) == "nan" and format_value(True) == "True"


@pytest.mark.parametrize("framework", ("torch", "paddle"))
def test_a_reproducer_prints_a_numpy_scalar_it_observes(framework: str, tmp_path) -> None:
    """``a[0]`` of a NumPy array is a NumPy scalar, no array: the reproducer prints it as it is (its helper
    had asked it for .numpy()/.detach(), and the reproducer of such a found case raised before its cell)."""
    if framework not in adapter_classes() or not is_installed(adapter_classes()[framework]):
        pytest.skip(f"{framework} is not installed")
    folder = tmp_path / "cases" / "t"
    folder.mkdir(parents=True)
    (folder / "scalar.yaml").write_text(
        "id: scalar\ntitle: t\nsteps:\n  - {op: array, out: a, value: [1.5]}\n"
        "  - {op: getitem, args: [a], out: s, index: '0'}\n  - {observe: value, of: s}\n")
    shown = subprocess.run([sys.executable, "-m", "conformance.cli", "show", "scalar", "--framework", framework,
                            "--paths", str(tmp_path / "cases")], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    ran = subprocess.run([sys.executable, "-c", shown.stdout], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "value(s) 1.5" in ran.stdout, ran.stdout


def _show_args(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "show", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize(("framework", "mode"), [("paddle", "compile"), ("torch", "to_static"), ("torch", "compiled")])
def test_a_mode_the_framework_lacks_is_refused_as_run_refuses_it(framework: str, mode: str) -> None:
    if not is_installed(adapter_classes()[framework]):
        pytest.skip(f"{framework} is not installed")
    shown = _show_args("rnn_hidden_reuse", "--framework", framework, "--mode", mode)
    assert shown.returncode == 2 and shown.stdout == "", shown.stdout[-500:]
    assert shown.stderr.strip() == shown.stderr.strip().splitlines()[0] and f"no mode {mode!r}" in shown.stderr


def test_a_case_is_named_as_list_prints_it_and_an_id_two_files_define_is_refused(tmp_path) -> None:
    framework = next((f for f in ("torch", "paddle") if is_installed(adapter_classes()[f])), None)
    if framework is None:
        pytest.skip("neither torch nor paddle is installed")
    shown = _show_args("seed/rnn_hidden_reuse", "--framework", framework, "--no-run")
    assert shown.returncode == 0 and "rnn_hidden_reuse" in shown.stdout, shown.stderr
    assert _show_args("views/rnn_hidden_reuse", "--framework", framework, "--no-run").returncode == 2  # no such
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twice.yaml").write_text(
            "id: twice\ntitle: t\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n  - {observe: value, of: x}\n")
    shown = _show_args("twice", "--framework", framework, "--paths", "one", "two", "--no-run", cwd=tmp_path)
    assert shown.returncode == 2 and "defined in 2 files" in shown.stderr, shown.stderr


def test_a_device_the_machine_lacks_is_no_verdict_of_the_framework() -> None:
    from conformance.workers.pool import Worker

    framework = next((f for f in ("torch", "paddle") if is_installed(adapter_classes()[f])), None)
    if framework is None:
        pytest.skip("neither torch nor paddle is installed")
    worker = Worker(framework)
    try:
        absent = worker.info["devices"].get("gpu")
    finally:
        worker.close()
    if absent is None:
        pytest.skip(f"{framework} can use a GPU here")
    shown = _show_args("rnn_hidden_reuse", "--framework", framework, "--device", "gpu")
    assert shown.returncode == 3, shown.stdout[-800:] + shown.stderr
    assert "# verdict: skipped" in shown.stdout


def test_a_memory_cell_s_values_read_as_the_copy_they_follow_not_as_expected() -> None:
    """In a copies cell the values that differ from the reference's shared memory are the evidence of the
    copy: they are labelled as what shared memory would give, and the verdict does not call them expected."""
    copied = [r for framework in FRAMEWORKS for r in _committed(framework) if r.outcome == "copies"
              and r.mode == EAGER and any(o.get("matches_reference") is False for o in r.observations)]
    if not copied:
        pytest.skip("no installed framework's committed column has a copies cell whose values follow the copy")
    record = min(copied, key=lambda r: (r.case.startswith("found_"), len(r.observations), r.case))
    shown = _show(record.case, record.framework)
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    differing = next(o for o in record.observations if o.get("matches_reference") is False)
    assert f"# shared memory would give: {format_value(differing['reference'])}" in shown.stdout
    verdict = _verdict_line(shown.stdout)
    assert verdict.startswith("# verdict: copies: ") and "expected" not in verdict, verdict
    assert f"{differing['name']}" in verdict and verdict.endswith("the values follow the copy"), verdict


def test_a_stated_property_is_checked_by_the_reproducer_as_by_the_judge(tmp_path) -> None:
    """paddle's contiguous() of a transposed view returns the view itself (``c is v``) where the case
    states it must not: the verdict and the reproducer's self-check both name that property."""
    if not _committed("paddle"):
        pytest.skip("paddle is not installed")
    shown = _show("contiguous_of_transposed_view_keeps_view", "paddle")
    assert shown.returncode == 1, shown.stdout[-2000:] + shown.stderr
    assert "expected c_is_v = False, got True" in _verdict_line(shown.stdout)
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 1 and "self-check: wrong: c_is_v, value(v)" in ran.stderr, ran.stderr[-2000:]


def test_a_reproducer_leaves_the_elements_a_growing_resize_did_not_write_unchecked(tmp_path) -> None:
    if not _committed("torch"):
        pytest.skip("torch is not installed")
    shown = _show("resize_grow_then_read_whole", "torch")
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    assert "# expected: [1, 2, 3, 7, None]" in shown.stdout
    ran = _run_reproducer(shown.stdout, tmp_path)  # x[4] is whatever memory held: any value passes
    assert ran.returncode == 0 and "self-check: every judged value" in ran.stdout, ran.stderr[-2000:]


def test_a_reproducer_whose_framework_gives_no_gradient_where_one_is_due_fails_its_own_check(tmp_path) -> None:
    """paddle's PyLayer with mark_not_inplace leaves p.grad None where the reference has [18, -36]: judged
    without a tolerance (None is no number), it is still checked, and the saved program exits 1."""
    if not _committed("paddle"):
        pytest.skip("paddle is not installed")
    shown = _show("saved_input_squared_in_place_mark_not_inplace", "paddle")
    assert shown.returncode == 1, shown.stdout[-2000:] + shown.stderr
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 1 and "self-check: wrong: grad(p)" in ran.stderr, ran.stderr[-2000:]


@pytest.mark.skipif(not is_installed(adapter_classes()["torch"]), reason="torch is not installed")
def test_an_element_written_twice_in_no_order_is_right_with_any_value_written_and_wrong_otherwise(tmp_path) -> None:
    """index_put_ of a repeated position without accumulate: the reproducer accepts either row written there
    and fails a program that adds them."""
    shown = _show("index_put_repeated_position_any_row", "torch")
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr
    assert "# expected: [[any of 1/2, 5], [3, 4], [9, 9]]" in shown.stdout
    ran = _run_reproducer(shown.stdout, tmp_path)
    assert ran.returncode == 0 and "self-check: every judged value" in ran.stdout, ran.stderr[-2000:]
    summed = shown.stdout.replace("accumulate=False)", "accumulate=True)")
    assert summed != shown.stdout
    ran = _run_reproducer(summed, tmp_path)
    assert ran.returncode == 1 and "self-check: wrong: value(h)" in ran.stderr, ran.stdout[-2000:] + ran.stderr[-2000:]


def test_a_warning_the_cell_does_not_count_is_named_in_the_reproducer_with_why() -> None:
    """inductor's once-per-process notice on complex operators is set aside from the outcome; a user running
    the reproducer may see it, so its closing comments name it and say why it does not count, and a message
    over several lines stays one comment line."""
    notice = {"category": "UserWarning", "step": 5, "times": 2,
              "message": "Torchinductor does not support code generation for complex operators.\nPerformance may "
                         "be worse than eager.",
              "why": "inductor's notice that it leaves complex ops to eager (a matter of speed), once per process"}
    record = Record.from_dict({"case": "c", "framework": "torch", "framework_version": "2.13.0", "device": "cpu",
                               "mode": "compile", "outcome": "silent-correct", "topic": "t",
                               "details": {"ignored_warnings": [notice],
                                           "observations": [{"name": "value(x)", "value": [1.0], "reference": [1.0],
                                                             "ok": True}]}})
    lines, wrong = verdict(record, {"value(x)": [1.0]})
    assert not wrong
    at = lines.index("# warnings this run raised that the cell does not count (running this program may show "
                     "them too):")
    assert lines[at + 1] == ("#   UserWarning: Torchinductor does not support code generation for complex operators. "
                             "Performance may be worse than eager. (x2) [not counted: inductor's notice that it "
                             "leaves complex ops to eager (a matter of speed), once per process]")
    assert lines[-1] == "# verdict: silent-correct: every observation as expected"
    assert all(line.startswith("#") and "\n" not in line for line in lines)
    bare = Record.from_dict({**{k: v for k, v in record.to_dict().items() if k != "details"},
                             "details": {"observations": record.observations}})
    assert not any("not count" in line for line in verdict(bare, {"value(x)": [1.0]})[0])
