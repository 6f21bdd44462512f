"""The scanner's picture of a program's objects: values, the memory they share, and what autograd saved.

One :class:`Value` is one Python object (two names bound to it are aliases: ``skip = h``); a view, a
``detach()``, a ``.data`` handle, or an array and a tensor on the same buffer are different values on one
:class:`Memory`.  What is not known stays unknown (``None``): the scanner reasons only from what the code
shows.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

__all__ = ["Memory", "Module", "Saved", "Value", "combined_constants", "flat_values", "grad_of", "memory_of", "merge",
           "one_value"]


@dataclass(eq=False)
class Saved:
    """An op saved a tensor for its backward: which op, whether the tensor was its ``input`` or ``output``."""

    op: str
    role: str
    node: ast.AST
    time: int
    #: the backward calls that had run when it was saved: a later one without retain_graph frees it
    generation: int
    #: the op's result: the saved tensor matters only where a backward can reach it (``Value.live``)
    result: "Value | None" = None
    #: the frameworks whose op saves it where the code's own does not (torch's ``tan_`` saves its result,
    #: paddle's a copy of its input): what the code meets once ported there
    elsewhere: tuple[str, ...] = ()


@dataclass(eq=False)
class Memory:
    """One buffer and everything saved from it."""

    saved: list[Saved] = field(default_factory=list)
    #: a write made it look at other memory or in another order (``resize_``, ``set_``) at this time, if one did
    relaid: int | None = None


@dataclass(eq=False)
class Module:
    """A module object: its kind (``linear``, ``rnn``, ``activation``, or None when the code builds one the
    vocabulary does not know), an activation's function, whether it works in place."""

    kind: str | None
    function: str | None = None
    inplace: bool = False
    parameters: dict[str, "Value"] = field(default_factory=dict)


@dataclass(eq=False)
class Value:
    """What one object is known to be."""

    kind: str = "unknown"  # tensor | array | module | optimizer | number | unknown
    op: str | None = None  # the op that made it
    node: ast.AST | None = None  # where it was made
    memory: Memory | None = None
    requires_grad: bool | None = None
    #: a leaf that requires grad (``requires_grad=True``, a parameter): writing it in place is refused
    leaf: bool = False
    #: the value whose memory it shares, and how (``view``, ``untracked``, ``tensor->array``, ``array->tensor``)
    base: "Value | None" = None
    link: str | None = None
    link_op: str | None = None
    #: a view whose elements include one place of memory more than once (``expand``: the op's facts)
    overlaps: bool = False
    module: Module | None = None
    #: ``g = w.grad``: the tensor whose gradient it holds
    grad_of: "Value | None" = None
    #: the parameters its history was computed from: group -> (the group's version then, when) (a group is a
    #: module's parameters, or one leaf tensor; ``-1``: those of an optimizer whose own the code does not
    #: show); None: it has no history the scanner knows of
    history: dict[int, tuple[int, int]] | None = None
    #: a leaf that requires grad: the group of parameters an optimizer updates it with
    group: int | None = None
    #: the optional fields the op that made it was given (``storage_offset`` of an ``as_strided``)
    given: tuple[str, ...] = ()
    #: how the call that made it spelled its first argument after the tensor (``forms.argument_kind``)
    argument_kind: str | None = None
    #: a parameter of the function being read (its name), when it is one
    argument: str | None = None
    made: int = 0
    #: Python numbers and literals: operands that never require grad
    constant: bool = False
    #: a boolean tensor made by a comparison (a mask)
    mask: bool = False
    #: for an optimizer: the values it updates, when the code shows them
    updates: tuple["Value", ...] = ()
    #: the values it was computed from
    inputs: tuple["Value", ...] = ()
    #: a backward can reach it: it, or something computed from it, is returned, stored, handed to code the
    #: scanner does not follow, or is what backward starts from
    live: bool = False

    def escape(self) -> None:
        """Mark this value and everything it was computed from as reachable by a backward."""
        stack: list[Value] = [self]
        while stack:
            value = stack.pop()
            if value.live:
                continue
            value.live = True
            stack.extend(value.inputs)
            if value.base is not None:
                stack.append(value.base)

    def chain(self) -> Iterator["Value"]:
        """This value and the values it shares memory through, nearest first."""
        value: Value | None = self
        seen: set[int] = set()
        while value is not None and id(value) not in seen:
            seen.add(id(value))
            yield value
            value = value.base

    def root(self) -> "Value":
        *_, last = self.chain()
        return last

    @property
    def untracked_path(self) -> str | None:
        """How a write through this value escapes autograd's notice, if it does: the first untracked link
        (``detach``, ``data``, a NumPy array) on the way to the memory's owner."""
        for value in self.chain():
            if value.kind == "array" and value.base is not None:
                return "numpy"
            if value.link == "untracked":
                return value.link_op or "untracked"
        return None

    @property
    def through_view(self) -> "Value | None":
        """The view (of a tensor) this value writes through, if it is one."""
        for value in self.chain():
            if value.link == "view":
                return value
        return None

    def is_leaf_requiring_grad(self) -> bool:
        return any(v.leaf for v in self.chain())


def merge(values: list[Any]) -> Any:
    """After an ``if``: the value every branch agrees on, else an unknown one."""
    first = values[0]
    return first if all(v is first for v in values[1:]) else Value()


def flat_values(items: Iterable[Any]) -> Iterator["Value"]:
    for item in items:
        if isinstance(item, Value):
            yield item
        elif isinstance(item, tuple):
            yield from flat_values(item)


def memory_of(value: Value) -> Memory:
    if value.memory is None:
        value.memory = Memory()
    return value.memory


def one_value(value: Any) -> Value | None:
    return value if isinstance(value, Value) else None


def combined_constants(left: Any, right: Any) -> Value:
    both = isinstance(left, Value) and isinstance(right, Value) and left.constant and right.constant
    return Value(kind="number", constant=True) if both else Value()


def grad_of(args: Iterable[Any]) -> bool | None:
    """Whether a result of *args* requires grad: True if one does, None if one may, else False."""
    flags = [a.requires_grad for a in args if isinstance(a, Value) and not a.constant
             and a.kind in ("tensor", "unknown")]
    if any(f is True for f in flags):
        return True
    if any(f is None for f in flags):
        return None
    return False
