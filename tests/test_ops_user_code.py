"""The ops of what users write around autograd (conformance/ops: hooks, initialisation, custom functions,
checkpointing, batch norm buffers, autocast, indexed augmented assignment): their reference semantics, with
the numbers worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.case.model import CaseError
from conformance.judge.reference import run_reference

LINEAR = """\
  - op: linear
    out: fc
    weight: [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    bias: [0.0, 0.0, 0.0]
"""


def run(write_case, steps: str):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}"))).observations


def test_initialisation_between_forward_and_backward_leaves_the_gradient_of_the_weight_the_forward_used(
        write_case) -> None:
    obs = run(write_case, "  - {op: tensor, out: x, value: [[1.0, 2.0]], requires_grad: true}\n" + LINEAR + """\
  - {op: call, args: [fc, x], out: y}
  - {op: sum, args: [y], out: loss}
  - {op: parameter, args: [fc], name: weight, out: w}
  - {op: init_constant_, args: [w], value: 0.5}
  - {op: backward, args: [loss]}
  - {observe: grad, of: x}
  - {observe: value, of: fc.weight}
  - {observe: is_leaf, of: w}
""")
    np.testing.assert_array_equal(obs["grad(x)"], [[3.0, 3.0]])  # the column sums of the all-ones weight
    np.testing.assert_array_equal(obs["value(fc.weight)"], np.full((3, 2), 0.5))


def test_a_forward_hook_sees_the_input_before_the_module_or_as_an_in_place_module_left_it(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: h, value: [[-1.0, 2.0]]}
  - {op: activation, kind: relu, inplace: true, out: act}
  - {op: forward_hook, args: [act], when: pre, shape: [1, 2], out: before}
  - {op: forward_hook, args: [act], when: post, shape: [1, 2], out: after}
  - {op: call, args: [act, h], out: y}
  - {observe: value, of: before}
  - {observe: value, of: after}
  - {observe: value, of: h}
""")
    np.testing.assert_array_equal(obs["value(before)"], [[-1.0, 2.0]])
    np.testing.assert_array_equal(obs["value(after)"], [[0.0, 2.0]])  # the input, overwritten by the module
    np.testing.assert_array_equal(obs["value(h)"], [[0.0, 2.0]])


def test_an_out_of_place_module_leaves_its_input_for_the_post_hook(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: h, value: [[-1.0, 2.0]]}
  - {op: activation, kind: relu, out: act}
  - {op: forward_hook, args: [act], when: post, shape: [1, 2], out: after}
  - {op: backward_hook, args: [act]}
  - {op: call, args: [act, h], out: y}
  - {observe: value, of: after}
  - {observe: value, of: y}
""")
    np.testing.assert_array_equal(obs["value(after)"], [[-1.0, 2.0]])
    np.testing.assert_array_equal(obs["value(y)"], [[0.0, 2.0]])


@pytest.mark.parametrize("inplace", [True, False])
def test_a_custom_square_differentiates_at_the_input_as_it_came_in(write_case, inplace: bool) -> None:
    obs = run(write_case, f"""\
  - {{op: tensor, out: p, value: [1.0, -2.0], requires_grad: true}}
  - {{op: mul, args: [p, 3.0], out: a}}
  - {{op: custom_square, args: [a], inplace: {str(inplace).lower()}, out: y}}
  - {{op: sum, args: [y], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: value, of: y}}
  - {{observe: value, of: a}}
  - {{observe: grad, of: p}}
""")
    np.testing.assert_array_equal(obs["value(y)"], [9.0, 36.0])
    np.testing.assert_array_equal(obs["value(a)"], [9.0, 36.0] if inplace else [3.0, -6.0])
    np.testing.assert_array_equal(obs["grad(p)"], [18.0, -36.0])  # d (3p)^2 / dp = 18p


def test_a_mark_without_an_in_place_write_is_refused(write_case) -> None:
    with pytest.raises(CaseError, match="with inplace: false it writes none"):
        load_case(write_case("""
            id: t
            title: t
            steps:
              - {op: tensor, out: a, value: [1.0], requires_grad: true}
              - {op: custom_square, args: [a], inplace: false, mark: dirty, out: y}
              - {observe: value, of: y}
        """))


def test_a_checkpointed_block_computes_what_the_block_computes_its_writes_included(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: p, value: [1.0, -2.0], requires_grad: true}
  - {op: mul, args: [p, 3.0], out: a}
  - op: checkpoint
    args: [a]
    out: [y]
    use_reentrant: false
    steps:
      - {op: mul_, args: [a, 2.0]}
      - {op: mul, args: [a, a], out: y}
  - {op: sum, args: [y], out: loss}
  - {op: backward, args: [loss]}
  - {observe: value, of: y}
  - {observe: value, of: a}
  - {observe: grad, of: p}
""")
    np.testing.assert_array_equal(obs["value(y)"], [36.0, 144.0])  # (6p)^2
    np.testing.assert_array_equal(obs["value(a)"], [6.0, -12.0])  # the block's write is the caller's too
    np.testing.assert_array_equal(obs["grad(p)"], [72.0, -144.0])  # 72p


def test_an_eval_batch_norm_normalises_with_its_buffers_and_backward_keeps_the_statistics_it_used(
        write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, -1.0]], requires_grad: true}
  - op: batch_norm
    out: bn
    weight: [1.0, 2.0]
    bias: [0.0, 0.5]
    running_mean: [1.0, 0.0]
    running_var: [3.0, 0.0]
  - {op: call, args: [bn, x], out: y}
  - {op: sum, args: [y], out: loss}
  - {op: parameter, args: [bn], name: running_var, out: rv}
  - {op: tensor, out: other, value: [99.0, 99.0]}
  - {op: copy_, args: [rv, other]}
  - {op: backward, args: [loss]}
  - {observe: value, of: y}
  - {observe: grad, of: x}
  - {observe: grad, of: bn.weight}
  - {observe: grad, of: bn.bias}
  - {observe: grad, of: rv}
""")
    scale = np.array([1 / np.sqrt(3.0 + 1e-5), 1 / np.sqrt(0.0 + 1e-5)])
    np.testing.assert_allclose(obs["value(y)"], [[0.0, 2 * 2 * scale[1] + 0.5], [2 * scale[0], -2 * scale[1] + 0.5]])
    np.testing.assert_allclose(obs["grad(x)"], [[scale[0], 2 * scale[1]]] * 2)  # weight / sqrt(var + eps)
    np.testing.assert_allclose(obs["grad(bn.weight)"], [(0 + 2) * scale[0], (2 - 1) * scale[1]])
    np.testing.assert_array_equal(obs["grad(bn.bias)"], [2.0, 2.0])
    assert obs["grad(rv)"] is None  # a buffer: state, not trained


def test_a_weight_written_inside_an_autocast_region_is_what_the_next_call_uses(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0]]}
  - op: linear
    out: fc
    weight: [[1.0, 1.0], [2.0, -1.0]]
    bias: [0.0, 0.0]
  - {op: parameter, args: [fc], name: weight, out: w}
  - op: autocast
    dtype: bfloat16
    steps:
      - {op: call, args: [fc, x], out: y1}
      - op: no_grad
        steps:
          - {op: mul_, args: [w, 2.0]}
      - {op: call, args: [fc, x], out: y2}
  - {observe: value, of: y1}
  - {observe: value, of: y2}
""")
    np.testing.assert_array_equal(obs["value(y1)"], [[3.0, 0.0]])
    np.testing.assert_array_equal(obs["value(y2)"], [[6.0, 0.0]])


def test_indexed_augmented_assignment_scales_those_elements_and_sends_the_gradient_through_them(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: p, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
  - {op: tensor, out: v, value: [0.5, -2.0], requires_grad: true}
  - {op: mul, args: [p, 1.0], out: h}
  - {op: imul, args: [h, v], index: ":, 0"}
  - {op: sum, args: [h], out: loss}
  - {op: backward, args: [loss]}
  - {observe: value, of: h}
  - {observe: grad, of: p}
  - {observe: grad, of: v}
""")
    np.testing.assert_array_equal(obs["value(h)"], [[0.5, 2.0], [-6.0, 4.0]])
    np.testing.assert_array_equal(obs["grad(p)"], [[0.5, 1.0], [-2.0, 1.0]])
    np.testing.assert_array_equal(obs["grad(v)"], [1.0, 3.0])  # the elements it scaled


def test_an_augmented_assignment_goes_through_an_index_or_an_attribute_not_both(write_case) -> None:
    with pytest.raises(CaseError, match="not both"):
        load_case(write_case("""
            id: t
            title: t
            steps:
              - {op: tensor, out: h, value: [1.0, 2.0]}
              - {op: imul, args: [h, 2.0], index: "0", attribute: data}
              - {observe: value, of: h}
        """))


def test_a_bfloat16_literal_is_rounded_to_nearest_with_ties_to_even() -> None:
    from conformance.ops.tensors import literal

    # 1 + 2**-8 lies halfway between 1 and 1 + 2**-7: the even one, 1; 1 + 3 * 2**-8, halfway between
    # 1 + 2**-7 and 1 + 2**-6: the even one, 1 + 2**-6; 3.14159 is 3.140625 in 8 bits of mantissa.
    np.testing.assert_array_equal(literal([1.0 + 2**-8, 1.0 + 3 * 2**-8, 3.14159], "bfloat16"),
                                  [1.0, 1.0 + 2**-6, 3.140625])
    np.testing.assert_array_equal(literal([1, 0, 2], "bool"), [1.0, 0.0, 1.0])
