"""Out-of-place views that reshape, pick or split: results on their input's storage.

``squeeze``, ``unsqueeze``, ``flatten``, ``diagonal``, ``unfold``, ``as_strided``, ``view_as`` and the
splits (``tensor_split``, ``hsplit``, ``vsplit``, ``dsplit``, ``split_count``) are tracked views of their
input (``Tensor.view``), as torch's "Tensor Views" page lists them: each is described by which elements
of the input it takes, so the write-through and the gradient back to the base follow from that.  Paddle
documents ``squeeze``, ``unsqueeze``, ``flatten``, ``view_as``, ``unfold`` and ``as_strided`` as sharing
data; its splits copy (``PaddleAdapter.copies``).

The in-place twins (``squeeze_``, ``unsqueeze_``, ``flatten_``, ``as_strided_``) live in ``layout.py``;
their element maps are shared from there.

The dtype view (``t.view(torch.int32)``), whose elements are bit patterns rather than a choice of
elements, is ``dtype_views.py``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.layout import (_check_as_strided, _flattened, _optional_dim, _squeezed, _unsqueezed,
                                    strided_elements)
from conformance.ops.views import _axis, _bind_views, _integer_dim, _unpack, _viewable

_Take = Callable[[np.ndarray], np.ndarray]


def _sizes(values) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _int_field(data: Mapping[str, Any], name: str, fail) -> None:
    value = data.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not -64 <= value < 64):
        raise fail(f"{name} must be an integer, not {value!r}")


# -- squeeze, unsqueeze, flatten, view_as: the same elements in another shape -----------------------


def _view_or_copy(m, s, shape_of: _Take, op: str, *, copy: bool) -> None:
    """A view where one can have the new shape on the input's strides; else a tracked copy (*copy*) or a
    refusal (torch's ``view_as`` of strides no view has raises, as ``view`` does)."""
    source = m.tensor(s.args[0])
    shape = np.shape(shape_of(np.empty(source.shape)))
    if _viewable(source, shape):
        m.bind(s, source.view(lambda a: np.reshape(shape_of(a), shape)))
    elif copy:
        m.bind(s, m.new(lambda x: (np.reshape(x, shape).copy(), [lambda g: np.reshape(g, x.shape)]), s.args[0]))
    else:
        raise ValueError(f"{op} of a tensor whose strides no view of shape {list(shape)} has: the frameworks "
                         f"refuse it")


def _flatten_reference(m, s) -> None:
    """torch: "the original object, a view, or a copy": a view where the strides allow, else a copy."""
    take = _flattened(int(s.fields["start_dim"]), int(s.fields["end_dim"]))
    _view_or_copy(m, s, take, "flatten", copy=True)


def _view_as_reference(m, s) -> None:
    shape = m.tensor(s.args[1]).shape
    _view_or_copy(m, s, lambda a: np.reshape(a, shape), "view_as", copy=False)


def _check_flatten(data, scope, fail) -> None:
    _int_field(data, "start_dim", fail)
    _int_field(data, "end_dim", fail)


register(Op(
    "squeeze", "out = t.squeeze(dim): a view without dimension dim if its size is 1 (without dim: every "
    "size-1 dimension).", args=("tensor",),
    fields={"dim": Field("number", default=None, doc="the dimension (none: every dimension of size 1)")},
    check=_optional_dim,
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).view(_squeezed(s.fields["dim"]))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(
        s.args[0], "squeeze", *(() if s.fields["dim"] is None else (str(s.fields["dim"]),)))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dim": d.dim(len(d.shape(x)))})(
        d.pick("tensor", where=lambda f: len(f.shape) > 0)),
))
register(Op(
    "unsqueeze", "out = t.unsqueeze(dim): a view with a dimension of size 1 inserted at dim.", args=("tensor",),
    fields={"dim": Field("number", required=True, doc="where the new dimension goes")}, check=_optional_dim,
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).view(_unsqueezed(int(s.fields["dim"])))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "unsqueeze", str(s.fields["dim"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dim": d.integer(0, len(d.shape(x)))})(
        d.pick("tensor")),
))
register(Op(
    "flatten", "out = t.flatten(start_dim, end_dim): dimensions start..end merged into one; a view where the "
    "input's strides allow, else a copy.", args=("tensor",),
    fields={"start_dim": Field("number", default=0), "end_dim": Field("number", default=-1)},
    check=_check_flatten, run_reference=_flatten_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "flatten", str(s.fields["start_dim"]),
                                                                str(s.fields["end_dim"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "start_dim": 0, "end_dim": -1})(
        d.pick("tensor")),
))
register(Op(
    "view_as", "out = t.view_as(other): t.view(other's shape): a view (one the input's strides allow).",
    args=("tensor", "tensor"), run_reference=_view_as_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "view_as", s.args[1])),
    fuzz="other must have as many elements as t, which the fuzzer's draw of a second tensor does not promise",
))


# -- permute, swapdims, T, mT, expand_as, reshape_as: what users write for a transpose, expand, reshape ---


def _check_permutation(data, scope, fail) -> None:
    dims = data["dims"]
    if sorted(d % len(dims) if -len(dims) <= d < len(dims) else d for d in dims) != list(range(len(dims))):
        raise fail(f"dims must order every dimension once, not {dims!r}")


def _permuted(dims: list[int]) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        if len(dims) != a.ndim:
            raise ValueError(f"permute names {len(dims)} dimensions of a tensor of {a.ndim}")
        return a.transpose([d % a.ndim for d in dims])
    return take


def _swapped(dims: list[int]) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        return np.swapaxes(a, _axis(dims[0], a.ndim), _axis(dims[1], a.ndim))
    return take


def _matrix_transposed(a: np.ndarray) -> np.ndarray:
    if a.ndim < 2:
        raise ValueError(f"mT of a tensor of {a.ndim} dimensions: both frameworks need at least 2")
    return np.swapaxes(a, -1, -2)


def _check_two(data, scope, fail) -> None:
    if len(data["dims"]) != 2:
        raise fail(f"dims must name two dimensions, not {data['dims']!r}")


def _view_by(take_of: Callable[[Mapping[str, Any]], _Take]):
    return lambda m, s: m.bind(s, m.tensor(s.args[0]).view(take_of(s.fields)))


register(Op(
    "permute", "out = t.permute(*dims): a view with the dimensions in the order dims names (paddle: "
    "t.transpose(perm=dims)).", args=("tensor",),
    fields={"dims": Field("ints", required=True, doc="every dimension once, in the new order")},
    check=_check_permutation, run_reference=_view_by(lambda f: _permuted(f["dims"])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "permute", *map(str, s.fields["dims"]))),
    fuzz="dims must order every dimension of its tensor, which the fuzzer's draw of a dimension does not promise",
))
for _name in ("swapdims", "swapaxes"):
    register(Op(
        _name, f"out = t.{_name}(d0, d1): transpose under another name (a view with two dimensions swapped).",
        args=("tensor",), fields={"dims": Field("ints", required=True, doc="the two dimensions to swap")},
        check=_check_two, run_reference=_view_by(lambda f: _swapped(f["dims"])),
        run_spell=(lambda name: lambda w, s: w.emit(f"{w.out(s)} = " + w.method(
            s.args[0], name, *map(str, s.fields["dims"]))))(_name),
        fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dims": [d.dim(len(d.shape(x))) for _ in "ab"]})(
            d.pick("tensor", where=lambda f: len(f.shape) > 0)),
    ))
register(Op(
    "T", "out = t.T: the view with every dimension reversed (a 2-D tensor's transpose; torch warns it is "
    "deprecated for other ranks).", args=("tensor",),
    run_reference=_view_by(lambda f: np.transpose),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'T')}"),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x]})(d.pick("tensor", where=lambda f: len(f.shape) == 2)),
))
register(Op(
    "mT", "out = t.mT: the view with the last two dimensions swapped (a batch of matrices transposed).",
    args=("tensor",), run_reference=_view_by(lambda f: _matrix_transposed),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'mT')}"),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x]})(d.pick("tensor", where=lambda f: len(f.shape) >= 2)),
))

# .H and .mH: the conjugate transposes; of a real tensor, the transposes themselves (torch's test_transposes
# compares a.H with a.transpose(-2, -1).conj(), and conj() of a real tensor is the tensor itself).
register(Op(
    "H", "out = t.H: the conjugate transpose of a matrix, a view (of a real tensor, t.T).", args=("tensor",),
    run_reference=_view_by(lambda f: np.transpose),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'H')}"),
    fuzz="of a real tensor the view T is, which the fuzzer draws",
))
register(Op(
    "mH", "out = t.mH: the conjugate transpose of a batch of matrices, a view (of a real tensor, t.mT).",
    args=("tensor",), run_reference=_view_by(lambda f: _matrix_transposed),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'mH')}"),
    fuzz="of a real tensor the view mT is, which the fuzzer draws",
))


def _expand_as_reference(m, s) -> None:
    source, shape = m.tensor(s.args[0]), m.tensor(s.args[1]).shape
    np.broadcast_shapes(source.shape, shape)  # NumPy's error where the frameworks refuse it
    if len(shape) < len(source.shape):
        raise ValueError(f"cannot expand a tensor of shape {list(source.shape)} to {list(shape)}")
    m.bind(s, source.view(lambda a: np.broadcast_to(a, shape)))  # repeated elements: the same positions


def _reshape_as_reference(m, s) -> None:
    shape = m.tensor(s.args[1]).shape
    _view_or_copy(m, s, lambda a: np.reshape(a, shape), "reshape_as", copy=True)


register(Op(
    "expand_as", "out = t.expand_as(other): t.expand(other's shape): a view whose repeated elements are the "
    "same memory.", args=("tensor", "tensor"), run_reference=_expand_as_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "expand_as", s.args[1])),
    fuzz="other must have a shape t broadcasts to, which the fuzzer's draw of a second tensor does not promise",
))
register(Op(
    "reshape_as", "out = t.reshape_as(other): t.reshape(other's shape): a view where the input's strides "
    "allow, else a copy.", args=("tensor", "tensor"), run_reference=_reshape_as_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "reshape_as", s.args[1])),
    fuzz="other must have as many elements as t, which the fuzzer's draw of a second tensor does not promise",
))


# -- diagonal, unfold, as_strided: a selection of the input's elements ------------------------------


def _diagonal(offset: int, dim1: int, dim2: int) -> _Take:
    def take(a: np.ndarray) -> np.ndarray:
        first, second = _axis(dim1, a.ndim), _axis(dim2, a.ndim)
        if first == second:
            raise ValueError(f"diagonal dimensions must differ, not {dim1} and {dim2}")
        return np.diagonal(a, offset, first, second)  # the diagonal is the last dimension, as in torch
    return take


def _unfolded(dim: int, size: int, step: int) -> _Take:
    """Windows of *size* every *step* along *dim*; the window is a new last dimension (overlapping when
    step < size: one element in several windows is one memory location)."""
    def take(a: np.ndarray) -> np.ndarray:
        axis = _axis(dim, max(a.ndim, 1))
        if a.ndim == 0 or size > a.shape[axis]:
            raise ValueError(f"unfold of size {size} along a dimension of size "
                             f"{a.shape[axis] if a.ndim else 1}")
        windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=axis)
        return windows[(slice(None),) * axis + (slice(None, None, step),)]
    return take


def _as_strided_reference(m, s) -> None:
    """The storage positions ``storage_offset + sum(i * stride)`` (offset: the input's own, unless given),
    counted in elements; they must be elements of the input's base (of the input, if it is no view)."""
    source = m.tensor(s.args[0])
    root = source.base if source.base is not None else source
    _, here = strided_elements(source, s.fields, "as_strided")
    m.bind(s, root.view(lambda a: a.reshape(-1)[here]))


def _check_diagonal(data, scope, fail) -> None:
    for name in ("offset", "dim1", "dim2"):
        _int_field(data, name, fail)


register(Op(
    "diagonal", "out = t.diagonal(offset, dim1, dim2): a view of the diagonal of the planes dim1 x dim2 "
    "(offset > 0: above it), as a last dimension.", args=("tensor",),
    fields={"offset": Field("number", default=0), "dim1": Field("number", default=0),
            "dim2": Field("number", default=1)},
    check=_check_diagonal,
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).view(
        _diagonal(int(s.fields["offset"]), int(s.fields["dim1"]), int(s.fields["dim2"])))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(
        s.args[0], "diagonal", *(str(s.fields[k]) for k in ("offset", "dim1", "dim2")))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "offset": 0, "dim1": 0, "dim2": 1})(
        d.pick("tensor", where=lambda f: len(f.shape) >= 2)),
))
register(Op(
    "unfold", "out = t.unfold(dimension, size, step): a view of the windows of size along dimension, every "
    "step elements, as a new last dimension (windows overlap when step < size).", args=("tensor",),
    fields={"dimension": Field("number", default=0), "size": Field("int", required=True),
            "step": Field("int", required=True)},
    check=lambda data, scope, fail: _int_field(data, "dimension", fail),
    run_reference=lambda m, s: m.bind(s, m.tensor(s.args[0]).view(
        _unfolded(int(s.fields["dimension"]), s.fields["size"], s.fields["step"]))),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(
        s.args[0], "unfold", *(str(s.fields[k]) for k in ("dimension", "size", "step")))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "dimension": 0, "size": 1, "step": 1})(
        d.pick("tensor", where=lambda f: len(f.shape) >= 1 and f.shape[0] >= 1)),
))
register(Op(
    "as_strided", "out = t.as_strided(size, stride, storage_offset): a view of the storage positions "
    "storage_offset + sum(i * stride), in elements (offset: t's own, unless given).", args=("tensor",),
    fields={"size": Field("ints", required=True, doc="the sizes of the view"),
            "stride": Field("ints", required=True, doc="its strides, in elements"),
            "storage_offset": Field("number", default=None, doc="where element 0 lies, in elements")},
    check=_check_as_strided, run_reference=_as_strided_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(
        s.args[0], "as_strided", _sizes(s.fields["size"]), _sizes(s.fields["stride"]),
        *(() if s.fields["storage_offset"] is None else (str(s.fields["storage_offset"]),)))),
    fuzz="the positions a stride reaches depend on the storage, which the fuzzer does not track",
))


# -- splits into views: tensor_split, hsplit, vsplit, dsplit, split_count -------------------------------


def _bounds(size: int, sections: int | None, indices: list[int] | None) -> list[tuple[int | None, int | None]]:
    """The (start, stop) of each part of a dimension of *size*: *sections* parts (the first size % sections
    one longer, torch.tensor_split's rule), or parts cut before each of *indices* (Python slices)."""
    if indices is not None:
        cuts: list[int | None] = [None, *indices, None]
        return list(zip(cuts[:-1], cuts[1:]))
    if sections is None or sections < 1:
        raise ValueError(f"a split needs a positive number of sections, not {sections!r}")
    lengths = [size // sections + (1 if i < size % sections else 0) for i in range(sections)]
    starts = np.cumsum([0, *lengths]).tolist()
    return list(zip(starts[:-1], starts[1:]))


def _split_views(m, s, axis_of: Callable[[int], int], *, equal: bool, op: str) -> None:
    shape = m.tensor(s.args[0]).shape
    axis = axis_of(len(shape))
    sections, indices = s.fields.get("sections"), s.fields.get("indices")
    if equal and indices is None and shape[axis] % sections:
        raise ValueError(f"{op} into {sections} equal sections of a dimension of size {shape[axis]}: the "
                         f"frameworks refuse it")
    lead = (slice(None),) * axis
    _bind_views(m, s, [(lambda lo, hi: lambda a: a[lead + (slice(lo, hi),)])(lo, hi)
                       for lo, hi in _bounds(shape[axis], sections, indices)])


def _fixed_axis(op: str, axis: int, least: int) -> Callable[[int], int]:
    """hsplit's dimension 1 (0 of a vector), vsplit's 0, dsplit's 2: of a tensor of at least *least* dims."""
    def axis_of(ndim: int) -> int:
        if ndim < least:
            raise ValueError(f"{op} needs a tensor of at least {least} dimensions, not {ndim}")
        return 0 if op == "hsplit" and ndim == 1 else axis
    return axis_of


def _parts(data) -> int:
    return len(data["indices"]) + 1 if data.get("indices") is not None else int(data.get("sections") or 0)


def _check_parts(data, scope, fail) -> None:
    """Either sections or indices; as many names as parts (as Python's unpacking demands)."""
    if (data.get("sections") is None) == (data.get("indices") is None):
        raise fail("give either sections (how many parts) or indices (where to cut)")
    _int_field(data, "dim", fail)
    out = data.get("out")
    count = len(out) if isinstance(out, list) else 1
    if count != _parts(data):
        raise fail(f"the split gives {_parts(data)} parts, so it binds as many names, got {out!r}")


def _split_spell(method: str, dim: bool) -> Callable[[Any, Any], None]:
    def spell(w, s) -> None:
        parts = str(s.fields["sections"]) if s.fields.get("indices") is None else _sizes(s.fields["indices"])
        w.emit(f"{_unpack(s)} = " + w.method(s.args[0], method, parts, *((str(s.fields["dim"]),) if dim else ())))
    return spell


def _tensor_split_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) >= 1)
    if x is None:
        return None
    shape = d.shape(x)
    dim = d.dim(len(shape))
    sections = d.integer(1, 3)
    return {"args": [x], "sections": sections, "indices": None, "dim": dim, "out": sections}


def _fixed_split_fuzz(axis: int, least: int):
    def fuzz(d):
        x = d.pick("tensor", where=lambda f: len(f.shape) >= least and f.shape[axis if len(f.shape) > 1 else 0] >= 1)
        if x is None:
            return None
        size = d.shape(x)[axis if len(d.shape(x)) > 1 else 0]
        sections = d.choice([n for n in (1, 2, 3) if size % n == 0])
        return {"args": [x], "sections": sections, "indices": None, "out": sections}
    return fuzz


_SECTIONS = Field("int", default=None, doc="how many parts")
_INDICES = Field("ints", default=None, doc="where to cut (each part ends before the next index)")

register(Op(
    "tensor_split", "a, b, ... = t.tensor_split(sections or [indices], dim): views of consecutive parts "
    "along dim (sections parts, the first size % sections one longer; or cut before each index).",
    args=("tensor",), out="many",
    fields={"sections": _SECTIONS, "indices": _INDICES, "dim": Field("number", default=0)},
    check=_check_parts,
    run_reference=lambda m, s: _split_views(m, s, lambda n: _axis(int(s.fields["dim"]), n), equal=False,
                                            op="tensor_split"),
    run_spell=_split_spell("tensor_split", dim=True), fuzz=_tensor_split_fuzz,
))
for _name, _axis_no, _least in (("hsplit", 1, 1), ("vsplit", 0, 2), ("dsplit", 2, 3)):
    register(Op(
        _name, f"a, b, ... = t.{_name}(sections or [indices]): tensor_split along dimension {_axis_no}"
        + (" (0 of a vector)" if _name == "hsplit" else f" of a tensor of at least {_least} dimensions")
        + "; sections must divide the dimension.", args=("tensor",), out="many",
        fields={"sections": _SECTIONS, "indices": _INDICES}, check=_check_parts,
        run_reference=(lambda op, axis, least: lambda m, s: _split_views(
            m, s, _fixed_axis(op, axis, least), equal=True, op=op))(_name, _axis_no, _least),
        run_spell=_split_spell(_name, dim=False), fuzz=_fixed_split_fuzz(_axis_no, _least),
    ))


def _split_count_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) >= 1)
    if x is None:
        return None
    shape = d.shape(x)
    dim = d.dim(len(shape))
    sections = d.choice([n for n in (1, 2, 3) if shape[dim] % n == 0])
    return {"args": [x], "sections": sections, "dim": dim, "out": sections}


def _check_split_count(data, scope, fail) -> None:
    _integer_dim(data, scope, fail)
    out = data.get("out")
    count = len(out) if isinstance(out, list) else 1
    if count != data["sections"]:
        raise fail(f"a split into {data['sections']} sections binds as many names, got {out!r}")


register(Op(
    "split_count", "a, b, ... = t split into `sections` equal parts along dim (the size must divide): torch's "
    "users write t.chunk(n, dim), paddle's x.split(n, axis).  Beware: the same text t.split(2) means parts "
    "of SIZE 2 in torch and 2 parts in paddle; this op is the count.",
    args=("tensor",), out="many",
    fields={"sections": Field("int", required=True, doc="how many equal parts"), "dim": Field("number", default=0)},
    check=_check_split_count,
    run_reference=lambda m, s: _split_views(m, s, lambda n: _axis(int(s.fields["dim"]), n), equal=True,
                                            op="split_count"),
    run_spell=lambda w, s: w.emit(f"{_unpack(s)} = " + w.method(s.args[0], "chunk", str(s.fields["sections"]),
                                                                 str(s.fields["dim"]))),
    fuzz=_split_count_fuzz,
))
