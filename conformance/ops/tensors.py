"""Making tensors and arrays, and the handles that share or copy their storage.

``from_numpy``, ``numpy``, ``detach`` and ``data`` alias their input (the
frameworks document them as sharing memory); ``to_tensor`` and ``clone`` copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register

DTYPES = ("float32", "float64", "int64")
#: Every dtype a tensor literal may have: DTYPES, which the fuzzer's programs use, and the rest of what the
#: frameworks' own tests cover (half and bfloat16 floats, narrower integers, booleans).
TENSOR_DTYPES = DTYPES + ("float16", "bfloat16", "int32", "uint8", "bool")
#: The dtypes of a NumPy array literal (NumPy has no bfloat16).
ARRAY_DTYPES = tuple(d for d in TENSOR_DTYPES if d != "bfloat16")
_VALUE = Field("numbers", required=True, doc="a number or a rectangular nested list of numbers")


def literal(value: Any, dtype: str) -> np.ndarray:
    """A literal as the framework holds it (rounded to its dtype), computed on in float64."""
    if dtype == "int64":
        return np.array(value, dtype=np.int64)
    if dtype == "bfloat16":
        return bfloat16(value)
    return np.array(value, dtype=dtype).astype(np.float64)


def bfloat16(value: Any) -> np.ndarray:
    """*value* rounded to bfloat16 (float32's upper 16 bits, rounded to nearest, ties to even), as float64."""
    bits = np.array(value, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def _tensor_reference(m, step) -> None:
    from conformance.judge.model import Node, Tensor

    f = step.fields
    tensor = Tensor.fresh(literal(f["value"], f["dtype"]), dtype=f["dtype"])
    if f["requires_grad"]:
        tensor._node = Node(tensor.shape, leaf=tensor, requires_grad=True)
    m.bind(step, tensor)


def _array_reference(m, step) -> None:
    from conformance.judge.model import Tensor

    dtype = step.fields["dtype"]
    m.bind(step, Tensor.fresh(literal(step.fields["value"], dtype), kind="array", dtype=dtype))


register(Op(
    "tensor", "A tensor from a literal (torch.tensor, paddle.to_tensor).", stage="setup",
    fields={"value": _VALUE, "dtype": Field("dtype", default="float32", choices=TENSOR_DTYPES),
            "requires_grad": Field("bool", default=False)},
    run_reference=_tensor_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.a.tensor(
        w.literal(s.fields["value"]), s.fields["dtype"], s.fields["requires_grad"])),
))
register(Op(
    "array", "A NumPy array from a literal.", binds="array", stage="setup",
    fields={"value": _VALUE, "dtype": Field("dtype", default="float64", choices=ARRAY_DTYPES)},
    run_reference=_array_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = np.array({w.literal(s.fields['value'])}, "
                                  f"dtype=np.{s.fields['dtype']})"),
))


def _check_counter(data, scope, fail) -> None:
    name = (data.get("args") or [None])[0]
    if not isinstance(name, str) or scope.get(name) != "counter":
        raise fail(f"counter_tensor takes a loop counter (the var of an enclosing repeat), not {name!r}")


def _counter_tensor_reference(m, step) -> None:
    from conformance.judge.model import Tensor

    dtype = step.fields["dtype"]
    m.bind(step, Tensor.fresh(literal([float(m.counters[step.args[0]])], dtype), dtype=dtype))


register(Op(
    "counter_tensor", "torch.tensor([float(i)]) (paddle.to_tensor): a one-element tensor of the loop counter i "
    "this iteration, made fresh each time (a factor outside the graph).", args=("operand",), stage="setup",
    fields={"dtype": Field("dtype", default="float32", choices=DTYPES[:2])}, check=_check_counter,
    run_reference=_counter_tensor_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.a.tensor(f"[float({s.args[0]})]", s.fields["dtype"], False)),
    fuzz="a literal of the counter's value: the fuzzer's literals and its counters as operands say as much",
))


#: The most elements a ``full`` tensor may have: the reference holds it in float64 with its positions.
MAX_FULL_ELEMENTS = 1 << 24


def _full_check(data, scope, fail) -> None:
    shape = data["shape"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                              for n in shape):
        raise fail(f"shape must be a list of positive integers, not {shape!r}")
    if int(np.prod(shape, dtype=np.int64)) > MAX_FULL_ELEMENTS:
        raise fail(f"shape {shape} has more than {MAX_FULL_ELEMENTS} elements")


def _full_reference(m, step) -> None:
    from conformance.judge.model import Tensor

    f = step.fields
    m.bind(step, Tensor.fresh(np.full(tuple(f["shape"]), literal(f["value"], f["dtype"])), dtype=f["dtype"]))


def _full_spell(w, step) -> None:
    from conformance.unsupported import Unsupported

    f, call = step.fields, f"{w.a.root}.full"
    device = ""
    if w.device != "cpu":
        try:
            w.a.require_parameter(call, "device")
            device = ", device=DEVICE"
        except Unsupported:  # placed on the framework's default device (paddle.set_device)
            pass
    w.emit(f"{w.out(step)} = {call}({list(f['shape'])}, {w.literal(f['value'])}, "
           f"dtype={w.a.root}.{f['dtype']}{device})")


register(Op(
    "full", "A tensor of a shape filled with one value (torch.full, paddle.full): large tensors for memory "
    "measurements.", stage="setup", check=_full_check,
    fields={"shape": Field("numbers", required=True, doc="a list of positive integers"),
            "value": Field("number", required=True), "dtype": Field("dtype", default="float32", choices=DTYPES)},
    run_reference=_full_reference, run_spell=_full_spell,
    fuzz=lambda d: {"shape": list(d.new_shape(max_ndim=2)) or [1], "value": d.number(), "dtype": d.dtype},
))
register(Op(
    "from_numpy", "A tensor from a NumPy array by the framework's zero-copy constructor.", args=("array",),
    stage="setup",
    run_reference=lambda m, s: m.bind(s, m.get(s.args[0]).alias()),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.from_numpy(s.args[0], w.device)}"),
))
register(Op(
    "to_tensor", "A tensor from a NumPy array by the framework's copying constructor.", args=("array",),
    stage="setup",
    run_reference=lambda m, s: m.bind(s, _fresh_copy(m.get(s.args[0]))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.to_tensor(s.args[0], w.device)}"),
))
register(Op(
    "numpy", "tensor.numpy(): a NumPy array on the tensor's memory (on a CPU).", args=("tensor",), stage="outside",
    binds="array",
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).alias(kind="array")),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.numpy(s.args[0], w.device)}"),
))
register(Op(
    "assign", "out = t: Python name binding, no copy.", args=("any",), binds="same",
    run_reference=lambda m, s: m.bind(s, m.get(s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {s.args[0]}"),
))
register(Op(
    "clone", "out = t.clone(): a copy the graph tracks.", args=("tensor",),
    run_reference=lambda m, s: m.bind(s, tracked_copy(m, s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.method(s.args[0], 'clone')}"),
))
register(Op(
    "detach", "out = t.detach(): shares t's storage, outside the graph.", args=("tensor",),
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).alias()),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.method(s.args[0], 'detach')}"),
))
register(Op(
    "data", "out = t.data: untracked access to t's storage, where the framework has it.", args=("tensor",),
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).alias()),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'data')}"),
))


def _deepcopy_reference(m, s) -> None:
    """copy.deepcopy of a leaf: a new leaf on memory of its own, with the source's values and requires_grad
    (torch: "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol";
    what a copy of a non-leaf would be, with or without history, no framework documents)."""
    from conformance.judge.model import Node, Tensor

    source = m.tensor(s.args[0])
    if not source.is_leaf:
        raise ValueError("deepcopy of a tensor with history is not modelled (torch refuses it)")
    copy = Tensor.fresh(source.value, dtype=source.dtype)
    if source.requires_grad:
        copy._node = Node(copy.shape, leaf=copy, requires_grad=True)
    m.bind(s, copy)


register(Op(
    "deepcopy", "out = copy.deepcopy(t) of a leaf: a new leaf with t's values and requires_grad, on memory "
    "of its own.", args=("tensor",), stage="setup", run_reference=_deepcopy_reference,
    run_spell=lambda w, s: w.emit("import copy", f"{w.out(s)} = copy.deepcopy({s.args[0]})"),
    fuzz="a copy of a leaf, as clone is, which the fuzzer draws",
))


def tracked_copy(m, name: str):
    """A copy the graph tracks, of the source's dtype (which a dtype view of it needs)."""
    copy = m.new(lambda x: (x.copy(), [lambda g: g]), name)
    copy.dtype = m.tensor(name).dtype
    return copy


def _requires_grad_reference(m, step) -> None:
    """A tensor with a history (not a leaf) requires grad already: True leaves it as it is.  False on it
    takes it out of the graph on the same storage, as paddle's ``stop_gradient = True`` does (torch refuses
    it: "you can only change requires_grad flags of leaf variables", a ``raises``).  A leaf, a view of a
    tensor that requires no grad included (torch makes the view itself a leaf), takes the flag."""
    from conformance.judge.model import Node

    tensor = m.tensor(step.args[0])
    wanted = step.fields.get("requires_grad", True)
    if tensor.requires_grad == wanted:  # a leaf that requires grad, or a tensor with a history: True changes nothing
        return
    tensor.base = None  # a view: a tensor of its own on the same storage from now on (its own history)
    tensor._node = Node(tensor.shape, leaf=tensor, requires_grad=True) if wanted else Node(tensor.shape)


def _requires_grad_spell(w, s) -> None:
    wanted = s.fields.get("requires_grad", True)
    w.emit(w.method(s.args[0], "requires_grad_", *([] if wanted else ["False"])))


register(Op(
    "requires_grad_", "Make t require grad in place (torch requires_grad_(), paddle stop_gradient = False); "
    "with requires_grad: false, stop requiring it (requires_grad_(False), stop_gradient = True).",
    args=("tensor",), out="none", stage="setup",
    fields={"requires_grad": Field("bool", default=True, doc="the flag to set")},
    run_reference=_requires_grad_reference, run_spell=_requires_grad_spell,
    fuzz=lambda d: (lambda t: None if t is None else {"args": [t], "requires_grad": True})(
        d.pick("tensor", where=lambda f: not f.view)),
))


def _fresh_copy(source):
    from conformance.judge.model import Tensor

    return Tensor.fresh(source.value)
