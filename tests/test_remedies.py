"""The remedy check (conformance/report/remedies.py): what makes a hazard, and a remedy verified or not.

Records here are written by hand: the check is a function of cases and records, and each test states the
cells it is about.  The committed catalogue against the committed results is checked in
tests/test_committed_results.py, and `conformance remedies` there is what CI runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.case.load import load_cases
from conformance.cli import main
from conformance.records.record import Record
from conformance.report.remedies import check_remedies

HAZARD = """\
id: hazard
title: x.sin_() on a leaf
cause: "an in-place op on a leaf that requires grad"
{remedy}
steps:
  - {{op: tensor, out: x, value: [1.0], requires_grad: true}}
  - {{op: sin_, args: [x]}}
  - {{observe: value, of: x}}
"""
FIX = """\
id: {id}
title: y = x.sin()
steps:
  - {{op: tensor, out: x, value: [1.0], requires_grad: true}}
  - {{op: sin, args: [x], out: y}}
  - {{observe: value, of: y}}
"""
COLUMNS = [("torch", "2.13.0"), ("torch", "2.15.0"), ("paddle", "3.0.0"), ("paddle", "3.3.1")]


def cells(case: str, outcomes: dict[tuple[str, str], str], mode: str = "eager") -> list[Record]:
    return [Record(case=case, framework=fw, framework_version=v, device="cpu", outcome=o, mode=mode,
                   details={"correct": False} if o == "warns" else {}) for (fw, v), o in outcomes.items()]


def everywhere(case: str, outcome: str) -> list[Record]:
    return cells(case, {column: outcome for column in COLUMNS})


@pytest.fixture
def catalogue(tmp_path: Path):
    def write(remedy: str = "remedy: [fix]", *extra: str):
        folder = tmp_path / "cases" / "leaf"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hazard.yaml").write_text(HAZARD.format(remedy=remedy))
        for name in ("fix", "other_fix", *extra):
            (folder / f"{name}.yaml").write_text(FIX.format(id=name))
        cases, errors = load_cases([tmp_path / "cases"])
        assert not errors
        return cases
    return write


def messages(checked) -> list[str]:
    return [problem.message for problem in checked.problems]


def test_a_remedy_clean_on_every_column_verifies_the_hazard(catalogue) -> None:
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct")
    checked = check_remedies(catalogue(), records)
    assert not checked.problems
    [hazard] = checked.hazards.values()
    assert set(hazard.verified.values()) == {"fix"} and not hazard.unverified


def test_a_case_that_never_raises_or_goes_wrong_is_no_hazard(catalogue) -> None:
    checked = check_remedies(catalogue("remedy: [fix]"), everywhere("hazard", "silent-correct"))
    assert checked.hazards == {} and not checked.problems


@pytest.mark.parametrize("outcome", ["raises", "silent-wrong", "crash", "timeout", "warns"])
def test_any_dangerous_cell_makes_a_hazard_that_needs_a_remedy(catalogue, outcome: str) -> None:
    records = cells("hazard", {("torch", "2.13.0"): "silent-correct", ("paddle", "3.3.1"): outcome})
    checked = check_remedies(catalogue(""), records)
    assert "hazard" in checked.hazards
    assert any("names its safe spelling" in m for m in messages(checked))


def test_a_remedy_unsupported_where_the_hazard_ran_is_not_verified_there(catalogue) -> None:
    records = everywhere("hazard", "silent-wrong") + cells("fix", {
        ("torch", "2.13.0"): "silent-correct", ("torch", "2.15.0"): "silent-correct",
        ("paddle", "3.0.0"): "unsupported", ("paddle", "3.3.1"): "silent-correct"})
    [problem] = check_remedies(catalogue(), records).problems
    assert "no remedy is verified on paddle 3.0.0 cpu" in problem.message
    assert problem.line == 4  # the remedy: line of the hazard's file


def test_two_remedies_together_cover_the_columns(catalogue) -> None:
    records = everywhere("hazard", "raises") + cells("fix", {
        ("torch", "2.13.0"): "silent-correct", ("torch", "2.15.0"): "silent-correct",
        ("paddle", "3.0.0"): "unsupported", ("paddle", "3.3.1"): "unsupported"}) + cells("other_fix", {
        ("torch", "2.13.0"): "unsupported", ("torch", "2.15.0"): "unsupported",
        ("paddle", "3.0.0"): "silent-correct", ("paddle", "3.3.1"): "silent-correct"})
    assert not check_remedies(catalogue("remedy: [fix, other_fix]"), records).problems


@pytest.mark.parametrize("outcome", ["raises", "silent-wrong", "warns", "crash"])
def test_a_remedy_that_is_a_hazard_anywhere_fails(catalogue, outcome: str) -> None:
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct")
    records += cells("fix", {("paddle", "3.0.0"): outcome})  # a later record wins its cell
    assert any("'fix' is itself a hazard" in m for m in messages(check_remedies(catalogue(), records)))


def test_a_remedy_that_shares_memory_on_one_framework_and_copies_on_the_other_fails(catalogue) -> None:
    records = everywhere("hazard", "raises") + cells("fix", {
        ("torch", "2.13.0"): "aliases", ("torch", "2.15.0"): "aliases",
        ("paddle", "3.0.0"): "copies", ("paddle", "3.3.1"): "copies"})
    found = messages(check_remedies(catalogue(), records))
    assert any("shares memory on some columns and copies on others" in m for m in found)


def test_a_remedy_with_the_same_memory_everywhere_is_verified(catalogue) -> None:
    records = everywhere("hazard", "raises") + everywhere("fix", "copies")
    assert not check_remedies(catalogue(), records).problems


def test_a_remedy_that_is_no_case_or_never_ran_is_named(catalogue) -> None:
    records = everywhere("hazard", "raises")
    found = messages(check_remedies(catalogue("remedy: [fix, no_such_case]"), records))
    assert "remedy 'no_such_case' is not a case of this catalogue" in found
    assert "remedy 'fix' has no results: run it on every column" in found


def test_a_reason_instead_of_a_remedy_is_accepted(catalogue) -> None:
    records = everywhere("hazard", "raises")
    checked = check_remedies(catalogue('no_remedy: "the API exists in one framework only"'), records)
    assert not checked.problems and checked.remedied == []


def test_a_hazard_says_why(catalogue, tmp_path: Path) -> None:
    cases = catalogue()
    path = tmp_path / "cases" / "leaf" / "hazard.yaml"
    path.write_text(path.read_text().replace('cause: "an in-place op on a leaf that requires grad"\n', ""))
    cases, _ = load_cases([tmp_path / "cases"])
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct")
    assert messages(check_remedies(cases, records)) == [
        "a hazard says why it goes wrong: add a one-line 'cause:'"]


def test_what_the_fuzzer_wrote_needs_no_remedy(catalogue, tmp_path: Path) -> None:
    catalogue("")
    path = tmp_path / "cases" / "leaf" / "hazard.yaml"
    path.write_text(path.read_text().replace("title:", "source: 'found by fuzzing: conformance fuzz --seed 1'\ntitle:"))
    cases, _ = load_cases([tmp_path / "cases"])
    checked = check_remedies(cases, everywhere("hazard", "silent-wrong"))
    assert "hazard" in checked.hazards and not checked.problems


def test_compiled_modes_and_a_converter_s_column_are_not_what_a_remedy_is_checked_on(catalogue) -> None:
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct")
    records += cells("fix", {("torch", "2.13.0"): "raises"}, mode="compile")
    converted = [Record(case=case, framework="paconvert", framework_version="3.3.1", device="cpu", outcome="raises",
                        run_info={"converter": "PaConvert"}) for case in ("hazard", "fix")]
    assert not check_remedies(catalogue(), records + converted).problems
    # the same records without saying they are a converter's are a framework's column like any other
    plain = [Record(case=r.case, framework=r.framework, framework_version=r.framework_version, device="cpu",
                    outcome=r.outcome) for r in converted]
    assert check_remedies(catalogue(), records + plain).problems


def test_a_remedy_the_harness_could_not_judge_verifies_nothing_and_says_so(catalogue) -> None:
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct") + cells("fix", {
        ("paddle", "3.0.0"): "error"})
    assert any("'fix' was not judged (a harness fault, error)" in m
               for m in messages(check_remedies(catalogue(), records)))


def test_a_memory_remedy_whose_values_differ_from_the_reference_is_not_verified(catalogue) -> None:
    records = everywhere("hazard", "raises") + [
        Record(case="fix", framework=fw, framework_version=v, device="cpu", outcome="copies",
               details={"observations": [{"name": "value(y)", "kind": "value", "matches_reference": fw == "torch"}]})
        for fw, v in COLUMNS]
    assert any("its values differ from the reference" in m for m in messages(check_remedies(catalogue(), records)))


def test_cli_remedies_exit_status_and_lines(catalogue, tmp_path: Path, capsys) -> None:
    import json

    catalogue("")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in everywhere("hazard", "raises")))
    assert main(["remedies", str(results), "--cases", str(tmp_path / "cases")]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path / 'cases' / 'leaf' / 'hazard.yaml'}:1: a hazard (raises on" in out
    assert "1 hand-written hazard(s): 0 with a remedy verified" in out
    # the catalogue's other case ran nowhere in these files: said, never left out in silence
    assert "not checked: 2 case(s) with no eager result in these files, so neither hazard nor remedy is known " \
        "(fix, other_fix)" in out
    assert main(["remedies", str(tmp_path / "missing.jsonl")]) == 2


def test_skipped_gpu_columns_ask_nothing_of_a_remedy(catalogue) -> None:
    gpu = [Record(case=case, framework="torch", framework_version="2.13.0", device="gpu", outcome="skipped",
                  details={"reason": "no GPU"}) for case in ("hazard", "fix")]
    records = everywhere("hazard", "raises") + everywhere("fix", "silent-correct") + gpu
    checked = check_remedies(catalogue(), records)
    assert not checked.problems and all(c.device == "cpu" for c in checked.hazards["hazard"].ran)


def test_a_gpu_column_older_than_the_remedy_leaves_it_pending_and_a_cpu_column_does_not(catalogue) -> None:
    """A GPU column runs where a GPU machine is lent and can predate a remedy added since (docs/gpu.md names
    such cases): the hazard is pending there, not a problem; a CPU column without the remedy's cell is one."""
    gpu = Record(case="hazard", framework="torch", framework_version="2.13.0", device="gpu", outcome="raises",
                 mode="eager", details={})
    records = everywhere("hazard", "raises") + [gpu] + everywhere("fix", "silent-correct")
    checked = check_remedies(catalogue(), records)
    assert not checked.problems
    [hazard] = checked.hazards.values()
    assert [c.device for c in hazard.pending] == ["gpu"] and not hazard.unverified
    cpu_only = [r for r in everywhere("fix", "silent-correct") if r.framework_version != "3.0.0"]
    [problem] = check_remedies(catalogue(), everywhere("hazard", "raises") + cpu_only).problems
    assert "no remedy is verified on paddle 3.0.0 cpu" in problem.message
