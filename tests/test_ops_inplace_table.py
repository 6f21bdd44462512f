"""The reference of the in-place ops of paddle's test_inplace.py, the activation modules and out= beyond
add: values and gradients against numbers computed by hand (not by the code under test)."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.judge.reference import ReferenceFailure, run_reference


def _run(write_case, steps: str, case_id: str = "t_case") -> dict:
    text = f"id: {case_id}\ntitle: t\nsteps:\n" + "\n".join("  " + line for line in steps.strip().splitlines())
    return run_reference(load_case(write_case(text))).observations


def test_unary_values_and_gradients_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [-1.0, -2.0, 0.5, 3.0, 8.0, 4.0], requires_grad: true}
- {op: getitem, args: [x], index: "0:1", out: a}
- {op: elu, args: [a], out: e}
- {op: selu, args: [a], out: s}
- {op: getitem, args: [x], index: "1:4", out: b}
- {op: hardtanh, args: [b], out: t}
- {op: leaky_relu, args: [b], out: l}
- {op: getitem, args: [x], index: "4:5", out: c}
- {op: log2, args: [c], out: g}
- {op: getitem, args: [x], index: "5:6", out: d}
- {op: rsqrt, args: [d], out: r}
- {op: reciprocal, args: [d], out: q}
- {observe: value, of: e}
- {observe: value, of: s}
- {observe: value, of: t}
- {observe: value, of: l}
- {observe: value, of: g}
- {observe: value, of: r}
- {observe: value, of: q}
- {op: sum, args: [e], out: se}
- {op: backward, args: [se]}
- {observe: grad, of: x, name: g_elu}
""")
    np.testing.assert_allclose(obs["value(e)"], [-0.6321205588285577])  # e^-1 - 1
    np.testing.assert_allclose(obs["value(s)"], [-1.1113307378125625])  # scale * alpha * (e^-1 - 1)
    np.testing.assert_allclose(obs["value(t)"], [-1.0, 0.5, 1.0])
    np.testing.assert_allclose(obs["value(l)"], [-0.02, 0.5, 3.0])
    np.testing.assert_allclose(obs["value(g)"], [3.0])
    np.testing.assert_allclose(obs["value(r)"], [0.5])
    np.testing.assert_allclose(obs["value(q)"], [0.25])
    np.testing.assert_allclose(obs["g_elu"], [0.36787944117144233, 0, 0, 0, 0, 0])  # e^-1


def test_rounding_rounds_halves_to_even_and_has_no_gradient(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [2.5, -0.5, 1.4, -1.5], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: round_, args: [h]}
- {observe: value, of: h}
- {op: floor, args: [x], out: f}
- {op: ceil, args: [x], out: c}
- {observe: value, of: f}
- {observe: value, of: c}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(h)"], [2.0, -0.0, 1.0, -2.0])
    np.testing.assert_allclose(obs["value(f)"], [2.0, -1.0, 1.0, -2.0])
    np.testing.assert_allclose(obs["value(c)"], [3.0, -0.0, 2.0, -1.0])
    np.testing.assert_allclose(obs["grad(x)"], [0.0, 0.0, 0.0, 0.0])


def test_softmax_in_place_value_and_gradient(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [0.0, 1.0986122886681098], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: softmax_, args: [h], dim: 0}
- {observe: value, of: h}
- {op: tensor, out: w, value: [1.0, 0.0]}
- {op: mul, args: [h, w], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(h)"], [0.25, 0.75])  # 1 : 3
    np.testing.assert_allclose(obs["grad(x)"], [0.1875, -0.1875])  # y * (w - y.w), y.w = 0.25


def test_pow_copysign_and_triangles(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.5, -2.0, 3.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: p}
- {op: pow_, args: [p], exponent: 3}
- {observe: value, of: p}
- {op: sum, args: [p], out: lp}
- {op: backward, args: [lp]}
- {observe: grad, of: x, name: g_pow}
- {op: tensor, out: y, value: [1.5, -2.0, 3.0], requires_grad: true}
- {op: mul, args: [y, 1.0], out: c}
- {op: tensor, out: signs, value: [-1.0, -1.0, 2.0]}
- {op: copysign_, args: [c, signs]}
- {observe: value, of: c}
- {op: sum, args: [c], out: lc}
- {op: backward, args: [lc]}
- {observe: grad, of: y, name: g_copysign}
- {op: tensor, out: m, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
- {op: mul, args: [m, 1.0], out: u}
- {op: triu_, args: [u]}
- {op: mul, args: [m, 1.0], out: lo}
- {op: tril_, args: [lo], diagonal: -1}
- {observe: value, of: u}
- {observe: value, of: lo}
- {op: add, args: [u, lo], out: both}
- {op: sum, args: [both], out: lt}
- {op: backward, args: [lt]}
- {observe: grad, of: m, name: g_triangles}
""")
    np.testing.assert_allclose(obs["value(p)"], [3.375, -8.0, 27.0])
    np.testing.assert_allclose(obs["g_pow"], [6.75, 12.0, 27.0])  # 3 x^2
    np.testing.assert_allclose(obs["value(c)"], [-1.5, -2.0, 3.0])
    np.testing.assert_allclose(obs["g_copysign"], [-1.0, 1.0, 1.0])
    np.testing.assert_allclose(obs["value(u)"], [[1.0, 2.0], [0.0, 4.0]])
    np.testing.assert_allclose(obs["value(lo)"], [[0.0, 0.0], [3.0, 0.0]])
    np.testing.assert_allclose(obs["g_triangles"], [[1.0, 1.0], [1.0, 1.0]])  # each element kept once


def test_masked_scatter_sends_the_gradient_of_the_scattered_elements_to_the_source(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0, 3.0, 4.0], requires_grad: true}
- {op: tensor, out: src, value: [10.0, 20.0, 30.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: masked_scatter_, args: [h, src], mask: [1, 0, 1, 0]}
- {observe: value, of: h}
- {op: tensor, out: w, value: [1.0, 2.0, 3.0, 4.0]}
- {op: mul, args: [h, w], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {observe: grad, of: src}
""")
    np.testing.assert_allclose(obs["value(h)"], [10.0, 2.0, 20.0, 4.0])
    np.testing.assert_allclose(obs["grad(x)"], [0.0, 2.0, 0.0, 4.0])
    np.testing.assert_allclose(obs["grad(src)"], [1.0, 3.0, 0.0])


def test_fill_diagonal_tensor_writes_the_diagonal_with_an_offset(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad: true}
- {op: tensor, out: y, value: [7.0, 8.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: fill_diagonal_tensor_, args: [h, y], offset: 1}
- {observe: value, of: h}
- {op: tensor, out: w, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}
- {op: mul, args: [h, w], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {observe: grad, of: y}
""")
    np.testing.assert_allclose(obs["value(h)"], [[1.0, 7.0, 3.0], [4.0, 5.0, 8.0]])
    np.testing.assert_allclose(obs["grad(x)"], [[1.0, 0.0, 3.0], [4.0, 5.0, 0.0]])
    np.testing.assert_allclose(obs["grad(y)"], [2.0, 6.0])


def test_inplace_assign_makes_the_tensor_its_source(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
- {op: mul, args: [x, 2.0], out: h}
- {op: assign, args: [h], out: same}
- {op: tensor, out: y, value: [[5.0, 6.0], [7.0, 8.0]], requires_grad: true}
- {op: inplace_assign, args: [h, y]}
- {observe: value, of: same}
- {op: mul, args: [h, h], out: sq}
- {op: sum, args: [sq], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: y}
- {observe: grad, of: h}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(same)"], [[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_allclose(obs["grad(y)"], [[10.0, 12.0], [14.0, 16.0]])
    np.testing.assert_allclose(obs["grad(h)"], [[10.0, 12.0], [14.0, 16.0]])  # y's own gradient
    assert obs["grad(x)"] is None


def test_out_writes_mul_sub_matmul_into_out(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: a, value: [[1.0, 2.0], [3.0, 4.0]]}
- {op: tensor, out: b, value: [[5.0, 6.0], [7.0, 8.0]]}
- {op: tensor, out: c, value: [[0.0, 0.0], [0.0, 0.0]]}
- {op: mul_out, args: [a, b], into: c}
- {observe: value, of: c, name: product}
- {op: sub_out, args: [a, b], into: c}
- {observe: value, of: c, name: difference}
- {op: matmul_out, args: [a, b], into: c, out: r}
- {observe: value, of: c, name: matrix_product}
- {observe: same_object, of: [r, c]}
""")
    np.testing.assert_allclose(obs["product"], [[5.0, 12.0], [21.0, 32.0]])
    np.testing.assert_allclose(obs["difference"], [[-4.0, -4.0], [-4.0, -4.0]])
    np.testing.assert_allclose(obs["matrix_product"], [[19.0, 22.0], [43.0, 50.0]])


def test_out_of_another_shape_is_refused_by_the_reference(write_case) -> None:
    with pytest.raises(ReferenceFailure, match="not out's"):
        _run(write_case, """
- {op: tensor, out: a, value: [[1.0, 2.0]]}
- {op: tensor, out: b, value: [[5.0], [7.0]]}
- {op: tensor, out: c, value: [0.0, 0.0]}
- {op: matmul_out, args: [a, b], into: c}
- {observe: value, of: c}
""")


def test_rrelu_module_in_place_has_the_fixed_slope(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [-2.0, 1.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: activation, kind: rrelu, inplace: true, out: act}
- {op: call, args: [act, h], out: r}
- {observe: value, of: h}
- {observe: same_object, of: [r, h]}
- {op: sum, args: [r], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(h)"], [-0.5, 1.0])
    np.testing.assert_allclose(obs["grad(x)"], [0.25, 1.0])


def test_silu_and_hardswish_values_and_gradients_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [0.0, 1.0, -4.0, -1.0, 0.5, 3.5], requires_grad: true}
- {op: mul, args: [x, 1.0], out: y}
- {op: getitem, args: [y], index: "0:2", out: a}
- {op: silu_, args: [a]}
- {op: getitem, args: [y], index: "2:6", out: b}
- {op: hardswish_, args: [b]}
- {observe: value, of: y}
- {op: sum, args: [y], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    s1 = 1.0 / (1.0 + np.exp(-1.0))  # sigmoid(1)
    # silu(0) = 0, silu(1) = sigmoid(1); hardswish: 0 below -3, x (x + 3) / 6 between, x above 3
    np.testing.assert_allclose(obs["value(y)"], [0.0, s1, 0.0, -1.0 / 3.0, 0.5 * 3.5 / 6.0, 3.5])
    # silu': sigmoid(x) (1 + x (1 - sigmoid(x))): 1/2 at 0; hardswish': 0, (2x + 3) / 6, 1
    np.testing.assert_allclose(obs["grad(x)"], [0.5, s1 * (1.0 + (1.0 - s1)), 0.0, 1.0 / 6.0, 4.0 / 6.0, 1.0])


def test_fill_floor_division_remainder_and_power_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [7.5, -3.5, 2.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: f}
- {op: fill_, args: [f], value: -2.5}
- {observe: value, of: f}
- {op: mul, args: [x, 1.0], out: r}
- {op: remainder_, args: [r, 2.0]}
- {observe: value, of: r}
- {op: sum, args: [r], out: lr}
- {op: backward, args: [lr]}
- {observe: grad, of: x, name: g_remainder}
- {op: tensor, out: q, value: [7.5, -3.5, 2.0]}
- {op: ifloordiv, args: [q, 2.0]}
- {observe: value, of: q}
- {op: tensor, out: m, value: [7.5, -3.5, 2.0]}
- {op: imod, args: [m, -2.0]}
- {observe: value, of: m}
- {op: tensor, out: p, value: [7.5, -3.5, 2.0]}
- {op: ipow, args: [p, 2.0]}
- {observe: value, of: p}
- {op: floor_divide_, args: [p, 4.0]}
- {observe: value, of: p, name: p_floor}
""")
    np.testing.assert_array_equal(obs["value(f)"], [-2.5, -2.5, -2.5])
    np.testing.assert_array_equal(obs["value(r)"], [1.5, 0.5, 0.0])  # the sign of the divisor, as Python's %
    np.testing.assert_array_equal(obs["g_remainder"], [1.0, 1.0, 1.0])  # d(a - b floor(a / b))/da
    np.testing.assert_array_equal(obs["value(q)"], [3.0, -2.0, 1.0])  # floor, not truncation: -3.5 // 2 is -2
    np.testing.assert_array_equal(obs["value(m)"], [-0.5, -1.5, 0.0])
    np.testing.assert_array_equal(obs["value(p)"], [56.25, 12.25, 4.0])
    np.testing.assert_array_equal(obs["p_floor"], [14.0, 3.0, 1.0])


def test_fill_sends_no_gradient_back(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
- {op: mul, args: [x, 3.0], out: y}
- {op: fill_, args: [y], value: 4.0}
- {op: mul, args: [y, x], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_array_equal(obs["grad(x)"], [4.0, 4.0])  # only through the second factor


def test_cumsum_in_place_values_and_gradient_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
- {op: mul, args: [x, 2.0], out: a}
- {op: cumsum_, args: [a], dim: 0}
- {op: cumsum, args: [x], dim: -1, out: r}
- {observe: value, of: a}
- {observe: value, of: r}
- {op: mul, args: [a, a], out: sq}
- {op: sum, args: [sq], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(a)"], [[2.0, 4.0], [8.0, 12.0]])  # 2x, then down the rows
    np.testing.assert_allclose(obs["value(r)"], [[1.0, 3.0], [3.0, 7.0]])  # along the rows
    # d loss / d a = 2a = [[4, 8], [16, 24]]; through the running sum down dim 0 each row gets the sum of
    # the rows at or below it: [[20, 32], [16, 24]]; through a = 2x, twice that
    np.testing.assert_allclose(obs["grad(x)"], [[40.0, 64.0], [32.0, 48.0]])


def test_logit_in_place_values_and_gradient_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [0.5, 0.75, 0.2], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: logit_, args: [h]}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(h)"], [0.0, np.log(3.0), np.log(0.25)])  # log(x / (1 - x))
    np.testing.assert_allclose(obs["grad(x)"], [4.0, 1 / 0.1875, 1 / 0.16])  # 1 / (x (1 - x))


def test_index_fill_and_an_in_place_comparison_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad: true}
- {op: mul, args: [x, 3.0], out: h}
- {op: index_fill_, args: [h], dim: 1, positions: [0, 2], value: -1.0}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: a, value: [1.0, 2.0, 3.0]}
- {op: tensor, out: b, value: [2.0, 2.0, 2.0]}
- {op: gt_, args: [a, b]}
- {observe: value, of: a}
""")
    np.testing.assert_allclose(obs["value(h)"], [[-1.0, 6.0, -1.0], [-1.0, 15.0, -1.0]])  # columns 0 and 2 set
    np.testing.assert_allclose(obs["grad(x)"], [[0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])  # only column 1 still reads x
    np.testing.assert_allclose(obs["value(a)"], [0.0, 0.0, 1.0])  # 1 where a > b, as floats


def test_index_fill_positions_are_checked(write_case) -> None:
    from conformance.case.load import CaseError

    for positions in ("[]", "[-1]", "[0.5]", "0"):
        with pytest.raises(CaseError, match="positions must be"):
            _run(write_case, f"- {{op: tensor, out: x, value: [1.0, 2.0]}}\n"
                             f"- {{op: index_fill_, args: [x], dim: 0, positions: {positions}, value: 0.0}}\n"
                             f"- {{observe: value, of: x}}")
    with pytest.raises(ReferenceFailure, match="out of range"):
        _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n"
                         "- {op: index_fill_, args: [x], dim: 0, positions: [2], value: 0.0}\n"
                         "- {observe: value, of: x}")


def test_pad_orders_widths_from_the_last_dimension_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
- {op: pad, args: [x], widths: [1, 0, 0, 1], value: -1.0, out: p}
- {observe: value, of: p}
- {op: tensor, out: w, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]}
- {op: mul, args: [p, w], out: q}
- {op: sum, args: [q], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    # [1, 0] pads the columns (one before), [0, 1] the rows (one after)
    np.testing.assert_allclose(obs["value(p)"], [[-1.0, 1.0, 2.0], [-1.0, 3.0, 4.0], [-1.0, -1.0, -1.0]])
    np.testing.assert_allclose(obs["grad(x)"], [[2.0, 3.0], [5.0, 6.0]])  # w where x's elements landed


def test_index_put_sums_a_repeated_position_and_overwrites_without_accumulate_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], requires_grad: true}
- {op: tensor, out: v, value: [[1.0, 10.0], [2.0, 20.0]], requires_grad: true}
- {op: mul, args: [x, 2.0], out: h}
- {op: index_put_, args: [h, v], positions: [1, 1], accumulate: true}
- {observe: value, of: h}
- {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}
- {op: mul, args: [h, w], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {observe: grad, of: v}
- {op: tensor, out: y, value: [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], requires_grad: true}
- {op: tensor, out: u, value: [[7.0, 8.0]], requires_grad: true}
- {op: mul, args: [y, 2.0], out: k}
- {op: index_put_, args: [k, u], positions: [2]}
- {observe: value, of: k}
- {op: mul, args: [k, w], out: q}
- {op: sum, args: [q], out: loss2}
- {op: backward, args: [loss2]}
- {observe: grad, of: y}
- {observe: grad, of: u}
""")
    np.testing.assert_allclose(obs["value(h)"], [[2.0, 2.0], [5.0, 32.0], [2.0, 2.0]])  # 2 + 1 + 2, 2 + 10 + 20
    np.testing.assert_allclose(obs["grad(x)"], [[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]])  # every element still read
    np.testing.assert_allclose(obs["grad(v)"], [[3.0, 4.0], [3.0, 4.0]])  # both added into row 1
    np.testing.assert_allclose(obs["value(k)"], [[2.0, 2.0], [2.0, 2.0], [7.0, 8.0]])
    np.testing.assert_allclose(obs["grad(y)"], [[2.0, 4.0], [6.0, 8.0], [0.0, 0.0]])  # row 2 overwritten
    np.testing.assert_allclose(obs["grad(u)"], [[5.0, 6.0]])


def test_index_put_without_accumulate_allows_any_row_written_to_a_repeated_position(write_case) -> None:
    """torch documents the result as undefined: the reference allows, element by element, any of the values
    written there, and judges the rest of the value as usual (through the reference service's reply)."""
    from conformance.engine import _reference_reply
    from conformance.judge.classify import Partly
    from conformance.judge.service import answer

    path = write_case("id: t\ntitle: t\nsteps:\n"
                      "- {op: tensor, out: x, value: [[0.0, 0.0], [0.0, 0.0], [9.0, 9.0]]}\n"
                      "- {op: tensor, out: v, value: [[1.0, 5.0], [2.0, 5.0], [3.0, 4.0]]}\n"
                      "- {op: index_put_, args: [x, v], positions: [0, 0, 1]}\n"
                      "- {observe: value, of: x}\n")
    result = run_reference(load_case(path), partial=True)
    # row 0 got [1, 5] and [2, 5]: its first element may be 1 or 2; its second is 5 either way
    assert result.any_of == {"value(x)": {0: [1.0, 2.0]}}
    observations, failure, fault = _reference_reply(answer(load_case(path).to_message()))
    assert failure is None and fault is None
    judged = observations["value(x)"]
    assert isinstance(judged, Partly) and dict(judged.any_of) == {0: (1.0, 2.0)}
    for first in (1.0, 2.0):
        assert judged.judge({"value": [[first, 5.0], [3.0, 4.0], [9.0, 9.0]]}, None)["ok"]
    summed = judged.judge({"value": [[3.0, 5.0], [3.0, 4.0], [9.0, 9.0]]}, None)
    assert not summed["ok"] and "hold none of the values written there" in summed["reason"]
    assert summed["max_abs_error"] == 1.0 and summed["max_rel_error"] == 0.5  # 3 against the nearest, 2
    assert summed["reference"][0] == [{"any_of": [1.0, 2.0]}, 5.0]
    assert not judged.judge({"value": [[1.0, 5.0], [3.0, 4.5], [9.0, 9.0]]}, None)["ok"]  # the rest is judged


def test_index_put_of_a_repeated_position_used_further_or_differentiated_is_not_modelled(write_case) -> None:
    for steps, message in [
        ("- {op: tensor, out: x, value: [1.0, 2.0]}\n- {op: tensor, out: v, value: [3.0, 4.0]}\n"
         "- {op: index_put_, args: [x, v], positions: [0, 0]}\n- {op: mul, args: [x, 2.0], out: y}\n"
         "- {observe: value, of: y}", "several values in no defined order"),
        ("- {op: tensor, out: x, value: [1.0, 2.0]}\n- {op: tensor, out: v, value: [3.0, 4.0], requires_grad: true}\n"
         "- {op: index_put_, args: [x, v], positions: [0, 0]}\n- {observe: value, of: x}",
         "a gradient through a write"),
        ("- {op: tensor, out: x, value: [[1.0, 2.0]], dtype: float64}\n"
         "- {op: view_dtype, args: [x], dtype: int32, out: w}\n- {op: tensor, out: v, value: [[3.0, 4.0, 5.0, 6.0], "
         "[7.0, 8.0, 9.0, 1.0]]}\n- {op: index_put_, args: [w, v], positions: [0, 0]}\n- {observe: value, of: x}",
         "through a dtype view"),
    ]:
        with pytest.raises(ReferenceFailure, match=message):
            _run(write_case, steps)
    # a later write to the element determines it again
    obs = _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n- {op: tensor, out: v, value: [3.0, 4.0]}\n"
                           "- {op: index_put_, args: [x, v], positions: [0, 0]}\n"
                           "- {op: tensor, out: w, value: [6.0, 7.0]}\n- {op: set_value, args: [x, w]}\n"
                           "- {op: mul, args: [x, 2.0], out: y}\n- {observe: value, of: y}")
    np.testing.assert_allclose(obs["value(y)"], [12.0, 14.0])


def test_index_put_refuses_a_position_out_of_range(write_case) -> None:
    with pytest.raises(ReferenceFailure, match="out of range"):
        _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n"
                         "- {op: tensor, out: v, value: [3.0]}\n"
                         "- {op: index_put_, args: [x, v], positions: [2]}\n"
                         "- {observe: value, of: x}")


def test_where_in_place_and_the_logical_ops_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
- {op: tensor, out: y, value: [10.0, 20.0, 30.0], requires_grad: true}
- {op: tensor, out: a, value: [0.0, 1.0, 1.0]}
- {op: ne, args: [a, 0.0], out: mask}
- {op: mul, args: [x, 3.0], out: h}
- {op: where_, args: [mask, h, y]}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {observe: grad, of: y}
- {op: tensor, out: p, value: [2.0, 0.0, -1.0, 0.0]}
- {op: tensor, out: q, value: [0.5, 3.0, 1.0, 0.0]}
- {op: logical_and_, args: [p, q]}
- {observe: value, of: p, name: p_and_q}
- {op: tensor, out: r, value: [0.0, 0.0, 4.0, 0.0]}
- {op: logical_or_, args: [r, q]}
- {observe: value, of: r, name: r_or_q}
""")
    np.testing.assert_allclose(obs["value(h)"], [10.0, 6.0, 9.0])  # y where the mask is False
    np.testing.assert_allclose(obs["grad(x)"], [0.0, 3.0, 3.0])
    np.testing.assert_allclose(obs["grad(y)"], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(obs["p_and_q"], [1.0, 0.0, 1.0, 0.0])  # non-zero in both, as floats
    np.testing.assert_allclose(obs["r_or_q"], [1.0, 1.0, 1.0, 0.0])


def test_dropout_outside_training_is_its_input_and_a_tensor_constructor_copies(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0]}
- {op: dropout, args: [x], p: 0.5, out: y}
- {op: iadd, args: [y, y]}
- {observe: value, of: x}
- {op: tensor, out: s, value: [1.0, 2.0], requires_grad: true}
- {op: tensor_of, args: [s], out: t}
- {op: add_, args: [t, 5.0]}
- {observe: value, of: s}
- {observe: value, of: t}
""")
    np.testing.assert_allclose(obs["value(x)"], [2.0, 4.0])  # the write into y is a write into x
    np.testing.assert_allclose(obs["value(s)"], [1.0, 2.0])
    np.testing.assert_allclose(obs["value(t)"], [6.0, 7.0])  # a copy: the write stays in t


def test_dropout_probability_is_checked(write_case) -> None:
    from conformance.case.load import CaseError

    for p in ("1.0", "-0.1", "true", "'x'"):
        with pytest.raises(CaseError, match="p must be a"):
            _run(write_case, f"- {{op: tensor, out: x, value: [1.0]}}\n- {{op: dropout, args: [x], p: {p}, out: y}}\n"
                             f"- {{observe: value, of: y}}")


def test_a_tensor_hook_receives_the_gradient_of_the_value_it_was_registered_on(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
- {op: mul, args: [x, 2.0], out: y}
- {op: tensor_hook, args: [y], out: before}
- {op: mul_, args: [y, 3.0]}
- {op: tensor_hook, args: [y], out: after}
- {op: mul, args: [y, y], out: sq}
- {op: sum, args: [sq], out: loss}
- {op: backward, args: [loss]}
- {observe: value, of: before}
- {observe: value, of: after}
- {observe: grad, of: x}
""")
    # y = 2x written to 6x; loss = sum((6x)^2): d/d(6x) = 12x, d/d(2x) = 3 * 12x
    np.testing.assert_allclose(obs["value(after)"], [12.0, 24.0])
    np.testing.assert_allclose(obs["value(before)"], [36.0, 72.0])
    np.testing.assert_allclose(obs["grad(x)"], [72.0, 144.0])  # 72x


def test_a_hook_on_a_tensor_that_requires_no_grad_is_refused_by_the_reference(write_case) -> None:
    with pytest.raises(ReferenceFailure, match="requires no grad"):
        _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n"
                         "- {op: tensor_hook, args: [x], out: seen}\n"
                         "- {observe: value, of: seen}")


def test_index_assignment_takes_a_numpy_array_and_copies_it(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[0.0, 0.0], [0.0, 0.0]]}
- {op: array, out: a, value: [1.5, -2.0], dtype: float32}
- {op: setitem, args: [x, a], index: 1}
- {op: setitem, args: [a, 9.0], index: 0}
- {observe: value, of: x}
- {observe: value, of: a}
""")
    np.testing.assert_allclose(obs["value(x)"], [[0.0, 0.0], [1.5, -2.0]])  # the array's values, copied in
    np.testing.assert_allclose(obs["value(a)"], [9.0, -2.0])


def test_scatter_add_sums_repeated_positions_along_a_dimension_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 1.0], [1.0, 1.0]], requires_grad: true}
- {op: tensor, out: src, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: scatter_add_, args: [h, src], dim: 1, positions: [[0, 0], [1, 0]]}
- {observe: value, of: h}
- {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0]]}
- {op: mul, args: [h, w], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {observe: grad, of: src}
""")
    # row 0: both of src's elements go to column 0; row 1: 3 to column 1, 4 to column 0
    np.testing.assert_allclose(obs["value(h)"], [[4.0, 1.0], [5.0, 4.0]])
    np.testing.assert_allclose(obs["grad(x)"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(obs["grad(src)"], [[1.0, 1.0], [4.0, 3.0]])  # w where each element landed


def test_scatter_add_refuses_an_index_that_does_not_fit(write_case) -> None:
    from conformance.case.load import CaseError

    with pytest.raises(CaseError, match="positions must be"):
        _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n- {op: tensor, out: s, value: [1.0]}\n"
                         "- {op: scatter_add_, args: [x, s], dim: 0, positions: [-1]}\n- {observe: value, of: x}")
    with pytest.raises(ReferenceFailure, match="does not fit"):
        _run(write_case, "- {op: tensor, out: x, value: [1.0, 2.0]}\n- {op: tensor, out: s, value: [1.0]}\n"
                         "- {op: scatter_add_, args: [x, s], dim: 0, positions: [2]}\n- {observe: value, of: x}")


def test_integer_ops_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [12, 7, 0], dtype: int32}
- {op: tensor, out: y, value: [18, 4, 5], dtype: int32}
- {op: tensor, out: z, value: [5, 3, 12], dtype: int32}
- {op: getitem, args: [x], index: "1:", out: v}
- {op: gcd_, args: [x, y]}
- {observe: value, of: x, name: g}
- {op: bitwise_and_, args: [x, z]}
- {observe: value, of: x, name: a}
- {op: bitwise_or_, args: [x, y]}
- {observe: value, of: x, name: o}
- {op: bitwise_xor_, args: [x, z]}
- {observe: value, of: v, name: v}
""")
    np.testing.assert_array_equal(obs["g"], [6, 1, 5])  # gcd(12, 18), gcd(7, 4), gcd(0, 5)
    np.testing.assert_array_equal(obs["a"], [4, 1, 4])  # 0b110 & 0b101, 1 & 0b11, 0b101 & 0b1100
    np.testing.assert_array_equal(obs["o"], [22, 5, 5])  # 4 | 18, 1 | 4, 4 | 5
    np.testing.assert_array_equal(obs["v"], [6, 9])  # 5 ^ 3, 5 ^ 12, seen through the view


def test_a_list_assigned_by_index_is_constants_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 1.0], [1.0, 1.0]], requires_grad: true}
- {op: mul, args: [x, 3.0], out: h}
- {op: setitem_list, args: [h], index: 1, value: [5.0, -1.0]}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(h)"], [[3.0, 3.0], [5.0, -1.0]])
    np.testing.assert_allclose(obs["grad(x)"], [[3.0, 3.0], [0.0, 0.0]])  # the assigned row reads nothing of x


def test_batch_norm_in_training_updates_its_buffers_and_its_gradient_matches_finite_differences(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 6.0], [2.0, 1.0]], requires_grad: true}
- {op: batch_norm, out: bn, weight: [1.0, 2.0], bias: [0.0, 0.5], running_mean: [0.0, 0.0], running_var: [1.0, 1.0], training: true, momentum: 0.5}
- {op: call, args: [bn, x], out: y}
- {observe: value, of: y}
- {observe: value, of: bn.running_mean}
- {observe: value, of: bn.running_var}
- {op: tensor, out: c, value: [[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]]}
- {op: mul, args: [y, c], out: p}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
""")
    np.testing.assert_allclose(obs["value(bn.running_mean)"], [1.0, 1.5])  # 0.5 * 0 + 0.5 * [2, 3]
    np.testing.assert_allclose(obs["value(bn.running_var)"], [1.0, 4.0])  # 0.5 * 1 + 0.5 * [1, 7] (unbiased)
    x = np.array([[1.0, 2.0], [3.0, 6.0], [2.0, 1.0]])
    c = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]])

    def loss(a):
        y = (a - a.mean(axis=0)) / np.sqrt(a.var(axis=0) + 1e-5) * np.array([1.0, 2.0]) + np.array([0.0, 0.5])
        return (y * c).sum(), y
    np.testing.assert_allclose(obs["value(y)"], loss(x)[1], rtol=1e-6)
    step, numeric = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += step
        down[i] -= step
        numeric[i] = (loss(up)[0] - loss(down)[0]) / (2 * step)
    np.testing.assert_allclose(obs["grad(x)"], numeric, rtol=1e-5, atol=1e-6)


def test_batch_norm_momentum_is_checked(write_case) -> None:
    from conformance.case.load import CaseError

    for momentum in ("0", "1.5", "true"):
        with pytest.raises(CaseError, match="momentum must be"):
            _run(write_case, "- {op: batch_norm, out: bn, weight: [1.0], bias: [0.0], running_mean: [0.0], "
                             f"running_var: [1.0], training: true, momentum: {momentum}}}\n"
                             "- {observe: value, of: bn.running_mean}")


def test_an_index_assignment_that_repeats_a_position_allows_either_value_written_there(write_case) -> None:
    """An advanced index names positions as index_put_ does, and so does a basic index into a view that
    overlaps itself (an expanded tensor's rows share memory): a location given two values holds either."""
    path = write_case("id: t\ntitle: t\nsteps:\n"
                      "- {op: tensor, out: x, value: [5.0, 7.0, 9.0]}\n"
                      "- {op: tensor, out: v, value: [1.0, 2.0, 3.0]}\n"
                      "- {op: setitem, args: [x, v], index: '[0, 0, 2]'}\n"
                      "- {observe: value, of: x}\n")
    result = run_reference(load_case(path), partial=True)
    np.testing.assert_array_equal(result.observations["value(x)"][1:], [7.0, 3.0])
    assert result.any_of == {"value(x)": {0: [1.0, 2.0]}}
    expanded = write_case("id: t\ntitle: t\nsteps:\n"
                          "- {op: tensor, out: x, value: [[5.0, 7.0]]}\n"
                          "- {op: expand, args: [x], shape: [2, 2], out: e}\n"
                          "- {op: tensor, out: v, value: [1.0, 2.0]}\n"
                          "- {op: setitem, args: [e, v], index: ':, 0'}\n"
                          "- {observe: value, of: x}\n")
    result = run_reference(load_case(expanded), partial=True)
    np.testing.assert_array_equal(result.observations["value(x)"][0, 1:], [7.0])  # written by neither row
    assert result.any_of == {"value(x)": {0: [1.0, 2.0]}}  # x[0, 0]: row 0 wrote 1, row 1 wrote 2
    same = write_case("id: t\ntitle: t\nsteps:\n"
                      "- {op: tensor, out: x, value: [[5.0, 7.0]]}\n"
                      "- {op: expand, args: [x], shape: [2, 2], out: e}\n"
                      "- {op: setitem, args: [e, 4.0], index: ':, 0'}\n"
                      "- {observe: value, of: x}\n")
    result = run_reference(load_case(same), partial=True)  # one value, written twice: it is that value
    np.testing.assert_array_equal(result.observations["value(x)"], [[4.0, 7.0]])
    assert result.any_of == {}


def test_the_rest_of_paddle_s_unary_table_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [0.5, 2.0, 1.25], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: getitem, args: [h], index: "0:1", out: a}
- {op: atanh_, args: [a]}
- {op: getitem, args: [h], index: "1:2", out: b}
- {op: acosh_, args: [b]}
- {op: getitem, args: [h], index: "2:3", out: c}
- {op: frac_, args: [c]}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: y, value: [1.0, 0.5], requires_grad: true}
- {op: lgamma, args: [y], out: lg}
- {op: digamma, args: [y], out: dg}
- {op: tan, args: [y], out: tn}
- {observe: value, of: lg}
- {observe: value, of: dg}
- {observe: value, of: tn}
- {op: sum, args: [lg], out: s}
- {op: backward, args: [s]}
- {observe: grad, of: y}
""")
    # atanh(1/2) = ln 3 / 2, acosh(2) = ln(2 + sqrt 3), frac(1.25) = 0.25
    np.testing.assert_allclose(obs["value(h)"], [np.log(3.0) / 2, np.log(2 + np.sqrt(3.0)), 0.25])
    # 1 / (1 - x^2) = 4/3, 1 / sqrt(x^2 - 1) = 1 / sqrt 3, frac's slope 1
    np.testing.assert_allclose(obs["grad(x)"], [4 / 3, 1 / np.sqrt(3.0), 1.0])
    # lgamma(1) = 0, lgamma(1/2) = ln sqrt(pi); digamma(1) = -gamma, digamma(1/2) = -gamma - 2 ln 2
    np.testing.assert_allclose(obs["value(lg)"], [0.0, 0.5 * np.log(np.pi)], atol=1e-15)
    np.testing.assert_allclose(obs["value(dg)"], [-0.5772156649015329, -0.5772156649015329 - 2 * np.log(2.0)])
    np.testing.assert_allclose(obs["value(tn)"], [1.5574077246549023, 0.5463024898437905])
    np.testing.assert_allclose(obs["grad(y)"], [-0.5772156649015329, -0.5772156649015329 - 2 * np.log(2.0)])


def test_in_place_comparisons_and_the_logical_and_bitwise_negations_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: b, value: [2.0, 2.0, 2.0]}
- {op: tensor, out: p, value: [1.0, 2.0, 3.0]}
- {op: le_, args: [p, b]}
- {observe: value, of: p, name: le}
- {op: tensor, out: q, value: [1.0, 2.0, 3.0]}
- {op: ge_, args: [q, b]}
- {observe: value, of: q, name: ge}
- {op: tensor, out: r, value: [1.0, 2.0, 3.0]}
- {op: eq_, args: [r, b]}
- {observe: value, of: r, name: eq}
- {op: tensor, out: t, value: [1.0, 2.0, 3.0]}
- {op: ne_, args: [t, b]}
- {observe: value, of: t, name: ne}
- {op: tensor, out: u, value: [1.0, 2.0, 3.0]}
- {op: lt_, args: [u, b]}
- {observe: value, of: u, name: lt}
- {op: tensor, out: v, value: [0.0, 3.0, -1.0]}
- {op: logical_not_, args: [v]}
- {observe: value, of: v, name: not_v}
- {op: tensor, out: w, value: [0.0, 3.0, -1.0]}
- {op: tensor, out: z, value: [1.0, 5.0, 0.0]}
- {op: logical_xor_, args: [w, z]}
- {observe: value, of: w, name: w_xor_z}
- {op: tensor, out: i, value: [0, 5, -3], dtype: int32}
- {op: bitwise_not_, args: [i]}
- {observe: value, of: i, name: not_i}
- {op: tensor, out: j, value: [4, 6, 0], dtype: int32}
- {op: tensor, out: k, value: [6, 10, 7], dtype: int32}
- {op: lcm_, args: [j, k]}
- {observe: value, of: j, name: lcm}
""")
    np.testing.assert_allclose(obs["le"], [1.0, 1.0, 0.0])
    np.testing.assert_allclose(obs["ge"], [0.0, 1.0, 1.0])
    np.testing.assert_allclose(obs["eq"], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(obs["ne"], [1.0, 0.0, 1.0])
    np.testing.assert_allclose(obs["lt"], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(obs["not_v"], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(obs["w_xor_z"], [1.0, 0.0, 1.0])  # exactly one of the two non-zero
    np.testing.assert_allclose(obs["not_i"], [-1.0, -6.0, 2.0])  # ~n = -n - 1
    np.testing.assert_allclose(obs["lcm"], [12.0, 30.0, 0.0])  # lcm(0, 7) = 0


def test_hypot_cumprod_addmm_and_thresholded_relu_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [3.0, 5.0], requires_grad: true}
- {op: tensor, out: y, value: [4.0, 12.0], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: hypot_, args: [h, y]}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x, name: hypot_gx}
- {observe: grad, of: y, name: hypot_gy}
- {op: tensor, out: c, value: [[2.0, 3.0, 0.5], [1.0, 0.0, 4.0]], requires_grad: true}
- {op: mul, args: [c, 1.0], out: k}
- {op: cumprod_, args: [k], dim: 1}
- {observe: value, of: k}
- {op: sum, args: [k], out: loss2}
- {op: backward, args: [loss2]}
- {observe: grad, of: c}
- {op: tensor, out: t, value: [[1.0, 1.0], [1.0, 1.0]], requires_grad: true}
- {op: tensor, out: m1, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
- {op: tensor, out: m2, value: [[0.0, 1.0], [1.0, 0.0]]}
- {op: mul, args: [t, 1.0], out: s}
- {op: addmm_, args: [s, m1, m2], beta: 0.5, alpha: 2.0}
- {observe: value, of: s}
- {op: sum, args: [s], out: loss3}
- {op: backward, args: [loss3]}
- {observe: grad, of: t}
- {observe: grad, of: m1}
- {op: tensor, out: r, value: [0.5, 1.0, 2.5, -3.0]}
- {op: thresholded_relu_, args: [r], threshold: 1.0}
- {observe: value, of: r}
""")
    np.testing.assert_allclose(obs["value(h)"], [5.0, 13.0])
    np.testing.assert_allclose(obs["hypot_gx"], [3 / 5, 5 / 13])
    np.testing.assert_allclose(obs["hypot_gy"], [4 / 5, 12 / 13])
    np.testing.assert_allclose(obs["value(k)"], [[2.0, 6.0, 3.0], [1.0, 0.0, 0.0]])
    # row 1: d/dc0 = 1 + 3 + 3 * 0.5, d/dc1 = 2 + 2 * 0.5, d/dc2 = 6; row 2 (a zero): 1 + 0 + 0, 1 + 4, 0
    np.testing.assert_allclose(obs["grad(c)"], [[5.5, 3.0, 6.0], [1.0, 5.0, 0.0]])
    # 0.5 * 1 + 2 * [[2, 1], [4, 3]]
    np.testing.assert_allclose(obs["value(s)"], [[4.5, 2.5], [8.5, 6.5]])
    np.testing.assert_allclose(obs["grad(t)"], [[0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_allclose(obs["grad(m1)"], [[2.0, 2.0], [2.0, 2.0]])  # alpha * ones @ m2.T
    np.testing.assert_allclose(obs["value(r)"], [0.0, 0.0, 2.5, 0.0])  # kept only above the threshold


def test_polygamma_mvlgamma_and_ldexp_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 0.5], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: polygamma_, args: [h], n: 1}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: y, value: [2.5], requires_grad: true}
- {op: mul, args: [y, 1.0], out: k}
- {op: mvlgamma_, args: [k], p: 2}
- {observe: value, of: k}
- {op: tensor, out: z, value: [1.5, -3.0, 0.25], requires_grad: true}
- {op: tensor, out: e, value: [2, -1, 3], dtype: int32}
- {op: mul, args: [z, 1.0], out: m}
- {op: ldexp_, args: [m, e]}
- {observe: value, of: m}
- {op: sum, args: [m], out: loss2}
- {op: backward, args: [loss2]}
- {observe: grad, of: z}
""")
    zeta3 = 1.2020569031595942
    np.testing.assert_allclose(obs["value(h)"], [np.pi ** 2 / 6, np.pi ** 2 / 2])  # trigamma(1), trigamma(1/2)
    np.testing.assert_allclose(obs["grad(x)"], [-2 * zeta3, -14 * zeta3])  # tetragamma at the same points
    np.testing.assert_allclose(obs["value(k)"], [0.5 * np.log(np.pi) + np.log(0.75 * np.sqrt(np.pi))])
    np.testing.assert_allclose(obs["value(m)"], [6.0, -1.5, 2.0])  # 1.5 * 4, -3 / 2, 0.25 * 8
    np.testing.assert_allclose(obs["grad(z)"], [4.0, 0.5, 8.0])


def test_addmm_and_polygamma_fields_are_checked(write_case) -> None:
    from conformance.case.load import CaseError

    for step in ("{op: addmm_, args: [a, a, a], beta: .nan}", "{op: polygamma_, args: [a], n: 5}",
                 "{op: polygamma_, args: [a], n: 1.5}", "{op: mvlgamma_, args: [a], p: 0}",
                 "{op: nan_to_num_, args: [a], posinf: .inf}", "{op: nan_to_num_, args: [a], nan: .nan}",
                 "{op: renorm_, args: [a], p: 0.5, dim: 0, maxnorm: 1.0}",
                 "{op: renorm_, args: [a], p: 2.0, dim: 0, maxnorm: -1.0}",
                 "{op: renorm_, args: [a], p: 2.0, dim: 0.5, maxnorm: 1.0}"):
        with pytest.raises(CaseError):
            load_case(write_case(f"id: t_case\ntitle: t\nsteps:\n  - {{op: tensor, out: a, value: [[1.0]]}}\n"
                                 f"  - {step}\n"))


def test_nan_to_num_replaces_and_stops_the_gradient_there_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [0.5, .nan, .inf, -.inf, -2.0], requires_grad: true}
- {op: mul, args: [x, 2.0], out: y}
- {op: nan_to_num_, args: [y], nan: 7.0, posinf: 9.0, neginf: -9.0}
- {observe: value, of: y}
- {op: mul, args: [y, y], out: z}
- {op: sum, args: [z], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: d, value: [.inf, -.inf, .nan, 1.5]}
- {op: nan_to_num_, args: [d]}
- {observe: value, of: d}
- {op: tensor, out: w, value: [.inf, 1.0], dtype: float64}
- {op: nan_to_num_, args: [w]}
- {observe: value, of: w}
""")
    np.testing.assert_allclose(obs["value(y)"], [1.0, 7.0, 9.0, -9.0, -4.0])
    np.testing.assert_allclose(obs["grad(x)"], [4.0, 0.0, 0.0, 0.0, -16.0])  # 2 * 2y where y was finite, else 0
    float32_max = 3.4028234663852886e38  # (2 - 2^-23) * 2^127
    np.testing.assert_allclose(obs["value(d)"], [float32_max, -float32_max, 0.0, 1.5])
    np.testing.assert_allclose(obs["value(w)"], [1.7976931348623157e308, 1.0])  # float64's largest


def test_nan_to_num_of_an_infinity_in_a_tensor_of_unknown_dtype_is_refused(write_case) -> None:
    with pytest.raises(ReferenceFailure, match="does not know this tensor's dtype"):
        _run(write_case, """
- {op: tensor, out: x, value: [.inf, 1.0]}
- {op: mul, args: [x, 2.0], out: y}
- {op: nan_to_num_, args: [y]}
- {observe: value, of: y}
""")


def test_renorm_scales_slices_over_the_bound_and_differentiates_the_norm_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: a, value: [[3.0, 0.5], [4.0, 0.5]], requires_grad: true}
- {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0]]}
- {op: mul, args: [a, 1.0], out: b}
- {op: renorm_, args: [b], p: 2.0, dim: 1, maxnorm: 2.0}
- {observe: value, of: b}
- {op: mul, args: [b, w], out: c}
- {op: sum, args: [c], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: a}
- {op: tensor, out: r, value: [[1.0, -3.0], [0.5, 0.5]], requires_grad: true}
- {op: mul, args: [r, 1.0], out: s}
- {op: renorm_, args: [s], p: 1.0, dim: 0, maxnorm: 2.0}
- {observe: value, of: s}
- {op: sum, args: [s], out: loss2}
- {op: backward, args: [loss2]}
- {observe: grad, of: r}
""")
    # column [3, 4] has 2-norm 5 > 2: scaled by 2/5; column [0.5, 0.5] (norm 0.71) kept
    np.testing.assert_allclose(obs["value(b)"], [[1.2, 0.5], [1.6, 0.5]])
    # scaled column: (2/5) (g - (g . v) v / 25), g = [1, 3], v = [3, 4]: (2/5) [1 - 1.8, 3 - 2.4]
    np.testing.assert_allclose(obs["grad(a)"], [[-0.32, 2.0], [0.24, 4.0]])
    # row [1, -3] has 1-norm 4 > 2: halved; row [0.5, 0.5] (norm 1) kept
    np.testing.assert_allclose(obs["value(s)"], [[0.5, -1.5], [0.5, 0.5]])
    # halved row, g = [1, 1]: (2/4) (g - (g . v) sign(v) / 4) = 0.5 ([1, 1] - (-2) [1, -1] / 4) = [0.75, 0.25]
    np.testing.assert_allclose(obs["grad(r)"], [[0.75, 0.25], [1.0, 1.0]])


def test_polygamma_of_orders_two_to_four_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: x, value: [1.0, 0.5], requires_grad: true}
- {op: mul, args: [x, 1.0], out: h}
- {op: polygamma_, args: [h], n: 3}
- {observe: value, of: h}
- {op: sum, args: [h], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: y, value: [1.0]}
- {op: polygamma_, args: [y], n: 2}
- {observe: value, of: y}
""")
    zeta4, zeta5 = np.pi ** 4 / 90, 1.0369277551433699
    # psi'''(x) = 6 zeta(4, x): 6 zeta(4) at 1, 6 * 15 zeta(4) at 1/2 (zeta(s, 1/2) = (2^s - 1) zeta(s))
    np.testing.assert_allclose(obs["value(h)"], [6 * zeta4, 6 * 15 * zeta4])
    np.testing.assert_allclose(obs["grad(x)"], [-24 * zeta5, -24 * 31 * zeta5])  # psi''''(x) = -24 zeta(5, x)
    np.testing.assert_allclose(obs["value(y)"], [-2 * 1.2020569031595942])  # psi''(1) = -2 zeta(3)


def test_the_incomplete_gamma_functions_in_place_by_hand(write_case) -> None:
    obs = _run(write_case, """
- {op: tensor, out: p, value: [1.0, 0.5, 1.0]}
- {op: tensor, out: q, value: [1.0, 0.5, 1.0]}
- {op: tensor, out: x, value: [1.0, 0.25, 0.0], requires_grad: true}
- {op: igamma_, args: [p, x]}
- {op: igammac_, args: [q, x]}
- {observe: value, of: p}
- {observe: value, of: q}
- {op: sum, args: [p], out: loss}
- {op: backward, args: [loss]}
- {observe: grad, of: x}
- {op: tensor, out: a, value: [1.0], requires_grad: true}
- {op: tensor, out: z, value: [2.0]}
- {op: mul, args: [a, 1.0], out: b}
- {op: igamma_, args: [b, z]}
- {op: sum, args: [b], out: loss2}
- {op: backward, args: [loss2]}
- {observe: grad, of: a}
""")
    # P(1, x) = 1 - e^-x; P(1/2, x) = erf(sqrt(x)), erf(1/2) = 0.5204998778...; P(a, 0) = 0
    expected = np.array([1 - np.exp(-1.0), 0.5204998778130465, 0.0])
    np.testing.assert_allclose(obs["value(p)"], expected, rtol=1e-12)
    np.testing.assert_allclose(obs["value(q)"], 1 - expected, rtol=1e-12)
    # dP/dx = x^(a-1) e^-x / Gamma(a): e^-1 at (1, 1); 2 e^(-1/4) / sqrt(pi) at (1/2, 1/4); 1 at (1, 0)
    np.testing.assert_allclose(obs["grad(x)"], [np.exp(-1.0), 2 * np.exp(-0.25) / np.sqrt(np.pi), 1.0], rtol=1e-12)
    # dP/da at a = 1: the integral of ln t e^-t from 0 to x, less P(1, x) psi(1), is
    # -e^-x ln x - E1(x) - gamma e^-x; at x = 2 with E1(2) = 0.04890051070806112 (A&S table 5.1)
    e1, euler = 0.04890051070806112, 0.5772156649015329
    np.testing.assert_allclose(obs["grad(a)"], [-np.exp(-2.0) * np.log(2.0) - e1 - euler * np.exp(-2.0)], rtol=1e-8)
