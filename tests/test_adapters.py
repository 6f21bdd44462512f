"""Adapters on the real frameworks: every op translates and runs; reproducers run standalone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.case.load import load_case, load_cases
from conformance.engine import Engine
from conformance.ops import OPS

from .committed import committed_results
from .conftest import ROOT, SEED, framework_params

ALL_OPS = """
    id: every_op
    title: every op of the vocabulary once, in a program no framework should reject
    steps:
      - {op: tensor, out: x, value: [[0.5, -1.0], [1.5, 2.0]], requires_grad: true}
      - {op: tensor, out: w, value: [[0.2], [0.3]]}
      - {op: tensor, out: one, value: 1.0}
      - {op: array, out: arr, value: [1.0, 2.0], dtype: float32}
      - {op: from_numpy, args: [arr], out: t1}
      - {op: to_tensor, args: [arr], out: t2}
      - {op: numpy, args: [t2], out: back}
      - {op: as_tensor, args: [arr], out: t4}
      - {op: from_dlpack, args: [arr], out: t5}
      - {op: construct_tensor, args: [arr], out: t6}
      - {op: array_from_dlpack, args: [t2], out: back2}
      - {op: full, shape: [2, 3], value: 0.25, out: filled}
      - {op: mul, args: [x, 1.0], out: m0}
      - {op: float, args: [m0], out: m_float}
      - {op: astype, args: [m_float], dtype: float32, out: m_cast}
      - {op: cpu, args: [m_cast], out: m_cpu}
      - {op: to, args: [m_cpu], dtype: float32, out: m}
      - {op: to, args: [x], device: true, copy: true, out: x_copy}
      - {op: sin, args: [m], out: s1}
      - {op: cos, args: [m], out: c1}
      - {op: exp, args: [m], out: e1}
      - {op: tanh, args: [m], out: t3}
      - {op: sigmoid, args: [m], out: g1}
      - {op: logit, args: [g1], out: lg1}
      - {op: relu, args: [m], out: r1}
      - {op: abs, args: [m], out: b1}
      - {op: add, args: [s1, c1], out: a1}
      - {op: sub, args: [a1, e1], out: a2}
      - {op: div, args: [a2, 2.0], out: a3}
      - {op: pow, args: [t3, 2], out: a4}
      - {op: floordiv, args: [a4, 2.0], out: q1}
      - {op: mod, args: [a4, 2.0], out: q2}
      - {op: hardswish, args: [m], out: h1}
      - {op: matmul, args: [a4, w], out: a5}
      - {op: clone, args: [g1], out: k0}
      - {op: detach, args: [k0], out: k}
      - {op: sin_, args: [k]}
      - {op: cos_, args: [k]}
      - {op: exp_, args: [k]}
      - {op: tanh_, args: [k]}
      - {op: sigmoid_, args: [k]}
      - {op: relu_, args: [k]}
      - {op: abs_, args: [k]}
      - {op: add_, args: [k, one]}
      - {op: sub_, args: [k, one]}
      - {op: mul_, args: [k, one]}
      - {op: div_, args: [k, one]}
      - {op: iadd, args: [k, one]}
      - {op: isub, args: [k, one]}
      - {op: imul, args: [k, one]}
      - {op: idiv, args: [k, one]}
      - {op: imul, args: [k, one], attribute: data}
      - {op: getitem, args: [k], index: "0", out: row}
      - {op: transpose, args: [x], dims: [0, 1], out: xt}
      - {observe: value, of: xt}
      - {op: unbind, args: [x], dim: 1, out: [col0, col1]}
      - {op: split, args: [x], sections: [1, 1], dim: 0, out: [top, bottom]}
      - {op: expand, args: [top], shape: [3, 2], out: wide}
      - {op: reshape, args: [x], shape: [4], out: flat}
      - {op: view, args: [x], shape: [4, 1], out: tall}
      - {observe: value, of: col1}
      - {observe: value, of: wide}
      - {observe: value, of: tall}
      - {op: tensor, out: z, value: [0.0, 0.0]}
      - {op: setitem, args: [z, 2.0], index: ":"}
      - {observe: value, of: row}
      - {op: tensor, out: acc, value: [0.0, 0.0]}
      - {op: add_out, args: [z, z], into: acc}
      - {op: tensor, out: m2, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: transpose_, args: [m2], dims: [0, 1]}
      - {op: tensor, out: r3, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: resize_, args: [r3], shape: [3]}
      - {op: tensor, out: c3, value: [0.0, 0.0, 0.0]}
      - {op: copy_, args: [c3, r3]}
      - {op: tensor, out: s3, value: [9.0]}
      - {op: set_, args: [s3, c3]}
      - {observe: value, of: m2}
      - {observe: value, of: s3}
      - {op: tensor, out: lay, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}
      - {op: getitem, args: [lay], index: "0:1", out: lay_top}
      - {op: t_, args: [lay]}
      - {op: squeeze_, args: [lay_top], dim: 0}
      - {op: unsqueeze_, args: [lay_top], dim: 1}
      - {observe: value, of: lay}
      - {observe: value, of: lay_top}
      - {observe: is_contiguous, of: lay}
      - {op: contiguous, args: [lay], out: lay_c}
      - {op: getitem, args: [lay_c], index: "[0, 2]", out: gathered}
      - {op: setitem, args: [lay_c, 0.0], index: "[1], 0"}
      - {op: index_copy_, args: [lay_c, gathered], rows: [2, 0]}
      - {op: masked_fill_, args: [lay_c], mask: [[1, 0], [0, 0], [0, 1]], value: -1.0}
      - {op: clip, args: [lay_c], min: -0.5, max: 4.5, out: clipped}
      - {op: clip_, args: [lay_c], min: 0.0, max: 5.0}
      - {observe: value, of: lay_c}
      - {observe: value, of: clipped}
      - {op: tensor, out: dd, value: [1.0, 2.0]}
      - {op: tensor, out: src_d, value: [3.0, 4.0, 5.0]}
      - {op: set_data, args: [dd, src_d]}
      - {op: detach_, args: [dd]}
      - {observe: value, of: dd}
      - {op: data, args: [x], out: xd}
      - {op: tensor, out: fresh, value: [1.0, 2.0]}
      - {op: requires_grad_, args: [fresh]}
      - {op: linear, out: fc, weight: [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], bias: [0.0, 0.1, 0.2]}
      - {op: call, args: [fc, k], out: lin}
      - {op: activation, kind: tanh, out: act}
      - {op: call, args: [act, lin], out: acted}
      - {op: rnn, out: cell, weight_ih: [[0.5]], weight_hh: [[-0.3]], bias_ih: [0.1], bias_hh: [0.2]}
      - {op: tensor, out: seq, value: [[[1.0]], [[2.0]]]}
      - {op: tensor, out: h0, value: [[[0.0]]]}
      - {op: call, args: [cell, seq, h0], out: [rout, hn]}
      - {op: tensor, out: target, value: [[[1.0]], [[1.0]]]}
      - {op: mse_loss, args: [rout, target], out: rl}
      - {op: sgd, args: [fc, cell], lr: 0.1, out: opt}
      - {op: sgd, args: [fresh], lr: 0.1, out: opt_fresh}
      - {op: zero_grad, args: [opt]}
      - {op: sum, args: [acted], out: l1}
      - {op: mean, args: [a5], out: l2}
      - {op: add, args: [l1, l2], out: l3}
      - {op: add, args: [l3, rl], out: l4}
      - {op: pow, args: [fresh, 2], out: f2}
      - {op: sum, args: [f2], out: l5}
      - {op: add, args: [l4, l5], out: loss}
      - {op: backward, args: [loss], retain_graph: true}
      - {observe: grad, of: x}
      - {observe: grad, of: fresh}
      - {observe: grad, of: fc.weight}
      - {observe: grad, of: cell.weight_hh}
      - {op: step, args: [opt]}
      - {op: grad, args: [fresh], out: fresh_grad}
      - {observe: value, of: fresh_grad}
      - {op: zero_grad, args: [opt_fresh], set_to: zero}
      - {op: parameter, args: [fc], name: bias, out: fc_bias}
      - {observe: value, of: fc_bias}
      - op: no_grad
        steps:
          - {op: mul, args: [x, 2.0], out: nog}
      - op: repeat
        times: 2
        var: i
        steps:
          - {op: getitem, args: [seq], index: i, out: item}
          - {observe: value, of: item}
      - op: measure_allocated
        name: alloc
        steps:
          - {op: assign, args: [x], out: x_again}
      - {observe: value, of: back}
      - {observe: value, of: back2}
      - {observe: value, of: filled}
      - {observe: value, of: x_copy}
      - {observe: same_object, of: [m, m0]}
      - {observe: shares_memory, of: [t4, t5]}
      - {observe: value, of: t6}
      - {observe: value, of: acc}
      - {observe: value, of: fc.weight}
      - {observe: requires_grad, of: nog}
      - {observe: is_leaf, of: fresh}
      - {observe: version, of: k}
      - {observe: address, of: x, name: x_at}
      - {observe: same_storage, of: x_again, since: x_at}
      - {observe: shares_memory, of: [x, xd]}
      - {observe: shares_memory, of: [t1, arr]}
      - {op: tensor, out: pos, value: [0.5, 0.25], requires_grad: true}
      - {op: asin, args: [pos], out: u1}
      - {op: sinh, args: [u1], out: u2}
      - {op: log, args: [pos], out: u3}
      - {op: log2, args: [pos], out: u4}
      - {op: log10, args: [pos], out: u5}
      - {op: log1p, args: [pos], out: u6}
      - {op: sqrt, args: [pos], out: u7}
      - {op: rsqrt, args: [pos], out: u8}
      - {op: neg, args: [pos], out: u9}
      - {op: floor, args: [pos], out: u10}
      - {op: ceil, args: [pos], out: u11}
      - {op: round, args: [pos], out: u12}
      - {op: elu, args: [u9], out: u13}
      - {op: celu, args: [u9], out: u14}
      - {op: hardtanh, args: [u9], out: u15}
      - {op: leaky_relu, args: [u9], out: u16}
      - {op: selu, args: [u9], out: u18}
      - {op: softmax, args: [pos], dim: 0, out: u17}
      - {op: eq, args: [pos, 0.5], out: m1}
      - {op: lt, args: [pos, 0.5], out: m2}
      - {op: clone, args: [pos], out: c}
      - {op: sinh_, args: [c]}
      - {op: log2_, args: [c]}
      - {op: log10_, args: [c]}
      - {op: log1p_, args: [c]}
      - {op: rsqrt_, args: [c]}
      - {op: reciprocal_, args: [c]}
      - {op: floor_, args: [c]}
      - {op: ceil_, args: [c]}
      - {op: hardtanh_, args: [c]}
      - {op: celu_, args: [c]}
      - {op: selu_, args: [c]}
      - {op: tensor, out: sq, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: tril_, args: [sq]}
      - {observe: value, of: c}
      - {observe: value, of: sq}
"""


#: Ops that some framework lacks, so a program using them is unsupported there: each has a
#: dedicated test below instead of a place in ALL_OPS.
OPS_WITH_OWN_TEST: set[str] = {
    "set_value",  # Paddle's Tensor.set_value; torch.Tensor has no such method
    "assign_to", "reshape_", "flatten_", "scale_",  # paddle's; torch has none of them
    "as_strided_", "resize_as_",  # torch's; paddle.Tensor has neither
}


def test_the_every_op_case_uses_every_op(write_case) -> None:
    """ALL_OPS holds every op of the first two rounds of the vocabulary and those of the third that no case
    uses; every other op since is used by a case of its family in cases/, which runs on every committed
    column (tests/test_committed_results.py: no cell an error)."""
    case = load_case(write_case(ALL_OPS))
    catalogue, _ = load_cases([ROOT / "cases"])
    in_catalogue = {step.op for c in catalogue for step in c.walk()}
    assert ({step.op for step in case.walk()} - {"observe"}) | OPS_WITH_OWN_TEST | in_catalogue >= set(OPS), \
        sorted(set(OPS) - in_catalogue - OPS_WITH_OWN_TEST)


@pytest.fixture(scope="module")
def engine():
    engine = Engine(timeout=120)
    yield engine
    engine.pool.close()


@pytest.mark.parametrize("framework", framework_params())
def test_every_op_translates_and_runs(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(ALL_OPS)), framework, "cpu")
    details = record["details"]
    # A framework may lack an API (unsupported, found by inspection), but nothing in this
    # program is a hazard: anything else than a faithful memory outcome is a harness fault.
    assert record["outcome"] in ("aliases", "copies", "unsupported"), details
    if record["outcome"] == "unsupported":
        assert record["framework"] in details["reason"]
    else:
        names = {o["name"] for o in details["observations"]}
        assert {"grad(x)", "grad(fc.weight)", "value(item)[1]", "alloc", "version(k)"} <= names


@pytest.mark.parametrize("framework", framework_params())
def test_every_seed_case_gets_a_faithful_outcome(engine, framework: str) -> None:
    cases, errors = load_cases([SEED])
    assert not errors and len(cases) >= 12
    for case in cases:
        record = engine.run_cell(case, framework, "cpu")
        assert record["outcome"] not in ("error", "crash", "timeout"), (case.id, record["details"])


@pytest.mark.parametrize("framework", framework_params())
def test_gpu_cells_run_or_are_skipped_with_a_reason(engine, framework: str) -> None:
    record = engine.run_cell(load_case(SEED / "clone_grad_flow.yaml"), framework, "gpu")
    if record["outcome"] == "skipped":
        assert record["details"]["reason"]
    else:
        assert record["outcome"] not in ("error", "crash", "timeout"), record["details"]


@pytest.mark.parametrize("framework", framework_params())
def test_the_reproducer_runs_standalone_and_prints_the_observations(framework: str) -> None:
    source = subprocess.run([sys.executable, "-m", "conformance.cli", "show", "clone_grad_flow",
                             "--framework", framework], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout
    assert "import" in source and "_step(" not in source
    run = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    after_z = run.stdout.split("a_grad_after_z", 1)[1]
    assert "7." in after_z  # 2*a + 3 through the clone, as the seed article prints
    assert run.stdout.split("clone_grad", 1)[1].split()[0] == "None"


def test_torch_facts_the_seed_articles_report(engine) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    leaf = engine.run_cell(load_case(SEED / "leaf_sin_inplace.yaml"), "torch", "cpu")
    assert leaf["outcome"] == "raises"
    assert leaf["details"]["exception"]["type"] == "RuntimeError"
    assert leaf["details"]["exception"]["op"] == "sin_"
    assert "leaf Variable" in leaf["details"]["exception"]["message"]
    assert engine.run_cell(load_case(SEED / "from_numpy_aliasing.yaml"), "torch", "cpu")["outcome"] == "aliases"
    relu = engine.run_cell(load_case(SEED / "relu_inplace_saved_input.yaml"), "torch", "cpu")
    assert relu["details"]["exception"]["phase"] == "backward"


def test_an_exception_inside_a_loop_names_the_iteration(engine) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    record = engine.run_cell(load_case(SEED / "rnn_hidden_reuse.yaml"), "torch", "cpu")
    exc = record["details"]["exception"]
    # Step 2 (0-based) is the first whose backward needs a parameter value the optimizer has
    # since overwritten (W_hh as step 1 used it); the reference shows paddle's first wrong
    # gradients at the same step.
    assert (record["outcome"], exc["op"], exc["iteration"]) == ("raises", "backward", [2])


# -- NumPy interop and conversions (ops/conversions.py) ------------------------------------

CONVERSION_SPELLINGS = """
    id: conversion_spellings
    title: conversions to what a tensor already is, each spelled as its framework's users write it
    steps:
      - {op: tensor, out: x, value: [1.0, 2.0]}
      - {op: to, args: [x], dtype: float32, dtype_string: true, out: a}
      - {op: to, args: [x], dtype: float32, out: b}
      - {op: astype, args: [x], dtype: float32, out: c}
      - {observe: value, of: c}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_conversions_are_spelled_as_each_framework_writes_them(engine, write_case, framework: str) -> None:
    case = load_case(write_case(CONVERSION_SPELLINGS))
    reply = engine.pool.get(framework).request({"cmd": "render", "device": "cpu", **case.to_message()},
                                               timeout=120)
    source = reply["source"]
    assert "a = x.to('float32')" in source  # the string form paddle's documentation shows
    assert f"b = x.to({framework}.float32)" in source
    # the framework's cast method, found by inspection: astype where the tensor has one, else type
    assert ("c = x.type(torch.float32)" if framework == "torch" else "c = x.astype('float32')") in source


@pytest.mark.parametrize("framework", framework_params())
def test_zero_copy_constructor_aliases_or_is_unsupported_by_inspection(engine, framework: str) -> None:
    case = load_case(ROOT / "cases" / "interop" / "tensor_zero_copy_constructor.yaml")
    record = engine.run_cell(case, framework, "cpu")
    details = record["details"]
    if record["outcome"] == "unsupported":  # found by calling the Tensor class with zero_copy=True
        assert "zero_copy" in details["reason"] and record["framework"] in details["reason"]
    else:
        assert record["outcome"] == "aliases", details


SET_VALUE = """
    id: set_value_untracked
    title: t.set_value(array) overwrites the values, recording no history
    steps:
      - {op: tensor, out: x, value: [0.5, -1.0, 1.5], requires_grad: true}
      - {op: exp, args: [x], out: y}
      - {op: sum, args: [y], out: loss}
      - {op: array, out: fresh, value: [1.0, 2.0, 3.0], dtype: float32}
      - {op: set_value, args: [y, fresh]}
      - {observe: value, of: y}
      - {op: tensor, out: t, value: [0.0, 0.0, 0.0]}
      - {op: set_value, args: [t, y]}
      - {observe: value, of: t}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_set_value_writes_values_or_is_unsupported_by_inspection(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(SET_VALUE)), framework, "cpu")
    details = record["details"]
    if record["outcome"] == "unsupported":
        assert "set_value" in details["reason"] and record["framework"] in details["reason"]
    else:
        assert record["outcome"] == "silent-correct", details


#: One small program per op that only some frameworks have: (op, the program's steps, the method or
#: function whose absence makes it unsupported); where the framework has it, the program is silent-correct.
ONE_FRAMEWORK_OPS = {
    "assign_to": ("""
      - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
      - {op: exp, args: [x], out: e}
      - {op: tensor, out: out, value: [0.0, 0.0]}
      - {op: assign_to, args: [e, out]}
      - {op: sum, args: [out], out: loss}
      - {op: backward, args: [loss]}
      - {observe: value, of: out}
      - {observe: grad, of: x}""", "assign"),
    "reshape_": ("""
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: reshape_, args: [x], shape: [4]}
      - {observe: value, of: x}""", "reshape_"),
    "flatten_": ("""
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: flatten_, args: [x]}
      - {observe: value, of: x}""", "flatten_"),
    "scale_": ("""
      - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
      - {op: mul, args: [x, 1.0], out: y}
      - {op: scale_, args: [y], scale: 3.0, bias: 0.5}
      - {op: sum, args: [y], out: loss}
      - {op: backward, args: [loss]}
      - {observe: value, of: y}
      - {observe: grad, of: x}""", "scale_"),
    "as_strided_": ("""
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: as_strided_, args: [x], size: [2], stride: [3], storage_offset: 0}
      - {observe: value, of: x}""", "as_strided_"),
    "resize_as_": ("""
      - {op: tensor, out: x, value: [[1.0, 2.0], [3.0, 4.0]]}
      - {op: tensor, out: like, value: [0.0, 0.0, 0.0]}
      - {op: resize_as_, args: [x, like]}
      - {observe: value, of: x}""", "resize_as_"),
}


@pytest.mark.parametrize("op", sorted(ONE_FRAMEWORK_OPS))
@pytest.mark.parametrize("framework", framework_params())
def test_an_op_some_framework_lacks_runs_or_is_unsupported_by_inspection(engine, write_case, framework: str,
                                                                         op: str) -> None:
    steps, api = ONE_FRAMEWORK_OPS[op]
    case = load_case(write_case(f"id: only_{op.strip('_')}\ntitle: {op}\nsteps:{steps}\n"))
    record = engine.run_cell(case, framework, "cpu")
    details = record["details"]
    if record["outcome"] == "unsupported":
        assert api in details["reason"] and record["framework"] in details["reason"], details
    else:
        assert record["outcome"] == "silent-correct", details


# -- optimizers and gradients held in names (ops/modules.py) --------------------------------

ZERO_GRAD_SETTINGS = """
    id: zero_grad_settings
    title: the clearing call's settings mean the same on every framework that has them
    steps:
      - {op: tensor, out: w, value: [1.0, -2.0], requires_grad: true}
      - {op: sgd, args: [w], lr: 0.1, out: opt}
      - {op: mul, args: [w, w], out: sq}
      - {op: sum, args: [sq], out: l1}
      - {op: backward, args: [l1]}
      - {op: zero_grad, args: [opt], set_to: zero}
      - {observe: grad, of: w, name: zeroed}
      - {op: mul, args: [w, 3.0], out: tw}
      - {op: sum, args: [tw], out: l2}
      - {op: backward, args: [l2]}
      - {op: grad, args: [w], out: g}
      - {observe: value, of: g}
      - {op: zero_grad, args: [opt], set_to: none}
      - {observe: grad, of: w, name: released}
"""


@pytest.mark.parametrize("framework", framework_params())
def test_zero_grad_settings_zero_or_release_on_every_framework(engine, write_case, framework: str) -> None:
    record = engine.run_cell(load_case(write_case(ZERO_GRAD_SETTINGS)), framework, "cpu")
    details = record["details"]
    if record["outcome"] == "unsupported":  # an older release without the parameter
        assert record["framework"] in details["reason"] and "has no parameter" in details["reason"]
        return
    assert record["outcome"] == "silent-correct", details
    values = {o["name"]: o["value"] for o in details["observations"]}
    assert values["zeroed"] == [0.0, 0.0] and values["value(g)"] == [3.0, 3.0] and values["released"] is None


def _without_framework(cls, dotted: str, method: str):
    """An adapter whose namespace holds a stand-in framework in which the class *dotted* has *method*
    without parameters (as a release that lacks the setting would), made without importing it."""
    from types import SimpleNamespace

    root, *path = dotted.split(".")
    obj: object = type(path[-1], (), {method: lambda self: None})
    for name in reversed(path):
        obj = SimpleNamespace(**{name: obj})
    adapter = cls.__new__(cls)
    adapter.fw = SimpleNamespace(__version__="0.0")
    adapter.namespace = {root: obj}
    return adapter


@pytest.mark.parametrize("adapter_name, dotted, method", [
    ("torch", "torch.optim.Optimizer", "zero_grad"),
    ("paddle", "paddle.optimizer.Optimizer", "clear_grad"),
])
def test_a_zero_grad_setting_is_unsupported_where_the_clearing_call_lacks_it(adapter_name, dotted, method) -> None:
    from conformance.adapter import Unsupported, load_adapter

    adapter = _without_framework(load_adapter(adapter_name), dotted, method)
    assert adapter.zero_grad("opt") == f"opt.{method}()"  # the default call needs no parameter
    with pytest.raises(Unsupported, match=f"{dotted}.{method}\\(\\) has no parameter"):
        adapter.zero_grad("opt", "zero")


@pytest.mark.parametrize("framework", framework_params())
def test_an_api_that_moved_between_releases_is_found_under_any_of_its_names(framework: str) -> None:
    """paddle 2.6 has from_dlpack only as paddle.utils.dlpack.from_dlpack; an adapter looks at every name a
    release may have it under before it calls the step unsupported, and names them all when none exists."""
    import warnings

    from conformance.adapter import Unsupported, adapter_classes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the framework's import warnings are not this test's
        adapter = adapter_classes()[framework]()
    exec("\n".join(adapter.prelude("cpu")), adapter.namespace)
    root = adapter.root
    assert adapter.resolve_first(f"{root}.no_such_api", f"{root}.utils.dlpack.from_dlpack") == \
        f"{root}.utils.dlpack.from_dlpack"
    with pytest.raises(Unsupported, match=f"none of {root}.no_such_api, {root}.nor_this"):
        adapter.resolve_first(f"{root}.no_such_api", f"{root}.nor_this")


def test_committed_results_find_paddle_from_dlpack_in_every_release() -> None:
    """The committed paddle columns (2.6.2 included) ran the from_dlpack case: none calls it unsupported."""
    from conformance.records.results import iter_records

    paddle_columns = [path for path in committed_results() if path.name.startswith("paddle-") and path.name.endswith("-cpu.jsonl")]
    assert any("2.6.2" in path.name for path in paddle_columns)
    cells = [r for r in iter_records(paddle_columns) if r.case == "from_dlpack_shares_array"]
    assert cells and all(r.outcome != "unsupported" for r in cells), [(r.framework_version, r.outcome) for r in cells]


@pytest.mark.parametrize("framework", framework_params())
def test_a_bfloat16_result_is_read_as_its_values_and_judged_as_bfloat16(engine, write_case, framework: str) -> None:
    """NumPy has no bfloat16: torch's numpy() refuses one and paddle's gives its bits as uint16.  Users widen
    it to float32 to read it; so does the harness, and the record keeps the tensor's dtype."""
    case = load_case(write_case("""
        id: bf16_read
        title: t
        steps:
          - {op: tensor, out: x, value: [[1.0, 2.0]]}
          - op: linear
            out: fc
            weight: [[1.0, 1.0], [2.0, -1.0]]
            bias: [0.5, 0.0]
          - op: autocast
            dtype: bfloat16
            steps:
              - {op: call, args: [fc, x], out: y}
          - {observe: value, of: y}
    """))
    record = engine.run_cell(case, framework, "cpu")
    assert record["outcome"] in ("silent-correct", "warns"), record["details"]  # paddle: no autocast on a CPU
    observed = record["details"]["observations"][0]
    assert observed["value"] == [[3.5, 0.0]] and observed["ok"] is True
    assert observed["dtype"] == ("bfloat16" if framework == "torch" else "float32"), observed


#: A GPU worker's reply for found_leaf_from_numpy_copy_df21af (torch 2.11.0+cu130 on an H200): the array
#: a = [1.0] becomes t = torch.from_numpy(a).to('cuda'); t.copy_(0.0) leaves a as it was.
GPU_FROM_NUMPY_REPLY = {"status": "completed", "observations": [
    {"kind": "value", "name": "value(t4)", "step": 5, "dtype": "float32", "shape": [], "value": 1.0},
    {"kind": "value", "name": "value(t5)", "step": 6, "dtype": "float32", "shape": [], "value": 0.0}]}


def test_a_move_to_a_gpu_is_a_copy_torch_documents_and_the_same_values_on_a_cpu_are_wrong() -> None:
    """NumPy's memory cannot be shared with a GPU: judged on the GPU, the array that kept its value after a
    write through torch.from_numpy(a).to('cuda') is the documented copy (``copies``); the same values from
    a CPU, where torch documents sharing, are silent-wrong."""
    case = load_case(ROOT / Path("cases/found/found_leaf_from_numpy_copy_df21af.yaml"))
    engine = Engine(timeout=60)
    try:
        on_gpu = engine._judge(case, json.loads(json.dumps(GPU_FROM_NUMPY_REPLY)), "torch", "gpu")
        on_cpu = engine._judge(case, json.loads(json.dumps(GPU_FROM_NUMPY_REPLY)), "torch", "cpu")
    finally:
        engine.close()
    assert on_gpu[0] == "copies", on_gpu
    assert "pytorch.org" in on_gpu[1]["documented_copies"]["from_numpy"]
    assert all(o["ok"] for o in on_gpu[1]["observations"])
    assert on_cpu[0] == "silent-wrong", on_cpu
