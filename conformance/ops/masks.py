"""Boolean masks: comparisons that make them, indexing with them (``t[a != 0]``, ``t[m] = v``), and ``where``.

A mask index is advanced indexing: reading gives a copy the graph tracks (its gradient summed back where
it read), writing writes the selected elements of the tensor itself (both frameworks document ``t[mask]``
as selecting the elements where the mask is True).
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Op
from conformance.ops._registry import register

#: comparison -> (Python operator, NumPy function)
COMPARISONS = {"eq": ("==", np.equal), "ne": ("!=", np.not_equal), "gt": (">", np.greater), "lt": ("<", np.less),
               "le": ("<=", np.less_equal), "ge": (">=", np.greater_equal)}

_NOT_FUZZED_MASK = ("makes a bool tensor: the fuzzer's draws do not track dtypes, and would use it as a "
                    "float operand (or a float tensor as a mask)")


def _compare_reference(fn):
    def reference(m, s) -> None:
        from conformance.judge.model import Tensor

        left, right = (m.operand_value(a) for a in s.args)
        m.bind(s, Tensor.fresh(fn(left, right)))  # bool, outside the graph (no gradient flows through it)
    return reference


for _name, (_symbol, _fn) in COMPARISONS.items():
    register(Op(
        _name, f"out = a {_symbol} b: a bool tensor (a mask), outside the graph.", args=("tensor", "operand"),
        run_reference=_compare_reference(_fn),
        run_spell=(lambda sym: lambda w, s: w.emit(f"{w.out(s)} = {w.arg(s, 0)} {sym} {w.arg(s, 1)}"))(_symbol),
        fuzz=_NOT_FUZZED_MASK,
    ))


def _mask(m, name: str) -> np.ndarray:
    mask = m.tensor(name)
    if mask.storage.data.dtype != np.bool_:
        raise ValueError(f"{name!r} is not a bool tensor: index with a mask made by a comparison (eq, ne, gt, lt, le, ge)")
    return mask.value


def _mask_getitem_reference(m, s) -> None:
    mask = _mask(m, s.args[1])

    def gather(x):
        def back(g):
            out = np.zeros(x.shape)
            out[mask] = g
            return out
        return x[mask].copy(), [back]
    m.bind(s, m.new(gather, s.args[0]))


def _mask_setitem_reference(m, s) -> None:
    mask = _mask(m, s.args[1])
    target = m.tensor(s.args[0]).view(lambda a: a[mask])
    value, node = m.compute(lambda v: (np.broadcast_to(v, target.shape), [lambda g: g]), s.args[2])
    m.write(target, value, node)


register(Op(
    "mask_getitem", "out = t[mask]: the elements where the bool tensor mask is True, a copy the graph tracks.",
    args=("tensor", "tensor"), run_reference=_mask_getitem_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {s.args[0]}[{s.args[1]}]"),
    fuzz=_NOT_FUZZED_MASK,
))
register(Op(
    "mask_setitem", "t[mask] = value: write the elements where the bool tensor mask is True (tracked).",
    args=("tensor", "tensor", "operand"), out="none", run_reference=_mask_setitem_reference,
    run_spell=lambda w, s: w.emit(f"{s.args[0]}[{s.args[1]}] = {w.arg(s, 2)}"),
    fuzz=_NOT_FUZZED_MASK,
))


def _where_reference(m, s) -> None:
    mask = _mask(m, s.args[0])

    def where(x, y):
        return np.where(mask, x, y), [lambda g: np.where(mask, g, 0.0), lambda g: np.where(mask, 0.0, g)]
    m.bind(s, m.new(where, s.args[1], s.args[2]))


def _where_in_place_reference(m, s) -> None:
    """``paddle.where_(mask, x, y)``: x's elements where mask is False replaced by y's, written into x."""
    mask = _mask(m, s.args[0])

    def where(x, y):
        return np.where(mask, x, y), [lambda g: np.where(mask, g, 0.0), lambda g: np.where(mask, 0.0, g)]
    tensor = m.tensor(s.args[1])
    m.inplace(tensor, where, s.args[2])
    m.bind(s, tensor)


def _where_in_place_spell(w, s) -> None:
    w.emit(w.bind(s) + f"{w.a.function('where_')}({', '.join(s.args)})")  # torch has none: Unsupported


register(Op(
    "where", "out = torch.where(mask, x, y) (paddle.where): x where the bool tensor mask is True, else y, "
    "broadcast together; out of place, each gradient going to the side it came from (the spelling of a masked "
    "write that writes nothing).", args=("tensor", "tensor", "tensor"), run_reference=_where_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.function('where')}({', '.join(s.args)})"),
    fuzz=_NOT_FUZZED_MASK,
))


def _compare_in_place_reference(fn):
    """``t.gt_(other)``: the comparison's 1s and 0s written into t in place, as torch documents in-place ops
    (t keeps its dtype); no gradient flows through a comparison."""
    def compare(x, y):
        return fn(x, y).astype(np.float64), [lambda g: np.zeros_like(g), lambda g: np.zeros_like(g)]

    def reference(m, s) -> None:
        tensor = m.tensor(s.args[0])
        m.inplace(tensor, compare, *s.args[1:])
        m.bind(s, tensor)
    return reference


for _name, (_symbol, _fn) in COMPARISONS.items():
    register(Op(
        _name + "_", f"t.{_name}_(other): 1 where t {_symbol} other, else 0, written into t in place (paddle spells "
        "it with its own name, greater_than_ for gt_, and writes a bool tensor into t).", args=("tensor", "operand"),
        out="optional", run_reference=_compare_in_place_reference(_fn),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], name, w.arg(s, 1))))(_name + "_"),
        fuzz="changes the tensor's dtype in paddle (to bool): the fuzzer's draws do not track dtypes",
    ))


register(Op(
    "where_", "paddle.where_(mask, x, y): where the bool tensor mask is False, x takes y's elements, in place "
    "(tracked: each gradient goes to the side it came from); torch has no where_ (its users write torch.where "
    "out of place).", args=("tensor", "tensor", "tensor"), out="optional",
    run_reference=_where_in_place_reference, run_spell=_where_in_place_spell, fuzz=_NOT_FUZZED_MASK,
))

#: in-place logical ops: name -> the NumPy function
LOGICAL_IN_PLACE = {"logical_and_": np.logical_and, "logical_or_": np.logical_or, "logical_xor_": np.logical_xor}

for _name, _fn in LOGICAL_IN_PLACE.items():
    register(Op(
        _name, f"t.{_name}(other): 1 where t {_name[8:-1]} other (non-zero as true), else 0, written into t in "
        "place, t keeping its dtype as torch documents in-place ops (paddle writes bool into t).",
        args=("tensor", "operand"), out="optional", run_reference=_compare_in_place_reference(_fn),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], name, w.arg(s, 1))))(_name),
        fuzz="changes the tensor's dtype in paddle (to bool): the fuzzer's draws do not track dtypes",
    ))


def _logical_not_reference(m, s) -> None:
    def negate(x):
        return np.logical_not(x).astype(np.float64), [lambda g: np.zeros_like(g)]
    tensor = m.tensor(s.args[0])
    m.inplace(tensor, negate)
    m.bind(s, tensor)


register(Op(
    "logical_not_", "t.logical_not_(): 1 where t is zero, else 0, written into t in place, t keeping its dtype as "
    "torch documents in-place ops (paddle writes bool into t).", args=("tensor",), out="optional",
    run_reference=_logical_not_reference,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "logical_not_")),
    fuzz="changes the tensor's dtype in paddle (to bool): the fuzzer's draws do not track dtypes",
))
