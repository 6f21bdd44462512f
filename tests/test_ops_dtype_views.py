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


def test_a_dtype_view_has_no_history_and_the_reference_refuses_what_it_does_not_model(write_case) -> None:
    for steps, message in [
        ("  - {op: tensor, out: x, value: [1.0], requires_grad: true}\n"
         "  - {op: view_dtype, args: [x], dtype: float32, out: v}\n  - {op: sum, args: [v], out: s}\n"
         "  - {op: backward, args: [s]}", "does not require grad"),
        ("  - {op: tensor, out: x, value: [1.0]}\n  - {op: view_dtype, args: [x], dtype: float64, out: v}",
         "wider float64"),
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
