"""Writes into a tensor that are not element-wise math: copy_, set_value, transpose_, resize_, set_.

``copy_`` and ``set_value`` write values into a tensor's storage; ``transpose_``,
``resize_`` and ``set_`` change which storage positions the tensor itself looks
at (its shape, its strides, or its storage), leaving other names on the old
storage as they were.

Their meaning for gradients (``docs/reference.md``):

* ``copy_`` is a tracked write in grad mode: the tensor takes the source's
  values, so the gradient flows to the source and none to the values it held
  (``torch.Tensor.copy_`` is differentiable; Paddle's ``Tensor.copy_`` is
  documented as aligned with it).
* ``set_value`` is Paddle's way to overwrite a tensor's values from an array
  or a tensor; it records no history, like a write under ``no_grad``.
* ``transpose_``, ``resize_`` and ``set_`` in grad mode give the tensor a new
  history on top of the old one (a transposed, a truncated-and-reshaped, or
  the source's values), so a leaf that requires grad still receives the
  gradient of the value it had; under ``no_grad`` a leaf stays a leaf with its
  new shape.
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.views import _transposed, _two_dims


def _not_a_view(m, name: str, op: str):
    tensor = m.tensor(name)
    if tensor.base is not None:
        raise ValueError(f"{op} on a view is not modelled")
    return tensor


def _rehistory(m, tensor, old, shape: tuple[int, ...], parents: tuple, op: str) -> None:
    """The tensor's history after a write that changed its shape or storage.

    In grad mode, with a parent that requires grad: a node on top of the old history.
    Otherwise a leaf stays a leaf (with its new shape), and a tensor that requires no
    grad stays one; a non-leaf that requires grad changed outside grad mode is not modelled.
    """
    from conformance.judge.reference import Node

    if m.grad_enabled and any(parent.requires_grad for parent, _ in parents):
        tensor._node = Node(shape, parents)
    elif old.leaf is tensor or not old.requires_grad:
        tensor._node = Node(shape, leaf=tensor if old.requires_grad else None, requires_grad=old.requires_grad)
    else:
        raise ValueError(f"{op} on a non-leaf that requires grad, outside grad mode, is not modelled")


# -- copy_ and set_value: values into storage -----------------------------------------------


def _copy_reference(m, s) -> None:
    target = m.tensor(s.args[0])

    def fn(old, source):
        return np.broadcast_to(source, old.shape).copy(), [lambda g: np.zeros_like(old), lambda g: g]

    value, node = m.compute(fn, target, s.args[1])
    m.write(target, value, node)


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


# -- transpose_, resize_, set_: the tensor looks at other positions ---------------------------


def _transpose_reference(m, s) -> None:
    tensor = _not_a_view(m, s.args[0], "transpose_")
    take = _transposed(s.fields["dims"])
    old = tensor.node
    tensor.positions = take(tensor.positions)
    _rehistory(m, tensor, old, tensor.shape, ((old, take),), "transpose_")  # a swap is its own inverse


def _check_sizes(data, scope, fail) -> None:
    if any(size < 0 for size in data["shape"]):
        raise fail(f"shape must list sizes (no negative entries), not {data['shape']!r}")


def _resize_reference(m, s) -> None:
    tensor = _not_a_view(m, s.args[0], "resize_")
    shape = tuple(s.fields["shape"])
    count = int(np.prod(shape, dtype=np.int64))
    flat = tensor.positions.reshape(-1)
    if flat.size > 1 and not np.all(np.diff(flat) == 1):
        raise ValueError("resize_ of a tensor whose elements are not contiguous in storage is not modelled")
    if count > flat.size:
        raise ValueError("resize_ to more elements leaves the new ones undetermined: not modelled")
    old, old_shape = tensor.node, tensor.shape
    tensor.positions = flat[:count].reshape(shape)

    def back(g):
        full = np.zeros(flat.size)
        full[:count] = np.asarray(g, dtype=np.float64).reshape(-1)
        return full.reshape(old_shape)

    _rehistory(m, tensor, old, shape, ((old, back),), "resize_")


def _set_reference(m, s) -> None:
    tensor = _not_a_view(m, s.args[0], "set_")
    source = m.tensor(s.args[1])
    old = tensor.node
    tensor.storage, tensor.positions = source.storage, source.positions.copy()
    _rehistory(m, tensor, old, source.shape,
               ((old, lambda g: np.zeros(old.shape)), (source.node, lambda g: g)), "set_")


def _not_a_view_fuzz(d, nonempty: bool = False):
    return d.pick("tensor", where=lambda f: not f.view and (len(f.shape) > 0 if nonempty else f.size > 0))


def _transpose_fuzz(d):
    x = _not_a_view_fuzz(d, nonempty=True)
    return None if x is None else {"args": [x], "dims": [d.dim(len(d.shape(x))) for _ in "ab"]}


def _resize_fuzz(d):
    """No more elements than the tensor has: a vector, or a matrix when the count allows."""
    x = _not_a_view_fuzz(d)
    if x is None:
        return None
    count = d.integer(1, d.facts(x).size)
    return {"args": [x], "shape": list(d.choice([(count,)] + [(a, count // a) for a in (2, 3) if count % a == 0]))}


def _set_fuzz(d):
    x = _not_a_view_fuzz(d)
    source = None if x is None else d.tensor(fresh=d.new_shape())
    return None if source is None else {"args": [x, source]}


register(Op(
    "transpose_", "t.transpose_(d0, d1): swap two dimensions of t itself (its strides), in place.",
    args=("tensor",), out="none", fields={"dims": Field("ints", required=True, doc="the two dimensions to swap")},
    check=_two_dims, run_reference=_transpose_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "transpose_", *map(str, s.fields["dims"]))),
    fuzz=_transpose_fuzz,
))
register(Op(
    "resize_", "t.resize_(shape): t looks at the first elements of its storage with a new shape "
    "(no more elements than it has).", args=("tensor",), out="none",
    fields={"shape": Field("ints", required=True, doc="the new sizes")},
    check=_check_sizes, run_reference=_resize_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "resize_", "[" + ", ".join(map(str, s.fields["shape"])) + "]")),
    fuzz=_resize_fuzz,
))
register(Op(
    "set_", "t.set_(src): t shares src's storage, shape and strides from now on.",
    args=("tensor", "tensor"), out="none", run_reference=_set_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "set_", s.args[1])),
    fuzz=_set_fuzz,
))
