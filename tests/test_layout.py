"""The reference for the ops that change what a tensor looks at, gathers and partial writes (ops/layout.py,
ops/views.py, ops/writes.py), and a reference that cannot model a step: what it gives is still judged."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.engine import Engine
from conformance.judge.reference import ReferenceFailure, run_reference
from conformance.ops.views import view_strides

from .conftest import framework_params


def run(write_case, steps: str, **kwargs):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}")), **kwargs)


LEAF = "  - {op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad: true}\n"


@pytest.mark.parametrize(("op", "want"), [
    ("{op: t_, args: [v]}", [[1.0], [2.0], [3.0]]),
    ("{op: transpose_, args: [v], dims: [0, 1]}", [[1.0], [2.0], [3.0]]),
    ("{op: squeeze_, args: [v], dim: 0}", [1.0, 2.0, 3.0]),
    ("{op: unsqueeze_, args: [v], dim: 0}", [[[1.0, 2.0, 3.0]]]),
])
def test_a_view_rearranged_in_place_stays_a_view_of_its_base(write_case, op: str, want) -> None:
    """A write through the base after the view's own shape changed is seen through the view, and the
    gradient through the view reaches the base."""
    obs = run(write_case, LEAF + f"""\
  - {{op: mul, args: [x, 1.0], out: base}}
  - {{op: getitem, args: [base], index: "0:1", out: v}}
  - {op}
  - {{observe: value, of: v, name: before}}
  - {{op: setitem, args: [base, 7.0], index: "0, 0"}}
  - {{observe: value, of: v, name: after}}
  - {{op: sum, args: [v], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: grad, of: x}}
""").observations
    np.testing.assert_array_equal(obs["before"], want)
    assert np.asarray(obs["after"]).reshape(-1)[0] == 7.0
    np.testing.assert_array_equal(obs["grad(x)"], [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]])  # 7.0 came from a write


def test_a_tensor_rearranged_in_place_gives_its_leaf_the_gradient_of_the_old_layout(write_case) -> None:
    obs = run(write_case, LEAF + """\
  - {op: mul, args: [x, 1.0], out: y}
  - {op: t_, args: [y]}
  - {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}
  - {op: mul, args: [y, w], out: p}
  - {op: sum, args: [p], out: loss}
  - {op: backward, args: [loss]}
  - {observe: grad, of: x}
""").observations
    np.testing.assert_array_equal(obs["grad(x)"], [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])


def test_as_strided_on_a_view_reaches_other_elements_of_its_base(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
  - {op: getitem, args: [x], index: "0", out: row}
  - {op: as_strided_, args: [row], size: [2], stride: [2], storage_offset: 1}
  - {op: mul_, args: [row, 10.0]}
  - {observe: value, of: x}
""").observations
    np.testing.assert_array_equal(obs["value(x)"], [[1.0, 20.0], [3.0, 40.0]])


def test_a_growing_resize_reallocates_for_every_name_and_leaves_new_elements_undetermined(write_case) -> None:
    steps = """\
  - {op: tensor, out: x, value: [1.0, 2.0]}
  - {op: detach, args: [x], out: alias}
  - {op: resize_, args: [x], shape: [4]}
  - {op: setitem, args: [x, 9.0], index: "0"}
  - {observe: value, of: alias}
  - {op: getitem, args: [x], index: "0:2", out: kept}
  - {observe: value, of: kept}
  - {observe: value, of: x, name: grown}
  - {op: setitem, args: [x, 5.0], index: "2:4"}
  - {observe: value, of: x, name: written}
"""
    result = run(write_case, steps, partial=True)
    np.testing.assert_array_equal(result.observations["value(alias)"], [9.0, 2.0])  # the same storage, grown
    np.testing.assert_array_equal(result.observations["value(kept)"], [9.0, 2.0])
    # read whole, the two elements it kept are judged and the two new ones are not (any value is possible)
    assert result.undetermined == {"grown": [2, 3]} and "grown" not in result.unjudged
    np.testing.assert_array_equal(result.observations["grown"][:2], [9.0, 2.0])
    np.testing.assert_array_equal(result.observations["written"], [9.0, 2.0, 5.0, 5.0])
    with pytest.raises(ReferenceFailure, match="undetermined"):
        run(write_case, steps)


def test_data_assignment_aliases_the_source_untracked_and_detach_in_place_leaves_the_graph(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: w, value: [1.0, 2.0], requires_grad: true}
  - {op: tensor, out: src, value: [3.0, 4.0]}
  - {op: set_data, args: [w, src]}
  - {op: mul_, args: [src, 2.0]}
  - {observe: value, of: w}
  - {observe: is_leaf, of: w}
  - {op: mul, args: [w, w], out: sq}
  - {op: tensor, out: y0, value: [1.0, 1.0], requires_grad: true}
  - {op: mul, args: [y0, 3.0], out: y}
  - {op: detach_, args: [y]}
  - {op: mul, args: [sq, y], out: p}
  - {op: sum, args: [p], out: loss}
  - {op: backward, args: [loss]}
  - {observe: grad, of: w}
  - {observe: grad, of: y0}
""").observations
    np.testing.assert_array_equal(obs["value(w)"], [6.0, 8.0])  # w looks at src's storage
    np.testing.assert_array_equal(obs["grad(w)"], [36.0, 48.0])  # 2 * w * y, at w's new values
    assert obs["grad(y0)"] is None  # y left the graph


def test_a_gather_is_a_copy_whose_gradient_sums_back_and_an_indexed_write_reaches_the_elements(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
  - {op: mul, args: [x, 1.0], out: y}
  - {op: getitem, args: [y], index: "[0, 2]", out: g}
  - {op: mul_, args: [g, 10.0]}
  - {observe: value, of: y}
  - {op: setitem, args: [y, 0.0], index: "[1]"}
  - {op: getitem, args: [x], index: "[2, 2]", out: twice}
  - {op: sum, args: [g], out: l1}
  - {op: sum, args: [y], out: l2}
  - {op: sum, args: [twice], out: l3}
  - {op: add, args: [l1, l2], out: l12}
  - {op: add, args: [l12, l3], out: loss}
  - {op: backward, args: [loss]}
  - {observe: value, of: y, name: written}
  - {observe: grad, of: x}
""").observations
    np.testing.assert_array_equal(obs["value(y)"], [1.0, 2.0, 3.0])  # the gather is a copy
    np.testing.assert_array_equal(obs["written"], [1.0, 0.0, 3.0])
    # 10 through the gather (x0, x2), 1 through y where the write left it (x0, x2), 2 through x2 read twice
    np.testing.assert_array_equal(obs["grad(x)"], [11.0, 0.0, 13.0])


def test_index_copy_masked_fill_clip_and_scale_gradients(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad: true}
  - {op: tensor, out: s, value: [[7.0, 8.0]], requires_grad: true}
  - {op: mul, args: [x, 1.0], out: y}
  - {op: index_copy_, args: [y, s], rows: [1]}
  - {op: masked_fill_, args: [y], mask: [[1, 0], [0, 0], [0, 0]], value: 0.5}
  - {op: clip_, args: [y], min: 1.5, max: 7.5}
  - {op: scale_, args: [y], scale: 2.0, bias: 1.0}
  - {observe: value, of: y}
  - {op: sum, args: [y], out: loss}
  - {op: backward, args: [loss]}
  - {observe: grad, of: x}
  - {observe: grad, of: s}
""").observations
    np.testing.assert_array_equal(obs["value(y)"], [[4.0, 5.0], [15.0, 16.0], [11.0, 13.0]])
    np.testing.assert_array_equal(obs["grad(x)"], [[0.0, 2.0], [0.0, 0.0], [2.0, 2.0]])  # filled, replaced
    np.testing.assert_array_equal(obs["grad(s)"], [[2.0, 0.0]])  # 8.0 was clipped to 7.5


def test_computestride_decides_what_a_view_can_have() -> None:
    assert view_strides((2, 3), [3, 1], (3, 2)) == [2, 1]
    assert view_strides((3, 2), [1, 3], (6,)) is None  # a transposed matrix flattened: a copy
    assert view_strides((3, 2), [1, 3], (3, 2, 1)) is not None


def test_a_step_the_reference_cannot_model_keeps_what_it_observed_before(write_case) -> None:
    result = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, 2.0]}
  - {observe: value, of: x, name: before}
  - {op: getitem, args: [x], index: "0:1", out: v}
  - {op: resize_, args: [v], shape: [3]}
  - {observe: value, of: x, name: after}
""", partial=True)
    assert list(result.observations) == ["before"] and "resize_ on a view is not modelled" in result.stopped


def test_detaching_a_base_in_place_does_not_detach_the_views_taken_before(write_case) -> None:
    """torch's test_autograd.py TestAutograd.test_detach_base."""
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, 2.0, 3.0], requires_grad: true}
  - {op: mul, args: [x, 2.0], out: base}
  - {op: getitem, args: [base], index: "0:2", out: view}
  - {op: detach_, args: [base]}
  - {observe: requires_grad, of: base}
  - {op: sum, args: [view], out: loss}
  - {op: backward, args: [loss]}
  - {observe: grad, of: x}
""").observations
    np.testing.assert_array_equal(obs["grad(x)"], [2.0, 2.0, 0.0])


NOT_MODELLED = """
    id: not_modelled_then_memory
    title: a step the reference cannot model (t.data = src on a view), then values and memory
    steps:
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: tensor, out: src, value: [5.0, 6.0]}
      - {op: getitem, args: [x], index: "0", out: row}
      - {observe: value, of: row, name: before}
      - {op: set_data, args: [row, src]}
      - {op: mul, args: [row, 2.0], out: y}
      - {observe: value, of: y, name: after}
      - {observe: version, of: x}
      - {observe: is_leaf, of: row}
      - {observe: shares_memory, of: [row, x]}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_a_cell_whose_step_the_reference_cannot_model_keeps_its_model_free_observations(
        write_case, framework: str) -> None:
    """The worker's observations are all recorded; what needs no value model (memory, version, is_leaf) is
    judged and decides the cell; values before the step are judged, values after it are left out with why."""
    engine = Engine(timeout=120)
    try:
        record = engine.run_cell(load_case(write_case(NOT_MODELLED)), framework, "cpu")
    finally:
        engine.close()
    details = record["details"]
    if record["outcome"] == "raises":  # a framework may refuse .data = on a view: that is its answer
        assert "set_data" in details["exception"]["op"], details
        return
    assert record["outcome"] in ("aliases", "copies"), details
    observed = {o["name"]: o for o in details["observations"]}
    assert set(observed) == {"before", "after", "version(x)", "is_leaf(row)", "shares_memory(row, x)"}
    assert observed["before"]["matches_reference"] is True
    assert "t.data = src on a view is not modelled" in observed["after"]["not_judged"]
    assert "t.data = src" in details["reference_note"]


def test_a_view_keeps_its_elements_when_its_base_rearranges_itself_in_place(write_case) -> None:
    """v = x[0] looks at x's first row; x.t_() then swaps x's own dimensions: v still looks at the same
    memory (w[0, :]), and its gradient goes there, through x's rearrangement."""
    obs = run(write_case, """\
  - {op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0]], requires_grad: true}
  - {op: mul, args: [w, 1.0], out: x}
  - {op: getitem, args: [x], index: "0", out: v}
  - {op: t_, args: [x]}
  - {observe: value, of: v}
  - {op: tensor, out: c, value: [10.0, 100.0]}
  - {op: mul, args: [v, c], out: p}
  - {op: sum, args: [p], out: loss}
  - {op: backward, args: [loss]}
  - {observe: grad, of: w}
""").observations
    np.testing.assert_array_equal(obs["value(v)"], [1.0, 2.0])
    np.testing.assert_array_equal(obs["grad(w)"], [[10.0, 100.0], [0.0, 0.0]])
