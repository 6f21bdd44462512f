"""float32 arithmetic is never a finding: a value is wrong only when it lies farther from the float64
reference than float32 arithmetic of the same program can move it; wrong values from in-place hazards,
down to 1e-4 relative, are still wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conformance.case.load import Tolerance, load_case
from conformance.engine import Engine
from conformance.judge.classify import compare
from conformance.judge.reference import Float32Rounding, float32_spread, run_reference

from .conftest import INSTALLED, ROOT, SEED, framework_params

#: d/dx sin(x*x) at 7.2, no in-place op at all: float32 rounds x*x (51.84) by 2e-6, and cos there turns
#: that into 2.5e-4 of the gradient, in every float32 program.
SIN_OF_SQUARE = """
    id: sin_of_square
    title: d/dx sin(x*x) at 7.2
    steps:
      - {op: tensor, out: x, value: [7.2], requires_grad: true}
      - {op: mul, args: [x, x], out: y}
      - {op: sin, args: [y], out: z}
      - {op: sum, args: [z], out: s}
      - {op: backward, args: [s]}
      - {observe: grad, of: x}
"""

#: tanh_ at 4, its gradient scaled by 1000: 1 - tanh(4)**2 cancels all but three digits of a float32 tanh
#: (Paddle's test_inplace.py holds tanh_'s backward bit-identical to tanh's).
TANH_AT_FOUR = """
    id: tanh_at_four
    title: tanh_ backward at 4, scaled
    steps:
      - {op: tensor, out: x, value: [4.0], requires_grad: true}
      - {op: mul, args: [x, 1.0], out: y}
      - {op: tanh_, args: [y]}
      - {op: mul, args: [y, 1000.0], out: z}
      - {op: sum, args: [z], out: s}
      - {op: backward, args: [s]}
      - {observe: grad, of: x}
"""


def test_rounding_to_nearest_is_float32_and_stochastic_rounding_moves_by_at_most_an_ulp() -> None:
    values = np.array([0.1, 1.0 / 3.0, 7.2 * 7.2, 1e-30, 2.0])
    nearest = Float32Rounding()(values)
    assert nearest.dtype == np.float32 and np.array_equal(nearest, values.astype(np.float32))
    moved = Float32Rounding(np.random.default_rng(0))(np.repeat(values, 50))
    ulps = np.abs(moved.view(np.int32).astype(np.int64) - np.repeat(nearest, 50).view(np.int32).astype(np.int64))
    assert ulps.max() == 1 and ulps.min() == 0


def test_the_spread_is_large_where_float32_conditioning_is_bad_and_tiny_elsewhere(write_case) -> None:
    case = load_case(write_case(SIN_OF_SQUARE))
    reference = run_reference(case)
    spread = float32_spread(case, reference)["grad(x)"]
    assert 1e-6 < float(spread.max()) < 1e-3  # the same order as float32's own error there, 1.3e-5
    assert float32_spread(case, reference)["grad(x)"] == pytest.approx(spread)  # seeded: reproducible
    plain = load_case(write_case(SIN_OF_SQUARE.replace("7.2", "0.5").replace("sin_of_square", "plain")))
    assert float(float32_spread(plain, run_reference(plain))["grad(x)"].max()) < 1e-6


def test_a_value_within_the_spread_is_correct_and_one_beyond_it_is_wrong() -> None:
    reference = np.array([-0.05354583146923248])
    observed = {"value": [-0.05353264510631561], "dtype": "float32"}  # paddle's float32 result
    assert not compare(observed, reference, None)["ok"]
    judged = compare(observed, reference, None, spread=[4.2e-5])
    assert judged["ok"] and "within float32 rounding" in judged["note"]
    assert not compare({"value": [-0.0533], "dtype": "float32"}, reference, None, spread=[4.2e-5])["ok"]
    # a case's own tolerance still applies on top
    assert compare(observed, reference, Tolerance(1e-3, 0.0))["ok"]


def test_a_value_that_is_not_finite_is_judged_against_a_spread_under_every_numpy() -> None:
    """An infinity or NaN where the reference is finite is wrong, and the same special value where the
    reference has it is right, with an allowance per element (NumPy 1.x's isclose refused the pair, so the
    cell of a to_static program that dropped nan_to_num_'s write was an ``error``)."""
    reference = np.array([1.0, 7.0, 9.0, -9.0, -4.0])
    dropped = {"value": [1.0, np.nan, np.inf, -np.inf, -4.0], "dtype": "float32"}
    judged = compare(dropped, reference, None, spread=[1e-7, 0.0, 1e-6, 2e-6, 5e-7])
    assert not judged["ok"] and judged["max_abs_error"] == np.inf
    special = np.array([1.0, np.nan, np.inf])
    assert compare({"value": [1.0, np.nan, np.inf], "dtype": "float32"}, special, None, spread=[1e-7, 0, 0])["ok"]
    assert not compare({"value": [1.0, np.nan, -np.inf], "dtype": "float32"}, special, None, spread=[0, 0, 0])["ok"]


@pytest.mark.parametrize("framework", framework_params())
@pytest.mark.parametrize("program", [SIN_OF_SQUARE, TANH_AT_FOUR], ids=["sin_of_square", "tanh_at_four"])
def test_an_ill_conditioned_float32_value_is_not_a_finding(framework: str, program: str, write_case) -> None:
    engine = Engine(timeout=60)
    try:
        record = engine.run_cell(load_case(write_case(program)), framework, "cpu")
    finally:
        engine.close()
    assert record["outcome"] == "silent-correct", record["details"]
    [grad] = record["details"]["observations"]
    assert grad["max_rel_error"] > 1e-5 and grad["float32_spread"] > 0  # beyond the tolerance, within float32


@pytest.mark.skipif("paddle" not in INSTALLED, reason="paddle is not installed")
def test_the_rnn_step_two_gradient_error_of_paddle_is_still_wrong() -> None:
    """Seed 003's hidden state reused across an optimizer step: 2.5e-4 relative at step 2, where float32
    moves that gradient by 1e-6."""
    engine = Engine(timeout=120)
    try:
        record = engine.run_cell(load_case(SEED / "rnn_hidden_reuse.yaml"), "paddle", "cpu")
    finally:
        engine.close()
    assert record["outcome"] == "silent-wrong"
    wrong = {o["name"]: o for o in record["details"]["observations"] if o.get("ok") is False}
    step_two = wrong["grad(rnn.weight_ih)[2]"]
    assert step_two["max_rel_error"] == pytest.approx(2.5e-4, rel=0.05)
    assert step_two["float32_spread"] < step_two["max_abs_error"] / 10


def test_an_approximate_kernel_moves_its_results_by_up_to_its_relative_error_and_nothing_else_does() -> None:
    values = np.linspace(-4.0, 4.0, 1001)
    rounding = Float32Rounding(np.random.default_rng(0), {"rnn_tanh": 1e-5})
    moved = rounding(values, "rnn_tanh").astype(np.float64)
    relative = np.abs(moved - values) / np.maximum(np.abs(values), 1e-30)
    assert 1e-6 < relative.max() <= 1e-5 * (1 + 1e-6) + 2 ** -24  # the bound, and the float32 cast
    ulps = np.abs(rounding(values, "tanh").view(np.int32).astype(np.int64)
                  - values.astype(np.float32).view(np.int32).astype(np.int64))
    assert ulps.max() == 1  # another kernel: an ulp, as before
    assert np.array_equal(Float32Rounding(None, {"rnn_tanh": 1e-5})(values, "rnn_tanh"), values.astype(np.float32))


GPU_RNN = json.loads((Path(__file__).parent / "data" / "gpu_rnn_hidden_detach.json").read_text())


def _gpu_reply(scale_step_one: float = 1.0) -> dict:
    reply = json.loads(json.dumps(GPU_RNN["reply"]))
    for observation in reply["observations"]:
        if observation["name"].startswith("grad(") and observation["name"].endswith("[1]"):
            observation["value"] = (np.asarray(observation["value"]) * scale_step_one).tolist()
    return reply


def test_cudnns_approximate_tanh_is_not_a_finding_on_a_gpu_and_a_one_percent_error_still_is() -> None:
    """rnn_hidden_detach as an H200 computed it (cuDNN's tanh is off by up to 1.1e-5, its gradients here by
    up to 9e-5): right on the GPU, where the spread counts that kernel (TorchAdapter.kernel_precision);
    the same values would be wrong from a CPU, and a gradient 1% off is wrong on the GPU too."""
    case = load_case(next(ROOT.glob(f"cases/*/{GPU_RNN['case']}.yaml")))
    engine = Engine(timeout=120)
    try:
        on_gpu = engine._judge(case, _gpu_reply(), "torch", "gpu")
        as_if_cpu = engine._judge(case, _gpu_reply(), "torch", "cpu")
        one_percent = engine._judge(case, _gpu_reply(1.01), "torch", "gpu")
    finally:
        engine.close()
    assert on_gpu[0] == "silent-correct", on_gpu[1].get("max_error")
    assert on_gpu[1]["approximate_kernels"] == {"rnn_tanh": 1.1e-5}
    assert as_if_cpu[0] == "silent-wrong" and "approximate_kernels" not in as_if_cpu[1]
    assert one_percent[0] == "silent-wrong"
    assert {o["name"] for o in one_percent[1]["observations"] if o.get("ok") is False} >= {"grad(rnn.weight_ih)[1]"}
