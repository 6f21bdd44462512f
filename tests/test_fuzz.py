"""The fuzzer: judgeable programs by construction, determinism, new ops fuzzed, shrinking, a bounded run."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from conformance.case.load import load_case
from conformance.fuzz.command import fuzz
from conformance.fuzz.generate import GeneratorBug, Program, Source, fuzzable_ops, programs
from conformance.fuzz.run import Runner
from conformance.fuzz.shrink import shrink
from conformance.fuzz.verdict import ERROR, FINDING, NOTHING, REFERENCE, Cell, Verdict, judge
from conformance.fuzz import OUT_OF_SCOPE
from conformance.fuzz.cause import interface
from conformance.fuzz.write import KnownCases, canonical, case_text, write_case
from conformance.judge.reference import run_reference
from conformance.ops import OPS, Op
from conformance.records.results import read_records

from .conftest import INSTALLED
from .runs import run_cli

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
#: The bounded run: small enough for CI, large enough to find something on the frameworks of today.
SEED, BUDGET = 7, 80


# -- generation -------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_every_generated_program_is_a_case_the_reference_judges(program: Program) -> None:
    """Drawn by hypothesis's own engine: a program the checker or the reference refuses is a generator bug
    (the strategy raises GeneratorBug, and hypothesis shows the smallest such program)."""
    case = program.case("generated")
    with np.errstate(all="ignore"):
        result = run_reference(case)
    assert result.observations, "a program observes something"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fuzz_source_draws_only_judgeable_programs(seed: int) -> None:
    """Drawn as ``conformance fuzz`` draws them (seeded bytes through fuzz_one_input), no op left out."""
    source = Source(seed, exclude_faulty=False)
    for _ in range(120):
        drawn = source.next()  # raises GeneratorBug for a program the checker or the reference refuses
        with np.errstate(all="ignore"):
            run_reference(drawn.program.case("drawn"))
    assert not source.bugs and not source.excluded
    assert source.rejected <= source.tried // 4, "the strategy rejects too many inputs"


def test_the_same_seed_draws_the_same_programs_and_another_seed_others() -> None:
    first, again, other = Source(11), Source(11), Source(12)
    a = [first.next() for _ in range(40)]
    b = [again.next() for _ in range(40)]
    c = [other.next() for _ in range(40)]
    assert [(d.program, d.buffer) for d in a] == [(d.program, d.buffer) for d in b]
    assert [d.program for d in a] != [d.program for d in c]


def test_programs_use_the_whole_table() -> None:
    source = Source(3)
    used = {op for _ in range(400) for op in source.next().program.ops()}
    fuzzed, _ = fuzzable_ops()
    missing = set(fuzzed) - used
    assert len(missing) <= len(fuzzed) // 10, f"ops never drawn in 400 programs: {sorted(missing)}"


def _negate() -> Op:
    return Op("negate", "out = -t (an op the table does not have).", args=("tensor",),
              run_reference=lambda m, s: m.bind(s, m.new(lambda x: (-x, [lambda g: -g]), s.args[0])),
              run_spell=lambda w, s: w.emit(f"{w.out(s)} = -{s.args[0]}"))


def test_an_op_added_to_the_table_is_fuzzed_without_touching_the_fuzzer(monkeypatch) -> None:
    monkeypatch.setitem(OPS, "negate", _negate())
    assert "negate" in fuzzable_ops()[0]
    source = Source(4, exclude_faulty=False)
    with_negate = [d.program for d in (source.next() for _ in range(200)) if "negate" in d.program.ops()]
    assert with_negate, "200 programs and not one negate"
    for program in with_negate:
        run_reference(program.case("negated"))  # judgeable, like every other program


def test_an_op_with_a_reason_is_left_out_and_says_why(monkeypatch) -> None:
    monkeypatch.setitem(OPS, "negate", Op("negate", "-t", args=("tensor",), fuzz="not meant for fuzzing",
                                          run_reference=_negate().run_reference))
    fuzzed, left_out = fuzzable_ops()
    assert "negate" not in fuzzed and left_out["negate"] == "not meant for fuzzing"
    listing = run_cli(Path.cwd(), "fuzz", "--list-ops")
    assert listing.returncode == 0 and "ops fuzzed" in listing.stdout


def test_an_op_whose_steps_the_checker_refuses_is_left_out_of_the_run_with_the_reason(monkeypatch) -> None:
    def refuse(data, scope, fail):
        raise fail("never valid")

    monkeypatch.setitem(OPS, "negate", Op("negate", "-t", args=("tensor",), check=refuse,
                                          run_reference=_negate().run_reference))
    source = Source(4)
    for _ in range(200):
        assert "negate" not in source.next().program.ops()
    assert "never valid" in source.excluded["negate"]
    with pytest.raises(GeneratorBug, match="never valid"):
        strict = Source(4, exclude_faulty=False)
        for _ in range(200):
            strict.next()


# -- verdicts, canonical programs, case files -------------------------------------------------------------


PROGRAM = Program(({"op": "tensor", "out": "t1", "value": [0.5, 1.5], "dtype": "float32", "requires_grad": True},
                   {"op": "sin_", "args": ["t1"]},
                   {"observe": "value", "of": "t1"}))


def _cell(outcome: str, value=None, reference=None, **details) -> Cell:
    if value is not None:
        details["observations"] = [{"name": "value(t1)", "kind": "value", "step": 3, "value": value,
                                    "dtype": "float32", "reference": reference, "ok": value == reference}]
    return Cell(outcome, details)


def test_verdicts_tell_findings_from_suspected_reference_bugs() -> None:
    case = PROGRAM.case("v")
    agree = judge(case, {"torch": _cell("silent-wrong", [1.0, 2.0], [0.0, 0.0]),
                         "paddle": _cell("silent-wrong", [1.0, 2.0], [0.0, 0.0])})
    assert agree.kind == REFERENCE
    differ = judge(case, {"torch": _cell("silent-wrong", [1.0, 2.0], [0.0, 0.0]),
                          "paddle": _cell("silent-wrong", [3.0, 2.0], [0.0, 0.0])})
    assert differ.kind == FINDING
    one_wrong = judge(case, {"torch": _cell("silent-correct", [0.0, 0.0], [0.0, 0.0]),
                             "paddle": _cell("silent-wrong", [3.0, 2.0], [0.0, 0.0])})
    assert one_wrong.kind == FINDING and one_wrong.signature[1] == ("paddle", "wrong", "value")
    raises_silent = judge(case, {"torch": _cell("raises", exception={"kind": "autograd", "op": "sin_"}),
                                 "paddle": _cell("silent-correct")})
    assert raises_silent.kind == FINDING and ("torch", "raises", "autograd", "sin_") in raises_silent.signature
    assert judge(case, {"torch": _cell("raises"), "paddle": _cell("raises")}).kind == NOTHING
    assert judge(case, {"torch": _cell("crash", signal="SIGSEGV"), "paddle": _cell("raises")}).kind == FINDING
    assert judge(case, {"torch": _cell("error", message="x"), "paddle": _cell("raises")}).kind == ERROR
    assert judge(case, {"torch": _cell("silent-wrong", [1.0, 2.0], [0.0, 0.0])}).kind == FINDING  # one framework
    warned = judge(case, {"torch": _cell("warns", correct=False), "paddle": _cell("silent-correct")})
    assert warned.kind == FINDING


def test_the_same_program_up_to_names_and_values_is_known() -> None:
    renamed = Program(({"op": "tensor", "out": "x", "value": [2.0, -1.0], "dtype": "float32", "requires_grad": True},
                       {"op": "sin_", "args": ["x"]},
                       {"observe": "value", "of": "x", "name": "after"}))
    assert canonical(renamed.steps) == canonical(PROGRAM.steps)
    other = Program(PROGRAM.steps[:1] + ({"op": "cos_", "args": ["t1"]},) + PROGRAM.steps[2:])
    assert canonical(other.steps) != canonical(PROGRAM.steps)
    known = KnownCases([])
    known.add(Program(renamed.steps + ({"observe": "grad", "of": "x"},)).case("hand_written"))
    assert known.has(PROGRAM.steps) == "hand_written"  # it observes at least as much
    assert known.has(other.steps) is None
    assert interface("cos_") == interface("sin_") != interface("mul_")  # one cause through either
    scalar = Program(({**PROGRAM.steps[0], "value": 2.0},) + other.steps[1:])
    assert canonical(scalar.steps) != canonical(other.steps)
    binary = Program(PROGRAM.steps[:1] + ({"op": "mul_", "args": ["t1", 2.0]},) + PROGRAM.steps[2:])
    assert known.has(binary.steps) is None


def test_a_found_case_is_a_valid_case_that_reads_back_as_the_program(tmp_path: Path) -> None:
    verdict = Verdict({"torch": _cell("raises", exception={"type": "RuntimeError", "kind": "autograd", "op": "sin_"}),
                       "paddle": _cell("silent-correct")}, FINDING, "torch raise(s), paddle compute(s) silently")
    case = write_case(tmp_path, PROGRAM, verdict, seed=3, budget=10, number=5,
                      versions={"torch": "2.13.0", "paddle": "3.3.1"})
    assert case.id.startswith("found_sin_") and case.topic == tmp_path.name
    assert case.source.startswith("found by fuzzing: conformance fuzz --seed 3 --budget 10")
    assert "torch 2.13.0" in case.source and "paddle 3.3.1" in case.source
    assert load_case(case.path).raw["steps"] == list(PROGRAM.steps)
    block = Program(({"op": "tensor", "out": "t1", "value": 0.5, "dtype": "float64"},
                     {"op": "repeat", "times": 2, "var": "i2", "steps": [
                         {"op": "no_grad", "steps": [{"op": "exp_", "args": ["t1"]}]},
                         {"observe": "value", "of": "t1"}]}), "float64")
    text = case_text(block, verdict, case_id_="found_block", seed=1, budget=1, number=1, versions={})
    (tmp_path / "found_block.yaml").write_text(text)
    assert load_case(tmp_path / "found_block.yaml").raw["steps"] == list(block.steps)


def test_a_found_case_never_replaces_a_file_already_at_its_name(tmp_path: Path) -> None:
    verdict = Verdict({"torch": _cell("raises"), "paddle": _cell("silent-correct")}, FINDING, "a finding")
    first = write_case(tmp_path, PROGRAM, verdict, seed=3, budget=10, number=5, versions={})
    hand_written = Path(first.path).read_text().replace("found by fuzzing", "written by hand")
    Path(first.path).write_text(hand_written)
    second = write_case(tmp_path, PROGRAM, verdict, seed=3, budget=10, number=5, versions={})
    assert Path(first.path).read_text() == hand_written
    assert second.path != first.path and second.id == f"{first.id}_2"
    assert load_case(second.path).raw["steps"] == list(PROGRAM.steps)


def test_hypothesis_shrinks_a_finding_to_a_minimal_program() -> None:
    """Shrinking with a stand-in judge (a program is a "finding" when it runs sin_ on a leaf that requires
    grad): hypothesis's shrinker, from the finding's own input, down to (or near) the smallest such
    program: a tensor, sin_, an observation."""

    def evaluate(program: Program) -> Verdict:
        outcome = "silent-wrong" if _sin_on_a_leaf(program) else "silent-correct"
        cell = Cell(outcome, {"observations": [{"name": "v", "kind": "value", "ok": outcome != "silent-wrong"}]})
        return Verdict({"fake": cell}, FINDING if outcome == "silent-wrong" else NOTHING)

    source = Source(0, exclude_faulty=False)
    drawn = (source.next() for _ in range(1500))
    targets = list(itertools.islice((d for d in drawn if _sin_on_a_leaf(d.program) and d.program.size() >= 6), 2))
    sizes = []
    for target in targets[:2]:
        finding = evaluate(target.program)
        shrunk = shrink(target.buffer, target.ops, finding, evaluate, random_seed=5)
        assert shrunk is not None and _sin_on_a_leaf(shrunk.program)
        assert shrunk.program.size() < target.program.size(), (target.program.size(), shrunk.program.steps)
        sizes.append(shrunk.program.size())
        again = shrink(target.buffer, target.ops, finding, evaluate, random_seed=5)
        assert again is not None and again.program == shrunk.program  # deterministic for a seed
    # deletion ends what hypothesis began: every step left is needed (a tensor, sin_, an observation)
    assert sizes == [3, 3], sizes


def _sin_on_a_leaf(program: Program) -> bool:
    leaves = {s["out"] for s in program.steps if s.get("op") == "tensor" and s.get("requires_grad")}
    return any(s.get("op") == "sin_" and s["args"][0] in leaves for s in program.steps)


# -- on the installed frameworks ---------------------------------------------------------------------------


@needs_framework
def test_verdicts_are_the_same_in_other_batches_and_fresh_engines() -> None:
    source = Source(9)
    drawn = [source.next() for _ in range(24)]
    with Runner(INSTALLED, timeout=60, recycle=10) as runner:  # a fresh engine every 10 programs
        together = runner.run([d.program.case(f"p{d.number}") for d in drawn])
        first_engine = runner.engine
        apart = [runner.run([d.program.case(f"q{d.number}")])[0] for d in reversed(drawn)]
        assert runner.engine is not first_engine
    assert [v.signature for v in together] == [v.signature for v in reversed(apart)]


@pytest.fixture(scope="module")
def bounded_run(tmp_path_factory):
    """A bounded fuzz run (fixed seed and budget) on the installed frameworks, writing into a folder of its
    own (known cases: that folder only, so whatever it finds is written)."""
    out = tmp_path_factory.mktemp("found")
    report = fuzz(seed=SEED, budget=BUDGET, frameworks=sorted(INSTALLED), out=out, known_paths=[str(out)],
                  timeout=60)
    return report, out


@needs_framework
def test_a_bounded_fuzz_run_runs_its_budget_and_reports(bounded_run) -> None:
    report, out = bounded_run
    assert report.ran == BUDGET and not report.interrupted
    assert not report.generator_bugs and not report.excluded
    assert sum(report.outcomes.values()) == BUDGET * len(INSTALLED)
    assert report.per_second > 0 and set(report.busy) >= set(INSTALLED)
    for result in report.results:
        assert result.kind in (FINDING, REFERENCE, ERROR, OUT_OF_SCOPE)
        assert result.verdict.signature == result.signature  # the verdict of the program written or shown
        assert result.cause is not None and result.cause.family and result.cause.sentence
        run_reference(result.program.case("again"))
    written = [r for r in report.results if r.path]
    assert written, "the bounded run found nothing to write"
    assert all(r.reproduces for r in written)
    assert sorted(p.name for p in out.glob("*.yaml")) == sorted(Path(r.path).name for r in written)
    keys = [r.cause.key for r in written]
    assert len(keys) == len(set(keys)), "two written cases have one cause"
    for result in written:  # each names its family and cause
        description = load_case(result.path).description
        assert f"Hazard family: {result.cause.family}" in description and result.cause.sentence in description
    assert not any(r.path for r in report.results if r.kind != FINDING)  # suspected reference bugs: reported only


@needs_framework
def test_the_cases_a_run_writes_reproduce_through_conformance_run(bounded_run, tmp_path: Path) -> None:
    report, out = bounded_run
    results = tmp_path / "results.jsonl"
    run = run_cli(Path.cwd(), "run", str(out), "--device", "cpu", "--no-baselines", "--results", str(results),
                  "--summary", str(tmp_path / "summary.md"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    outcomes = {(r["case"], r["framework"]): r["outcome"] for r in read_records([results])}
    for result in report.results:
        if result.path:
            case_id = load_case(result.path).id
            assert {fw: outcomes[(case_id, fw)] for fw in INSTALLED} == result.verdict.outcomes(), case_id


@needs_framework
def test_the_command_reports_throughput_and_findings(tmp_path: Path) -> None:
    report_file, cache = tmp_path / "report.json", tmp_path / "cache"
    run = run_cli(Path.cwd(), "fuzz", "--budget", "12", "--seed", "2", "--no-write", "--report", str(report_file),
                  env={"CONFORMANCE_CACHE_DIR": str(cache)})
    assert run.returncode in (0, 1), run.stderr[-2000:]
    assert not (cache / "compiled").exists()  # a generated program runs once: none is kept compiled
    assert "programs/s" in run.stdout and "found:" in run.stdout
    data = json.loads(report_file.read_text())
    assert data["ran"] == 12 and data["seed"] == 2 and data["budget"] == 12


def test_an_op_whose_rule_breaks_costs_programs_never_the_run(monkeypatch) -> None:
    def broken(d):
        raise ValueError("a rule with a bug")

    monkeypatch.setitem(OPS, "negate", Op("negate", "-t", args=("tensor",), fuzz=broken,
                                          run_reference=_negate().run_reference))
    source = Source(4)
    for _ in range(100):
        source.next()
    assert "a rule with a bug" in source.excluded["negate"]
    assert any("fuzz rule of negate" in str(bug) for bug in source.bugs)


@needs_framework
def test_observing_a_numpy_scalar_is_a_value_not_a_harness_error() -> None:
    """A harness fault the fuzzer found: ``arr[1]`` is a NumPy scalar (the reference models it as a scalar
    copy), and the worker read it as a framework tensor."""
    program = Program(({"op": "array", "value": [-1.0, 0.5], "dtype": "float32", "out": "a"},
                       {"op": "getitem", "args": ["a"], "index": "1", "out": "x"},
                       {"observe": "value", "of": "x"}))
    with Runner(INSTALLED, timeout=60) as runner:
        verdict = runner.run([program.case("numpy_scalar")])[0]
    assert {cell.outcome for cell in verdict.cells.values()} == {"silent-correct"}, verdict.cells


def test_a_slice_of_an_array_is_drawn_as_an_array() -> None:
    """A generator bug the fuzzer's closing run showed: ``getitem`` bound a tensor whatever it indexed, so a
    slice of a NumPy array was given to tensor ops (``.data`` read the array's buffer), and the frameworks'
    results were NumPy's."""
    source = Source(2026)
    for _ in range(300):
        program = source.next().program
        kinds: dict[str, str] = {}
        for step in program.steps:
            if step.get("op") == "array":
                kinds[step["out"]] = "array"
            elif step.get("op") == "getitem" and kinds.get(step["args"][0]) == "array":
                kinds[step["out"]] = "array"
            elif step.get("op") in OPS and OPS[step["op"]].args[:1] == ("tensor",):
                assert kinds.get(step["args"][0]) != "array", program.steps


def test_the_tensor_class_is_drawn_in_float32_programs_only() -> None:
    """torch.Tensor(a) makes the default dtype (float32) whatever a's is: in a float64 program a later
    "cast to the dtype it has" would be a real cast in torch (the closing run's suspected reference bug)."""
    source = Source(5)
    drawn = [source.next().program for _ in range(400)]
    assert any(p.dtype == "float64" for p in drawn) and any("construct_tensor" in p.ops() for p in drawn)
    assert all(p.dtype == "float32" for p in drawn if "construct_tensor" in p.ops())
    # and only with zero_copy: whether the class copies without it is documented differently
    assert all(s.get("zero_copy") is True for p in drawn for s in p.steps if s.get("op") == "construct_tensor")
    assert not any("as_tensor" in p.ops() for p in drawn)
