"""Custom autograd functions: a user's own forward and backward (``torch.autograd.Function``, paddle's
``PyLayer``) that write their input in place.

The function here squares its input: its backward returns ``g * 2 * x`` from the input it saved with
``ctx.save_for_backward``.  Written in place, the forward overwrites the very tensor it saved; torch
documents a check of saved tensors ("a check is made to ensure they weren't used in any in-place
operation that modified their content") and ``ctx.mark_dirty`` for inputs a forward modifies; paddle
offers ``ctx.mark_not_inplace``.  The reference computes what the function means, the square of the input
as it came in and its derivative at that input, whatever the marks.
"""

from __future__ import annotations


from conformance.ops._op import Field, Op
from conformance.ops._registry import register

MARKS = ("none", "dirty", "not_inplace")


def _square(x):
    return x * x, [lambda g: g * 2 * x]


def _custom_square_reference(m, s) -> None:
    if s.fields["inplace"]:
        m.inplace(m.tensor(s.args[0]), _square)
        m.bind(s, m.tensor(s.args[0]))
    else:
        m.bind(s, m.new(_square, s.args[0]))


def _check_mark(data, scope, fail) -> None:
    if data.get("inplace") is False and data.get("mark", "none") != "none":
        raise fail("a mark tells the context about an input the forward writes; with inplace: false it "
                   "writes none")


def _custom_square_spell(w, s) -> None:
    x = s.args[0]
    cls = f"_Square_{w.out(s)}"
    w.emit(*w.a.custom_function(cls, s.fields["inplace"], s.fields["mark"]))
    w.emit(f"{w.out(s)} = {cls}.apply({x})")


register(Op(
    "custom_square", "out = a custom autograd function (torch.autograd.Function, paddle PyLayer) of x: its "
    "forward saves x for backward and returns x * x, computed in place into x (inplace: true, the default) "
    "or as a new tensor; its backward returns g * 2 * the saved x.  mark: none; dirty (ctx.mark_dirty(x) "
    "after the write, torch); not_inplace (ctx.mark_not_inplace(x) before it, paddle).",
    args=("tensor",), saves=("input",),
    fields={"inplace": Field("bool", default=True),
            "mark": Field("choice", default="none", choices=MARKS,
                          doc="what the forward tells its context about x")},
    check=_check_mark, run_reference=_custom_square_reference, run_spell=_custom_square_spell,
    fuzz="a user-defined function class, written once per case by hand",
))

__all__ = ["MARKS"]
