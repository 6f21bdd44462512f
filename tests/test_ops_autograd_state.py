"""The reference for masks, backward(gradient), retain_grad, grad_fn, requires_grad_ on views and loop
counters as operands: every expected number below is worked out by hand in the comment beside it."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import CaseError, load_case
from conformance.judge.reference import ReferenceFailure, run_reference


def _observe(write_case, text: str) -> dict:
    return run_reference(load_case(write_case(text))).observations


def test_mask_read_and_write_back_gives_the_gradient_through_the_read(write_case) -> None:
    obs = _observe(write_case, """
        id: mask_self
        title: t
        steps:
          - {op: tensor, out: a, value: [1.0, 0.0, 0.0]}
          - {op: tensor, out: b, value: [5.0, 6.0, 7.0], requires_grad: true}
          - {op: add, args: [b, 0.0], out: t}
          - {op: ne, args: [a, 0.0], out: m}
          - {observe: value, of: m}
          - {op: mask_getitem, args: [t, m], out: picked}
          - {observe: value, of: picked}
          - {op: mask_setitem, args: [t, m, picked]}
          - {op: tensor, out: g, value: [1.0, 2.0, 3.0]}
          - {op: backward, args: [t], gradient: g}
          - {observe: grad, of: b}
    """)
    np.testing.assert_array_equal(obs["value(m)"], [1.0, 0.0, 0.0])  # a != 0: only element 0
    np.testing.assert_array_equal(obs["value(picked)"], [5.0])  # t[0] = b[0] + 0
    np.testing.assert_array_equal(obs["grad(b)"], [1.0, 2.0, 3.0])  # element 0 via the read, others directly


def test_mask_write_of_a_scaled_read(write_case) -> None:
    obs = _observe(write_case, """
        id: mask_scaled
        title: t
        steps:
          - {op: tensor, out: b, value: [0.5, 2.0, 4.0], requires_grad: true}
          - {op: mul, args: [b, 1.0], out: t}
          - {op: gt, args: [t, 1.0], out: m}
          - {op: mask_getitem, args: [t, m], out: picked}
          - {op: mul, args: [picked, 3.0], out: tripled}
          - {op: mask_setitem, args: [t, m, tripled]}
          - {observe: value, of: t}
          - {op: tensor, out: g, value: [1.0, 1.0, 2.0]}
          - {op: backward, args: [t], gradient: g}
          - {observe: grad, of: b}
    """)
    np.testing.assert_array_equal(obs["value(t)"], [0.5, 6.0, 12.0])  # 2 * 3, 4 * 3
    np.testing.assert_array_equal(obs["grad(b)"], [1.0, 3.0, 6.0])  # g * [1, 3, 3]


def test_a_mask_must_be_bool(write_case) -> None:
    case = load_case(write_case("""
        id: mask_float
        title: t
        steps:
          - {op: tensor, out: t, value: [1.0, 2.0]}
          - {op: mask_getitem, args: [t, t], out: r}
          - {observe: value, of: r}
    """))
    with pytest.raises(ReferenceFailure, match="not a bool tensor"):
        run_reference(case)


def test_backward_from_a_gradient_of_a_non_scalar(write_case) -> None:
    obs = _observe(write_case, """
        id: bg
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [x, x], out: y}
          - {op: tensor, out: g, value: [1.0, 0.5, -1.0]}
          - {op: backward, args: [y], gradient: g}
          - {observe: grad, of: x}
    """)
    np.testing.assert_array_equal(obs["grad(x)"], [2.0, 2.0, -6.0])  # 2x * g


def test_backward_gradient_of_another_shape_is_refused(write_case) -> None:
    case = load_case(write_case("""
        id: bg_shape
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [x, x], out: y}
          - {op: tensor, out: g, value: [1.0, 0.5]}
          - {op: backward, args: [y], gradient: g}
          - {observe: grad, of: x}
    """))
    with pytest.raises(ReferenceFailure, match="shape"):
        run_reference(case)


def test_retained_grad_of_a_non_leaf_accumulates_and_a_plain_non_leaf_has_none(write_case) -> None:
    obs = _observe(write_case, """
        id: retain
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [x, 3.0], out: h}
          - {op: mul, args: [h, h], out: sq}
          - {op: sum, args: [sq], out: out}
          - {op: retain_grad, args: [h]}
          - {op: retain_grad, args: [h]}
          - {op: retain_grad, args: [x]}
          - {op: backward, args: [out], retain_graph: true}
          - {observe: grad, of: h, name: first}
          - {observe: grad, of: sq, name: not kept}
          - {op: backward, args: [out]}
          - {observe: grad, of: h, name: second}
          - {observe: grad, of: x}
    """)
    np.testing.assert_array_equal(obs["first"], [6.0, 12.0, 18.0])  # 2h, h = [3, 6, 9]
    assert obs["not kept"] is None
    np.testing.assert_array_equal(obs["second"], [12.0, 24.0, 36.0])  # 2h + 2h, not 2h once
    np.testing.assert_array_equal(obs["grad(x)"], [36.0, 72.0, 108.0])  # 18x twice


def test_retain_grad_on_a_tensor_without_grad_is_refused(write_case) -> None:
    case = load_case(write_case("""
        id: retain_plain
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0]}
          - {op: retain_grad, args: [x]}
          - {observe: value, of: x}
    """))
    with pytest.raises(ReferenceFailure, match="torch refuses"):
        run_reference(case)


def test_grad_fn_is_none_for_leaves_and_results_made_without_recording(write_case) -> None:
    obs = _observe(write_case, """
        id: gfn
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
          - {op: tensor, out: y, value: [4.0, 4.0]}
          - op: no_grad
            steps:
              - {op: add, args: [x, y], out: w}
          - {op: add, args: [x, y], out: z}
          - {op: getitem, args: [x], index: "0", out: v}
          - {observe: grad_fn_is_none, of: x, name: x}
          - {observe: grad_fn_is_none, of: y, name: y}
          - {observe: grad_fn_is_none, of: w, name: w}
          - {observe: grad_fn_is_none, of: z, name: z}
          - {observe: grad_fn_is_none, of: v, name: v}
    """)
    assert [bool(obs[k]) for k in "xywzv"] == [True, True, True, False, False]  # a view of a leaf has a node


def test_requires_grad_on_views(write_case) -> None:
    obs = _observe(write_case, """
        id: rg_views
        title: t
        steps:
          - {op: tensor, out: w, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [w, 2.0], out: y}
          - {op: getitem, args: [y], index: "0:2", out: v}
          - {op: requires_grad_, args: [v]}
          - {op: mul, args: [v, v], out: sq}
          - {op: sum, args: [sq], out: loss}
          - {op: backward, args: [loss]}
          - {observe: grad, of: w}
          - {op: tensor, out: x, value: [1.0, 2.0, 3.0]}
          - {op: getitem, args: [x], index: "0:2", out: xv}
          - {op: requires_grad_, args: [xv]}
          - {observe: grad_fn_is_none, of: xv, name: xv leaf}
          - {op: setitem, args: [x, 10.0], index: "0"}
          - {observe: value, of: xv}
          - {op: mul, args: [xv, 3.0], out: p}
          - {op: sum, args: [p], out: ploss}
          - {op: backward, args: [ploss]}
          - {observe: grad, of: xv}
    """)
    np.testing.assert_array_equal(obs["grad(w)"], [8.0, 16.0, 0.0])  # d sum((2w)^2) = 8w on the first two
    assert bool(obs["xv leaf"])
    np.testing.assert_array_equal(obs["value(xv)"], [10.0, 2.0])  # still a window on x's storage
    np.testing.assert_array_equal(obs["grad(xv)"], [3.0, 3.0])


def test_requires_grad_false_on_a_non_leaf_takes_it_out_of_the_graph(write_case) -> None:
    obs = _observe(write_case, """
        id: rg_false
        title: t
        steps:
          - {op: tensor, out: w, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [w, 2.0], out: y}
          - {op: getitem, args: [y], index: "0:2", out: v}
          - {op: requires_grad_, args: [v], requires_grad: false}
          - {op: mul, args: [v, 5.0], out: q}
          - {op: add, args: [y, 1.0], out: z}
          - {op: sum, args: [z], out: loss}
          - {op: backward, args: [loss]}
          - {observe: grad, of: w}
          - {observe: grad_fn_is_none, of: q, name: q untracked}
    """)
    np.testing.assert_array_equal(obs["grad(w)"], [2.0, 2.0, 2.0])  # y's history untouched
    assert bool(obs["q untracked"])


def test_a_loop_counter_is_an_operand(write_case) -> None:
    obs = _observe(write_case, """
        id: counter
        title: t
        steps:
          - {op: tensor, out: mu, value: [1.0], requires_grad: true}
          - {op: tensor, out: x, value: [0.0]}
          - {op: tensor, out: loss, value: 0.0}
          - op: repeat
            times: 3
            var: i
            steps:
              - {op: detach_, args: [x]}
              - {op: add, args: [mu, i], out: shifted}
              - {op: copy_, args: [x, shifted]}
              - {op: mul, args: [x, i], out: multiplied}
              - {op: sum, args: [multiplied], out: s}
              - {op: iadd, args: [loss, s]}
              - {op: add_, args: [shifted, i]}
              - {observe: value, of: shifted}
          - {op: backward, args: [loss]}
          - {observe: value, of: loss}
          - {observe: grad, of: mu}
    """)
    np.testing.assert_array_equal(obs["value(loss)"], 8.0)  # (1+0)*0 + (1+1)*1 + (1+2)*2
    np.testing.assert_array_equal(obs["grad(mu)"], [3.0])  # 0 + 1 + 2
    np.testing.assert_array_equal([obs[f"value(shifted)[{i}]"] for i in range(3)], [[1.0], [3.0], [5.0]])  # mu + 2i


def test_a_counter_is_no_operand_outside_its_loop_nor_a_name_to_bind(write_case) -> None:
    with pytest.raises(CaseError, match="not defined"):
        load_case(write_case("""
            id: outside
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0]}
              - {op: repeat, times: 2, var: i, steps: [{op: add, args: [x, i], out: y}]}
              - {op: add, args: [x, i], out: z}
              - {observe: value, of: z}
        """))
    with pytest.raises(CaseError, match="loop counter"):
        load_case(write_case("""
            id: rebind
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0]}
              - {op: repeat, times: 2, var: i, steps: [{op: add, args: [x, 1.0], out: i}]}
              - {observe: value, of: x}
        """))
    with pytest.raises(CaseError, match="takes a tensor"):
        load_case(write_case("""
            id: counter_tensor
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0]}
              - {op: repeat, times: 2, var: i, steps: [{op: sin, args: [i], out: y}]}
              - {observe: value, of: x}
        """))


def test_the_program_keeps_the_loop_and_spells_the_counter(write_case) -> None:
    pytest.importorskip("paddle", reason="paddle is not installed")
    from conformance.adapters.paddle import PaddleAdapter
    from conformance.program.translate import translate

    case = load_case(write_case("""
        id: counter_program
        title: t
        steps:
          - {op: tensor, out: mu, value: [1.0], requires_grad: true}
          - op: repeat
            times: 3
            var: i
            steps:
              - {op: add, args: [mu, i], out: shifted}
              - {op: add_, args: [shifted, i]}
              - {op: counter_tensor, args: [i], out: factor}
              - {op: tensor, out: g, value: [1.0]}
              - {op: backward, args: [shifted], gradient: g}
              - {observe: value, of: shifted}
    """))
    code = translate(case, PaddleAdapter(), "cpu", harness=False).code
    assert "for i in range(3):" in code
    assert "shifted = mu + i" in code
    assert "shifted.add_(paddle.to_tensor(i, dtype=shifted.dtype))" in code  # paddle's in-place methods take a tensor
    assert "shifted.backward(grad_tensor=g)" in code
    assert "factor = paddle.to_tensor([float(i)], dtype='float32')" in code  # torch's test: tensor([float(i)])


def test_a_tensor_of_the_counter_is_a_fresh_literal_each_iteration(write_case) -> None:
    obs = _observe(write_case, """
        id: counter_tensor
        title: t
        steps:
          - {op: tensor, out: mu, value: [1.0], requires_grad: true}
          - {op: tensor, out: loss, value: 0.0}
          - op: repeat
            times: 3
            var: i
            steps:
              - {op: counter_tensor, args: [i], out: f, dtype: float64}
              - {op: add_, args: [f, 0.5]}
              - {observe: value, of: f}
              - {op: mul, args: [mu, f], out: p}
              - {op: sum, args: [p], out: s}
              - {op: iadd, args: [loss, s]}
          - {op: backward, args: [loss]}
          - {observe: grad, of: mu}
    """)
    # each iteration's factor is new: [i] + 0.5, never the last one's value plus another 0.5
    np.testing.assert_array_equal([obs[f"value(f)[{i}]"] for i in range(3)], [[0.5], [1.5], [2.5]])
    np.testing.assert_array_equal(obs["grad(mu)"], [4.5])  # 0.5 + 1.5 + 2.5
    with pytest.raises(CaseError, match="takes a loop counter"):
        load_case(write_case("""
            id: not_a_counter
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0]}
              - {op: counter_tensor, args: [x], out: f}
              - {observe: value, of: f}
        """))


def test_where_takes_each_side_by_the_mask_and_sends_each_gradient_back_to_its_side(write_case) -> None:
    obs = _observe(write_case, """
        id: where
        title: t
        steps:
          - {op: tensor, out: y, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
          - {op: tensor, out: d, value: [7.0, 8.0], requires_grad: true}
          - {op: tensor, out: eye, value: [[1.0, 0.0], [0.0, 1.0]]}
          - {op: ne, args: [eye, 0.0], out: m}
          - {op: where, args: [m, d, y], out: z}
          - {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0]]}
          - {op: mul, args: [z, w], out: p}
          - {op: sum, args: [p], out: loss}
          - {op: backward, args: [loss]}
          - {observe: value, of: z}
          - {observe: grad, of: y}
          - {observe: grad, of: d}
    """)
    np.testing.assert_array_equal(obs["value(z)"], [[7.0, 2.0], [3.0, 8.0]])  # d broadcast over rows, on the diagonal
    np.testing.assert_array_equal(obs["grad(y)"], [[0.0, 2.0], [3.0, 0.0]])  # w off the diagonal
    np.testing.assert_array_equal(obs["grad(d)"], [1.0, 4.0])  # w on the diagonal, summed over the broadcast rows
    with pytest.raises(ReferenceFailure, match="not a bool tensor"):
        _observe(write_case, """
            id: where_float_mask
            title: t
            steps:
              - {op: tensor, out: x, value: [1.0, 0.0]}
              - {op: where, args: [x, x, x], out: z}
              - {observe: value, of: z}
        """)
