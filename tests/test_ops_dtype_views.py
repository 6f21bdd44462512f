"""The dtype view (conformance/ops/dtype_views.py): the same memory read as another dtype, with the bit
patterns written out by hand (IEEE 754, little-endian bytes)."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.case.load import load_case
from conformance.judge.reference import ReferenceFailure, run_reference


def run(write_case, steps: str):
    return run_reference(load_case(write_case(f"id: t\ntitle: t\nsteps:\n{steps}"))).observations


def test_a_float32_read_as_int32_is_its_bits_and_a_write_to_them_is_seen_in_the_float(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, -2.0]}
  - {op: view_dtype, args: [x], dtype: int32, out: v}
  - {observe: value, of: v, name: before}
  - {op: add_, args: [v, 8388608]}
  - {op: setitem, args: [v, 1077936128], index: "1"}
  - {observe: value, of: x}
  - {observe: value, of: v}
""")
    # 1.0 = 0x3F800000; -2.0 = 0xC0000000, which as a signed int32 is -(2**30)
    np.testing.assert_array_equal(obs["before"], [0x3F800000, -(1 << 30)])
    # + 2**23 is one more in the exponent field: 2.0; 0x40400000 is 3.0
    np.testing.assert_array_equal(obs["value(x)"], [2.0, 3.0])
    np.testing.assert_array_equal(obs["value(v)"], [0x40000000, 0x40400000])


def test_a_float32_read_as_uint8_is_four_bytes_per_element_and_a_byte_write_keeps_the_others(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 0.5]]}
  - {op: view_dtype, args: [x], dtype: uint8, out: u}
  - {observe: value, of: u, name: before}
  - {op: setitem, args: [u, 64], index: "0, 3"}
  - {op: setitem, args: [u, 1], index: "0, 4"}
  - {observe: value, of: x}
  - {observe: value, of: u}
""")
    # 1.0 = 0x3F800000 and 0.5 = 0x3F000000, least significant byte first
    np.testing.assert_array_equal(obs["before"], [[0, 0, 128, 63, 0, 0, 0, 63]])
    # 0x40800000 is 4.0; 0x3F000001 is 0.5 + 2**-24
    np.testing.assert_array_equal(obs["value(x)"], [[4.0, 0.5 + 2.0 ** -24]])
    np.testing.assert_array_equal(obs["value(u)"], [[0, 0, 128, 64, 1, 0, 0, 63]])


def test_a_view_of_a_dtype_view_reads_and_writes_the_parts_it_takes(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [1.0, 2.0], dtype: float64}
  - {op: view_dtype, args: [x], dtype: float32, out: halves}
  - {op: getitem, args: [halves], index: "1::2", out: upper}
  - {observe: value, of: upper, name: before}
  - {op: mul_, args: [upper, 2.0]}
  - {observe: value, of: x}
""")
    # float64 1.0 = 0x3FF00000_00000000, 2.0 = 0x40000000_00000000: upper words 0x3FF00000 (1.875) and 2.0
    np.testing.assert_array_equal(obs["before"], [1.875, 2.0])
    # doubled: 3.75 = 0x40700000 and 4.0 = 0x40800000, as upper words: float64 256.0 and 512.0
    np.testing.assert_array_equal(obs["value(x)"], [256.0, 512.0])


def test_two_float32_read_as_one_float64_and_a_write_to_it_lands_on_both(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[0.0, 1.875, 0.0, 2.0], [0.0, 0.0, 0.0, 1.875]]}
  - {op: view_dtype, args: [x], dtype: float64, out: w}
  - {observe: value, of: w, name: before}
  - {op: getitem, args: [w], index: ":, 1", out: right}
  - {op: mul_, args: [right, 2.0]}
  - {op: setitem, args: [w, 1.0], index: "1, 0"}
  - {observe: value, of: x}
  - {observe: value, of: w}
""")
    # little-endian: the lower word first.  float32 1.875 = 0x3FF00000 as an upper word: float64 1.0;
    # 2.0 = 0x40000000: float64 2.0; a zero upper word with a zero lower one: 0.0
    np.testing.assert_array_equal(obs["before"], [[1.0, 2.0], [0.0, 1.0]])
    # doubled: float64 4.0 = 0x40100000_00000000 (upper word float32 2.25), 2.0 = 0x40000000_00000000;
    # 1.0 written at [1, 0]: upper word 0x3FF00000, float32 1.875
    np.testing.assert_array_equal(obs["value(x)"], [[0.0, 1.875, 0.0, 2.25], [0.0, 1.875, 0.0, 2.0]])
    np.testing.assert_array_equal(obs["value(w)"], [[1.0, 4.0], [1.0, 2.0]])


def test_a_wider_view_of_a_view_lands_where_its_elements_lie(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [0.0, 0.0, 0.0, 1.875, 0.0, 2.0], dtype: float32}
  - {op: getitem, args: [x], index: "2:", out: tail}
  - {op: view_dtype, args: [tail], dtype: float64, out: w}
  - {op: add_, args: [w, 1.0]}
  - {observe: value, of: x}
  - {observe: value, of: w}
""")
    # 1.0 + 1.0 = 2.0 (upper word 0x40000000); 2.0 + 1.0 = 3.0 = 0x40080000_00000000 (upper float32 2.125)
    np.testing.assert_array_equal(obs["value(x)"], [0.0, 0.0, 0.0, 2.0, 0.0, 2.125])
    np.testing.assert_array_equal(obs["value(w)"], [2.0, 3.0])


def test_a_wider_view_may_start_at_any_element_as_numpy_reads_it(write_case) -> None:
    obs = run(write_case, """\
  - {op: tensor, out: x, value: [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]}
  - {op: getitem, args: [x], index: ":, 1:3", out: middle}
  - {op: view_dtype, args: [middle], dtype: float64, out: w}
  - {observe: value, of: w}
""")
    # float32 2.0 = 0x40000000 (lower word), 3.0 = 0x40400000 (upper): float64 0x40400000_40000000, whose
    # exponent 0x404 is 2**5 and mantissa 2**30 / 2**52
    want = [[np.frombuffer(np.array([2.0, 3.0], "<f4").tobytes(), "<f8")[0]],
            [np.frombuffer(np.array([6.0, 7.0], "<f4").tobytes(), "<f8")[0]]]
    assert float(np.array(want).reshape(-1)[0]) == float.fromhex("0x1.0000040000000p+5")  # 32 + 2**-17
    np.testing.assert_array_equal(obs["value(w)"], want)


def test_a_dtype_view_has_no_history_and_the_reference_refuses_what_it_does_not_model(write_case) -> None:
    for steps, message in [
        ("  - {op: tensor, out: x, value: [1.0], requires_grad: true}\n"
         "  - {op: view_dtype, args: [x], dtype: float32, out: v}\n  - {op: sum, args: [v], out: s}\n"
         "  - {op: backward, args: [s]}", "does not require grad"),
        ("  - {op: tensor, out: x, value: [1.0]}\n  - {op: view_dtype, args: [x], dtype: float64, out: v}",
         "wider float64 of a last dimension of 1, not a multiple of 2"),
        ("  - {op: tensor, out: x, value: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}\n"
         "  - {op: as_strided, args: [x], size: [2, 2], stride: [3, 1], out: y}\n"
         "  - {op: view_dtype, args: [y], dtype: float64, out: v}", "differ by other than a multiple of 2"),
        ("  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}\n  - {op: transpose, args: [x], dims: [0, 1], "
         "out: t}\n  - {op: view_dtype, args: [t], dtype: float64, out: v}", "wider float64 of a tensor whose last "
         "dimension is not contiguous"),
        ("  - {op: tensor, out: x, value: [1.0, 2.0]}\n  - {op: view_dtype, args: [x], dtype: float64, out: v}\n"
         "  - {op: tensor, out: y, value: [5.0]}\n  - {op: set_, args: [y, v]}", "set_ with a dtype view"),
        ("  - {op: tensor, out: x, value: [1.0]}\n  - {op: mul, args: [x, 2.0], out: y}\n"
         "  - {op: view_dtype, args: [y], dtype: int32, out: v}", "made from a literal"),
        ("  - {op: tensor, out: x, value: 1.0}\n  - {op: view_dtype, args: [x], dtype: uint8, out: v}",
         "0-d tensor"),
        ("  - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}\n  - {op: transpose, args: [x], dims: [0, 1], "
         "out: t}\n  - {op: view_dtype, args: [t], dtype: uint8, out: v}", "not contiguous"),
        ("  - {op: tensor, out: x, value: [1.0]}\n  - {op: view_dtype, args: [x], dtype: int32, out: v}\n"
         "  - {op: view_dtype, args: [v], dtype: uint8, out: w}", "dtype view of a dtype view"),
    ]:
        with pytest.raises(ReferenceFailure, match=message):
            run(write_case, steps + "\n  - {observe: value, of: x}\n")
