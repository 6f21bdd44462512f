"""The dtype view: the same memory read as another dtype (``t.view(torch.int32)``, paddle ``x.view('int32')``).

Its elements are the bit patterns of its input's elements (``judge/bits.py``): writing one changes the
bytes of the input's element under it, so ``v.add_(1)`` on an int32 view of a float32 tensor moves each
float by one unit in the last place.  A narrower dtype (``uint8``) has several elements per input
element, along the last dimension (torch: "the size of the last dimension ... scaled by the ratio").

The reference knows the dtype of a tensor made from a literal (``tensor``, ``array``, ``full``) and of its
aliases and views, so it models a dtype view of those only; a dtype view of a dtype view is left
unmodelled (the reference says so).  A wider dtype (float32 as float64) has fewer elements along the last
dimension, each spanning several of the input's elements in a row.  A dtype view has no history: torch's
``view(dtype)`` is not differentiable and is no autograd view (``_base`` is None); only its memory is shared.
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register

__all__ = ["VIEW_DTYPES"]

VIEW_DTYPES = ("float32", "float64", "int32", "int64", "uint8")


def _view_dtype_reference(m, s) -> None:
    from conformance.judge.bits import Reinterpretation
    from conformance.judge.model import Tensor

    source = m.tensor(s.args[0])
    seen = np.dtype(s.fields["dtype"])
    if source.reinterpret is not None:
        raise ValueError("a dtype view of a dtype view is not modelled")
    if source.dtype is None:
        raise ValueError("the reference knows the dtype of a tensor made from a literal (tensor, array, full) "
                         "and of its aliases and views only, so a dtype view of this one is not modelled")
    stored = np.dtype(source.dtype)
    ratio = stored.itemsize // seen.itemsize
    positions, part = source.positions, None
    if seen.itemsize > stored.itemsize:
        positions = _wider(positions, seen.itemsize // stored.itemsize, stored, seen)
    elif ratio > 1:
        if positions.ndim == 0:
            raise ValueError(f"a 0-d tensor viewed as the narrower {seen.name}: the frameworks refuse it")
        if positions.shape[-1] > 1 and not (np.diff(positions, axis=-1) == 1).all():
            raise ValueError(f"a view as the narrower {seen.name} of a tensor whose last dimension is not "
                             f"contiguous: the frameworks refuse it")
        positions = np.repeat(positions, ratio, axis=-1)
        part = np.indices(positions.shape)[-1] % ratio
    view = Tensor(source.storage, positions, kind=source.kind)  # a history of its own: none
    view.reinterpret = Reinterpretation(stored, seen, part)
    view.dtype = seen.name
    m.bind(s, view)


def _wider(positions: np.ndarray, span: int, stored: np.dtype, seen: np.dtype) -> np.ndarray:
    """Where each element of a view as the wider *seen* is placed: the first of the *span* storage
    positions in a row it covers.  NumPy's ``ndarray.view`` is the rule: the last dimension must be
    contiguous and a multiple of the ratio, and an element may start at any storage position (torch
    further refuses an offset that is not a multiple of the ratio, documented as its own condition)."""
    refused = f"a view of {stored.name} as the wider {seen.name}"
    if positions.ndim == 0:
        raise ValueError(f"{refused} of a 0-d tensor: the frameworks refuse it")
    if positions.shape[-1] % span:
        raise ValueError(f"{refused} of a last dimension of {positions.shape[-1]}, not a multiple of {span}: "
                         f"the frameworks refuse it")
    if positions.size == 0:
        return positions[..., ::span]
    if positions.shape[-1] > 1 and not (np.diff(positions, axis=-1) == 1).all():
        raise ValueError(f"{refused} of a tensor whose last dimension is not contiguous: the frameworks refuse it")
    first = positions[..., ::span]
    if np.unique(first % span).size > 1:
        raise ValueError(f"{refused} whose rows start at storage positions that differ by other than a "
                         f"multiple of {span} is not modelled")
    return first


def _view_dtype_spell(w, s) -> None:
    dtype = f"{w.a.root}.{s.fields['dtype']}"
    w.a.resolve(dtype)
    w.emit(f"{w.out(s)} = " + w.method(s.args[0], "view", dtype))


register(Op(
    "view_dtype", "out = t.view(dtype): t's memory read as another dtype (a float32 as int32, as 4 uint8 "
    "along the last dimension, or two float32 as one float64); writes through it change t's bits.",
    args=("tensor",),
    fields={"dtype": Field("dtype", required=True, choices=VIEW_DTYPES, doc="the dtype the memory is read as")},
    run_reference=_view_dtype_reference, run_spell=_view_dtype_spell,
    fuzz="its elements are the bits of computed floats, where one unit of float32 rounding is a different "
    "byte: the fuzzer would find rounding, not aliasing (and it needs a tensor made from a literal)",
))
