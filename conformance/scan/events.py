"""What the interpreter saw a function do, in order: writes, reads, backward calls, optimizer steps, and the
uses of ops whose mere use a rule asks about.  The rules (``scan/rules.py``) read a function's trace."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.scan.model import Saved, Value

__all__ = ["Backward", "Read", "Step", "Trace", "Use", "Write", "ZeroGrad"]


@dataclass(eq=False)
class Write:
    """An in-place write into *target*'s memory."""

    node: ast.AST
    target: Value
    op: str
    time: int
    #: the name written through, and every name bound to the same object at that moment
    name: str | None
    aliases: tuple[str, ...]
    grad_enabled: bool
    #: the compiled mode of the function it is in (``compile``, ``to_static`` ...), or None
    compiled: str | None
    rebinds: bool = False
    relayout: bool = False
    #: what is written in (``copy_(src)``, ``t[i] = v``), when the code shows it
    source: Value | None = None
    #: saves of this memory that backward had not yet freed, at the moment of the write
    saved: tuple[Saved, ...] = ()
    #: the module's activation function when a module call writes its input (``nn.ReLU(inplace=True)``)
    function: str | None = None
    #: the keyword fields the call gave (``zero_copy=True``)
    fields: Mapping[str, Any] = field(default_factory=dict)
    #: a write a called function of the file makes into an argument: the call, in the caller
    call: ast.AST | None = None
    #: whether it happens in a function rather than at the file's top level
    in_function: bool = False
    #: a write no history records even in grad mode (``set_value``: the op's own way, not a path's)
    untracked: bool = False
    #: the memory had been relaid out (``resize_``, ``set_``, ``cast_``) before this write
    after_relayout: bool = False
    #: when it was relaid out last, if it was: a view made before then looks at the old memory
    relaid: int | None = None
    #: the target as it was at the moment of the write (the rules run after the whole function)
    requires_grad: bool | None = None
    leaf: bool = False


@dataclass(eq=False)
class Read:
    """A name read: which object, through which name."""

    node: ast.AST
    name: str
    value: Value
    time: int


@dataclass(eq=False)
class Backward:
    node: ast.AST
    root: Value
    time: int
    retain: bool
    #: the update that changed parameters the root's history was computed from, since it was computed
    #: (``optimizer``: a step; ``hand``: an in-place write), or None
    stale: str | None = None
    #: where that update is
    update: ast.AST | None = None
    #: where the stale part of the graph was computed: ``carried`` (in an earlier pass of the loop the
    #: backward is in: a hidden state), ``before-loop``, or ``straight`` (no loop)
    where: str | None = None


@dataclass(eq=False)
class Step:
    """An optimizer step, or an in-place update of a parameter: the parameters change."""

    node: ast.AST
    time: int
    optimizer: Value | None


@dataclass(eq=False)
class ZeroGrad:
    node: ast.AST
    time: int
    set_to_none: bool | None


@dataclass(eq=False)
class Use:
    """An op used on a value, for the rules that ask about an op's mere use."""

    node: ast.AST
    op: str
    value: Value
    time: int
    grad_enabled: bool
    fields: Mapping[str, Any] = field(default_factory=dict)
    #: literal arguments, in order (``unfold(0, 2, 1)``)
    numbers: tuple[Any, ...] = ()
    compiled: str | None = None
    #: the value as it was at the moment of the use
    requires_grad: bool | None = None
    leaf: bool = False
    view: bool = False
    #: it, or what it views, was computed from parameters (a module's, or a leaf that requires grad): evidence
    #: that it is in a graph, where an argument taken as it came (a network's input, a label) may not be
    from_parameters: bool = False


@dataclass
class Trace:
    """Everything one function (or the file's top level) did, in order of time."""

    writes: list[Write] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    backwards: list[Backward] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    zero_grads: list[ZeroGrad] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    #: the name of the function, for messages; None at the top level
    function: str | None = None
    compiled: str | None = None

    def reads_after(self, time: int) -> list[Read]:
        return [r for r in self.reads if r.time > time]
