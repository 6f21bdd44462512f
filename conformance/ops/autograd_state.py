"""Autograd state a program changes: ``retain_grad()`` (paddle ``retain_grads()``).

A non-leaf's ``.grad`` is None unless the program asked to keep it; then each backward accumulates the
gradient of the tensor's history as it is at that backward (torch's test_retain_grad: "Gradient should
be accumulated").
"""

from __future__ import annotations

from conformance.ops._op import Op
from conformance.ops._registry import register


def _retain_grad_reference(m, s) -> None:
    tensor = m.tensor(s.args[0])
    if not tensor.requires_grad:
        raise ValueError("retain_grad on a tensor that requires no grad: torch refuses it (\"can't retain_grad "
                         "on Tensor that has requires_grad=False\")")
    if tensor.is_leaf or any(kept is tensor for kept in m.retaining):  # a leaf keeps its .grad anyway
        return
    m.retaining.append(tensor)


register(Op(
    "retain_grad", "t.retain_grad() (paddle t.retain_grads()): a non-leaf's .grad is filled by backward.",
    # a forward step: its users call it where the tensor is made, inside what a compiled mode compiles
    args=("tensor",), out="none",
    run_reference=_retain_grad_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "retain_grad")),
    fuzz=lambda d: (lambda t: None if t is None else {"args": [t]})(d.pick("tensor", where=lambda f: f.requires_grad)),
))
