"""What the fuzzer reports as a finding: one copy policy, minimal programs, causes, reference suspicion, modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.adapters.paddle import PaddleAdapter
from conformance.adapter import Copying
from conformance.case.load import load_cases
from conformance.fuzz.cause import COMPILED, Families
from conformance.fuzz import OUT_OF_SCOPE
from conformance.fuzz.command import fuzz, render
from conformance.fuzz.scope import out_of_scope
from conformance.fuzz.generate import Program, walk
from conformance.fuzz.observe import observe_what_matters
from conformance.fuzz.run import Runner
from conformance.fuzz.simplify import simplify
from conformance.fuzz.verdict import FINDING, NOTHING, REFERENCE, Cell, Verdict, judge
from conformance.records.results import read_records

from .conftest import INSTALLED
from .runs import run_cli

needs_paddle = pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
needs_both = pytest.mark.skipif(set(INSTALLED) < {"torch", "paddle"}, reason="needs torch and paddle installed")


# -- one copy policy --------------------------------------------------------------------------------------

#: Programs whose observed values depend on whether split, expand and numpy() share memory: paddle copies
#: where torch documents a view, and paddle documents no view.
COPYING_PROGRAMS = {
    "split": [{"op": "tensor", "out": "w", "value": [[0.5, 1.5]], "dtype": "float32", "requires_grad": True},
              {"op": "mul", "args": ["w", 2.0], "out": "x"},
              {"op": "split", "args": ["x"], "out": ["a"], "sections": [1], "dim": 0},
              {"op": "sigmoid_", "args": ["a"]},
              {"observe": "value", "of": "x"}],
    "expand": [{"op": "tensor", "out": "x", "value": [0.5, 1.5], "dtype": "float32"},
               {"op": "expand", "args": ["x"], "out": "e", "shape": [2, 2]},
               {"op": "sin_", "args": ["e"]},
               {"observe": "value", "of": "x"}],
    "numpy": [{"op": "tensor", "out": "x", "value": [0.5, 1.5], "dtype": "float32"},
              {"op": "numpy", "args": ["x"], "out": "n"},
              {"op": "sin_", "args": ["x"]},
              {"observe": "value", "of": "n"}],
}


def _yaml(case_id: str, steps: list[dict]) -> str:
    import yaml

    return yaml.safe_dump({"id": case_id, "title": f"{case_id}: a write through a result paddle copies",
                           "source": "written by hand for the copy policy", "steps": steps}, sort_keys=False)


@needs_both
def test_a_copy_the_framework_documents_is_copies_in_a_hand_written_case_and_a_fuzzed_program(tmp_path: Path) -> None:
    """The same rule wherever a program comes from: paddle's copying split, expand and numpy() make the
    cell ``copies`` (its values follow the copy, as the reference says when judged with those copies), in a
    case file run by ``conformance run`` and in the same program run by the fuzzer; torch, which shares
    memory as its documentation says, is judged by the storage model with views."""
    folder = tmp_path / "views"
    folder.mkdir()
    for op, steps in COPYING_PROGRAMS.items():
        (folder / f"copy_{op}.yaml").write_text(_yaml(f"copy_{op}", steps))
    results = tmp_path / "results.jsonl"
    run = run_cli(Path.cwd(), "run", str(folder), "--device", "cpu", "--no-baselines", "--results", str(results),
                  "--summary", str(tmp_path / "summary.md"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    hand_written = {(r["case"], r["framework"]): r for r in read_records([results])}
    with Runner(["paddle", "torch"], timeout=60) as runner:
        fuzzed = runner.run([Program(tuple(steps)).case(f"fuzzed_{op}") for op, steps in COPYING_PROGRAMS.items()])
    for (op, _), verdict in zip(COPYING_PROGRAMS.items(), fuzzed):
        record = hand_written[(f"copy_{op}", "paddle")]
        assert record["outcome"] == verdict.cells["paddle"].outcome == "copies", (op, record["details"])
        assert op in record["details"]["documented_copies"]
        assert "paddlepaddle.org.cn" in record["details"]["documented_copies"][op]
        assert all(o["ok"] for o in record["details"]["observations"])  # judged with the copy, and right
        assert hand_written[(f"copy_{op}", "torch")]["outcome"] == verdict.cells["torch"].outcome
        assert verdict.kind == NOTHING  # a documented copy is not a finding


@needs_paddle
def test_a_copy_where_the_documentation_promises_a_view_stays_wrong_and_says_so(monkeypatch) -> None:
    promised = {**PaddleAdapter.copies, "split": Copying(False, "a page that promises a view")}
    monkeypatch.setattr(PaddleAdapter, "copies", promised)
    with Runner(["paddle"], timeout=60) as runner:
        verdict = runner.run([Program(tuple(COPYING_PROGRAMS["split"])).case("promised_view")])[0]
    cell = verdict.cells["paddle"]
    assert cell.outcome == "silent-wrong" and verdict.kind == FINDING
    assert cell.details["copies_where_documented_as_view"] == {"split": "a page that promises a view"}


def _paddle_has_from_numpy() -> bool:
    import importlib.util

    return importlib.util.find_spec("paddle") is not None and hasattr(__import__("paddle"), "from_numpy")


@needs_paddle
def test_a_copy_where_sharing_is_promised_is_one_hazard_in_a_memory_case_and_in_a_case_of_values(
        tmp_path: Path) -> None:
    """paddle.from_numpy copies where its documentation promises shared memory: the seed's memory case and a
    found case of values are both silent-wrong, and say so the same way (it was copies in one, a bare
    silent-wrong in the other)."""
    if not _paddle_has_from_numpy():
        pytest.skip("this paddle has no paddle.from_numpy (it arrived in 3.3.0)")
    root = Path(__file__).resolve().parent.parent / "cases"
    paths = [root / "seed" / "from_numpy_aliasing.yaml", root / "found" / "found_new_from_numpy_from_numpy_sin_ee2451.yaml"]
    results = tmp_path / "r.jsonl"
    run = run_cli(tmp_path, "run", *map(str, paths), "--framework", "paddle", "--device", "cpu", "--no-baselines",
                  "--results", str(results), "--summary", str(tmp_path / "s.md"))
    assert run.returncode == 0, run.stdout[-2000:]
    records = list(read_records([results]))
    assert [r["outcome"] for r in records] == ["silent-wrong", "silent-wrong"]
    for record in records:
        assert "from_numpy_en.html" in record["details"]["copies_where_documented_as_view"]["from_numpy"]
    from conformance.records.explain import explain

    assert all("copies where its documentation promises shared memory (a hazard): from_numpy" in explain(r)
               for r in records)


@needs_paddle
def test_an_overlapping_write_through_a_copy_the_framework_documents_is_judged_with_the_copy(tmp_path: Path) -> None:
    """masked_fill_ through x[0:1].expand(2, 2): the view model cannot write one memory location twice, but
    paddle's expand copies (documented), and with the copy its values fit: copies, not error."""
    steps = [{"op": "tensor", "out": "x", "value": [[1.0, 2.0], [3.0, 4.0]]},
             {"op": "getitem", "args": ["x"], "index": "0:1", "out": "top"},
             {"op": "expand", "args": ["top"], "shape": [2, 2], "out": "e"},
             {"op": "masked_fill_", "args": ["e"], "mask": [[1, 0], [0, 0]], "value": 0.0},
             {"observe": "value", "of": "e"}, {"observe": "value", "of": "x"}]
    (tmp_path / "views").mkdir()
    (tmp_path / "views" / "overlap.yaml").write_text(_yaml("expand_masked_fill_overlap", steps))
    results = tmp_path / "r.jsonl"
    run = run_cli(tmp_path, "run", "views", "--framework", "paddle", "--device", "cpu", "--no-baselines",
                  "--results", str(results), "--summary", str(tmp_path / "s.md"))
    assert run.returncode == 0, run.stdout[-2000:]
    [record] = read_records([results])
    assert record["outcome"] == "copies" and "expand" in record["details"]["documented_copies"], record["details"]


# -- minimal programs ---------------------------------------------------------------------------------------

DEAD_AND_UNSUPPORTED = Program((
    {"op": "tensor", "out": "t1", "value": [0.5, 1.5], "dtype": "float32", "requires_grad": True},
    {"op": "tensor", "out": "t2", "value": [2.0, 3.0], "dtype": "float32"},  # dead: nothing needs it
    {"op": "sin_", "args": ["t1"]},
    {"op": "set_value", "args": ["t2", "t2"]},  # only keeps "torch" from running the program
    {"observe": "value", "of": "t1"},
))


def _stand_in(program: Program) -> Verdict:
    """A stand-in judge: torch cannot run set_value (unsupported) and refuses sin_ on a leaf; paddle is
    wrong on it."""
    ops = program.ops()
    leaf_write = "sin_" in ops
    torch = Cell("unsupported", {}) if "set_value" in ops else (
        Cell("raises", {"exception": {"kind": "autograd", "op": "sin_"}}) if leaf_write else Cell("silent-correct", {}))
    paddle = Cell("silent-wrong", {"observations": [{"name": "value(t1)", "kind": "value", "ok": False}]}) \
        if leaf_write else Cell("silent-correct", {})
    return judge(program.case("stand_in"), {"torch": torch, "paddle": paddle})


def test_the_shrinker_deletes_a_dead_step_and_a_step_kept_only_to_leave_a_framework_unsupported() -> None:
    target = _stand_in(DEAD_AND_UNSUPPORTED)
    assert target.kind == FINDING and target.cells["torch"].outcome == "unsupported"
    program, verdict, tried = simplify(DEAD_AND_UNSUPPORTED, target, target, _stand_in)
    assert program.ops() == ["tensor", "sin_"] and program.steps[-1] == {"observe": "value", "of": "t1"}
    assert not tried.exhausted and tried.needed["delete a step"] == 1  # sin_: the tensor it needs cannot go
    assert verdict.cells["torch"].outcome == "raises"  # what torch does once it can run the program
    assert verdict.keeps(target)
    # a finding about frameworks disagreeing is about every framework that ran: none of them may change
    disagree = Verdict({"torch": Cell("raises", {"exception": {"kind": "autograd", "op": "sin_"}}),
                        "paddle": Cell("silent-correct", {})}, FINDING)
    unable = Verdict({"torch": Cell("unsupported", {}), "paddle": Cell("silent-correct", {})}, FINDING)
    assert not unable.keeps(disagree) and disagree.keeps(disagree)


#: A float64 matrix reached through a loop, an assignment and a zero-copy conversion before one in-place add:
#: the shape of the fuzzer's compiled finding before it was simplified.
ROUNDABOUT = Program((
    {"op": "repeat", "times": 2, "var": "i", "steps": [
        {"op": "array", "out": "a", "value": [[1.5, -2.25, 3.0], [0.5, 4.0, 2.5]], "dtype": "float64"},
        {"op": "assign", "args": ["a"], "out": "b"}]},
    {"op": "from_numpy", "args": ["b"], "out": "t"},
    {"op": "tensor", "out": "s", "value": 0.25, "dtype": "float64"},
    {"op": "add_", "args": ["t", "s"], "python_scalar": True},
    {"observe": "value", "of": "t"},
), "float64")


def _wrong_add_(needs_float64: bool):
    """A stand-in judge: torch is wrong whenever the program adds in place (and, if *needs_float64*, only
    in float64); paddle is right.  Nothing else of the program matters to it."""
    def judged(program: Program) -> Verdict:
        float64 = any(step.get("dtype") == "float64" for step in walk(program.steps))
        wrong = "add_" in program.ops() and (float64 or not needs_float64)
        torch = Cell("silent-wrong", {"observations": [{"name": "value(t)", "kind": "value", "ok": False}]}) \
            if wrong else Cell("silent-correct", {})
        return judge(program.case("stand_in"), {"torch": torch, "paddle": Cell("silent-correct", {})})
    return judged


def test_the_shrinker_simplifies_a_dtype_a_shape_and_values_the_finding_does_not_need() -> None:
    judged = _wrong_add_(needs_float64=False)
    target = judged(ROUNDABOUT)
    assert target.kind == FINDING
    program, verdict, tried = simplify(ROUNDABOUT, target, target, judged)
    makes = [step for step in program.steps if "op" in step and step["op"] != "add_"]
    # the loop unwrapped, the array's conversion replaced by the tensor it made, then float32, 0-d, ones
    assert [step["op"] for step in makes] == ["tensor", "tensor"], program.steps
    assert all(step["dtype"] == "float32" and step["value"] == 1.0 for step in makes), makes
    assert program.dtype == "float32" and verdict.keeps(target)
    assert {"observe": "value", "of": "t"} in program.steps
    assert next(step for step in program.steps if step.get("op") == "add_") == {"op": "add_", "args": ["t", "s"]}
    assert not tried.exhausted and "float32 for float64" not in tried.needed
    assert "Verified minimal" in tried.sentence()


def test_the_shrinker_keeps_a_dtype_the_finding_needs_and_says_it_tried_the_other() -> None:
    judged = _wrong_add_(needs_float64=True)
    target = judged(ROUNDABOUT)
    program, _, tried = simplify(ROUNDABOUT, target, target, judged)
    assert {step["dtype"] for step in program.steps if "dtype" in step} == {"float64"}
    assert all(step["value"] == 1.0 for step in program.steps if "value" in step)  # still 0-d, still ones
    assert tried.needed["float32 for float64"] == 1
    assert "float32 for float64 (1 tried)" in tried.sentence()


def test_a_shrinker_out_of_budget_claims_no_minimality() -> None:
    judged = _wrong_add_(needs_float64=False)
    target = judged(ROUNDABOUT)
    program, _, tried = simplify(ROUNDABOUT, target, target, judged, max_evaluations=2)
    assert tried.exhausted and tried.evaluations == 2
    assert "not every edit" in tried.sentence() and "Verified minimal" not in tried.sentence()
    assert program.size() < ROUNDABOUT.size()  # what it took before the budget ran out stays taken


def test_a_finding_observes_what_its_writes_touched_and_the_gradients_of_its_leaves() -> None:
    program = Program((
        {"op": "tensor", "out": "w", "value": [0.5, 1.5], "dtype": "float32", "requires_grad": True},
        {"op": "mul", "args": ["w", 2.0], "out": "x"},
        {"op": "transpose", "args": ["x"], "out": "v", "dims": [0, 0]},
        {"op": "tensor", "out": "untouched", "value": [1.0, 2.0], "dtype": "float32"},
        {"op": "sin_", "args": ["v"]},
        {"op": "sum", "args": ["x"], "out": "loss"},
        {"op": "backward", "args": ["loss"]},
        {"observe": "value", "of": "loss"},
    ))
    observed = observe_what_matters(program)
    added = observed.steps[len(program.steps):]
    assert {"observe": "value", "of": "x"} in added and {"observe": "value", "of": "v"} in added
    assert {"observe": "grad", "of": "w"} in added
    assert not any(step.get("of") == "untouched" for step in added)


# -- suspected reference bugs -----------------------------------------------------------------------------

NO_GRADIENT = {"observations": [{"name": "grad(t1)", "kind": "grad", "value": None, "reference": [1.0],
                                 "ok": False}]}


def test_no_gradient_where_the_reference_has_one_is_a_suspected_reference_bug_even_with_a_framework_unsupported() -> None:
    case = Program(({"op": "tensor", "out": "t1", "value": [0.5], "dtype": "float32"},
                    {"observe": "value", "of": "t1"})).case("suspect")
    unsupported = judge(case, {"paddle": Cell("silent-wrong", NO_GRADIENT), "torch": Cell("unsupported", {})})
    assert unsupported.kind == REFERENCE
    raised_in_backward = {"exception": {"kind": "other", "phase": "backward", "op": "backward"}}
    assert judge(case, {"paddle": Cell("silent-wrong", NO_GRADIENT),
                        "torch": Cell("raises", raised_in_backward)}).kind == REFERENCE
    refused = {"exception": {"kind": "autograd", "phase": "op", "op": "sin_"}}  # a safety check: the hazard
    assert judge(case, {"paddle": Cell("silent-wrong", NO_GRADIENT), "torch": Cell("raises", refused)}).kind == FINDING
    assert judge(case, {"paddle": Cell("silent-wrong", NO_GRADIENT), "torch": Cell("silent-correct", {})}).kind == FINDING


# -- causes -----------------------------------------------------------------------------------------------


def _catalogue() -> Families:
    cases, _ = load_cases(["cases"])
    return Families(case for case in cases if not case.source.startswith("found by fuzzing"))


def test_variants_of_one_hazard_have_one_cause_and_the_family_comes_from_the_catalogue() -> None:
    families = _catalogue()
    wrong = Cell("silent-wrong", {"observations": [{"name": "value(h)", "kind": "value", "ok": False}]})
    right = Cell("silent-correct", {})
    verdict = Verdict({"paddle": wrong, "torch": right}, FINDING)
    first = families.cause(["tensor", "relu", "iadd"], verdict)
    second = families.cause(["tensor", "sigmoid", "isub", "sum"], verdict)
    assert first.family == second.family == "augmented"
    assert first.key == second.key  # iadd and isub have one interface; the other ops are not the hazard
    assert "paddle" in first.sentence and "torch" in first.sentence
    eager_right = Verdict({"paddle": right, "paddle:to_static_full_graph": wrong}, FINDING)
    assert families.cause(["tensor", "sin_"], eager_right).family == COMPILED


def test_a_program_without_a_topics_undrawable_entry_op_is_not_of_that_topic() -> None:
    """Every complex case makes its complex tensor with complex_tensor or view_as_complex, which the fuzzer
    never draws: a raise at a setitem of a real tensor (an op the complex cases use often) is not a complex
    finding, and a program that makes a complex tensor still is."""
    families = _catalogue()
    assert {"complex_tensor", "view_as_complex"} <= families.entry_ops["complex"]
    assert not families.entry_ops["complex"] & {"tensor", "setitem", "getitem", "mul_"}  # drawn ops: never entry
    raised = Cell("raises", {"exception": {"kind": "autograd", "op": "setitem"}})
    verdict = Verdict({"paddle": raised, "torch": Cell("silent-correct", {})}, FINDING)
    assert families.cause(["tensor", "setitem"], verdict).family != "complex"
    assert families.cause(["complex_tensor", "real", "setitem"], verdict).family == "complex"


# -- compiled modes ---------------------------------------------------------------------------------------


@needs_paddle
def test_a_compiled_fuzz_run_finds_the_write_full_graph_drops() -> None:
    """Seed 5's 30 programs include an in-place write on a function's input that paddle's
    ``to_static(full_graph=True)`` does not write back; the run finds it and shrinks it to the write alone.
    (Which seed draws one depends on the set of ops the fuzzer can draw.)"""
    report = fuzz(seed=5, budget=30, frameworks=["paddle"], modes=["to_static_full_graph"], out=None,
                  shrink_budget=60, timeout=60)
    assert report.cells == ["paddle", "paddle:to_static_full_graph"]
    dropped = [r for r in report.of(FINDING) if r.cause.family == COMPILED
               and r.verdict.cells["paddle:to_static_full_graph"].wrong
               and r.verdict.cells["paddle"].outcome == "silent-correct"]
    assert dropped, [(r.signature, r.program.steps) for r in report.results]
    smallest = min(dropped, key=lambda r: r.program.size())
    assert smallest.program.size() <= 4, smallest.program.steps
    assert any(op.endswith("_") or op in ("iadd", "isub", "imul", "idiv", "setitem") for op in smallest.program.ops())
    assert report.busy["paddle:to_static_full_graph"] > 0


@needs_paddle
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_an_interrupt_while_shrinking_writes_no_program_as_drawn(tmp_path: Path, signum: str) -> None:
    """Ctrl-C or SIGTERM while shrinking: exit 130, what was shrunk before is written, nothing unshrunk is."""
    import os
    import signal
    out = tmp_path / "found"
    process = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "fuzz", "--framework", "paddle", "--mode", "to_static_full_graph",
         "--budget", "60", "--seed", "1", "--out", str(out), "--cases", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if line.startswith("shrinking") and sum(1 for seen in lines if seen.startswith("shrinking")) == 2:
            process.send_signal(getattr(signal, signum))
            break
    rest, _ = process.communicate(timeout=300)
    text = "".join(lines) + rest
    assert process.returncode == 130, text[-3000:]
    assert "interrupted: " in text  # said where it landed: in a shrink, or in handling a shrunk finding
    written = sorted(out.glob("*.yaml")) if out.exists() else []
    assert len(written) <= 1, written  # at most the finding shrunk before the interrupt


def test_the_modes_of_one_framework_agreeing_are_no_evidence_against_the_reference() -> None:
    """paddle eager, to_static and full_graph all read 0.5 from an array whose paddle.from_numpy tensor was
    written in place (the reference: sin(0.5)): one framework, one finding, not a reference bug."""
    case = Program(({"op": "tensor", "out": "t1", "value": [0.5], "dtype": "float32"},
                    {"observe": "value", "of": "t1"})).case("one_framework")
    wrong = {"observations": [{"name": "value(t1)", "kind": "value", "value": 0.5, "reference": 0.479, "ok": False}]}
    modes = {"paddle": Cell("silent-wrong", wrong), "paddle:to_static": Cell("silent-wrong", wrong),
             "paddle:to_static_full_graph": Cell("silent-wrong", wrong)}
    assert judge(case, modes).kind == FINDING
    assert judge(case, {**modes, "torch": Cell("silent-wrong", wrong)}).kind == REFERENCE


def test_a_found_case_the_disk_cannot_hold_leaves_no_part_of_a_case(tmp_path: Path) -> None:
    """The file is written whole beside its name before it takes it: a write that fails for want of space
    (here a file-size limit, the same EFBIG/ENOSPC an OSError carries) leaves no case file, not even an
    empty one, which would be an invalid case in cases/found."""
    script = f"""
import resource, signal, sys
from pathlib import Path
from conformance.fuzz.generate import Program
from conformance.fuzz.verdict import Verdict
from conformance.fuzz.write import write_case
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
program = Program(({{"op": "tensor", "out": "t1", "value": [0.5, 1.5], "dtype": "float32"}},
                   {{"op": "sin_", "args": ["t1"]}}, {{"observe": "value", "of": "t1"}}))
try:
    write_case(Path({str(tmp_path / 'found')!r}), program, Verdict({{}}, "finding", "a reason"), seed=1, budget=1,
               number=1, versions={{"torch": "2.13.0"}})
except OSError as exc:
    print("refused:", exc.strerror)
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "refused: File too large" in ran.stdout, ran.stdout + ran.stderr[-2000:]
    assert list((tmp_path / "found").iterdir()) == []  # neither the case nor its hidden draft


def test_a_fuzz_run_that_cannot_write_its_cases_says_so_in_one_line_and_shows_them(tmp_path: Path) -> None:
    """A found case that cannot be written (here a folder under /proc) ends the writing, not the run: one
    error line, exit 1, and the findings shown in the report, each with its program."""
    if "paddle" not in INSTALLED:
        pytest.skip("paddle is not installed")
    ran = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "fuzz", "--framework", "paddle", "--mode", "to_static_full_graph",
         "--budget", "30", "--seed", "1", "--out", "/proc/self/no-such-folder/found", "--cases", str(tmp_path),
         "--report", str(tmp_path / "report.json")],
        capture_output=True, text=True, timeout=900)
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert ran.returncode == 1 and len(errors) == 1, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "cannot write a found case in /proc/self/no-such-folder/found" in errors[0]
    assert "Traceback" not in ran.stderr and "new (not written)" in ran.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["write_error"] and any(r["status"] == "new (not written)" for r in report["results"])


@pytest.mark.parametrize(("wrong", "right", "says"), [
    ("torch:compile", "torch", "in a compiled mode where eager gives the reference's"),
    ("torch", "torch:compile", "in eager where a compiled mode gives the reference's"),
])
def test_a_compiled_finding_says_which_mode_is_wrong(wrong: str, right: str, says: str) -> None:
    """found_compiled_assign_idiv_c7dcac said torch was wrong when compiled: its eager cell is the wrong one."""
    from conformance.fuzz.cause import _sentence

    bad = Cell("silent-wrong", {"observations": [{"name": "value(t2)", "kind": "value", "ok": False}]})
    verdict = Verdict({wrong: bad, right: Cell("silent-correct", {}), "paddle": Cell("raises", {})}, FINDING, "")
    assert says in _sentence(verdict, [wrong], "assign", COMPILED)


# -- what the matrix is about ------------------------------------------------------------------------------

def _case(steps: list[dict]) -> object:
    return Program(tuple(steps)).case("scoped")


@pytest.mark.parametrize(("steps", "in_scope"), [
    # paddle's float64 selu computed in float32 precision: no write, no shared memory
    ([{"op": "tensor", "out": "t", "value": 1.0, "dtype": "float64"},
      {"op": "selu", "args": ["t"], "out": "s"}, {"observe": "value", "of": "s"}], False),
    ([{"op": "tensor", "out": "t", "value": [1.0], "dtype": "float32"},
      {"op": "sin_", "args": ["t"]}, {"observe": "value", "of": "t"}], True),  # an in-place op
    ([{"op": "array", "out": "a", "value": [1.0, 2.0]},
      {"op": "from_numpy", "args": ["a"], "out": "t"}, {"observe": "value", "of": "t"}], True),  # shared memory
    ([{"op": "tensor", "out": "t", "value": [[1.0, 2.0]], "dtype": "float32"},
      {"op": "transpose", "args": ["t"], "out": "v", "dims": [1, 0]},
      {"observe": "value", "of": "v"}], True),  # a view, never written
    ([{"op": "tensor", "out": "x", "value": [1.0, -2.0], "dtype": "float32", "requires_grad": True},
      {"op": "mul", "args": ["x", 3.0], "out": "y"}, {"op": "sum", "args": ["y"], "out": "s"},
      {"op": "backward", "args": ["s"], "retain_graph": True}, {"op": "backward", "args": ["s"]},
      {"observe": "grad", "of": "x"}], True),  # a gradient accumulated into .grad
])
def test_a_finding_that_writes_nothing_and_shares_no_memory_is_out_of_scope(steps: list[dict], in_scope: bool) -> None:
    reason = out_of_scope(_case(steps))
    assert (reason is None) == in_scope, reason
    if not in_scope:
        assert "a difference of arithmetic, not of in-place or aliasing semantics" in reason


def test_every_found_case_of_the_catalogue_is_about_a_write_or_shared_memory() -> None:
    cases, errors = load_cases(["cases/found"])
    assert cases and not errors
    assert [case.id for case in cases if out_of_scope(case)] == []


@needs_both
def test_a_fuzz_run_reports_an_arithmetic_difference_apart_and_writes_no_case(monkeypatch, tmp_path: Path) -> None:
    """With only tensors and selu to draw, the one finding is paddle's float64 selu computed in float32
    precision (3.3e-8 relative): shown under "out of scope", never written as a case."""
    from conformance.fuzz import generate
    from conformance.ops import OPS

    drawn_from = generate.Source
    monkeypatch.setattr(generate, "Source", lambda seed: drawn_from(seed, {n: OPS[n] for n in ("tensor", "selu")}))
    out = tmp_path / "found"
    report = fuzz(seed=2026, budget=48, frameworks=["paddle", "torch"], out=out, known_paths=[str(tmp_path)],
                  shrink_budget=60)
    beside = report.of(OUT_OF_SCOPE)
    assert beside, [(r.kind, r.status, r.verdict.reason) for r in report.results]
    assert all(r.status.startswith("out of scope: no step writes") and r.path is None for r in beside)
    assert not report.of(FINDING), [(r.status, r.program.steps) for r in report.of(FINDING)]
    assert not out.exists() or list(out.iterdir()) == []
    text = render(report)
    assert "found: 0 distinct cause(s)" in text and f"{len(beside)} out of scope (no write, no shared memory)" in text
    listed = text.split("out of scope: no write and no shared memory, a difference of arithmetic (not written):", 1)
    assert len(listed) == 2 and "selu" in listed[1], text
