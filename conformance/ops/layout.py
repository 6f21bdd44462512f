"""In-place changes of what a tensor itself looks at: its shape and strides, or its storage.

``transpose_``, ``t_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``, ``reshape_`` and ``flatten_``
rearrange the tensor's own elements; ``resize_``, ``resize_as_``, ``set_`` and ``t.data = src`` make it
look at other storage; ``detach_`` takes it out of the graph.  Other names keep what they looked at (a
view taken before, a ``detach()``, a NumPy array), which is where the hazards are.

Their meaning (``docs/reference.md``):

* A rearrangement of a tensor that is not a view gives it, in grad mode, a node on top of its old
  history (the gradient maps back through the rearrangement); under ``no_grad`` a leaf stays a leaf.
* A rearrangement of a view keeps it a view of its base: it looks at other elements of the base
  (``as_strided_`` at any of them), and its history follows from its base's, as every view's does.
* ``resize_`` looks at the first elements of its storage with a new shape; past the storage's end the
  storage grows (``torch.Tensor.resize_``: "the underlying storage is resized to fit"): every name on
  that storage sees the new buffer, whose new elements are undetermined (uninitialised memory) until
  written; a read of them cannot be judged.
* ``set_`` looks at its source's storage as a tracked step; ``t.data = src`` does so untracked, and
  ``detach_`` keeps the storage and leaves the graph: neither records history.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.views import _axis, _contiguous, _transposed, _two_dims

_Take = Callable[[np.ndarray], np.ndarray]


def _returns_self(reference):
    """The reference of an op that changes its tensor in place and returns it: ``y = x.squeeze_()`` binds y
    to x itself (paddle's test_inplace.py asserts ``id(var) == id(inplace_var)``)."""
    def run(m, s) -> None:
        reference(m, s)
        if s.out:
            m.bind(s, m.tensor(s.args[0]))
    return run


def _rehistory(m, tensor, old, shape: tuple[int, ...], parents: tuple, op: str) -> None:
    """The history of a tensor (not a view) after a step that changed its shape or storage.

    In grad mode, with a parent that requires grad: a node on top of the old history.  Otherwise a leaf
    stays a leaf (with its new shape), and a tensor that requires no grad stays one; a non-leaf that
    requires grad changed outside grad mode is not modelled.
    """
    from conformance.judge.model import Node

    if m.grad_enabled and any(parent.requires_grad for parent, _ in parents):
        tensor._node = Node(shape, parents)
    elif old.leaf is tensor or not old.requires_grad:
        tensor._node = Node(shape, leaf=tensor if old.requires_grad else None, requires_grad=old.requires_grad)
    else:
        raise ValueError(f"{op} on a non-leaf that requires grad, outside grad mode, is not modelled")


def _rearrange(m, name: str, take: _Take, op: str) -> None:
    """The tensor looks at its own elements rearranged by *take* (an indexing of an array of its shape)."""
    from conformance.judge.model import scatter

    tensor = m.tensor(name)
    here = np.asarray(take(np.arange(tensor.positions.size).reshape(tensor.shape)))
    positions = tensor.positions.reshape(-1)[here]
    if tensor.base is not None:  # still a view of its base, on other elements of it
        tensor.rel, tensor.positions, tensor._derived = tensor.relation().reshape(-1)[here], positions, None
        return
    old, old_shape = tensor.node, tensor.shape
    tensor.positions = positions
    _rehistory(m, tensor, old, tensor.shape, ((old, lambda g: scatter(old_shape, here, g)),), op)


def _not_a_view(m, name: str, op: str):
    tensor = m.tensor(name)
    if tensor.base is not None:
        raise ValueError(f"{op} on a view is not modelled")
    _not_a_dtype_view(tensor, op)
    return tensor


def _not_a_dtype_view(tensor, op: str):
    """Storage taken over by position (``set_``, ``resize_``, ``t.data = src``) would lose how a dtype
    view reads it."""
    if tensor.reinterpret is not None:
        raise ValueError(f"{op} with a dtype view is not modelled")
    return tensor


# -- rearrangements of the tensor's own elements ------------------------------------------------------


def _t(a: np.ndarray) -> np.ndarray:
    if a.ndim > 2:
        raise ValueError(f"t_ takes a tensor of at most 2 dimensions, not {a.ndim}")
    return a.T


def _squeezed(dim: int | None) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        if dim is None:
            return a.reshape([n for n in a.shape if n != 1])
        axis = _axis(dim, max(a.ndim, 1))
        return a if a.ndim == 0 or a.shape[axis] != 1 else np.squeeze(a, axis)  # a size other than 1 stays
    return take


def _unsqueezed(dim: int) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        if not -a.ndim - 1 <= dim <= a.ndim:
            raise ValueError(f"dimension {dim} is out of range for a tensor of {a.ndim} dimensions")
        return np.expand_dims(a, dim % (a.ndim + 1))
    return take


def _contiguous_only(m, name: str, op: str) -> None:
    if not _contiguous(m.tensor(name)):  # paddle's reshape_ of strided elements: what it does is not modelled
        raise ValueError(f"{op} of a tensor whose elements are not contiguous is not modelled")


def _reshape_reference(m, s) -> None:
    _contiguous_only(m, s.args[0], "reshape_")
    shape = tuple(s.fields["shape"])
    _rearrange(m, s.args[0], lambda a: a.reshape(shape), "reshape_")


def _flatten_reference(m, s) -> None:
    _contiguous_only(m, s.args[0], "flatten_")
    _rearrange(m, s.args[0], _flattened(int(s.fields["start_axis"]), int(s.fields["stop_axis"])), "flatten_")


def _flattened(start: int, stop: int) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        if a.ndim == 0:
            return a.reshape(1)
        first, last = _axis(start, a.ndim), _axis(stop, a.ndim)
        if first > last:
            raise ValueError(f"start_axis {start} comes after stop_axis {stop}")
        return a.reshape(a.shape[:first] + (-1,) + a.shape[last + 1:])
    return take


def strided_elements(tensor, fields, op: str) -> tuple[np.ndarray, np.ndarray]:
    """The storage positions ``offset + sum(i * stride)`` that ``as_strided``'s *fields* name (offset: the
    tensor's own, unless given), and where each lies among the elements of the tensor's base (of the tensor,
    if it is no view): ``(positions, indices)``.  A position outside them is not modelled (ValueError)."""
    size, stride = tuple(fields["size"]), tuple(fields["stride"])
    flat = tensor.positions.reshape(-1)
    offset = fields["storage_offset"]
    offset = (int(flat[0]) if flat.size else 0) if offset is None else int(offset)
    wanted = np.full(size, offset, dtype=np.int64)
    for axis, step in enumerate(stride):
        wanted += np.indices(size, dtype=np.int64)[axis] * step
    within = (tensor.base if tensor.base is not None else tensor).positions.reshape(-1)
    where: dict[int, int] = {}
    for i, position in enumerate(within.tolist()):
        where.setdefault(position, i)  # of elements that share a position (an expanded view), the first
    missing = sorted({p for p in wanted.reshape(-1).tolist() if p not in where})
    if missing:
        raise ValueError(f"{op} reaches storage position(s) {missing[:5]} outside the elements of "
                         f"{'its base' if tensor.base is not None else 'the tensor'}: not modelled")
    return wanted, np.array([where[p] for p in wanted.reshape(-1).tolist()], dtype=np.int64).reshape(size)


def _as_strided_reference(m, s) -> None:
    """The tensor looks at storage positions ``offset + sum(i * stride)`` (offset: its own, unless given);
    on a view they must be elements of its base, on another tensor elements of its own."""
    from conformance.judge.model import scatter

    tensor = m.tensor(s.args[0])
    size = tuple(s.fields["size"])
    wanted, here = strided_elements(tensor, s.fields, "as_strided_")
    if tensor.base is not None:
        tensor.rel, tensor.positions, tensor._derived = here, wanted, None
        tensor._base_layout = tensor.base.positions
        return
    old, old_shape = tensor.node, tensor.shape
    tensor.positions = wanted
    _rehistory(m, tensor, old, size, ((old, lambda g: scatter(old_shape, here, g)),), "as_strided_")


def _check_as_strided(data, scope, fail) -> None:
    if len(data["size"]) != len(data["stride"]):
        raise fail(f"size {data['size']!r} and stride {data['stride']!r} must have as many entries")
    if any(n < 0 for n in data["size"]) or any(n < 0 for n in data["stride"]):
        raise fail("size and stride must not be negative")
    offset = data.get("storage_offset")
    if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
        raise fail(f"storage_offset must be a non-negative integer, not {offset!r}")


def _optional_dim(data, scope, fail) -> None:
    dim = data.get("dim")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or not -64 <= dim < 64):
        raise fail(f"dim must be an integer dimension, not {dim!r}")


def _sizes(values) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _rearranged_fuzz(d, *, ndim: Callable[[int], bool] = lambda n: True):
    x = d.pick("tensor", where=lambda f: ndim(len(f.shape)) and f.size > 0)
    return None if x is None else {"args": [x]}


_DIMS = Field("ints", required=True, doc="the two dimensions to swap")
register(Op(
    "transpose_", "t.transpose_(d0, d1): swap two dimensions of t itself (its strides), in place; on a view, "
    "the view swaps them.", args=("tensor",), out="optional", fields={"dims": _DIMS}, check=_two_dims,
    run_reference=_returns_self(lambda m, s: _rearrange(m, s.args[0], _transposed(s.fields["dims"]), "transpose_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "transpose_", *map(str, s.fields["dims"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dims": [d.dim(len(d.shape(x))) for _ in "ab"]})(
        d.pick("tensor", where=lambda f: len(f.shape) > 0 and f.size > 0)),
))
register(Op(
    "t_", "t.t_(): transpose a tensor of at most 2 dimensions in place.", args=("tensor",), out="optional",
    run_reference=_returns_self(lambda m, s: _rearrange(m, s.args[0], _t, "t_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "t_")),
    fuzz=lambda d: _rearranged_fuzz(d, ndim=lambda n: n <= 2),
))
register(Op(
    "squeeze_", "t.squeeze_(dim): drop dimension dim in place if its size is 1 (every size-1 dimension "
    "without dim).", args=("tensor",), out="optional",
    fields={"dim": Field("number", default=None, doc="the dimension (none: every dimension of size 1)")},
    check=_optional_dim,
    run_reference=_returns_self(lambda m, s: _rearrange(m, s.args[0], _squeezed(s.fields["dim"]), "squeeze_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "squeeze_", *(() if s.fields["dim"] is None
                                                                     else (str(s.fields["dim"]),)))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dim": d.dim(len(d.shape(x)))})(
        d.pick("tensor", where=lambda f: len(f.shape) > 0 and f.size > 0)),
))
register(Op(
    "unsqueeze_", "t.unsqueeze_(dim): insert a dimension of size 1 at dim, in place.", args=("tensor",),
    out="optional", fields={"dim": Field("number", required=True, doc="where the new dimension goes")},
    check=_optional_dim,
    run_reference=_returns_self(lambda m, s: _rearrange(m, s.args[0], _unsqueezed(int(s.fields["dim"])), "unsqueeze_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "unsqueeze_", str(s.fields["dim"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dim": d.integer(0, len(d.shape(x)))})(
        d.pick("tensor", where=lambda f: f.size > 0)),
))
register(Op(
    "as_strided_", "t.as_strided_(size, stride, storage_offset): t looks at the storage positions "
    "offset + sum(i * stride), in place.", args=("tensor",), out="optional",
    fields={"size": Field("ints", required=True, doc="the new sizes"),
            "stride": Field("ints", required=True, doc="the new strides, in elements"),
            "storage_offset": Field("number", default=None, doc="where element 0 lies (default: where it does)")},
    check=_check_as_strided, run_reference=_returns_self(_as_strided_reference),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "as_strided_", _sizes(s.fields["size"]), _sizes(s.fields["stride"]),
                                           *(() if s.fields["storage_offset"] is None
                                             else (str(s.fields["storage_offset"]),)))),
    fuzz="the positions a stride reaches depend on the storage, which the fuzzer does not track",
))
register(Op(
    "reshape_", "t.reshape_(shape): t takes another shape in place (paddle's Tensor.reshape_).",
    args=("tensor",), out="optional", fields={"shape": Field("ints", required=True, doc="the new shape (-1: inferred)")},
    run_reference=_returns_self(_reshape_reference),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "reshape_", _sizes(s.fields["shape"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "shape": d.choice([[-1], [1, -1]])})(
        d.pick("tensor", where=lambda f: not f.view)),
))
register(Op(
    "flatten_", "t.flatten_(start_axis, stop_axis): merge dimensions start..stop of t in place (paddle's "
    "Tensor.flatten_).", args=("tensor",), out="optional",
    fields={"start_axis": Field("number", default=0), "stop_axis": Field("number", default=-1)},
    run_reference=_returns_self(_flatten_reference),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "flatten_", f"start_axis={s.fields['start_axis']}",
                                           f"stop_axis={s.fields['stop_axis']}")),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "start_axis": 0, "stop_axis": -1})(
        d.pick("tensor", where=lambda f: not f.view)),
))


# -- other storage: resize_, resize_as_, set_, t.data = src; out of the graph: detach_ -----------------


def resize_to(m, name: str, shape: tuple[int, ...], op: str) -> None:
    """The named tensor looks at the first elements of its storage with *shape*, the storage grown where it
    holds too few (``resize_``, and an ``out=`` of another shape)."""
    tensor = _not_a_view(m, name, op)
    count = int(np.prod(shape, dtype=np.int64))
    flat = tensor.positions.reshape(-1)
    if flat.size > 1 and not np.all(np.diff(flat) == 1):
        raise ValueError(f"{op} of a tensor whose elements are not contiguous in storage is not modelled")
    offset = int(flat[0]) if flat.size else (tensor.start or 0)
    if offset + count > tensor.storage.data.size:
        tensor.storage.grow(offset + count)
    old, old_shape, kept = tensor.node, tensor.shape, min(flat.size, count)

    def back(g):  # the elements it kept are the ones it had; the new ones have no history
        full = np.zeros(flat.size)
        full[:kept] = np.asarray(g, dtype=np.float64).reshape(-1)[:kept]
        return full.reshape(old_shape)

    tensor.positions = np.arange(offset, offset + count).reshape(shape)
    _rehistory(m, tensor, old, shape, ((old, back),), op)


def _set_reference(m, s) -> None:
    tensor = _not_a_view(m, s.args[0], "set_")
    source = _not_a_dtype_view(m.tensor(s.args[1]), "set_")
    old = tensor.node
    tensor.storage, tensor.positions = source.storage, source.positions.copy()
    _rehistory(m, tensor, old, source.shape,
               ((old, lambda g: np.zeros(old.shape)), (source.node, lambda g: g)), "set_")


def _set_data_reference(m, s) -> None:
    """``t.data = src``: t looks at src's storage, untracked; t keeps its own place in the graph (a leaf
    stays a leaf, with src's shape; a non-leaf keeps the history of the values it had)."""
    from conformance.judge.model import Node

    tensor = _not_a_view(m, s.args[0], "t.data = src")
    source = _not_a_dtype_view(m.tensor(s.args[1]), "t.data = src")
    old = tensor.node
    tensor.storage, tensor.positions = source.storage, source.positions.copy()
    tensor.start = source.start
    if old.leaf is tensor or not old.requires_grad:
        tensor._node = Node(tensor.shape, leaf=tensor if old.requires_grad else None, requires_grad=old.requires_grad)
    elif old.shape != tensor.shape:
        raise ValueError("t.data = src of another shape, on a non-leaf that requires grad, is not modelled")


def _detach_reference(m, s) -> None:
    """``t.detach_()``: t leaves the graph on the same storage.  A view no longer follows its base's
    history; views taken of t before keep the history they had (torch's test_detach_base: "detaching
    base does not detach view")."""
    from conformance.judge.model import Node

    tensor = m.tensor(s.args[0])
    if tensor.base is None and tensor.node.requires_grad:
        tensor.history_for_views = tensor.node
    tensor.base, tensor.rel, tensor._derived = None, None, None
    tensor._node = Node(tensor.shape)
    m.bind(s, tensor)


def _check_sizes(data, scope, fail) -> None:
    if any(size < 0 for size in data["shape"]):
        raise fail(f"shape must list sizes (no negative entries), not {data['shape']!r}")


def _not_a_view_fuzz(d, nonempty: bool = False):
    return d.pick("tensor", where=lambda f: not f.view and (len(f.shape) > 0 if nonempty else f.size > 0))


def _resize_fuzz(d):
    """A vector or a matrix of no more elements than the tensor has: the elements a growing resize_ adds
    hold no value a program can be judged by (hand-written cases observe around them)."""
    x = _not_a_view_fuzz(d)
    if x is None:
        return None
    count = d.integer(1, d.facts(x).size)
    return {"args": [x], "shape": list(d.choice([(count,)] + [(a, count // a) for a in (2, 3) if count % a == 0]))}


def _resize_as_fuzz(d):
    """A tensor of no more elements than the one resized (as ``_resize_fuzz`` keeps to)."""
    x = _not_a_view_fuzz(d)
    if x is None:
        return None
    size = d.facts(x).size
    like = d.tensor(where=lambda f: 0 < f.size <= size, fresh=(d.integer(1, size),))
    return None if like is None else {"args": [x, like]}


def _set_fuzz(d):
    x = _not_a_view_fuzz(d)
    source = None if x is None else d.tensor(fresh=d.new_shape())
    return None if source is None else {"args": [x, source]}


register(Op(
    "resize_", "t.resize_(shape): t looks at the first elements of its storage with a new shape; past the "
    "storage's end the storage grows (new elements undetermined).", args=("tensor",), out="optional",
    fields={"shape": Field("ints", required=True, doc="the new sizes")},
    check=_check_sizes,
    run_reference=_returns_self(lambda m, s: resize_to(m, s.args[0], tuple(s.fields["shape"]), "resize_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "resize_", _sizes(s.fields["shape"]))),
    fuzz=_resize_fuzz,
))
register(Op(
    "resize_as_", "t.resize_as_(other): resize_ to other's shape.", args=("tensor", "tensor"), out="optional",
    run_reference=_returns_self(lambda m, s: resize_to(m, s.args[0], m.tensor(s.args[1]).shape, "resize_as_")),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "resize_as_", s.args[1])),
    fuzz=lambda d: _resize_as_fuzz(d),
))
register(Op(
    "set_", "t.set_(src): t shares src's storage, shape and strides from now on.",
    args=("tensor", "tensor"), out="none", run_reference=_set_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "set_", s.args[1])),
    fuzz=_set_fuzz,
))
register(Op(
    "set_data", "t.data = src: t looks at src's storage and shape, untracked (t keeps its place in the graph).",
    args=("tensor", "tensor"), out="none", run_reference=_set_data_reference,
    run_spell=lambda w, s: w.emit(f"{w.attribute(s.args[0], 'data')} = {s.args[1]}"),
    fuzz=_set_fuzz,
))
register(Op(
    "detach_", "t.detach_(): t leaves the graph in place, on the same storage.", args=("tensor",),
    out="optional", run_reference=_detach_reference,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "detach_")),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x]})(d.pick("tensor")),
))


# -- a dtype changed in place: cast_ ----------------------------------------------------------------

#: what cast_ may cast to: dtypes whose values the reference's float64 holds exactly (an integer dtype's up to
#: 2^53, far beyond the cases' values)
CAST_DTYPES = ("float32", "float64", "int32", "int64")


def _cast_reference(m, s) -> None:
    """``t.cast_(dtype)`` (paddle): t itself, holding its values as *dtype*.  To the dtype it already has,
    nothing changes (a conversion to what a tensor is returns it as it is, as ``to`` does).  To another
    dtype t leaves its old storage, as an element of another dtype cannot stay where it was: views taken
    of t before keep the old memory and values, and a write through t no longer reaches them.  The graph
    tracks the cast (its gradient passes through, cast back)."""
    from conformance.judge.model import Storage, Tensor

    tensor = _not_a_view(m, s.args[0], "cast_")
    dtype = s.fields["dtype"]
    views = [named for named in m.env.values() if isinstance(named, Tensor) and named.base is tensor]
    if tensor.dtype == dtype:
        m.bind(s, tensor)
        return
    if tensor.dtype is None and views:
        raise ValueError("cast_ of a tensor whose dtype the reference does not know (one made by an op, not a "
                         "literal), with views of it: whether its memory moves is not modelled")
    if dtype.startswith("int") and tensor.requires_grad:
        raise ValueError("cast_ to an integer dtype of a tensor that requires grad is not modelled (no gradient "
                         "flows through an integer)")
    value = np.asarray(tensor.value, dtype=np.float64).astype(dtype).astype(np.float64)  # an integer: toward 0
    old, shape = tensor.node, tensor.shape
    left = Tensor(tensor.storage, tensor.positions, tensor._node, kind=tensor.kind, start=tensor.start)
    left.history_for_views, left.dtype, left.signs = tensor.history_for_views, tensor.dtype, tensor.signs
    for named in views:  # its views stay views of what it was, on the memory it leaves
        named.base = left
    tensor.storage = Storage(value.reshape(-1).copy())
    tensor.positions = np.arange(value.size).reshape(shape)
    tensor.start, tensor.signs, tensor.dtype = 0, None, dtype
    _rehistory(m, tensor, old, shape, ((old, lambda g: g),), "cast_")
    m.bind(s, tensor)


def _cast_spell(w, s) -> None:
    w.a.require_method("cast_")  # torch has none: its users rebind, t = t.to(dtype)
    w.emit(w.bind(s) + w.method(s.args[0], "cast_", repr(s.fields["dtype"])))


register(Op(
    "cast_", "t.cast_(dtype) (paddle): t itself, as dtype; to another dtype, in new memory (views taken before "
    "keep the old memory); tracked.  torch has no cast_ (its users write t = t.to(dtype)).", args=("tensor",),
    out="optional", fields={"dtype": Field("dtype", required=True, choices=CAST_DTYPES,
                                           doc="the dtype t is cast to")},
    run_reference=_cast_reference, run_spell=_cast_spell,
    fuzz="changes the tensor's dtype: the fuzzer's draws do not track dtypes",
))
