"""Complex tensors and the views that look into them: ``.real``, ``.imag``, ``view_as_real``, ``conj``, and
``view_as_complex``, which looks at a float tensor's pairs as complex numbers.

The reference holds a complex tensor of shape S as float64 pairs of shape S+(2,), the memory layout
``view_as_real`` exposes (real part, then imaginary part, per element), so each view is an indexing of
those pairs and write-through follows from the storage model alone: ``real`` is ``[..., 0]``, ``imag``
``[..., 1]``, ``view_as_real`` the pairs themselves.  ``conj`` follows torch's documentation ("returns a
view with flipped conjugate bit"): the same storage, read and written with the imaginary part negated
(``Tensor.signs``, torch's neg bit on the imaginary part).  Paddle's ``conj`` computes a new tensor
(``PaddleAdapter.copies``).  No gradients: a complex tensor never requires grad here, and any op not
marked ``takes_complex`` refuses one (``judge/model.py``).  A complex value is observed as its pairs, in
the worker (``workers/worker.py``) and the reference alike.

None of these is fuzzed: the fuzzer draws float tensors, and these ops take complex ones.
"""

from __future__ import annotations

import math

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.tensors import literal

__all__ = ["COMPLEX_DTYPES", "complex_literal"]

COMPLEX_DTYPES = ("complex64", "complex128")
#: the dtype of each part of a complex dtype (what ``.real`` and ``view_as_real`` give)
PART_DTYPES = {"complex64": "float32", "complex128": "float64"}
_NOT_FUZZED = "takes a complex tensor; the fuzzer draws float tensors"
#: torch's conjugate bit, as signs on the (real, imaginary) pair
_CONJUGATE = np.array([1.0, -1.0])


def complex_literal(real: object, imag: object) -> str:
    """Python source for the nested list of complex numbers ``real + imag*j`` (``[(1+2j), (3-1j)]``), as a
    user writes the literal; the parts are finite numbers (checked by :func:`_check_parts`)."""
    if isinstance(real, list):
        return "[" + ", ".join(complex_literal(r, i) for r, i in zip(real, imag)) + "]"
    return repr(complex(float(real), float(imag)))


def _check_parts(data, scope, fail) -> None:
    real, imag = data["real"], data["imag"]
    if np.shape(real) != np.shape(imag):
        raise fail(f"real {list(np.shape(real))} and imag {list(np.shape(imag))} must have one shape")
    if not all(math.isfinite(v) for v in np.asarray([real, imag], dtype=np.float64).reshape(-1)):
        raise fail("the parts of a complex literal must be finite numbers")


def _complex(m, name: str):
    """The named tensor, which must be complex: torch and paddle refuse ``imag``/``view_as_real`` of a real
    tensor, and the reference models these views of complex tensors only."""
    tensor = m.tensor(name)
    if tensor.complex_dtype is None:
        raise ValueError(f"{name!r} is not a complex tensor: these views are modelled for complex tensors only")
    return tensor


def _conjugated(tensor) -> bool:
    return tensor.signs is not None and bool((tensor.signs < 0).any())


def _complex_tensor_reference(m, s) -> None:
    from conformance.judge.model import Tensor

    f = s.fields
    part = PART_DTYPES[f["dtype"]]  # each part rounded to the dtype's float, as the framework holds it
    tensor = Tensor.fresh(np.stack([literal(f["real"], part), literal(f["imag"], part)], axis=-1))
    tensor.complex_dtype = f["dtype"]
    m.bind(s, tensor)


def _part(index: int):
    """``real`` (0) or ``imag`` (1): a float view of one part of each pair; of a ``conj`` view, the
    imaginary part keeps the negation (torch: ``x.conj().imag.is_neg()``)."""
    def reference(m, s) -> None:
        m.bind(s, _complex(m, s.args[0]).view(lambda a: a[..., index]))
    return reference


def _view_as_real_reference(m, s) -> None:
    source = _complex(m, s.args[0])
    if _conjugated(source):
        raise ValueError("view_as_real of a conj() view: torch refuses an unresolved conjugate "
                         "(resolve_conj first), so no value is modelled")
    m.bind(s, source.view(lambda a: a))


def _view_as_complex_reference(m, s) -> None:
    """A complex view of a float tensor whose last dimension holds (real, imag) pairs: the same memory, as
    the reference holds every complex tensor (torch: "the last dimension of the input tensor must have size 2
    and stride 1")."""
    source = m.tensor(s.args[0])
    complex_dtype = {part: whole for whole, part in PART_DTYPES.items()}.get(source.dtype or "")
    if complex_dtype is None:
        raise ValueError("view_as_complex of a tensor whose dtype the reference does not know as float32 or "
                         "float64 (make it from a literal) is not modelled")
    positions = source.positions
    if not positions.shape or positions.shape[-1] != 2 or not (np.diff(positions, axis=-1) == 1).all():
        raise ValueError("view_as_complex needs a last dimension of size 2 whose elements lie next to each other "
                         "(the frameworks refuse any other)")
    if source.requires_grad:
        raise ValueError("a complex view of a tensor that requires grad: complex gradients are not modelled")
    view = source.view(lambda a: a)
    view.complex_dtype = complex_dtype
    m.bind(s, view)


def _conj_reference(m, s) -> None:
    if m.tensor(s.args[0]).complex_dtype is None:  # torch.conj: "If input has a non-complex dtype, this
        m.bind(s, m.tensor(s.args[0]))            # function just returns input."
        return
    source = _complex(m, s.args[0])
    view = source.view(lambda a: a)
    signs = np.ones(source.shape) if source.signs is None else source.signs
    view.signs = signs * _CONJUGATE
    view.complex_dtype = source.complex_dtype
    m.bind(s, view)


def _conj_physical_reference(m, s) -> None:
    source = _complex(m, s.args[0])
    copy = m.new(lambda x: (x * _CONJUGATE, [lambda g: g * _CONJUGATE]), s.args[0])
    copy.complex_dtype = source.complex_dtype
    m.bind(s, copy)


def _resolve_conj_reference(m, s) -> None:
    source = _complex(m, s.args[0])
    if not _conjugated(source):  # "else returns input"
        m.bind(s, source)
        return
    copy = m.new(lambda x: (x.copy(), [lambda g: g]), s.args[0])  # the conjugate's values, materialised
    copy.complex_dtype = source.complex_dtype
    m.bind(s, copy)


def _complex_tensor_spell(w, s) -> None:
    f = s.fields
    w.emit(f"{w.out(s)} = " + w.a.tensor(complex_literal(f["real"], f["imag"]), f["dtype"], False))


register(Op(
    "complex_tensor", "A complex tensor from the literal real + imag*j (torch.tensor, paddle.to_tensor).",
    stage="setup", takes_complex=True, check=_check_parts,
    fields={"real": Field("numbers", required=True, doc="the real parts: a number or a nested list"),
            "imag": Field("numbers", required=True, doc="the imaginary parts, of the shape of real"),
            "dtype": Field("dtype", default="complex64", choices=COMPLEX_DTYPES)},
    run_reference=_complex_tensor_reference, run_spell=_complex_tensor_spell, fuzz=_NOT_FUZZED,
))
register(Op(
    "real", "out = t.real: a float view of the real parts of a complex tensor (paddle: paddle.real(t)).",
    args=("tensor",), takes_complex=True, run_reference=_part(0), fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'real')}"),
))
register(Op(
    "imag", "out = t.imag: a float view of the imaginary parts of a complex tensor (paddle: paddle.imag(t)).",
    args=("tensor",), takes_complex=True, run_reference=_part(1), fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'imag')}"),
))
register(Op(
    "view_as_real", "out = torch.view_as_real(t): a float view of shape t.shape + (2,), the (real, imag) pairs "
    "(paddle: paddle.as_real(t)).", args=("tensor",), takes_complex=True,
    run_reference=_view_as_real_reference, fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.function('view_as_real')}({s.args[0]})"),
))
register(Op(
    "view_as_complex", "out = torch.view_as_complex(t): a complex view of a float tensor of shape S + (2,), "
    "each pair (real, imag) one element (paddle: paddle.as_complex(t)).", args=("tensor",),
    run_reference=_view_as_complex_reference, fuzz="needs a last dimension of size 2 and a dtype the fuzzer "
    "does not track",
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.function('view_as_complex')}({s.args[0]})"),
))
register(Op(
    "conj", "out = t.conj(): torch documents a view with the conjugate bit flipped (the same memory, read "
    "conjugated); paddle.conj(t) computes a new tensor.", args=("tensor",), takes_complex=True,
    run_reference=_conj_reference, fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "conj")),
))
register(Op(
    "conj_physical", "out = torch.conj_physical(t): the conjugate, computed into new memory.", args=("tensor",),
    takes_complex=True, run_reference=_conj_physical_reference, fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.function('conj_physical')}({s.args[0]})"),
))
register(Op(
    "resolve_conj", "out = t.resolve_conj(): a new tensor holding the conjugate when t has the conjugate bit, "
    "else t itself.", args=("tensor",), takes_complex=True,
    run_reference=_resolve_conj_reference, fuzz=_NOT_FUZZED,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "resolve_conj")),
))
