"""The PaConvert column (conformance/adapters/paconvert.py): the torch column's program, converted by the real
PaConvert, run on the real paddle, judged by the same reference; and how the guide reads it.

The end-to-end tests need torch, paddle and paconvert installed (the tests env installs them); the log
reading and the verdicts are plain data.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conformance.adapter import installed
from conformance.case.load import load_cases
from conformance.engine import Engine
from conformance.records.record import Record
from conformance.report.conversions import conversions

from .conftest import CONVERTERS, ROOT

needs_paconvert = pytest.mark.skipif("paconvert" not in CONVERTERS,
                                     reason="paconvert, torch and paddle are not all installed")

LOG = """\
===========================================
PyTorch to Paddle Convert Start ------>:
===========================================
Start convert file: /tmp/x/case.py --> /tmp/x/out/case.py
[case.py:5] remove 'import torch'
[case.py:12] [Success] Convert torch.tensor to Paddle
[case.py:14] [Not Support] Convert torch.Tensor.resize_ to Paddle is not supported currently
[case.py:17] [Delete] Just remove torch.cuda.synchronize
Finish convert /tmp/x/case.py --> /tmp/x/out/case.py
"""


def test_the_conversion_report_keeps_what_paconvert_said_of_each_line() -> None:
    from conformance.adapters.paconvert import conversion_report

    report = conversion_report(LOG, converted=2, failed=1)
    assert report == {"tool": "PaConvert", "apis": 3, "converted": 2, "not_converted": 1, "rate": 0.6667,
                      "not_supported": ["line 14: Convert torch.Tensor.resize_ to Paddle is not supported currently"],
                      "deleted": ["line 17: Just remove torch.cuda.synchronize"]}


def _cell(case: str, framework: str, version: str, outcome: str, **details) -> Record:
    return Record(case=case, framework=framework, framework_version=version, device="cpu", outcome=outcome,
                  details=details, run_info={"converter": "PaConvert", "source_version": "2.13.0+cpu"}
                  if framework == "paconvert" else {})


@pytest.mark.parametrize("torch_outcome, converted, exception, verdict, silent", [
    ("silent-correct", "silent-correct", None, "keeps", False),
    ("raises", "raises", {"type": "RuntimeError", "message": "", "kind": "autograd"}, "keeps", False),
    ("raises", "raises", {"type": "AttributeError", "message": "", "kind": "rejection"}, "breaks", False),
    ("silent-correct", "raises", {"type": "SyntaxError", "message": "", "kind": "other"}, "breaks", False),
    ("silent-correct", "raises", {"type": "X", "message": "", "kind": "other", "phase": "conversion"}, "breaks", False),
    ("silent-correct", "silent-wrong", None, "changes", True),
    ("raises", "silent-wrong", None, "changes", True),
    ("aliases", "copies", None, "changes", True),
    ("silent-correct", "raises", {"type": "RuntimeError", "message": "", "kind": "autograd"}, "breaks", False),
    ("raises", "silent-correct", None, "changes", False),  # computes what torch refused: not unnoticed harm
    ("silent-wrong", "silent-wrong", None, "keeps", False),
])
def test_a_conversion_keeps_changes_or_breaks_the_meaning(torch_outcome, converted, exception, verdict,
                                                          silent) -> None:
    details = {"exception": exception} if exception else {}
    records = [_cell("c", "torch", "2.13.0+cpu", torch_outcome, **({"exception": {"type": "RuntimeError",
                                                                                    "message": "", "kind": "autograd"}}
                                                                 if torch_outcome == "raises" else {})),
               _cell("c", "paconvert", "3.3.1+paddle3.3.1", converted,
                     conversion={"not_converted": 0, "rate": 1.0}, **details)]
    found = conversions(records)["c"]
    assert (found.verdict, found.silent, found.told) == (verdict, silent, False)


def test_a_memory_cell_keeps_the_meaning_only_when_its_values_fit_alike() -> None:
    """resize_as_same_size_alias_follows: both alias, but the converted alias has another shape (2x2 where
    torch's is 1-D): the program's meaning changed, silently."""
    view = {"kind": "value", "name": "value(a)", "reference": [1.0, 9.0, 3.0, 4.0]}
    shares = {"kind": "shares_memory", "name": "shares_memory(x, a)", "value": True}
    torch = _cell("c", "torch", "2.13.0", "aliases",
                  observations=[dict(view, value=[1.0, 9.0, 3.0, 4.0], matches_reference=True), shares])
    same = _cell("c", "paconvert", "3.3.1+paddle3.3.1", "aliases",
                 observations=[dict(view, value=[1.0, 9.0, 3.0, 4.0], matches_reference=True), shares])
    other = _cell("c", "paconvert", "3.3.1+paddle3.3.1", "aliases",
                  observations=[dict(view, value=[[1.0, 9.0], [3.0, 4.0]], matches_reference=False), shares])
    assert (conversions([torch, same])["c"].verdict, conversions([torch, same])["c"].silent) == ("keeps", False)
    assert (conversions([torch, other])["c"].verdict, conversions([torch, other])["c"].silent) == ("changes", True)


def test_paconvert_told_its_user_when_it_marked_something() -> None:
    records = [_cell("c", "torch", "2.13.0+cpu", "silent-correct"),
               _cell("c", "paconvert", "3.3.1+paddle3.3.1", "raises", conversion={"not_converted": 1},
                     exception={"type": "SyntaxError", "message": "", "kind": "other"})]
    assert conversions(records)["c"].told


@pytest.mark.parametrize("converter, bound, status", [
    ("PaConvert", True, "raised"),  # the harness's program bound the name: the converter lost it
    ("PaConvert", False, "error"),  # the harness's program never bound it: the harness's own slip
    (None, True, "error"),  # a program the harness runs as it wrote it: a fault of the adapter
])
def test_a_name_the_running_program_lacks_is_the_converter_s_doing_only_if_the_harness_bound_it(
        converter, bound, status) -> None:
    from conformance.program.translate import Program
    from conformance.workers.worker import _Run, _raised

    filename = "/tmp/converted_program.py"
    try:
        exec(compile("y = x.sin()", filename, "exec"), {})
    except NameError as exc:
        raised = exc
    original = Program(("import torch",), (), ("x = torch.ones(1)" if bound else "z = 1", "y = x.sin()"))
    converted = Program(("import paddle",), (), ("y = x.sin()",), original=original)
    adapter = types.SimpleNamespace(name="paconvert", version="3.3.1", autograd_messages=(), converter=converter)
    reply = _raised(adapter, _Run(adapter), raised, filename, converted)
    assert reply["status"] == status, reply


def test_a_converter_failure_is_a_conversion_phase_raise() -> None:
    from conformance.adapter import ConversionFailed
    from conformance.adapters.paconvert import convert

    with pytest.raises(ConversionFailed, match="PaConvert failed on the program: SyntaxError"):
        convert("def f(:\n    pass\n", "broken")


@pytest.fixture(scope="module")
def engine():
    engine = Engine(timeout=120)
    yield engine
    engine.close()


def _case(case_id: str):
    cases, _ = load_cases([ROOT / "cases"])
    return next(c for c in cases if c.id == case_id)


@needs_paconvert
def test_the_converted_program_runs_on_paddle_and_is_judged_by_the_reference(engine) -> None:
    record = engine.run_cell(_case("residual_skip_alias_sees_iadd"), "paconvert", "cpu")
    assert record["framework_version"].startswith("3.3.1+paddle")
    assert record["run_info"]["source_version"].startswith("2.13.0")  # the torch that wrote the program
    # PaConvert converts every API and says so, and the converted `h += b` binds a new tensor on paddle
    assert record["outcome"] == "silent-wrong"
    conversion = record["details"]["conversion"]
    assert conversion["rate"] == 1.0 and conversion["not_converted"] == 0 and conversion["marked_lines"] == 0


@needs_paconvert
def test_weights_set_as_torch_users_set_them_survive_the_conversion(engine) -> None:
    # the torch program copies the weights in under no_grad; an assigned nn.Parameter would be ignored by the
    # converted SimpleRNN, and the first loss would differ from the reference
    record = engine.run_cell(_case("rnn_hidden_detach"), "paconvert", "cpu")
    assert record["outcome"] == "silent-correct", record["details"]


@needs_paconvert
def test_the_harness_s_reads_are_never_converted(engine) -> None:
    # iadd_after_relu observes a version counter: read as paddle reads it, not torch's _version left as it is
    record = engine.run_cell(_case("iadd_after_relu"), "paconvert", "cpu")
    versions = [o for o in record["details"]["observations"] if o["kind"] == "version"]
    assert versions and all(isinstance(o["value"], int) for o in versions), record["details"]


@needs_paconvert
def test_what_the_conversion_breaks_is_recorded_as_the_converted_program_raising(engine) -> None:
    # torch users scale in place with a Python number; PaConvert passes it on to paddle, which wants a tensor
    record = engine.run_cell(_case("saved_output_relu_mul_"), "paconvert", "cpu")
    assert record["outcome"] == "raises"
    assert record["details"]["exception"]["kind"] == "rejection"


@needs_paconvert
def test_the_reproducer_is_the_converted_program_with_the_harness_s_helpers_after_its_imports(tmp_path) -> None:
    shown = subprocess.run([sys.executable, "-m", "conformance.cli", "show", "residual_skip_alias_sees_iadd",
                            "--framework", "paconvert", "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
    assert shown.returncode == 1, shown.stderr  # the converted program is silently wrong: its verdict says so
    verdict = [line for line in shown.stdout.splitlines() if line.startswith("# verdict: ")][-1]
    assert verdict.endswith(": wrong"), verdict
    source = shown.stdout
    assert "import torch" not in source and "import paddle" in source
    assert source.index("import paddle") < source.index("def _values(t):")
    assert re.search(r'^"""step 7: iadd \(line \d+\)"""$', source, re.MULTILINE)  # labels survive as strings
    program = tmp_path / "reproducer.py"
    program.write_text(source)
    ran = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300)
    assert "value(skip)" in ran.stdout
    # run as it is, the converted program fails by itself: its self-check names the wrong value
    assert ran.returncode == 1 and "self-check: wrong: value(skip)" in ran.stderr, ran.stderr[-2000:]
    # the harness's reads were set aside while PaConvert ran: as the harness wrote them, not as black reprints
    prints = [line for line in source.splitlines() if line.startswith(("print(", "_judged("))]
    assert prints and all(line.startswith(("print('", "_judged('")) for line in prints)
    assert 'DEVICE = "cpu"' in source  # what PaConvert converted, it reprinted


def test_only_cpu_cells_judged_on_both_sides_of_the_newest_converter_get_a_verdict() -> None:
    records = [_cell("a", "torch", "2.13.0+cpu", "silent-correct"), _cell("b", "torch", "2.13.0+cpu", "error"),
               _cell("c", "torch", "2.13.0+cpu", "silent-correct"),
               _cell("a", "paconvert", "3.3.0+paddle3.3.0", "silent-wrong"),
               _cell("a", "paconvert", "3.3.1+paddle3.3.1", "silent-correct"),
               _cell("b", "paconvert", "3.3.1+paddle3.3.1", "silent-correct"),
               _cell("c", "paconvert", "3.3.1+paddle3.3.1", "error")]
    records.append(Record(case="a", framework="paconvert", framework_version="3.3.1+paddle3.3.1", device="gpu",
                          outcome="crash", run_info={"converter": "PaConvert", "source_version": "2.13.0+cpu"}))
    found = conversions(records)
    assert set(found) == {"a"}  # b: torch's cell is a harness fault; c: the converted cell is
    assert found["a"].verdict == "keeps" and found["a"].converted.framework_version == "3.3.1+paddle3.3.1"


def test_a_failed_conversion_keeps_its_phase_through_judging_and_breaks_the_program(tmp_path) -> None:
    from conformance.case.load import load_case
    from conformance.judge.classify import classify

    path = tmp_path / "c.yaml"
    path.write_text("id: c\ntitle: t\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n  - {observe: value, of: x}\n")
    reply = {"status": "raised", "step": 0, "iteration": [], "observations": [], "warnings": [],
             "exception": {"type": "SyntaxError", "message": "PaConvert failed on the program", "kind": "other",
                           "phase": "conversion"}}
    outcome, details = classify(load_case(path), reply, {"value(x)": [1.0]}, None)
    assert outcome == "raises" and details["exception"]["phase"] == "conversion"
    converted = _cell("c", "paconvert", "3.3.1+paddle3.3.1", outcome, **details)
    [verdict] = conversions([_cell("c", "torch", "2.13.0+cpu", "silent-correct"), converted]).values()
    assert verdict.verdict == "breaks"


@needs_paconvert
def test_resume_refuses_a_paconvert_column_written_by_another_torch(tmp_path: Path) -> None:
    """A PaConvert column's programs are the torch column's, as the installed torch writes them: records of
    programs another torch wrote are never resumed into it (the torch column refuses the same)."""
    from .runs import QUICK, run_cli, write_case

    write_case(tmp_path / "cases", QUICK, "quick")
    results = tmp_path / "r.jsonl"
    args = ("run", "cases", "--framework", "paconvert", "--device", "cpu", "--no-baselines", "--results",
            str(results), "--summary", str(tmp_path / "s.md"))
    assert run_cli(tmp_path, *args).returncode == 0
    from .runs import records_in

    [record] = records_in(results)  # written back below with its run's information inline, as older files hold it
    assert record["run_info"]["source_version"] == installed("torch")[1]
    record["run_info"]["source_version"] = "2.1.2"
    record["case"] = "another"
    with open(results, "a") as handle:
        handle.write(json.dumps(record) + "\n")
    run = run_cli(tmp_path, *args, "--resume")
    assert run.returncode == 2 and "programs written by torch 2.1.2" in run.stderr, run.stdout[-2000:] + run.stderr



@needs_paconvert
def test_show_converts_only_the_case_asked_for_and_keeps_it_under_the_torch_that_wrote_it(tmp_path: Path) -> None:
    """The first show of a converted program converts that one program (each takes a process of its own:
    the whole catalogue took 20-34 s), and keeps it under the torch version that wrote it too."""
    from .runs import run_cli

    env = {"CONFORMANCE_CACHE_DIR": str(tmp_path / "cache")}
    run = run_cli(ROOT, "show", "leaf_sin_inplace", "--framework", "paconvert", env=env)
    assert run.returncode == 0 and "paddle" in run.stdout, run.stderr[-2000:]
    [kept] = (tmp_path / "cache" / "programs").rglob("paconvert-*.json")  # the one case asked for
    assert f"_torch{installed('torch')[1]}-" in kept.name  # (the file name spells '+' as '_')
    assert "source" in json.loads(kept.read_bytes().partition(b"\n")[2])
