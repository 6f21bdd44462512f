"""What an op is: its arguments and fields, its reference semantics, its default spelling.

An op is declared once, in the module of its family.  Validation and the JSON
Schema read its ``args``, ``out`` and ``fields``; the reference calls
:meth:`Op.reference`; a generated program calls :meth:`Op.spell` unless the
adapter of that framework has a method ``spell_<name>`` (the one place where a
framework that spells the op differently says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

if TYPE_CHECKING:  # only for annotations: neither side imports the other at run time
    from conformance.case.model import Step
    from conformance.judge.model import Machine
    from conformance.program.writer import Writer

__all__ = ["Check", "Field", "Observation", "Op"]

#: The type names a field may have; each one has a validation rule (case/load.py)
#: and a JSON Schema (case/schema.py), so a new type must be taught to both.
FIELD_TYPES = ("numbers", "dtype", "bool", "int", "ints", "number", "index", "name", "steps", "choice", "str",
               "observation")


@dataclass(frozen=True)
class Field:
    """A keyword field of a step: its type name, whether a case must give it, its default."""

    type: str
    required: bool = False
    default: object = None
    choices: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"unknown field type {self.type!r}; known: {FIELD_TYPES}")


#: A semantic check beyond types: ``check(step_data, scope, fail)`` raises ``fail(message)``.
Check = Callable[[Mapping[str, Any], Mapping[str, str], Callable[[str], Exception]], None]


@dataclass(frozen=True)
class Op:
    """One op of the case language.

    ``args`` holds one kind per positional argument; a kind starting with ``*``
    takes any number (at least one) of that kind.  Kinds: ``tensor`` (a name
    bound to a tensor), ``array`` (a NumPy array), ``data`` (tensor or array),
    ``operand`` (a tensor name or a number), ``module``, ``optimizer``, ``any``.
    ``out`` is ``required``, ``optional``, ``none`` or ``many``; ``binds`` is
    the kind of object the output names are bound to (``same``: as the first
    argument).
    """

    name: str
    doc: str
    args: tuple[str, ...] = ()
    out: str = "required"
    binds: str = "tensor"
    fields: Mapping[str, Field] = field(default_factory=dict)
    block: bool = False
    #: a block whose steps run more than once (observations inside get an iteration key)
    loop: bool = False
    #: where an exception raised by this step happened: ``op`` or ``backward``
    phase: str = "op"
    #: In a compiled mode (``docs/modes.md``): ``forward`` steps go into the compiled function;
    #: ``setup`` steps (making tensors, modules, optimizers) and ``outside`` steps (backward,
    #: optimizer steps, reading results) run around it.
    stage: str = "forward"
    #: a Python assignment to the first argument's name (``a += b``), not only a write into it
    rebinds: bool = False
    check: Check | None = None
    #: acts on complex tensors (``conformance/ops/complex.py``); the reference refuses any other op on one
    takes_complex: bool = False
    #: What its backward reads, so that a later in-place write to it is one the framework must notice:
    #: ``input`` (the first argument), ``inputs`` (every tensor argument), ``operands`` (each tensor
    #: argument, when another argument is a tensor that requires grad: a product), ``others`` (every tensor
    #: argument but the first), ``output``.  What the
    #: reference cannot tell (it computes from values as they were): declared, as the frameworks save by
    #: default, and checked against torch and paddle (tests/test_op_saves.py); a framework that saves
    #: otherwise says so in its adapter (``Adapter.saves``).  The scanner reasons with it.
    saves: tuple[str, ...] = ()
    #: Functions given per op instance (families build many ops from one pair).
    run_reference: Callable[["Machine", "Step"], None] | None = None
    run_spell: Callable[["Writer", "Step"], None] | None = None
    #: How the fuzzer (``conformance fuzz``) draws a step of this op where the argument kinds and field
    #: types do not say enough (shapes that must agree, dimensions or indices within bounds, a module's
    #: inputs).  ``None``: everything is derived from ``args`` and ``fields``.  A function ``fuzz(d)``
    #: draws with ``d`` (a :class:`conformance.fuzz.generate.Draw`: names in scope and their shapes,
    #: numbers, literals, fresh operands) and returns the step's ``args`` and/or fields (and ``out``: how
    #: many names a ``many`` op binds); what it leaves out is derived; it returns None when the names in
    #: scope cannot make a valid step.  A string: why the op is never fuzzed (``conformance fuzz
    #: --list-ops`` shows it).
    fuzz: Callable[[Any], Mapping[str, Any] | None] | str | None = None

    kind: ClassVar[str] = "op"

    def reference(self, machine: "Machine", step: "Step") -> None:
        """Value and gradient semantics: act on the reference machine."""
        if self.run_reference is None:
            raise NotImplementedError(f"op {self.name!r} has no reference semantics")
        self.run_reference(machine, step)

    def spell(self, writer: "Writer", step: "Step") -> None:
        """The default spelling: emit the statements a user writes for this step."""
        if self.run_spell is None:
            raise NotImplementedError(f"op {self.name!r} has no default spelling")
        self.run_spell(writer, step)


@dataclass(frozen=True)
class Observation:
    """A kind of observation.

    ``targets``: how many names ``of`` takes.  ``reads``: how the worker turns
    the observed object into data (``array``, ``overlap``, ``address``, ``int``,
    ``bool``).  ``getter``: the expression a program evaluates, given the
    writer and the target expressions.  ``arrays``: whether NumPy arrays may be
    observed this way.
    """

    name: str
    doc: str
    reads: str
    getter: Callable[[Any, list[str]], str]
    targets: int = 1
    judged: bool = False
    memory: bool = False
    arrays: bool = False
    #: whether tensors may be observed this way (False: a NumPy array's property, such as its flags)
    tensors: bool = True
    #: compares with the memory an earlier ``address`` observation recorded (named by ``since``)
    since: bool = False
    run_reference: Callable[[Any, Any], None] | None = None
    #: why the fuzzer never draws it (None: it may, when it is judged and takes one name)
    fuzz: str | None = None

    def reference(self, machine: Any, step: Any) -> None:
        if self.run_reference is not None and step.judged:
            self.run_reference(machine, step)
