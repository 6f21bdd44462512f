"""Backward, loops and modes: the steps that drive the others."""

from __future__ import annotations

from conformance.ops._op import Field, Op
from conformance.ops._registry import register

_STEPS = Field("steps", required=True)


def _repeat_reference(m, s) -> None:
    outer = m.loop
    for i in range(s.fields["times"]):
        if s.fields.get("var"):
            m.counters[s.fields["var"]] = i
        m.loop = outer + (i,)
        m.run(s.steps)
    m.loop = outer
    m.counters.pop(s.fields.get("var"), None)  # out of the loop the name is no counter (a later tensor may take it)


def _repeat_spell(w, s) -> None:
    with w.loop(s.fields["times"], s.fields.get("var")):
        w.steps(s.steps)


def _no_grad_reference(m, s) -> None:
    previous, m.grad_enabled = m.grad_enabled, False
    try:
        m.run(s.steps)
    finally:
        m.grad_enabled = previous


def _no_grad_spell(w, s) -> None:
    w.emit(w.a.no_grad())
    with w.indented():
        w.steps(s.steps)


def _measure_spell(w, s) -> None:
    expr = w.a.allocated_bytes(w.device)
    before = f"_allocated_{s.number}"
    if expr:
        w.emit(f"{before} = {expr}")
    w.steps(s.steps)
    w.record(s.fields["name"], "allocated_bytes", f"{expr} - {before}" if expr else "None")


def _backward_fuzz(d):
    """The reference (like torch) takes backward only of a one-element tensor that requires grad."""
    loss = d.pick("tensor", where=lambda f: f.size == 1 and f.requires_grad)
    return None if loss is None else {"args": [loss], "gradient": None}  # from 1, as a user's loss.backward()


def _backward_reference(m, s) -> None:
    gradient = s.fields.get("gradient")
    m.backward(m.tensor(s.args[0]), None if gradient is None else m.tensor(gradient))


def _backward_spell(w, s) -> None:
    gradient = s.fields.get("gradient")
    if gradient is None:
        w.emit(w.a.backward(s.args[0], s.fields["retain_graph"]))
    else:
        w.emit(w.a.backward_gradient(s.args[0], gradient, s.fields["retain_graph"]))


register(Op(
    "backward", "t.backward(), optionally retaining the graph; with gradient, t.backward(g) (the vector "
    "the backward starts from, of t's shape).", args=("tensor",), out="none", phase="backward",
    stage="outside",
    fields={"retain_graph": Field("bool", default=False),
            "gradient": Field("name", doc="a tensor of the root's shape: backward(gradient)")},
    run_reference=_backward_reference, run_spell=_backward_spell,
    fuzz=_backward_fuzz,
))
register(Op(
    "repeat", "Run the nested steps N times; var names the 0-based counter.", out="none", block=True, loop=True,
    fields={"times": Field("int", required=True), "var": Field("name"), "steps": _STEPS},
    run_reference=_repeat_reference, run_spell=_repeat_spell,
))
register(Op(
    "no_grad", "Run the nested steps without recording gradients.", out="none", block=True,
    fields={"steps": _STEPS}, run_reference=_no_grad_reference, run_spell=_no_grad_spell,
))
def _autocast_spell(w, s) -> None:
    w.emit(w.a.autocast(s.fields["dtype"], w.device))
    with w.indented():
        w.steps(s.steps)


register(Op(
    "autocast", "Run the nested steps under automatic mixed precision (torch.autocast(device, dtype=...), "
    "paddle.amp.auto_cast(dtype=...)): the ops autocast lists compute in the lower precision; the values "
    "mean what they mean without it (cases keep to numbers the lower precision holds exactly).", out="none",
    block=True, fields={"steps": _STEPS, "dtype": Field("choice", required=True, choices=("bfloat16", "float16"))},
    run_reference=lambda m, s: m.run(s.steps), run_spell=_autocast_spell,
    fuzz="mixed precision rounds every value it touches; the fuzzer's programs are judged in float32 and float64",
))
register(Op(
    "measure_allocated", "Record the device memory the nested steps allocate, where the framework and "
    "device report it.", out="none", block=True,
    fields={"name": Field("observation", required=True), "steps": _STEPS},
    run_reference=lambda m, s: m.run(s.steps), run_spell=_measure_spell,
))
