"""Writes of values into a tensor that are not element-wise math: copy_, set_value, assign_to,
index_copy_, masked_fill_.

They write into the tensor's storage; what the tensor looks at stays (``ops/layout.py`` changes that).
Their meaning for gradients (``docs/reference.md``):

* ``copy_`` and ``assign_to`` are tracked writes in grad mode: the tensor takes the source's values, so
  the gradient flows to the source and none to the values it held (``torch.Tensor.copy_`` is
  differentiable; Paddle's ``Tensor.copy_`` is documented as aligned with it, and ``paddle.assign`` into
  an ``output`` records the assignment as an in-place op of the output).
* ``index_copy_`` and ``masked_fill_`` are tracked writes of some elements: the gradient of the elements
  written flows to the source (or nowhere, for a filled value), the others keep theirs.
* ``set_value`` is Paddle's way to overwrite a tensor's values from an array or a tensor; it records no
  history, like a write under ``no_grad``.
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register


# -- copy_ and set_value: values into storage -----------------------------------------------


def _takes_source(old, source):
    """The target takes the source's values: the gradient flows to the source, none to what it held."""
    return np.broadcast_to(source, old.shape).copy(), [lambda g: np.zeros_like(old), lambda g: g]


def _write_from(m, target, source) -> None:
    """A tracked write of *source*'s values (broadcast) into *target*."""
    value, node = m.compute(_takes_source, target, source)
    m.write(target, value, node)


def _copy_reference(m, s) -> None:
    _write_from(m, m.tensor(s.args[0]), s.args[1])


def _set_value_reference(m, s) -> None:
    target = m.tensor(s.args[0])
    source = m.get(s.args[1])
    if tuple(source.shape) != tuple(target.shape):
        raise ValueError(f"set_value of shape {list(source.shape)} into a tensor of shape {list(target.shape)}")
    m.write(target, source.value.astype(np.float64), None)


def _copy_fuzz(d):
    """A source that broadcasts to the target."""
    target = d.pick("tensor")
    source = None if target is None else d.operand(d.shape(target), kinds=("tensor",), numbers=False)
    return None if source is None else {"args": [target, source]}


def _set_value_fuzz(d):
    """A source of the target's shape (set_value does not broadcast)."""
    target = d.pick("tensor")
    source = None if target is None else d.tensor(d.shape(target))
    return None if source is None else {"args": [target, source]}


register(Op(
    "copy_", "t.copy_(src): copy src's values into t (tracked in grad mode: the gradient flows to src).",
    args=("tensor", "tensor"), out="none",
    run_reference=_copy_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "copy_", s.args[1])),
    fuzz=_copy_fuzz,
))
register(Op(
    "set_value", "t.set_value(v): overwrite t's values from an array or tensor of its shape, untracked "
    "(Paddle's Tensor.set_value).", args=("tensor", "data"), out="none",
    run_reference=_set_value_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "set_value", s.args[1])),
    fuzz=_set_value_fuzz,
))


# -- assign_to, index_copy_, masked_fill_: tracked writes of a source, or of some elements --------------


def _assign_to_spell(w, s) -> None:
    call = f"{w.a.root}.assign"  # paddle.assign(x, output); a framework without it is unsupported
    w.a.require_parameter(call, "output")
    w.emit(w.bind(s) + f"{call}({s.args[0]}, output={s.args[1]})")


def _assign_to_reference(m, s) -> None:
    output = m.tensor(s.args[1])
    _write_from(m, output, s.args[0])
    m.bind(s, output)


def _index_copy_reference(m, s) -> None:
    rows = np.asarray(s.fields["rows"], dtype=np.int64)
    _write_from(m, m.tensor(s.args[0]).view(lambda a: a[rows]), s.args[1])


def _check_rows(data, scope, fail) -> None:
    if not data["rows"] or any(i < 0 for i in data["rows"]):
        raise fail(f"rows must list row numbers (not negative), not {data['rows']!r}")


def _index_copy_fuzz(d):
    """Distinct rows of a tensor of at least one dimension, and a source of those rows' shape."""
    target = d.pick("tensor", where=lambda f: len(f.shape) >= 1 and f.shape[0] > 0)
    if target is None:
        return None
    shape = d.shape(target)
    rows = sorted({d.integer(0, shape[0] - 1) for _ in range(d.integer(1, shape[0]))})
    source = d.tensor((len(rows), *shape[1:]))
    return None if source is None else {"args": [target, source], "rows": rows}


def _mask(data) -> np.ndarray:
    return np.asarray(data, dtype=bool)


def _check_mask(data, scope, fail) -> None:
    def flat(value):
        return [x for item in value for x in flat(item)] if isinstance(value, list) else [value]
    if not all(x in (0, 1) for x in flat(data["mask"])):
        raise fail(f"mask must hold 0s and 1s (or false and true), not {data['mask']!r}")


def _masked_fill_reference(m, s) -> None:
    tensor = m.tensor(s.args[0])
    mask = np.broadcast_to(_mask(s.fields["mask"]), tensor.shape)
    fill = float(s.fields["value"])
    m.inplace(tensor, lambda x: (np.where(mask, fill, x), [lambda g: np.where(mask, 0.0, g)]))
    m.bind(s, tensor)


def _masked_fill_spell(w, s) -> None:
    mask = w.a.tensor(w.literal(_mask(s.fields["mask"]).tolist()), "bool", False)
    w.emit(w.bind(s) + w.method(s.args[0], "masked_fill_", mask, w.literal(s.fields["value"])))


def _masked_fill_fuzz(d):
    x = d.pick("tensor", where=lambda f: f.size > 0)
    if x is None:
        return None
    shape = d.shape(x)
    mask = np.zeros(shape, dtype=np.int64)
    mask.reshape(-1)[d.integer(0, mask.size - 1)] = 1
    return {"args": [x], "mask": mask.tolist(), "value": d.number()}


register(Op(
    "assign_to", "paddle.assign(x, output): x's values written into output in place (tracked, as copy_).",
    args=("tensor", "tensor"), out="optional",
    run_reference=_assign_to_reference, run_spell=_assign_to_spell,
    fuzz=lambda d: (lambda out: None if out is None else (
        lambda x: None if x is None else {"args": [x, out]})(d.tensor(d.shape(out))))(d.pick("tensor")),
))
register(Op(
    "index_copy_", "t.index_copy_(0, rows, src): t's rows replaced by src's rows in place (tracked); "
    "paddle's users write t.scatter_(rows, src).", args=("tensor", "tensor"), out="none",
    fields={"rows": Field("ints", required=True, doc="the rows to replace, each once")},
    check=_check_rows, run_reference=_index_copy_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "index_copy_", "0",
                                           w.a.tensor(w.literal(s.fields["rows"]), "int64", False), s.args[1])),
    fuzz=_index_copy_fuzz,
))
register(Op(
    "masked_fill_", "t.masked_fill_(mask, value): value where mask is true, in place (tracked: no gradient "
    "flows through the filled elements).", args=("tensor",), out="optional",
    fields={"mask": Field("numbers", required=True, doc="0s and 1s, broadcast to t's shape"),
            "value": Field("number", required=True)},
    check=_check_mask, run_reference=_masked_fill_reference, run_spell=_masked_fill_spell,
    fuzz=_masked_fill_fuzz,
))
