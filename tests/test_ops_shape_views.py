"""The out-of-place shape views (conformance/ops/shape_views.py): the elements each view takes, a write
through it seen in its base, and the gradient back to the base, with the numbers written out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.judge.reference import ReferenceFailure, run_reference


def run(write_case, steps: str):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}"))).observations


X = "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"
ROW = "[[1.0, 2.0, 3.0]]"
VECTOR = "[1.0, 2.0, 3.0]"


@pytest.mark.parametrize(("base", "op", "view", "index", "written", "grad"), [
    (ROW, "{op: squeeze, args: [b]}", [1, 2, 3], "1", [[1, 100, 3]], [[1, 1, 1]]),
    (ROW, "{op: squeeze, args: [b], dim: 1}", [[1, 2, 3]], "0, 2", [[1, 2, 100]], [[1, 1, 1]]),  # size 3 stays
    (VECTOR, "{op: unsqueeze, args: [b], dim: 1}", [[1], [2], [3]], "2, 0", [1, 2, 100], [1, 1, 1]),
    (X, "{op: flatten, args: [b]}", [1, 2, 3, 4, 5, 6], "4", [[1, 2, 3], [4, 100, 6]], [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: diagonal, args: [b]}", [1, 5], "1", [[1, 2, 3], [4, 100, 6]], [[1, 0, 0], [0, 1, 0]]),
    (X, "{op: diagonal, args: [b], offset: 1}", [2, 6], "1", [[1, 2, 3], [4, 5, 100]], [[0, 1, 0], [0, 0, 1]]),
    (X, "{op: diagonal, args: [b], offset: -1, dim1: 0, dim2: 1}", [4], "0", [[1, 2, 3], [100, 5, 6]],
     [[0, 0, 0], [1, 0, 0]]),
    # windows [1, 2], [2, 3] per row: the middle column is read twice, so its gradient is 2
    (X, "{op: unfold, args: [b], dimension: 1, size: 2, step: 1}", [[[1, 2], [2, 3]], [[4, 5], [5, 6]]], "1, 1, 0",
     [[1, 2, 3], [4, 100, 6]], [[1, 2, 1], [1, 2, 1]]),
    (VECTOR, "{op: unfold, args: [b], dimension: 0, size: 1, step: 2}", [[1], [3]], "1, 0", [1, 2, 100], [1, 0, 1]),
    # storage positions 1 + i + 3j of a [2, 3] tensor: [[x01, x11], [x02, x12]]
    (X, "{op: as_strided, args: [b], size: [2, 2], stride: [1, 3], storage_offset: 1}", [[2, 5], [3, 6]], "0, 1",
     [[1, 2, 3], [4, 100, 6]], [[0, 1, 1], [0, 1, 1]]),
    (X, "{op: as_strided, args: [b], size: [3], stride: [2]}", [1, 3, 5], "2", [[1, 2, 3], [4, 100, 6]],
     [[1, 0, 1], [0, 1, 0]]),
    # the transposes users write: v[2, 0] is b[0, 2]
    (X, "{op: permute, args: [b], dims: [1, 0]}", [[1, 4], [2, 5], [3, 6]], "2, 0", [[1, 2, 100], [4, 5, 6]],
     [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: permute, args: [b], dims: [-1, -2]}", [[1, 4], [2, 5], [3, 6]], "2, 0", [[1, 2, 100], [4, 5, 6]],
     [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: swapdims, args: [b], dims: [0, 1]}", [[1, 4], [2, 5], [3, 6]], "2, 0", [[1, 2, 100], [4, 5, 6]],
     [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: swapaxes, args: [b], dims: [1, 0]}", [[1, 4], [2, 5], [3, 6]], "0, 1", [[1, 2, 3], [100, 5, 6]],
     [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: T, args: [b]}", [[1, 4], [2, 5], [3, 6]], "1, 1", [[1, 2, 3], [4, 100, 6]], [[1, 1, 1], [1, 1, 1]]),
    (X, "{op: mT, args: [b]}", [[1, 4], [2, 5], [3, 6]], "0, 1", [[1, 2, 3], [100, 5, 6]], [[1, 1, 1], [1, 1, 1]]),
])
def test_a_shape_view_takes_its_elements_writes_through_and_sends_its_gradient_back(
        write_case, base: str, op: str, view, index: str, written, grad) -> None:
    obs = run(write_case, f"""\
  - {{op: tensor, out: w, value: {base}, requires_grad: true}}
  - {{op: mul, args: [w, 1.0], out: b}}
  - {op.replace("}", ", out: v}")}
  - {{observe: value, of: v}}
  - {{op: sum, args: [v], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: grad, of: w}}
  - {{op: setitem, args: [v, 100.0], index: "{index}"}}
  - {{observe: value, of: b}}
""")
    np.testing.assert_array_equal(obs["value(v)"], view)
    np.testing.assert_array_equal(obs["grad(w)"], grad)
    np.testing.assert_array_equal(obs["value(b)"], written)


def test_flatten_of_strides_no_view_has_is_a_copy(write_case) -> None:
    obs = run(write_case, f"""\
  - {{op: tensor, out: w, value: {X}, requires_grad: true}}
  - {{op: transpose, args: [w], dims: [0, 1], out: t}}
  - {{op: flatten, args: [t], out: v}}
  - {{op: setitem, args: [v, 100.0], index: "1"}}
  - {{observe: value, of: v}}
  - {{observe: value, of: w}}
  - {{op: sum, args: [v], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: grad, of: w}}
""")
    np.testing.assert_array_equal(obs["value(v)"], [1, 100, 2, 5, 3, 6])
    np.testing.assert_array_equal(obs["value(w)"], [[1, 2, 3], [4, 5, 6]])  # the copy took the write
    np.testing.assert_array_equal(obs["grad(w)"], [[1, 1, 1], [0, 1, 1]])  # except the overwritten w[1, 0]


def test_view_as_takes_the_other_shape_and_refuses_strides_no_view_has(write_case) -> None:
    obs = run(write_case, f"""\
  - {{op: tensor, out: x, value: {X}}}
  - {{op: tensor, out: e, value: [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]}}
  - {{op: view_as, args: [x, e], out: v}}
  - {{op: setitem, args: [v, 100.0], index: "2, 0"}}
  - {{observe: value, of: v}}
  - {{observe: value, of: x}}
""")
    np.testing.assert_array_equal(obs["value(v)"], [[1, 2], [3, 4], [100, 6]])
    np.testing.assert_array_equal(obs["value(x)"], [[1, 2, 3], [4, 100, 6]])
    with pytest.raises(ReferenceFailure, match="view_as of a tensor whose strides"):
        run(write_case, f"""\
  - {{op: tensor, out: x, value: {X}}}
  - {{op: tensor, out: e, value: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}}
  - {{op: transpose, args: [x], dims: [0, 1], out: t}}
  - {{op: view_as, args: [t, e], out: v}}
  - {{observe: value, of: v}}
""")


@pytest.mark.parametrize(("base", "op", "parts"), [
    # 7 into 3: the first 7 % 3 = 1 part is one longer
    ("[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]", "{op: tensor_split, args: [b], sections: 3, out: [p0, p1, p2]}",
     [[1, 2, 3], [4, 5], [6, 7]]),
    (X, "{op: tensor_split, args: [b], indices: [1, 2], dim: 1, out: [p0, p1, p2]}", [[[1], [4]], [[2], [5]], [[3], [6]]]),
    ("[1.0, 2.0, 3.0, 4.0]", "{op: hsplit, args: [b], sections: 2, out: [p0, p1]}", [[1, 2], [3, 4]]),  # a vector: dim 0
    ("[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]", "{op: hsplit, args: [b], sections: 2, out: [p0, p1]}",
     [[[1, 2], [5, 6]], [[3, 4], [7, 8]]]),
    ("[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]", "{op: vsplit, args: [b], indices: [3], out: [p0, p1]}",
     [[[1, 2], [3, 4], [5, 6]], [[7, 8]]]),
    ("[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]", "{op: dsplit, args: [b], sections: 3, out: [p0, p1, p2]}",
     [[[[1], [4]]], [[[2], [5]]], [[[3], [6]]]]),
    ("[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]", "{op: split_count, args: [b], sections: 3, out: [p0, p1, p2]}",
     [[1, 2], [3, 4], [5, 6]]),
])
def test_a_split_gives_views_of_its_parts(write_case, base: str, op: str, parts) -> None:
    """Each part's values; a write of 100 into the first element of the last part reaches the base; the
    gradient of sum(last part) is 1 exactly where that part lies."""
    last = f"p{len(parts) - 1}"
    obs = run(write_case, f"""\
  - {{op: tensor, out: w, value: {base}, requires_grad: true}}
  - {{op: mul, args: [w, 1.0], out: b}}
  - {op}
""" + "".join(f"  - {{observe: value, of: p{i}}}\n" for i in range(len(parts))) + f"""\
  - {{op: sum, args: [{last}], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: grad, of: w}}
  - {{op: mul_, args: [{last}, 100.0]}}
  - {{observe: value, of: b}}
""")
    for i, want in enumerate(parts):
        np.testing.assert_array_equal(obs[f"value(p{i})"], want)
    base_values = np.array(eval(base))  # noqa: S307 - the literal above
    np.testing.assert_array_equal(np.asarray(obs["grad(w)"]).sum(), np.size(parts[-1]))
    written = np.array(obs["value(b)"])
    mask = written != base_values
    np.testing.assert_array_equal(written[mask], base_values[mask] * 100)
    np.testing.assert_array_equal(np.asarray(obs["grad(w)"]), mask.astype(float))


@pytest.mark.parametrize("op", [
    "{op: hsplit, args: [b], sections: 2, out: [p0, p1]}",  # 3 columns into 2 equal parts
    "{op: split_count, args: [b], sections: 2, dim: 1, out: [p0, p1]}",
    "{op: dsplit, args: [b], sections: 1, out: [p0]}",  # a matrix has no dimension 2
])
def test_a_split_the_frameworks_refuse_stops_the_reference(write_case, op: str) -> None:
    with pytest.raises(ReferenceFailure):
        run(write_case, f"  - {{op: tensor, out: b, value: {X}}}\n  - {op}\n  - {{observe: value, of: p0}}\n")


def test_a_split_binds_as_many_names_as_it_has_parts(write_case) -> None:
    from conformance.case.model import CaseError

    with pytest.raises(CaseError, match="gives 3 parts"):
        load_case(write_case(f"id: t\ntitle: t\nsteps:\n  - {{op: tensor, out: b, value: {X}}}\n"
                             "  - {op: tensor_split, args: [b], indices: [1, 2], dim: 1, out: [p0, p1]}\n"
                             "  - {observe: value, of: p0}\n"))
    with pytest.raises(CaseError, match="either sections"):
        load_case(write_case(f"id: t\ntitle: t\nsteps:\n  - {{op: tensor, out: b, value: {X}}}\n"
                             "  - {op: hsplit, args: [b], sections: 2, indices: [1], out: [p0, p1]}\n"
                             "  - {observe: value, of: p0}\n"))


def test_a_permutation_of_three_dimensions_and_mt_of_a_batch(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]}
  - {op: permute, args: [x], dims: [2, 0, 1], out: p}
  - {observe: value, of: p}
  - {op: mT, args: [x], out: m}
  - {observe: value, of: m}
  - {op: T, args: [x], out: t}
  - {op: setitem, args: [t, 0.0], index: "1, 0, 1"}
  - {observe: value, of: x}
""")
    # p[k, i, j] = x[i, j, k]; m[b] = x[b] transposed; t = x reversed: t[1, 0, 1] is x[1, 0, 1]
    np.testing.assert_array_equal(obs["value(p)"], [[[1, 3], [5, 7]], [[2, 4], [6, 8]]])
    np.testing.assert_array_equal(obs["value(m)"], [[[1, 3], [2, 4]], [[5, 7], [6, 8]]])
    np.testing.assert_array_equal(obs["value(x)"], [[[1, 2], [3, 4]], [[5, 0], [7, 8]]])


@pytest.mark.parametrize(("op", "problem"), [
    ("{op: permute, args: [x], dims: [0, 0]}", "order every dimension once"),
    ("{op: permute, args: [x], dims: [0, 2]}", "order every dimension once"),
    ("{op: swapdims, args: [x], dims: [0]}", "two dimensions"),
])
def test_a_dims_field_that_names_no_permutation_is_refused(write_case, op: str, problem: str) -> None:
    from conformance.case.load import CaseError

    with pytest.raises(CaseError, match=problem):
        load_case(write_case(f"id: t\ntitle: t\nsteps:\n  - {{op: tensor, out: x, value: {X}}}\n  - {op}\n"))


def test_permute_naming_too_few_dimensions_and_mt_of_a_vector_are_refused_by_the_reference(write_case) -> None:
    with pytest.raises(ReferenceFailure):
        run(write_case, "  - {op: tensor, out: x, value: [[[1.0]]]}\n  - {op: permute, args: [x], dims: [1, 0], out: p}\n"
                        "  - {observe: value, of: p}\n")
    with pytest.raises(ReferenceFailure):
        run(write_case, f"  - {{op: tensor, out: x, value: {VECTOR}}}\n  - {{op: mT, args: [x], out: m}}\n"
                        "  - {observe: value, of: m}\n")


def test_expand_as_repeats_the_same_elements_and_reshape_as_copies_where_no_view_can(write_case) -> None:
    obs = run(write_case, f"""\
  - {{op: tensor, out: w, value: {ROW}, requires_grad: true}}
  - {{op: mul, args: [w, 1.0], out: row}}
  - {{op: tensor, out: e, value: [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]}}
  - {{op: expand_as, args: [row, e], out: v}}
  - {{op: sum, args: [v], out: loss}}
  - {{op: backward, args: [loss]}}
  - {{observe: grad, of: w}}
  - {{op: tensor, out: x, value: {X}}}
  - {{op: transpose, args: [x], dims: [0, 1], out: xt}}
  - {{op: reshape_as, args: [xt, e], out: r}}
  - {{op: setitem, args: [r, 100.0], index: "0, 0"}}
  - {{observe: value, of: r}}
  - {{observe: value, of: x}}
""")
    np.testing.assert_array_equal(obs["grad(w)"], [[2, 2, 2]])  # each element read by both rows
    np.testing.assert_array_equal(obs["value(r)"], [[100, 4, 2], [5, 3, 6]])  # xt's elements in order
    np.testing.assert_array_equal(obs["value(x)"], [[1, 2, 3], [4, 5, 6]])  # a copy: x keeps its values


def test_index_assignment_drops_a_value_s_leading_dimensions_of_size_1_and_sends_its_gradient_back_in_its_shape(
        write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: base, value: [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad: true}
  - {op: clone, args: [base], out: x}
  - {op: tensor, out: v, value: [[[10.0, 20.0, 30.0]]], requires_grad: true}
  - {op: setitem, args: [x, v], index: ":, 0"}
  - {op: mul, args: [x, x], out: sq}
  - {op: sum, args: [sq], out: loss}
  - {op: backward, args: [loss]}
  - {observe: value, of: x}
  - {observe: grad, of: v}
  - {observe: grad, of: base}
""")
    np.testing.assert_array_equal(obs["value(x)"], [[10.0, 2.0], [20.0, 4.0], [30.0, 6.0]])
    np.testing.assert_array_equal(obs["grad(v)"], [[[20.0, 40.0, 60.0]]])  # 2 * v, in v's shape (1, 1, 3)
    np.testing.assert_array_equal(obs["grad(base)"], [[0.0, 4.0], [0.0, 8.0], [0.0, 12.0]])  # column 0 overwritten


def test_a_value_whose_extra_leading_dimension_is_not_1_is_still_refused(write_case) -> None:
    with pytest.raises(ReferenceFailure, match=r"shape \[2, 2\] does not broadcast to the \[2\] elements"):
        run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
  - {op: tensor, out: v, value: [[1.0, 2.0], [3.0, 4.0]]}
  - {op: setitem, args: [x, v], index: ":, 0"}
  - {observe: value, of: x}
""")


def test_an_index_with_ellipsis_none_and_a_list_of_booleans_reads_as_numpy_reads_it(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
  - {op: getitem, args: [x], index: ":, None", out: u}
  - {op: setitem, args: [u, 9.0], index: "1, 0, 0"}
  - {op: getitem, args: [x], index: "..., 1", out: c}
  - {op: mul_, args: [c, 10.0]}
  - {op: clone, args: [x], out: w}
  - {op: setitem, args: [w, 0.0], index: ":, [True, False]"}
  - {op: getitem, args: [x], index: "[False, True]", out: picked}
  - {observe: value, of: x}
  - {observe: value, of: w}
  - {observe: value, of: picked}
""")
    np.testing.assert_array_equal(obs["value(x)"], [[1.0, 20.0], [9.0, 40.0]])  # both writes through views
    np.testing.assert_array_equal(obs["value(w)"], [[0.0, 20.0], [0.0, 40.0]])  # column 0, where the list is true
    np.testing.assert_array_equal(obs["value(picked)"], [[9.0, 40.0]])
