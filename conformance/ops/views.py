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
    from conformance.judge.model import Tensor

    source = m.get(s.args[0])
    index = s.index.resolve(m.counters)
    if source.kind == "array" and (s.index.advanced or np.ndim(source.value[index]) == 0):
        m.bind(s, Tensor.fresh(source.value[index], kind="array"))  # NumPy gives a copy (a scalar, a gather)
        return
    if s.index.advanced:  # a gather: a copy the graph tracks, its gradient summed back where it read
        def gather(x):
            def back(g):
                out = np.zeros(x.shape)
                np.add.at(out, index, g)
                return out
            return x[index].copy(), [back]
        m.bind(s, m.new(gather, s.args[0]))
        return
    m.bind(s, source.view(lambda a: a[index]))


def assigned(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """*value* as index assignment writes it into elements of *shape*: broadcast, after dropping leading
    dimensions of size 1 that the target lacks (NumPy's ``a[:, 0] = v`` takes a ``v`` of shape (1, n) for
    n elements; torch's and paddle's setitem do too)."""
    value = np.asarray(value)
    extra = value.ndim - len(shape)
    if extra > 0 and all(size == 1 for size in value.shape[:extra]):
        value = value.reshape(value.shape[extra:])
    if value.ndim > len(shape):
        raise ValueError(f"a value of shape {list(value.shape)} does not broadcast to the {list(shape)} "
                         f"elements it is assigned to")
    return np.broadcast_to(value, shape)


def _setitem_reference(m, s) -> None:
    """A location the assignment names twice gets any of the values written to it: an index with a list in
    it, as index_put_ does (torch: "undefined"), and a basic index into a view that overlaps itself (an
    expanded tensor, whose rows share memory: torch documents that writes to it "may result in incorrect
    behavior").  A location given one value, however many times, holds that value."""
    index = s.index.resolve(m.counters)
    target = m.get(s.args[0]).view(lambda a: a[index])
    value, node = m.compute(lambda v: (assigned(v, target.shape), [lambda g: g]), s.args[1])
    m.write(target, value, node, unordered=True)


register(Op(
    "getitem", "out = t[index]: a view (a slice, a row); with a list in the index, a copy (advanced indexing); "
    "of an array, an array.", args=("data",), binds="same",
    fields={"index": _INDEX},
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
    "setitem", "t[index] = value: index assignment (with a list in the index, of the elements it names).",
    args=("data", "value"), out="none",
    fields={"index": _INDEX},
    run_reference=_setitem_reference,
    run_spell=lambda w, s: w.emit(f"{s.args[0]}[{s.index.source()}] = {w.arg(s, 1)}"),
    fuzz=_setitem_fuzz,
))


def _setitem_list_reference(m, s) -> None:
    from conformance.ops.tensors import literal

    target = m.get(s.args[0]).view(lambda a: a[s.index.resolve(m.counters)])
    values = literal(s.fields["value"], "float64")
    value, node = m.compute(lambda: (assigned(values, target.shape), []))  # constants: a history of no inputs
    m.write(target, value, node)


register(Op(
    "setitem_list", "t[index] = [...]: index assignment of a Python list of numbers (a nested list for more "
    "than one dimension).", args=("data",), out="none",
    fields={"index": _INDEX, "value": Field("numbers", required=True, doc="the list assigned")},
    run_reference=_setitem_list_reference,
    run_spell=lambda w, s: w.emit(f"{s.args[0]}[{s.index.source()}] = {w.literal(s.fields['value'])}"),
    fuzz="draws setitem with a tensor or a number, whose shapes it keeps",
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


# -- views that reshape, split and broadcast -------------------------------------------
#
# Each is a tracked view of its input (``Tensor.view``): the frameworks document these
# results as sharing their input's storage (PyTorch's "Tensor Views" page lists all of
# them; Paddle documents ``view``, ``reshape`` and ``transpose`` as view ops of its
# dynamic graph).  Where an installed framework copies instead, the difference is a
# memory observation (``shares_memory``), not a different reference.

_DIM = Field("number", default=0, doc="the dimension (an integer; negative counts from the end)")
_SHAPE = Field("ints", required=True, doc="the target shape (-1: inferred, or kept for expand)")


def _integer_dim(data, scope, fail) -> None:
    dim = data.get("dim", 0)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -64 <= dim < 64:
        raise fail(f"dim must be an integer dimension, not {dim!r}")


def _axis(dim: int, ndim: int) -> int:
    if not -ndim <= dim < ndim:
        raise ValueError(f"dimension {dim} is out of range for a tensor of {ndim} dimensions")
    return dim % ndim


def _bind_views(m, s, takes) -> None:
    """Bind one tracked view per output name; the counts must agree, as Python's unpacking demands."""
    if len(takes) != len(s.out):
        raise ValueError(f"the op gives {len(takes)} views, but the step binds {len(s.out)} names {list(s.out)}")
    source = m.tensor(s.args[0])
    m.bind(s, *(source.view(take) for take in takes))


def _unbind_reference(m, s) -> None:
    shape = m.tensor(s.args[0]).shape
    axis = _axis(int(s.fields["dim"]), len(shape))
    _bind_views(m, s, [(lambda i: lambda a: np.take(a, i, axis=axis))(i) for i in range(shape[axis])])


def _split_reference(m, s) -> None:
    shape = m.tensor(s.args[0]).shape
    axis = _axis(int(s.fields["dim"]), len(shape))
    sections = s.fields["sections"]
    if any(n < 0 for n in sections) or sum(sections) != shape[axis]:
        raise ValueError(f"sections {sections} do not add up to the size {shape[axis]} of dimension {axis}")
    bounds = np.cumsum([0, *sections])
    _bind_views(m, s, [(lambda lo, hi: lambda a: a[(slice(None),) * axis + (slice(lo, hi),)])(lo, hi)
                       for lo, hi in zip(bounds[:-1], bounds[1:])])


def _unsafe_split_reference(m, s) -> None:
    """Sections of ``size`` elements along dim (the last one shorter), views of t as split's are: the
    reference computes what the program means; torch's unsafe_split only omits the checks."""
    shape = m.tensor(s.args[0]).shape
    axis = _axis(int(s.fields["dim"]), len(shape))
    size = int(s.fields["size"])
    if size <= 0:
        raise ValueError(f"unsafe_split needs a positive section size, not {size}")
    bounds = list(range(0, shape[axis], size)) + [shape[axis]]
    _bind_views(m, s, [(lambda lo, hi: lambda a: a[(slice(None),) * axis + (slice(lo, hi),)])(lo, hi)
                       for lo, hi in zip(bounds[:-1], bounds[1:])])


def _laid(tensor) -> np.ndarray:
    """Where the elements lie, in elements of the tensor's own dtype: a view as a wider dtype places each
    at the first of the storage positions it spans."""
    span = 1 if tensor.reinterpret is None else tensor.reinterpret.span
    if span == 1 or tensor.positions.size == 0:
        return tensor.positions
    return tensor.positions // span  # every element starts at the same position modulo span (dtype_views)


def _contiguous(tensor) -> bool:
    """Whether the elements lie in storage in row-major order without gaps (what ``view`` needs)."""
    flat = _laid(tensor).reshape(-1)
    return flat.size < 2 or bool(np.all(np.diff(flat) == 1))


def _strides(tensor) -> tuple[int, list[int]] | None:
    """The tensor's storage offset and strides (in elements), or None when its elements are not laid out
    by strides (never for what the ops make)."""
    positions = _laid(tensor)
    if positions.size == 0:
        return 0, [1] * positions.ndim
    offset = int(positions.reshape(-1)[0])
    strides = [int(positions[(0,) * k + (1,) + (0,) * (positions.ndim - k - 1)]) - offset if n > 1 else 1
               for k, n in enumerate(positions.shape)]
    laid = offset + sum((np.indices(positions.shape)[k] * stride for k, stride in enumerate(strides)),
                        np.zeros(positions.shape, dtype=np.int64))
    return (offset, strides) if np.array_equal(laid, positions) else None


def _inferred(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    return np.empty(size).reshape(shape).shape  # -1 resolved, or NumPy's error for sizes that cannot be


def view_strides(old_shape: tuple[int, ...], old_strides: list[int], new_shape: tuple[int, ...]) -> list[int] | None:
    """The strides of a view of *new_shape* on elements laid out by *old_strides*, or None when no view
    can have that shape: ATen's ``computeStride``, by which torch's ``view`` succeeds or raises and its
    ``reshape`` returns a view or a copy."""
    if not old_shape:
        return [1] * len(new_shape)
    if int(np.prod(old_shape)) == 0:
        return [1] * len(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return new_strides if view_d == -1 else None


def _viewable(tensor, shape: tuple[int, ...]) -> bool:
    if _contiguous(tensor):
        return True
    laid = _strides(tensor)
    return laid is not None and view_strides(tensor.shape, laid[1], _inferred(shape, tensor.positions.size)) is not None


def _reshaped(name: str):
    """``view``: a view, where one can have the shape (torch raises otherwise); ``reshape``: a view where one
    can, else a copy the graph tracks (torch documents "a view of input when possible, otherwise a copy")."""
    def reference(m, s) -> None:
        source = m.tensor(s.args[0])
        shape = tuple(s.fields["shape"])
        if _viewable(source, shape):
            m.bind(s, source.view(lambda a: a.reshape(shape)))
        elif name == "reshape":
            m.bind(s, m.new(lambda x: (x.reshape(shape).copy(), [lambda g: np.reshape(g, x.shape)]), s.args[0]))
        else:
            raise ValueError(f"{name} of a tensor whose strides no view of shape {list(shape)} has: "
                             f"the frameworks refuse it")
    return reference


def _contiguous_reference(m, s) -> None:
    source = m.tensor(s.args[0])
    if _contiguous(source):  # the tensor itself ("returns the self tensor", in both frameworks' words)
        m.bind(s, source)
    else:  # a tracked copy, of t's dtype (which a dtype view of it needs)
        from conformance.ops.tensors import tracked_copy

        m.bind(s, tracked_copy(m, s.args[0]))


def _expand_reference(m, s) -> None:
    source = m.tensor(s.args[0])
    wanted = list(s.fields["shape"])
    lead = len(wanted) - len(source.shape)
    if lead < 0:
        raise ValueError(f"cannot expand a tensor of shape {list(source.shape)} to {wanted}")
    shape = tuple(source.shape[i - lead] if size == -1 and i >= lead else size for i, size in enumerate(wanted))
    # Repeated elements are the same storage positions: the view overlaps itself.
    m.bind(s, source.view(lambda a: np.broadcast_to(a, shape)))


def _sizes(shape: list[int]) -> str:
    return ", ".join(map(str, shape))


def _unpack(step) -> str:
    return ", ".join(step.out) + ("," if len(step.out) == 1 else "")


def _check_split(data, scope, fail) -> None:
    _integer_dim(data, scope, fail)
    out = data.get("out")
    count = len(out) if isinstance(out, list) else 1
    if count != len(data.get("sections") or []):
        raise fail(f"split into {len(data.get('sections') or [])} sections binds as many names, got {out!r}")


# Fuzz rules (``Op.fuzz``): dimensions within bounds, as many names as the op gives views, shapes
# the input can take.  A write through a view that the reference refuses (one that overlaps itself
# with different values) or a reshape of a non-contiguous tensor ends the drawn program there.


def _unbind_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) >= 1 and f.size > 0)
    if x is None:
        return None
    shape = d.shape(x)
    dim = d.dim(len(shape))
    return {"args": [x], "dim": dim, "out": shape[dim]}


def _split_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) >= 1 and f.size > 0)
    if x is None:
        return None
    shape = d.shape(x)
    dim = d.dim(len(shape))
    first = d.integer(1, shape[dim])
    sections = [first] + ([shape[dim] - first] if first < shape[dim] else [])
    return {"args": [x], "sections": sections, "dim": dim, "out": len(sections)}


def _expand_fuzz(d):
    x = d.pick("tensor")
    if x is None:
        return None
    shape = [d.size() if n == 1 else d.choice([n, -1]) for n in d.shape(x)]
    if not shape or d.boolean():  # a new leading dimension
        shape = [d.size()] + shape
    return {"args": [x], "shape": shape}


def _reshape_fuzz(d):
    x = d.pick("tensor")
    if x is None:
        return None
    size = d.facts(x).size
    return {"args": [x], "shape": d.choice([[-1], [size], [1, -1], [size, 1]])}


register(Op(
    "unbind", "a, b, ... = t.unbind(dim): one view per index along dim (bind as many names).",
    args=("tensor",), out="many", fields={"dim": _DIM}, check=_integer_dim,
    run_reference=_unbind_reference, fuzz=_unbind_fuzz,
    run_spell=lambda w, s: w.emit(f"{_unpack(s)} = " + w.method(s.args[0], "unbind", str(s.fields["dim"]))),
))
register(Op(
    "split", "a, b, ... = t.split([sizes], dim): views of consecutive sections along dim.",
    args=("tensor",), out="many",
    fields={"sections": Field("ints", required=True, doc="the size of each section"), "dim": _DIM},
    check=_check_split, run_reference=_split_reference, fuzz=_split_fuzz,
    run_spell=lambda w, s: w.emit(f"{_unpack(s)} = " + w.method(
        s.args[0], "split", f"[{_sizes(s.fields['sections'])}]", str(s.fields["dim"]))),
))
register(Op(
    "unsafe_split", "a, b, ... = torch.unsafe_split(t, size, dim): split into sections of the given size, "
    "views of t as split's are, with no autograd view tracking (torch documents it as split \"without "
    "enforcing the autograd restrictions on inplace modification of the outputs\"; paddle has none).",
    args=("tensor",), out="many", fields={"size": Field("int", required=True, doc="each section's size"),
                                           "dim": _DIM},
    run_reference=_unsafe_split_reference,
    run_spell=lambda w, s: w.emit(f"{_unpack(s)} = {w.a.function('unsafe_split')}({s.args[0]}, "
                                  f"{s.fields['size']}, {s.fields['dim']})"),
    fuzz="the fuzzer draws split, whose views are the same",
))
register(Op(
    "expand", "out = t.expand(*shape): a broadcast view whose repeated elements share memory.",
    args=("tensor",), fields={"shape": _SHAPE},
    run_reference=_expand_reference, fuzz=_expand_fuzz,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "expand", _sizes(s.fields["shape"]))),
))
register(Op(
    "contiguous", "out = t.contiguous(): t itself when its elements lie in order, else a copy the graph tracks.",
    args=("tensor",), run_reference=_contiguous_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "contiguous")),
))


def _dropout_check(data, scope, fail) -> None:
    p = data.get("p", 0.5)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise fail(f"p must be a probability from 0 up to 1 (not 1), not {p!r}")


register(Op(
    "dropout", "out = F.dropout(t, p, training=False): dropout outside training.  torch returns t itself (ATen's "
    "dropout: 'if (p == 0 || !train ...) return input'), so a write into out writes t; paddle's pages give "
    "the values only (PaddleAdapter.copies).", args=("tensor",),
    fields={"p": Field("number", default=0.5, doc="the drop probability, which outside training changes nothing")},
    check=_dropout_check, run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.activation_function('dropout')}({s.args[0]}, "
                                  f"p={w.literal(s.fields['p'])}, training=False)"),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "p": 0.5})(d.pick("tensor")),
))
register(Op(
    "reshape", "out = t.reshape(*shape): a view where one can have the shape, else a copy.", args=("tensor",),
    fields={"shape": _SHAPE}, run_reference=_reshaped("reshape"), fuzz=_reshape_fuzz,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "reshape", _sizes(s.fields["shape"]))),
))
register(Op(
    "view", "out = t.view(*shape): a view with another shape (one the input's strides allow).",
    args=("tensor",), fields={"shape": _SHAPE}, run_reference=_reshaped("view"), fuzz=_reshape_fuzz,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "view", _sizes(s.fields["shape"]))),
))
