"""What a case may observe, declared once: its targets, how the worker reads it, how it is judged.

``judged`` observations (values, gradients) are compared with the reference;
``memory`` observations decide aliases/copies; the rest are recorded as
information.  Any observation can be made informational with ``judge: false``.
"""

from __future__ import annotations

import numpy as np

from conformance.ops._op import Observation
from conformance.ops._registry import register_observation

__all__ = ["MAX_OBSERVED_ELEMENTS", "Observation"]

#: The most elements one observation may have, in the worker and the reference alike: beyond it
#: the cell is a harness ``error`` (a limit), so one case cannot swell the parent process.
MAX_OBSERVED_ELEMENTS = 1_000_000


def _value_reference(m, s) -> None:
    if not m.partial:  # a value is given whole or not at all
        m.record(s, np.array(m.target(s.of[0]).value, dtype=np.float64))
        return
    value, undetermined, choices = m.target(s.of[0]).read_partly()
    m.record(s, np.array(value, dtype=np.float64))
    if undetermined.size:
        m.leave_undetermined(s, undetermined)
    if choices:
        m.leave_any_of(s, choices)


def _grad_reference(m, s) -> None:
    grad = m.target(s.of[0]).grad
    m.record(s, None if grad is None else np.array(grad))


register_observation(Observation(
    "value", "the current value (read from storage)", "array", lambda w, t: t[0], judged=True, arrays=True,
    run_reference=_value_reference))
register_observation(Observation(
    "grad", "the .grad of a tensor (None when it has none)", "array", lambda w, t: f"{t[0]}.grad",
    judged=True, run_reference=_grad_reference))
register_observation(Observation(
    "shares_memory", "whether two objects' elements overlap in memory", "overlap",
    lambda w, t: f"({t[0]}, {t[1]})", targets=2, memory=True, arrays=True))
register_observation(Observation(
    "address", "the memory an object's elements occupy, for a later same_storage", "address",
    lambda w, t: t[0], arrays=True))
register_observation(Observation(
    "same_storage", "whether an object still occupies the memory an earlier address observation recorded",
    "overlap", lambda w, t: t[0], memory=True, arrays=True, since=True))
register_observation(Observation(
    "version", "the framework's version counter of a tensor", "int", lambda w, t: w.reader.version_counter(t[0])))
register_observation(Observation(
    "requires_grad", "whether the tensor requires grad", "bool", lambda w, t: w.reader.requires_grad(t[0])))
register_observation(Observation(
    "is_leaf", "whether the tensor is a leaf of the graph", "bool", lambda w, t: f"{t[0]}.is_leaf"))
register_observation(Observation(
    "same_object", "whether two names are the very same Python object (`a is b`)", "bool",
    lambda w, t: f"({t[0]} is {t[1]})", targets=2, arrays=True))


def _base_of(w, x: str) -> str:
    """``x._base``, where the framework that runs the program has it (torch: the tensor a view was taken
    of, None for a tensor that is no view); paddle's Tensor has no ``_base``: Unsupported, by inspection."""
    w.reader.require_attribute("_base")
    return f"{x}._base"


register_observation(Observation(
    "base_is", "whether a view's base (`v._base`) is the very tensor named second (`v._base is x`)", "bool",
    lambda w, t: f"({_base_of(w, t[0])} is {t[1]})", targets=2))
def _grad_fn_is_none_reference(m, s) -> None:
    tensor = m.target(s.of[0])  # no history: it requires no grad, or it is a leaf
    m.record(s, np.array(not tensor.requires_grad or tensor.is_leaf))


def _grad_fn_is_none(w, t: list[str]) -> str:
    w.reader.require_attribute("grad_fn")
    return f"({t[0]}.grad_fn is None)"


register_observation(Observation(
    "grad_fn_is_none", "whether t.grad_fn is None: torch documents None for a leaf and for a tensor made "
    "without recording (under no_grad), a node for a result of a recorded op", "bool", _grad_fn_is_none,
    judged=True, run_reference=_grad_fn_is_none_reference,
    fuzz="paddle gives a leaf a grad_fn (cases/autograd_state/grad_fn_no_grad): drawn after every step, it "
         "would make nearly every program that one finding again"))
def _is_view(w, t: list[str]) -> str:
    w.reader.require_attribute("_is_view")  # torch's; paddle's Tensor has none: Unsupported, by inspection
    return f"{t[0]}._is_view()"


register_observation(Observation(
    "is_view", "whether the tensor is a view of another (torch's t._is_view())", "bool", _is_view))
register_observation(Observation(
    "shape", "the shape, as a list of sizes", "array",
    lambda w, t: f"np.array(list({t[0]}.shape), dtype=np.int64)", arrays=True))
register_observation(Observation(
    "writeable", "whether a NumPy array may be written (a.flags.writeable)", "bool",
    lambda w, t: f"{t[0]}.flags.writeable", arrays=True, tensors=False))
register_observation(Observation(
    "owndata", "whether a NumPy array owns its memory (a.flags.owndata; False: it looks into another "
    "object's, a tensor's or an array's)", "bool", lambda w, t: f"{t[0]}.flags.owndata", arrays=True, tensors=False))
register_observation(Observation(
    "is_contiguous", "whether the tensor's elements lie in memory in order without gaps (t.is_contiguous())",
    "bool", lambda w, t: f"{t[0]}.is_contiguous()"))
