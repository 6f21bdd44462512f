"""Complex tensors and their views (conformance/ops/complex.py): the (real, imag) pairs the reference holds,
writes through .real, .imag, view_as_real and conj() seen in the others, with the numbers written by hand."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.case.model import CaseError
from conformance.judge.reference import ReferenceFailure, run_reference
from conformance.ops.complex import complex_literal
from conformance.workers.worker import _Run

X = "{op: complex_tensor, out: x, real: [1.0, 2.0], imag: [3.0, -4.0]}"


def run(write_case, steps: str, **options):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}")), **options).observations


def test_a_complex_tensor_is_observed_as_its_pairs_each_part_rounded_to_the_dtype(write_case) -> None:
    obs = run(write_case, """\
  - {op: complex_tensor, out: x, real: [[0.1], [2.0]], imag: [[-0.5], [0.1]]}
  - {op: complex_tensor, out: y, real: 0.1, imag: 1.0, dtype: complex128}
  - {observe: value, of: x}
  - {observe: value, of: y}
""")
    f32 = 0.10000000149011612  # float32(0.1), the real part complex64 holds
    np.testing.assert_array_equal(obs["value(x)"], [[[f32, -0.5]], [[2.0, f32]]])
    np.testing.assert_array_equal(obs["value(y)"], [0.1, 1.0])


def test_a_write_through_real_or_imag_lands_in_its_part_of_each_pair(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: real, args: [x], out: r}}
  - {{op: imag, args: [x], out: i}}
  - {{observe: value, of: r, name: r0}}
  - {{observe: value, of: i, name: i0}}
  - {{op: setitem, args: [r, 10.0], index: "0"}}
  - {{op: mul_, args: [i, 2.0]}}
  - {{observe: value, of: x}}
""")
    np.testing.assert_array_equal(obs["r0"], [1.0, 2.0])
    np.testing.assert_array_equal(obs["i0"], [3.0, -4.0])
    np.testing.assert_array_equal(obs["value(x)"], [[10.0, 6.0], [2.0, -8.0]])


def test_view_as_real_is_the_pairs_and_a_write_through_it_is_seen_in_x_and_its_real_part(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: real, args: [x], out: r}}
  - {{op: view_as_real, args: [x], out: v}}
  - {{observe: value, of: v, name: before}}
  - {{op: setitem, args: [v, 7.0], index: "1, 0"}}
  - {{op: setitem, args: [v, 0.5], index: "0, 1"}}
  - {{observe: value, of: x}}
  - {{observe: value, of: r}}
""")
    np.testing.assert_array_equal(obs["before"], [[1.0, 3.0], [2.0, -4.0]])
    np.testing.assert_array_equal(obs["value(x)"], [[1.0, 0.5], [7.0, -4.0]])
    np.testing.assert_array_equal(obs["value(r)"], [1.0, 7.0])


def test_conj_is_a_view_read_conjugated_that_sees_a_later_write_into_x(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: conj, args: [x], out: k}}
  - {{observe: value, of: k, name: before}}
  - {{op: imag, args: [x], out: i}}
  - {{op: setitem, args: [i, 5.0], index: "1"}}
  - {{observe: value, of: k, name: after}}
  - {{op: conj, args: [k], out: kk}}
  - {{observe: value, of: kk}}
""")
    np.testing.assert_array_equal(obs["before"], [[1.0, -3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(obs["after"], [[1.0, -3.0], [2.0, -5.0]])
    np.testing.assert_array_equal(obs["value(kk)"], [[1.0, 3.0], [2.0, 5.0]])  # conj twice: x itself


def test_a_write_through_the_imaginary_part_of_conj_stores_its_negation(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: conj, args: [x], out: k}}
  - {{op: imag, args: [k], out: ki}}
  - {{op: real, args: [k], out: kr}}
  - {{observe: value, of: ki}}
  - {{op: setitem, args: [ki, 7.0], index: "0"}}
  - {{op: setitem, args: [kr, -1.0], index: "1"}}
  - {{observe: value, of: x}}
  - {{observe: value, of: k}}
""")
    np.testing.assert_array_equal(obs["value(ki)"], [-3.0, 4.0])
    np.testing.assert_array_equal(obs["value(x)"], [[1.0, -7.0], [-1.0, -4.0]])
    np.testing.assert_array_equal(obs["value(k)"], [[1.0, 7.0], [-1.0, 4.0]])


def test_conj_physical_and_resolve_conj_are_new_memory_but_resolve_conj_of_x_is_x(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: conj_physical, args: [x], out: p}}
  - {{op: conj, args: [x], out: k}}
  - {{op: resolve_conj, args: [k], out: m}}
  - {{op: resolve_conj, args: [x], out: same}}
  - {{op: real, args: [x], out: r}}
  - {{op: setitem, args: [r, 10.0], index: "0"}}
  - {{observe: value, of: p}}
  - {{observe: value, of: m}}
  - {{observe: value, of: same}}
""")
    np.testing.assert_array_equal(obs["value(p)"], [[1.0, -3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(obs["value(m)"], [[1.0, -3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(obs["value(same)"], [[10.0, 3.0], [2.0, -4.0]])


def test_where_conj_copies_the_copy_stays_complex_and_misses_the_later_write(write_case) -> None:
    obs = run(write_case, f"""\
  - {X}
  - {{op: conj, args: [x], out: k}}
  - {{op: real, args: [x], out: r}}
  - {{op: setitem, args: [r, 10.0], index: "0"}}
  - {{op: imag, args: [k], out: ki}}
  - {{observe: value, of: k}}
  - {{observe: value, of: ki}}
""", copies=("conj",))
    np.testing.assert_array_equal(obs["value(k)"], [[1.0, -3.0], [2.0, 4.0]])
    np.testing.assert_array_equal(obs["value(ki)"], [-3.0, 4.0])


@pytest.mark.parametrize("step", [
    "{op: mul_, args: [x, 2.0]}",  # would scale the pairs as if they were real elements
    "{op: transpose, args: [x], dims: [0, 1]}",  # would swap the pair dimension in
    "{op: view_as_real, args: [k]}",  # torch refuses an unresolved conjugate
    "{op: imag, args: [f]}",  # the parts are modelled for complex tensors only
])
def test_what_the_reference_does_not_model_of_complex_tensors_stops_it(write_case, step: str) -> None:
    with pytest.raises(ReferenceFailure, match="not modelled|unresolved conjugate|not a complex tensor"):
        run(write_case, f"""\
  - {{op: complex_tensor, out: x, real: [[1.0, 2.0]], imag: [[3.0, 4.0]]}}
  - {{op: conj, args: [x], out: k}}
  - {{op: tensor, out: f, value: [1.0]}}
  - {step.replace("}", ", out: y}")}
  - {{observe: value, of: x}}
""")


@pytest.mark.parametrize(("parts", "message"), [
    ("real: [1.0, 2.0], imag: [1.0]", "one shape"),
    ("real: [1.0], imag: [.nan]", "finite"),
])
def test_a_complex_literal_needs_parts_of_one_shape_and_finite_numbers(write_case, parts: str, message: str) -> None:
    with pytest.raises(CaseError, match=message):
        load_case(write_case(f"id: t\ntitle: t\nsteps:\n  - {{op: complex_tensor, out: x, {parts}}}\n"
                             "  - {observe: value, of: x}\n"))


def test_a_complex_literal_is_spelled_as_python_complex_numbers() -> None:
    assert complex_literal([[1.0, 2.5]], [[3.0, -4.0]]) == "[[(1+3j), (2.5-4j)]]"
    assert complex_literal(0.0, 1.0) == "1j"


def test_the_worker_reads_a_complex_array_as_its_pairs_in_the_part_dtype() -> None:
    read = _Run.read(None, "v", "array", np.array([1 + 3j, 2 - 4j], dtype=np.complex64), False, None)
    assert read == {"value": [[1.0, 3.0], [2.0, -4.0]], "dtype": "float32", "shape": [2, 2]}


def test_conj_of_a_real_tensor_is_the_tensor_itself_so_a_write_through_it_is_a_write_into_x(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, -2.0]}
  - {op: conj, args: [x], out: c}
  - {op: add_, args: [c, 1.0]}
  - {observe: value, of: x}
  - {observe: value, of: c}
""")
    np.testing.assert_array_equal(obs["value(x)"], [2.0, -1.0])  # torch.conj: "just returns input"
    np.testing.assert_array_equal(obs["value(c)"], [2.0, -1.0])
    copied = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, -2.0]}
  - {op: conj, args: [x], out: c}
  - {op: add_, args: [c, 1.0]}
  - {observe: value, of: x}
""", copies=("conj",))  # a framework that documents conj as computed (paddle): a new tensor
    np.testing.assert_array_equal(copied["value(x)"], [1.0, -2.0])


def test_view_as_complex_is_a_view_of_the_pairs_by_hand(write_case) -> None:
    from conformance.case.load import load_case
    from conformance.judge.reference import ReferenceFailure, run_reference

    text = """id: t_case
title: t
steps:
  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
  - {op: view_as_complex, args: [x], out: c}
  - {op: mul_, args: [x, 2.0]}
  - {observe: value, of: c}
  - {op: imag, args: [c], out: im}
  - {op: setitem, args: [im, 9.0], index: 1}
  - {observe: value, of: x}
"""
    obs = run_reference(load_case(write_case(text))).observations
    np.testing.assert_allclose(obs["value(c)"], [[2.0, 4.0], [6.0, 8.0]])  # 2+4j, 6+8j as (real, imag) pairs
    np.testing.assert_allclose(obs["value(x)"], [[2.0, 4.0], [6.0, 9.0]])  # the second element's imaginary part
    for bad in ("[1.0, 2.0, 3.0]", "[[1.0, 2.0, 3.0]]"):
        with pytest.raises(ReferenceFailure, match="last dimension of size 2"):
            run_reference(load_case(write_case(
                f"id: t_case\ntitle: t\nsteps:\n  - {{op: tensor, out: x, value: {bad}}}\n"
                "  - {op: view_as_complex, args: [x], out: c}\n  - {observe: value, of: c}\n")))
