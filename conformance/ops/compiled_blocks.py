"""A function of the case's own that its user compiles: ``fn = torch.compile(fn)``, ``paddle.jit.to_static(fn)``.

The compiled modes (``docs/modes.md``) compile a case's whole forward; ``compiled_function`` is the user's own
choice of one function, compiled in every mode, eager included: its steps are the body of ``def fn(args)``,
which may write into its arguments (in place, through a view, under ``no_grad``) and returns ``out``; the
call rebinds those names.  Both frameworks document that a compiled function computes what the Python
function computes, input mutations included (torch.compile's functionalization writes them back into the
inputs), so the reference runs the steps as written, as a function: its arguments are the only names it
sees, and the names it binds without returning them are its own.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from conformance.ops._op import Field, Op
from conformance.ops._registry import OPS, register
from conformance.unsupported import Unsupported

EAGER = "eager"  # the mode that compiles nothing (program/writer.py)


def _compiler_mode(w) -> str:
    """The mode whose compiler wraps the function: the program's own in a compiled mode (a user who
    compiles with ``full_graph=True`` compiles their own function so too), else the framework's first."""
    if w.mode != EAGER:
        return w.mode
    mode = next(iter(w.a.modes), None)
    if mode is None:
        raise Unsupported(f"{w.a.name} has no compiler to compile a function with")
    problem = w.a.mode_problem(mode, w.device)
    if problem:
        raise Unsupported(problem)
    return mode


def _spell(w, s) -> None:
    mode = _compiler_mode(w)
    name = f"_compiled_{s.number}"
    w.compiles.append(mode)
    w.function(name, list(s.args), list(s.out), s.steps, w.a.compile_function(name, mode),
               f"step {s.number}: the case's own function, compiled as its user compiles it ({mode})", s,
               labelled=True)


def run_as_function(m, s) -> None:
    """The block's steps run as a Python function runs them: its arguments are the only names it sees, and
    the call binds what it returns."""
    outer = m.env
    m.env = {name: outer[name] for name in s.args}  # a function sees its arguments only
    try:
        m.run(s.steps)
        returned = [m.env[name] for name in s.out]
    finally:
        m.env = outer
    m.bind(s, *returned)


def _walk(steps: Any, local: set[str], fail: Callable[[str], Exception]) -> None:
    """The names the steps read must be the function's (its arguments, or bound before in its body)."""
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, Mapping):
            continue
        if "observe" in step:
            raise fail("a function block holds no observation: observe its arguments and results after it")
        op = OPS.get(step.get("op"))
        if op is None:
            continue
        args = step.get("args", [])
        reads = [a for a in (args if isinstance(args, list) else [args]) if isinstance(a, str)]
        reads += [step[k] for k, f in op.fields.items() if f.type == "name" and k != "var" and step.get(k)]
        for name in reads:
            if name.partition(".")[0] not in local:
                raise fail(f"the function reads {name!r}, which is neither one of its arguments nor "
                           f"bound before in its body: add it to the block's args")
        if op.block:
            if op.fields.get("var") is not None and step.get("var"):
                local.add(step["var"])
            _walk(step.get("steps"), local, fail)
        out = step.get("out")
        local.update(n for n in (out if isinstance(out, list) else [out]) if isinstance(n, str))


def check_function_block(data: Mapping[str, Any], scope: Mapping[str, str], fail: Callable[[str], Exception]) -> None:
    """A block that is a function: it reads its arguments and what it binds, and returns names it binds."""
    args = data.get("args", [])
    local = {a for a in (args if isinstance(args, list) else [args]) if isinstance(a, str)}
    params = set(local)
    _walk(data.get("steps"), local, fail)
    out = data.get("out")
    returned = [n for n in (out if isinstance(out, list) else [out]) if isinstance(n, str)]
    for name in returned:
        if name not in local:
            raise fail(f"the function returns {name!r}, which it does not bind")
    # The loader saw the body's names as the enclosing scope's: the ones it neither takes nor returns are the
    # function's locals, and no later step can use them.
    if isinstance(scope, dict):
        for name in local - params - set(returned):
            scope.pop(name, None)


register(Op(
    "compiled_function", "Define the nested steps as a function of the named tensors (args) that returns "
    "the out names, compile it as the framework's user does (torch.compile(fn), paddle.jit.to_static(fn); "
    "in a compiled mode, with that mode's compiler) and call it; the call rebinds the out names.  The body "
    "sees only its arguments and what it binds; it may write into its arguments; it holds no observation.",
    args=("*tensor",), out="many", block=True,
    fields={"steps": Field("steps", required=True)},
    check=check_function_block, run_reference=run_as_function, run_spell=_spell,
    fuzz="a function's arguments and returns must agree with its body's names: written by hand",
))
