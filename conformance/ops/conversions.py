"""NumPy interop beyond from_numpy/to_tensor, and conversions that may return the very same tensor.

Storage, as the frameworks document it (``docs/reference.md``):

* DLPack (``from_dlpack`` a NumPy array, NumPy's ``np.from_dlpack`` of a tensor)
  and the Tensor class asked for zero copy alias their input.
* ``as_tensor`` aliases an array of the same dtype on the CPU as torch documents
  it; paddle documents its ``as_tensor`` as a copy.  The frameworks disagree,
  so cases with it observe memory and the reference's choice is evidence only.
  The same holds for the Tensor class without ``zero_copy`` (modelled as a copy).
* A conversion to the dtype and device the tensor already has (``to``,
  ``float``, ``astype``/``type``, ``cpu``) returns the tensor itself, as both
  frameworks document; with ``copy: true`` it is a new tensor the graph tracks.
  The reference models exactly that case: the catalogue converts to what the
  tensor already is (float32 on the case's device), which the op's fields name.
  ``cpu`` on a GPU copies; cases with it observe memory.

Where an argument is new in some versions (``zero_copy``, ``copy=``), its
absence is found by calling the installed framework on a one-element tensor:
a ``TypeError`` there makes the step unsupported.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.tensors import DTYPES

__all__: list[str] = []


def _unsupported(message: str) -> Exception:
    from conformance.unsupported import Unsupported

    return Unsupported(message)


def _require_keyword(w, what: str, keyword: str, call: Callable[[], Any]) -> None:
    """Unsupported unless the installed framework accepts *keyword* in *call* (a one-element probe)."""
    try:
        call()
    except TypeError as exc:
        raise _unsupported(f"{what} takes no {keyword!r} argument in {w.a.name} {w.a.version} "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]})") from None


def _on_device(w, expr: str) -> str:
    """A tensor made on the host moved to the case's device, as a user moves it."""
    if w.device == "cpu":
        return expr
    w.a.require_method("cuda")
    return f"{expr}.cuda()"


# -- references ---------------------------------------------------------------------------


def _alias(kind: str = "tensor"):
    return lambda m, s: m.bind(s, m.get(s.args[0]).alias(kind=kind))


def _fresh_copy(m, s) -> None:
    from conformance.judge.model import Tensor

    m.bind(s, Tensor.fresh(m.get(s.args[0]).value))


def _same_or_copy(m, s) -> None:
    """A conversion to what the tensor already is: the tensor itself, or a tracked copy (copy=True)."""
    if s.fields.get("copy"):
        m.bind(s, m.new(lambda x: (x.copy(), [lambda g: g]), s.args[0]))
    else:
        m.bind(s, m.tensor(s.args[0]))


# -- NumPy interop ------------------------------------------------------------------------


def _as_tensor_spell(w, s) -> None:
    call = f"{w.a.root}.as_tensor"
    w.a.resolve(call)
    device = ", device=DEVICE" if w.device != "cpu" else ""
    w.emit(f"{w.out(s)} = {call}({s.args[0]}{device})")


def _from_dlpack_spell(w, s) -> None:
    call = f"{w.a.root}.from_dlpack"
    w.a.resolve(call)
    w.emit(f"{w.out(s)} = " + _on_device(w, f"{call}({s.args[0]})"))


def _array_from_dlpack_spell(w, s) -> None:
    if not hasattr(np, "from_dlpack"):
        raise _unsupported(f"numpy {np.__version__} has no from_dlpack")
    x = s.args[0]
    source = x if w.device == "cpu" else w.method(x, "cpu")  # NumPy reads host memory only
    w.emit(f"{w.out(s)} = np.from_dlpack({source})")


def _construct_tensor_spell(w, s) -> None:
    cls = f"{w.a.root}.Tensor"
    tensor_class = w.a.resolve(cls)
    extra = ""
    if s.fields["zero_copy"]:
        _require_keyword(w, f"{cls}()", "zero_copy",
                         lambda: tensor_class(np.zeros(1, dtype=np.float32), zero_copy=True))
        extra = ", zero_copy=True"
    w.emit(f"{w.out(s)} = " + _on_device(w, f"{cls}({s.args[0]}{extra})"))


#: Why an op whose storage the frameworks document differently is not fuzzed: the reference's choice is
#: evidence only (cases with it observe memory), and the fuzzer judges every value it reads.
_DISPUTED = ("whether it copies is documented differently by the frameworks (docs/reference.md): a value read "
             "through it has no reference, and the fuzzer judges every observation")


register(Op(
    "as_tensor", "out = as_tensor(a): torch documents sharing an array of the same dtype on the CPU, paddle "
    "documents a copy (cases observe memory).", args=("array",), stage="setup",
    run_reference=_alias(), run_spell=_as_tensor_spell, fuzz=_DISPUTED,
))
register(Op(
    "from_dlpack", "out = from_dlpack(a): a tensor on a NumPy array's memory through the DLPack protocol.",
    args=("array",), stage="setup", run_reference=_alias(), run_spell=_from_dlpack_spell,
))
register(Op(
    "array_from_dlpack", "out = np.from_dlpack(t): a NumPy array on a tensor's memory through DLPack "
    "(on a CPU).", args=("tensor",), binds="array", stage="outside",
    run_reference=_alias("array"), run_spell=_array_from_dlpack_spell,
))
register(Op(
    "construct_tensor", "out = Tensor(a): the framework's Tensor class called on an array; zero_copy asks it not "
    "to copy where the class takes that argument (paddle).", args=("array",), stage="setup",
    fields={"zero_copy": Field("bool", default=False, doc="pass zero_copy=True")},
    run_reference=lambda m, s: (_alias() if s.fields["zero_copy"] else _fresh_copy)(m, s),
    run_spell=_construct_tensor_spell,
    # Drawn with zero_copy only (paddle documents it sharing the array; torch's class has no such argument):
    # whether the class copies without it is not documented alike (see _DISPUTED).  And torch.Tensor(a)
    # makes float32 whatever a's dtype: in a float64 program later steps would take it to have a's.
    fuzz=lambda d: {"zero_copy": True} if d.dtype == "float32" else None,
))



def _tensor_of_reference(m, s) -> None:
    """A new leaf holding the tensor's current values, outside the graph (both frameworks document the
    constructor as copying its data, and warn that copying a tensor is spelled ``clone().detach()``)."""
    from conformance.judge.model import Tensor

    m.bind(s, Tensor.fresh(m.tensor(s.args[0]).value.copy()))


register(Op(
    "tensor_of", "out = torch.tensor(t) (paddle.to_tensor(t)): the constructor called on a tensor: a copy of its "
    "values outside the graph, with a warning in both frameworks that clone().detach() is the spelling.",
    args=("tensor",), run_reference=_tensor_of_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.to_tensor(s.args[0], w.device)}"),
    fuzz="both frameworks warn on every call, so every drawn program would be a warns cell",
))


# -- conversions that may return the tensor itself ---------------------------------------

_COPY = Field("bool", default=False, doc="ask for a new tensor even when nothing changes (copy=True)")
_SAME_DTYPE = Field("dtype", required=True, choices=DTYPES,
                    doc="the dtype the tensor already has (the reference models no cast)")


def _to_check(data, scope, fail) -> None:
    if ("dtype" in data) == bool(data.get("device")):
        raise fail("to takes either dtype or device: true")
    if data.get("dtype_string") and "dtype" not in data:
        raise fail("dtype_string needs a dtype")


def _to_spell(w, s) -> None:
    f = s.fields
    if f["device"]:
        target = "DEVICE"
    elif f["dtype_string"]:
        target = repr(f["dtype"])
    else:
        target = f"{w.a.root}.{f['dtype']}"
        w.a.resolve(target)
    args = [target]
    if f["copy"]:
        w.a.require_method("to")
        dtype = getattr(w.a.fw, "float32")
        _require_keyword(w, f"{w.a.tensor_type.__name__}.to()", "copy",
                         lambda: w.a.fw.zeros([1]).to(dtype, copy=True))
        args.append("copy=True")
    w.emit(f"{w.out(s)} = {w.method(s.args[0], 'to', *args)}")


def _to_fuzz(d):
    """Either to the program's dtype (the one every tensor has) or to the case's device, never both."""
    if d.boolean():
        return {"device": True, "dtype": None, "dtype_string": None}
    return {"dtype": d.dtype, "device": None}


def _astype_spell(w, s) -> None:
    dtype = s.fields["dtype"]
    if callable(getattr(w.a.tensor_type, "astype", None)):
        w.emit(f"{w.out(s)} = {w.method(s.args[0], 'astype', repr(dtype))}")
        return
    w.a.resolve(f"{w.a.root}.{dtype}")  # torch's cast method: type(dtype)
    w.emit(f"{w.out(s)} = {w.method(s.args[0], 'type', f'{w.a.root}.{dtype}')}")


register(Op(
    "to", "out = t.to(dtype) or t.to(DEVICE), to what t already is: t itself as both frameworks document "
    "(copy=True: a new tensor the graph tracks).", args=("tensor",), check=_to_check,
    fields={"dtype": Field("dtype", choices=DTYPES, doc="the dtype the tensor already has"),
            "device": Field("bool", default=False, doc="to the case's device (DEVICE)"),
            "dtype_string": Field("bool", default=False, doc="name the dtype as a string ('float32'), as "
                                  "paddle's documentation does, instead of the framework's dtype object"),
            "copy": _COPY},
    run_reference=_same_or_copy, run_spell=_to_spell, fuzz=_to_fuzz,
))
register(Op(
    "float", "out = t.float() on a float32 tensor: t itself as both frameworks document.", args=("tensor",),
    run_reference=_same_or_copy, run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.method(s.args[0], 'float')}"),
    fuzz=lambda d: {} if d.dtype == "float32" else None,  # modelled on float32 tensors only
))
register(Op(
    "astype", "out = the framework's cast method to the dtype t already has: astype(dtype) where the tensor "
    "has it (paddle), type(dtype) where it does not (torch).", args=("tensor",), fields={"dtype": _SAME_DTYPE},
    run_reference=_same_or_copy, run_spell=_astype_spell,
))
register(Op(
    "cpu", "out = t.cpu(): t itself on a CPU as both frameworks document (a copy from a GPU; cases observe "
    "memory).", args=("tensor",),
    run_reference=_same_or_copy, run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.method(s.args[0], 'cpu')}"),
))
