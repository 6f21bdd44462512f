"""Generated programs: literals, comments, spellings, and faults of the harness told from the framework's."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from conformance.case.load import CaseError, load_case
from conformance.engine import Engine
from conformance.program.check import unresolved_names
from conformance.program.literals import comment, literal

from .conftest import ROOT, framework_params


@pytest.fixture(scope="module")
def engine():
    engine = Engine(timeout=120)
    yield engine
    engine.pool.close()


@pytest.mark.parametrize("value", [[1.0, float("nan"), float("inf"), -float("inf")], 1e308, -0.0, 2 ** 62, [[1, 2]]])
def test_a_literal_evaluates_to_the_same_value(value) -> None:
    got = eval(literal(value), {})  # noqa: S307 - the point is that the text is plain Python
    assert repr(got) == repr(value) and type(got) is type(value)


def test_a_comment_cannot_end_early() -> None:
    text = comment("title\nimport os\r\nos.system('x')\u2028more")
    assert len(ast.parse(text + "\n").body) == 0


def test_unresolved_names_finds_a_misspelt_framework_name() -> None:
    import json as module  # any module stands in for a framework namespace
    source = "x = fw.dumps(1)\ny = fw.dumsp(2)\nz = fw.JSONDecoder.decodee\nw = q.attr\n"
    assert unresolved_names(source, {"fw": module}) == ["fw.dumsp", "fw.JSONDecoder.decodee"]


NAN_CASE = """
    id: odd_literals
    title: NaN and infinite literals reach the framework as the same values
    steps:
      - {op: tensor, out: x, value: [.nan, .inf, -.inf, 1.0]}
      - {op: mul, args: [x, 1.0], out: y}
      - {observe: value, of: y}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_nan_and_infinite_literals_are_values_not_names(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(NAN_CASE)), framework, "cpu")
    assert record["outcome"] == "silent-correct", record["details"]


def test_an_observation_name_cannot_collide_with_a_loop_key(write_case) -> None:
    with pytest.raises(CaseError, match=r"may not contain '\['"):
        load_case(write_case("""
            id: collide
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0]}
              - op: repeat
                times: 2
                steps:
                  - {observe: value, of: x, name: v}
              - {observe: value, of: x, name: "v[0]"}
        """))


INJECTION = '''
    id: injected
    title: "a title\\nimport os; os.system('touch {marker}')"
    steps:
      - {op: tensor, out: x, value: [1.0]}
      - {observe: value, of: x}
'''


@pytest.mark.parametrize("framework", framework_params())
def test_text_of_a_case_never_becomes_code_in_a_reproducer(write_case, tmp_path, framework: str) -> None:
    marker = tmp_path / "ran"
    path = write_case(INJECTION.replace("{marker}", str(marker)))
    shown = subprocess.run([sys.executable, "-m", "conformance.cli", "show", "injected", "--framework", framework,
                            "--paths", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "os.system" in shown.stdout  # shown, as a comment
    run = subprocess.run([sys.executable, "-c", shown.stdout], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert not marker.exists()


DETACH_WRITE = """
    id: detach_write_seen_by_base
    title: b = a.detach(); b.add_(1); a sees the write (both frameworks document shared storage)
    steps:
      - {op: tensor, out: a, value: [1.0, 2.0]}
      - {op: detach, args: [a], out: b}
      - {op: tensor, out: one, value: 1.0}
      - {op: add_, args: [b, one]}
      - {observe: value, of: a}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_a_write_through_detach_is_judged_against_shared_storage(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(DETACH_WRITE)), framework, "cpu")
    assert record["outcome"] == "silent-correct", record["details"]


SCALAR = """
    id: scalar_operand
    title: y.mul_(2) on a non-leaf
    steps:
      - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
      - {op: mul, args: [x, 1.0], out: y}
      - {op: mul_, args: [y, 2.0]{extra}}
      - {op: sum, args: [y], out: loss}
      - {op: backward, args: [loss]}
      - {observe: grad, of: x}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_a_number_operand_is_spelled_so_the_call_works(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(SCALAR.replace("{extra}", ""))), framework, "cpu")
    assert record["outcome"] == "silent-correct", record["details"]


def test_paddle_rejecting_a_python_number_is_a_rejection_of_its_own(engine, write_case) -> None:
    pytest.importorskip("paddle", reason="paddle is not installed")
    case = load_case(write_case(SCALAR.replace("{extra}", ", python_scalar: true")))
    record = engine.run_cell(case, "paddle", "cpu")
    if record["outcome"] == "raises":  # paddle 3.x: AttributeError: 'float' object has no attribute 'shape'
        assert record["details"]["exception"]["kind"] == "rejection"
    else:
        assert record["outcome"] == "silent-correct", record["details"]


def _run_with(adapter_cls, case) -> dict:
    from conformance.workers.worker import run_case

    adapter = adapter_cls()
    exec("\n".join(adapter.prelude("cpu")), adapter.namespace)
    return run_case(adapter, {"device": "cpu", **case.to_message()})


SGD_CASE = """
    id: sgd_step
    title: one optimizer step
    steps:
      - {op: linear, out: fc, weight: [[0.5]], bias: [0.1]}
      - {op: sgd, args: [fc], lr: 0.1, out: opt}
      - {op: tensor, out: x, value: [[1.0]]}
      - {op: call, args: [fc, x], out: y}
      - {op: sum, args: [y], out: loss}
      - {op: backward, args: [loss]}
      - {op: step, args: [opt]}
      - {observe: value, of: fc.weight}
"""


def test_a_misspelt_adapter_name_is_a_harness_error_not_a_raise(write_case) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    from conformance.adapters.torch import TorchAdapter

    class Misspelt(TorchAdapter):
        def sgd(self, modules, lr):
            return super().sgd(modules, lr).replace("SGD", "SDG")

    reply = _run_with(Misspelt, load_case(write_case(SGD_CASE)))
    assert reply["status"] == "error"
    assert "torch.optim.SDG" in reply["message"] and "adapter" in reply["message"]


def test_an_undefined_name_in_generated_code_is_a_harness_error(write_case) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    from conformance.adapters.torch import TorchAdapter

    class Undefined(TorchAdapter):
        def zero_grad(self, optimizer):
            return "optimiser.zero_grad()"

    case = load_case(write_case(SGD_CASE.replace("- {op: step, args: [opt]}", "- {op: zero_grad, args: [opt]}")))
    reply = _run_with(Undefined, case)
    assert reply["status"] == "error" and "NameError" in reply["message"]
