"""Two ops from the frameworks' own tests: paddle's in-place ``cast_`` (test_inplace.py's
TestDygraphInplaceCast) and torch's ``var_mean`` (test_autograd.py's test_var_mean_differentiable), with
values and gradients worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import CaseError, load_case
from conformance.judge.reference import ReferenceFailure, run_reference


def run(write_case, steps: str):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}"))).observations


def test_var_mean_gives_the_corrected_variance_and_the_mean_and_both_gradients(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: a, value: [[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], requires_grad: true}
  - {op: var_mean, args: [a], dim: 1, out: [v, mu]}
  - {op: mul, args: [v, mu], out: r}
  - {op: sum, args: [r], out: s}
  - {op: backward, args: [s]}
  - {observe: value, of: v}
  - {observe: value, of: mu}
  - {observe: grad, of: a}
""")
    # row 0: mean 7/3; squared deviations 16/9, 1/9, 25/9 sum to 42/9, over 3 - 1: 7/3.  Row 1: 0 and 3.
    np.testing.assert_allclose(obs["value(v)"], [7 / 3, 0.0])
    np.testing.assert_allclose(obs["value(mu)"], [7 / 3, 3.0])
    # d(v mu)/dx = mu * 2 (x - mean) / 2 + v / 3: row 0 gives -7/3, 0, 14/3; row 1: 3 * 0 + 0 / 3
    np.testing.assert_allclose(obs["grad(a)"], [[-7 / 3, 0.0, 14 / 3], [0.0, 0.0, 0.0]], atol=1e-12)


def test_var_mean_without_a_dim_and_without_correction_reduces_every_element(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: a, value: [[1.0, 3.0], [5.0, 7.0]], requires_grad: true}
  - {op: var_mean, args: [a], correction: 0, out: [v, mu]}
  - {op: backward, args: [v]}
  - {observe: value, of: v}
  - {observe: value, of: mu}
  - {observe: grad, of: a}
""")
    # mean 4; deviations -3, -1, 1, 3: 20 / 4 = 5; d v/dx = 2 (x - 4) / 4
    assert float(obs["value(v)"]) == 5.0 and float(obs["value(mu)"]) == 4.0
    np.testing.assert_allclose(obs["grad(a)"], [[-1.5, -0.5], [0.5, 1.5]])


@pytest.mark.parametrize("fields, message", [
    ("out: v", "var_mean binds two names"),
    ("out: [v, mu, w]", "var_mean binds two names"),
    ("correction: 2, out: [v, mu]", "correction must be 1"),
    ("correction: true, out: [v, mu]", "correction must be"),
    ("dim: 0.5, out: [v, mu]", "dim must be an integer"),
])
def test_var_mean_refuses_what_it_cannot_mean(write_case, fields: str, message: str) -> None:
    path = write_case("id: t\ntitle: t\nsteps:\n  - {op: tensor, out: a, value: [1.0, 2.0]}\n"
                      f"  - {{op: var_mean, args: [a], {fields}}}\n  - {{observe: value, of: a}}\n")
    with pytest.raises(CaseError, match=message):
        load_case(path)


def test_var_mean_of_one_element_with_correction_has_no_degrees_of_freedom(write_case) -> None:
    with pytest.raises(ReferenceFailure, match="no degrees of freedom"):
        run(write_case, "  - {op: tensor, out: a, value: [2.0]}\n  - {op: var_mean, args: [a], out: [v, mu]}\n"
                        "  - {observe: value, of: v}\n")


def test_cast_returns_the_tensor_itself_in_new_memory_that_views_taken_before_do_not_follow(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.5, 2.5, 3.5]}
  - {op: getitem, args: [x], index: "1:", out: v}
  - {op: cast_, args: [x], dtype: float64, out: y}
  - {op: setitem, args: [y, 9.0], index: "1"}
  - {op: setitem, args: [v, 7.0], index: "1"}
  - {observe: value, of: x}
  - {observe: value, of: v}
""")
    # y is x (the write through y is x's); the write through v stays in the old memory, and the write
    # through x never reaches v
    np.testing.assert_array_equal(obs["value(x)"], [1.5, 9.0, 3.5])
    np.testing.assert_array_equal(obs["value(v)"], [2.5, 7.0])


def test_cast_to_float32_rounds_and_the_gradient_passes_through(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: a, value: [0.1, 3.0], dtype: float64, requires_grad: true}
  - {op: mul, args: [a, a], out: b}
  - {op: cast_, args: [b], dtype: float32}
  - {op: mul, args: [b, 2.0], out: c}
  - {op: sum, args: [c], out: s}
  - {op: backward, args: [s]}
  - {observe: value, of: b}
  - {observe: grad, of: a}
""")
    assert obs["value(b)"][0] == float(np.float32(0.1 * 0.1)) != 0.1 * 0.1
    np.testing.assert_allclose(obs["grad(a)"], [0.4, 12.0])  # d(2 a^2)/da = 4 a


def test_cast_to_the_dtype_a_tensor_has_keeps_its_memory_and_views(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.5, 2.5, 3.5], dtype: float64}
  - {op: getitem, args: [x], index: "1:", out: v}
  - {op: cast_, args: [x], dtype: float64}
  - {op: setitem, args: [x, 9.0], index: "1"}
  - {observe: value, of: v}
""")
    np.testing.assert_array_equal(obs["value(v)"], [9.0, 3.5])  # as paddle 3.3.1 gives it


def test_cast_of_a_view_or_a_dtype_view_is_not_modelled(write_case) -> None:
    for steps, message in [
        ("  - {op: getitem, args: [x], index: '1:', out: v}\n  - {op: cast_, args: [v], dtype: float64}",
         "cast_ on a view"),
        ("  - {op: view_dtype, args: [x], dtype: int32, out: v}\n  - {op: cast_, args: [v], dtype: float64}",
         "cast_ with a dtype view"),
        ("  - {op: mul, args: [x, 2.0], out: y}\n  - {op: getitem, args: [y], index: '1:', out: v}\n"
         "  - {op: cast_, args: [y], dtype: float64}", "whose dtype the reference does not know"),
    ]:
        with pytest.raises(ReferenceFailure, match=message):
            run(write_case, "  - {op: tensor, out: x, value: [1.0, 2.0]}\n" + steps + "\n  - {observe: value, of: x}\n")
