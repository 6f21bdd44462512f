"""A function the case compiles itself (``compiled_function``): the programs torch and paddle get, the
reference's values (worked out by hand in the comment beside each), and what the loader refuses."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from conformance.case.load import CaseError, load_case
from conformance.judge.reference import run_reference
from conformance.program.translate import translate

from .conftest import INSTALLED

MUTATION = """
    id: compiled_mutation
    title: t
    steps:
      - {op: tensor, out: a, value: [1.0, 2.0, 3.0], requires_grad: true}
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - op: compiled_function
        args: [a, x]
        out: [y, b]
        steps:
          - {op: getitem, args: [x], index: "0", out: row}
          - {op: mul_, args: [row, 2.0]}
          - {op: add_, args: [x, 1.0]}
          - {op: add, args: [x, 0.5], out: y}
          - op: no_grad
            steps:
              - {op: mul_, args: [a, 2.0]}
          - {op: mul, args: [a, a], out: b}
      - {op: sum, args: [b], out: loss}
      - {op: backward, args: [loss]}
      - {observe: value, of: x}
      - {observe: value, of: y}
      - {observe: value, of: a}
      - {observe: grad, of: a}
"""


def test_the_reference_runs_the_function_as_written(write_case) -> None:
    obs = run_reference(load_case(write_case(MUTATION))).observations
    # x[0] *= 2 -> [[2, 4], [3, 4]]; x += 1 -> [[3, 5], [4, 5]]; y = x + 0.5
    np.testing.assert_array_equal(obs["value(x)"], [[3.0, 5.0], [4.0, 5.0]])
    np.testing.assert_array_equal(obs["value(y)"], [[3.5, 5.5], [4.5, 5.5]])
    # a doubled without history: [2, 4, 6]; b = a * a, d sum(b)/da = 2a at the doubled values
    np.testing.assert_array_equal(obs["value(a)"], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(obs["grad(a)"], [4.0, 8.0, 12.0])


def test_the_names_the_function_binds_without_returning_them_are_its_own(write_case) -> None:
    with pytest.raises(CaseError, match="'row' is not defined"):
        load_case(write_case(MUTATION.replace("{observe: value, of: a}", "{observe: value, of: row}")))


def test_the_function_sees_only_its_arguments(write_case) -> None:
    with pytest.raises(CaseError, match="reads 'a', which is neither one of its arguments"):
        load_case(write_case(MUTATION.replace("args: [a, x]", "args: [x]")))


def test_the_function_returns_only_what_it_binds(write_case) -> None:
    with pytest.raises(CaseError, match="returns 'z', which it does not bind"):
        load_case(write_case(MUTATION.replace("out: [y, b]", "out: [y, z]")))


def test_the_function_holds_no_observation(write_case) -> None:
    text = MUTATION.replace("- {op: mul, args: [a, a], out: b}",
                            "- {op: mul, args: [a, a], out: b}\n          - {observe: value, of: b}")
    with pytest.raises(CaseError, match="holds no observation"):
        load_case(write_case(text))


def _program(write_case, adapter, mode: str = "eager"):
    program = translate(load_case(write_case(MUTATION)), adapter, "cpu", harness=False, mode=mode)
    assert program.unsupported is None, program.unsupported
    ast.parse(program.source)  # it is Python
    return program


def _statements(code: str) -> str:
    """The code without the reproducer's notes on its steps (comments, inside the function too)."""
    return "".join(line + "\n" for line in code.splitlines() if not line.lstrip().startswith("#"))


@pytest.mark.skipif("torch" not in INSTALLED, reason="torch is not installed")
def test_torch_wraps_the_function_with_torch_compile_in_eager_code(write_case) -> None:
    from conformance.adapters.torch import TorchAdapter

    adapter = TorchAdapter()
    adapter.start()
    if adapter.mode_problem("compile", "cpu"):
        pytest.skip(adapter.mode_problem("compile", "cpu"))
    program = _program(write_case, adapter)
    code = _statements(program.code)
    assert "def _compiled_3(a, x):" in code
    assert "    row = x[0]\n" in code and "    row.mul_(2.0)\n" in code and "    x.add_(1.0)\n" in code
    assert "    with torch.no_grad():\n        a.mul_(2.0)\n" in code
    assert "    return y, b\n" in code
    assert "_compiled_3 = torch.compile(_compiled_3)" in code
    assert "y, b = _compiled_3(a, x)" in code
    assert "loss.backward()" in code.split("y, b = _compiled_3(a, x)")[1]  # backward runs outside the function
    assert program.compiles == ("compile",)
    assert program.source.count("# step 3: compiled_function") == 1  # the call is labelled once


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_paddle_wraps_the_function_with_to_static_in_eager_code(write_case) -> None:
    from conformance.adapters.paddle import PaddleAdapter

    adapter = PaddleAdapter()
    adapter.start()
    program = _program(write_case, adapter)
    code = _statements(program.code)
    assert "def _compiled_3(a, x):" in code
    assert "    with paddle.no_grad():\n" in code
    assert "_compiled_3 = paddle.jit.to_static(_compiled_3)" in code
    assert "y, b = _compiled_3(a, x)" in code
    assert program.compiles == ("to_static",)


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_in_a_compiled_mode_the_function_is_compiled_by_that_mode_and_nothing_compiles_it_again(
        write_case) -> None:
    from conformance.adapters.paddle import PaddleAdapter

    adapter = PaddleAdapter()
    adapter.start()
    code = _program(write_case, adapter, "to_static_full_graph").code
    assert "_compiled_3 = paddle.jit.to_static(_compiled_3, full_graph=True)" in code
    assert "def _forward_" not in code.split("def _compiled_3")[1].split("return y, b")[0]  # no region inside
    assert code.index("def _compiled_3") < code.index("_compiled_3(a, x)")
