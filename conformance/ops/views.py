"""Views and index assignment: results that share their input's storage.

A view's elements are described by a NumPy indexing of its input, so the
reference needs no rule per view kind: storage, write-through and the gradient
back to the base all follow from which elements the view takes.
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register

_INDEX = Field("index", required=True, doc="integers, loop counters and slices, e.g. '0:2' or 'i, :'")


def _getitem_reference(m, s) -> None:
    from conformance.judge.reference import Tensor

    source = m.get(s.args[0])
    index = s.index.resolve(m.counters)
    if source.kind == "array" and np.ndim(source.value[index]) == 0:  # NumPy returns a scalar copy
        m.bind(s, Tensor.fresh(source.value[index], kind="array"))
        return
    m.bind(s, source.view(lambda a: a[index]))


def _setitem_reference(m, s) -> None:
    target = m.get(s.args[0]).view(lambda a: a[s.index.resolve(m.counters)])
    value, node = m.compute(lambda v: (np.broadcast_to(v, target.shape), [lambda g: g]), s.args[1])
    m.write(target, value, node)


register(Op(
    "getitem", "out = t[index]: a view (a slice, a row).", args=("data",), fields={"index": _INDEX},
    run_reference=_getitem_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {s.args[0]}[{s.index.source()}]"),
))
def _setitem_fuzz(d):
    """A value that broadcasts to the indexed elements."""
    target = d.pick("data", where=lambda f: len(f.shape) > 0)
    if target is None:
        return None
    index = d.index(d.shape(target))
    return {"args": [target, d.operand(d.selection(d.shape(target), index))], "index": index}


register(Op(
    "setitem", "t[index] = value: index assignment.", args=("data", "operand"), out="none",
    fields={"index": _INDEX},
    run_reference=_setitem_reference,
    run_spell=lambda w, s: w.emit(f"{s.args[0]}[{s.index.source()}] = {w.arg(s, 1)}"),
    fuzz=_setitem_fuzz,
))


def _transposed(dims: list[int]):
    def take(a):
        order = list(range(a.ndim))
        first, second = order[dims[0]], order[dims[1]]
        order[first], order[second] = second, first
        return a.transpose(order)
    return take


def _two_dims(data, scope, fail) -> None:
    if len(data["dims"]) != 2:
        raise fail(f"dims must name two dimensions, not {data['dims']!r}")


register(Op(
    "transpose", "out = t.transpose(d0, d1): a view with two dimensions swapped.", args=("tensor",),
    fields={"dims": Field("ints", required=True, doc="the two dimensions to swap")},
    check=_two_dims,
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).view(_transposed(s.fields["dims"]))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "transpose", *map(str, s.fields["dims"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dims": [d.dim(len(d.shape(x))) for _ in "ab"]})(
        d.pick("tensor", where=lambda f: len(f.shape) > 0)),
))
