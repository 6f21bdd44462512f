"""The pieces of a generated program: :class:`Program`, and the :class:`Writer` that ops and adapters spell
steps with (``program/translate.py`` puts them together for a case).

The same source serves two ends: the worker runs it with harness hooks
(``_step`` marks which step is running, ``_observe`` hands observations back),
and ``conformance show`` prints it with ``print`` calls instead, as a
reproducer to paste into a bug report.  Structure lives here; each op spells
itself (``conformance/ops``) unless the adapter has a ``spell_<op>`` method.

In a compiled mode (``docs/modes.md``) each maximal run of ``forward`` steps
becomes a function that the mode compiles: the names it reads are its
parameters, the names it binds are what it returns; tensors and modules made
before it are its inputs, and backward, optimizer steps and observations run
outside, on what it returns.  Inside a ``repeat`` that happens per iteration.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from conformance.case.model import Step
from conformance.program.literals import comment, literal

#: Beside the print of a value the framework stores in its own layout (paddle's Linear weight).
TRANSPOSED_NOTE = "# stored transposed (in x out) in this framework"

__all__ = ["EAGER", "ENCODING_LINE", "Program", "Registry", "TRANSPOSED_NOTE", "Writer"]

#: An adapter (``conformance/adapter.py``): the layer above this one, whose spellings the writer calls.
Adapter = Any

INDENT = "    "
ENCODING_LINE = "# -*- coding: utf-8 -*-"


@dataclass(frozen=True)
class Program:
    """A generated program in three parts: its *head* (the encoding line, a reproducer's title, the
    framework's imports), the reproducer's *helpers* that read observations (harness code, spelled as the
    framework whose objects they read; none in the harness's program, whose worker reads them) and its
    *body* (compiled functions, then the steps).  A converter (``Adapter.program``) rewrites head and body."""

    head: tuple[str, ...]
    helpers: tuple[str, ...]
    body: tuple[str, ...]
    unsupported: str | None = None  # the reason, when a step has no spelling in this framework
    unsupported_step: int | None = None
    #: What a converter said of the program it rewrote (``Adapter.program``); None where none did.
    conversion: dict[str, Any] | None = None
    #: The program the converter was given (the harness wrote it; a name it lacks is the harness's fault).
    original: Program | None = dataclasses.field(default=None, compare=False, repr=False)
    #: Indices into *body* of the statements that are the harness's own (step marks, observation reads and
    #: prints), which a converter must leave as they are.
    harness: frozenset[int] = frozenset()
    #: Indices into *body* of a reproducer's notes on its steps (``# step 3: mul (line 17)``).
    labels: frozenset[int] = frozenset()
    #: The modes whose compiler the program calls besides its own mode's (a case's ``compiled_function``
    #: in eager code): a worker checks each compiles at all before it runs the program.
    compiles: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        text = "\n".join(self.head + self.helpers + self.body)
        return text if self.unsupported else text + "\n"

    @property
    def code(self) -> str:
        """The steps as the framework's user writes them: the body without the harness's own statements."""
        return "\n".join(line for i, line in enumerate(self.body)
                         if i not in self.harness and i not in self.labels) + "\n"


EAGER = "eager"


def in_body(writer: Writer, lines: set[int]) -> frozenset[int]:
    """Indices into *writer*'s lines as indices into the program's body (its compiled functions, then them)."""
    offset = len(writer.functions)
    return frozenset(offset + i for i in lines)


@dataclass(frozen=True)
class Registry:
    """The ops, observations and module kinds a writer spells steps with (``conformance/ops``, which
    spell themselves through a writer: handed in, so that neither module imports the other)."""

    ops: Mapping[str, Any]
    observations: Mapping[str, Any]
    module_kinds: Mapping[str, Any]


class Writer:
    """Emits statements; what ops and adapters use to spell a step.  ``a`` spells the steps; ``reader``
    spells the reads of observations (the same adapter, unless a converted program runs on another
    framework: then the reads are the harness's, in the framework that runs it, and no converter's)."""

    def __init__(self, adapter: Adapter, registry: Registry, device: str, harness: bool, mode: str = EAGER,
                 reader: Adapter | None = None, comments: bool = True) -> None:
        self.registry = registry
        self.a = adapter
        self.reader = reader or adapter
        self.comments = comments
        self.harness_lines: set[int] = set()  # indices into lines of the harness's own statements
        self.label_lines: set[int] = set()  # indices into lines of a reproducer's notes on its steps
        self.device = device
        self.harness = harness
        self.mode = mode
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.functions: list[str] = []  # the compiled forward functions, defined before use
        self.compiles: list[str] = []  # the modes whose compiler the program calls (a case's own compiled function)
        self.in_function = False
        self.depth = 0
        self.counters: tuple[str, ...] = ()
        self.loop_vars: tuple[str, ...] = ()  # the cases' names of the counters of the loops open here
        self.modules: dict[str, str] = {}  # module kind of names bound to modules
        self.current: int | None = None

    # -- emitting ------------------------------------------------------------------

    def emit(self, *lines: str) -> None:
        self.lines.extend(INDENT * self.depth + line for line in lines)

    def emit_harness(self, *lines: str) -> None:
        """Statements of the harness's own (a step mark, the read or print of an observation)."""
        if not self.in_function:  # the lines of a compiled function are gathered apart, and hold no such line
            self.harness_lines.update(range(len(self.lines), len(self.lines) + len(lines)))
        self.emit(*lines)

    @contextlib.contextmanager
    def indented(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    @contextlib.contextmanager
    def loop(self, times: int, var: str | None) -> Iterator[None]:
        """``for`` over ``range(times)``; the harness counts with names of its own."""
        counter = f"_r{len(self.counters) + 1}" if self.harness or not var else var
        self.emit(f"for {counter} in range({times}):")
        self.counters += (counter,)
        self.loop_vars += (var or "",)
        with self.indented():
            if self.harness and var:
                self.emit(f"{var} = {counter}")
            try:
                yield
            finally:
                self.counters, self.loop_vars = self.counters[:-1], self.loop_vars[:-1]

    def steps(self, steps: Sequence[Step]) -> None:
        if self.mode == EAGER or self.in_function:
            for step in steps:
                self.step(step)
            return
        region: list[Step] = []
        for step in steps:
            if step.op != "observe" and self.registry.ops[step.op].stage == "forward" \
                    and not self.registry.ops[step.op].block:
                region.append(step)
                continue
            self.compiled(region)
            region = []
            self.step(step)
        self.compiled(region)

    def mark(self, step: Step, phase: str | None = None) -> None:
        """Tell the harness which step runs (a reproducer gets a comment instead)."""
        if self.harness:
            loop = f", ({', '.join(self.counters)},)" if self.counters else ""
            extra = f", phase={phase!r}" if phase else ""
            self.emit_harness(f"_step({step.number}{loop}{extra})")
        elif step.op != "observe":
            self.label(f"step {step.number}: {step.op} (line {step.line})")

    def label(self, text: str) -> None:
        """A reproducer's note on the step that follows: a comment, or a string statement (``comments``)."""
        if not self.in_function:
            self.label_lines.add(len(self.lines))
        self.emit(comment(text) if self.comments else repr(text))

    def step(self, step: Step) -> None:
        self.current = step.number
        if not self.in_function:
            self.mark(step)
        else:
            self.label(f"step {step.number}: {step.op} (line {step.line})")
        if step.op == "observe":
            self.observe(step)
            return
        op = self.registry.ops[step.op]
        override = getattr(self.a, f"spell_{op.name}", None)
        (override or op.spell)(self, step)
        if op.binds in self.registry.module_kinds and step.out:
            self.modules[step.out[0]] = op.binds
        elif op.binds == "same" and step.args[0] in self.modules:
            self.modules[step.out[0]] = self.modules[step.args[0]]

    def compiled(self, region: Sequence[Step]) -> None:
        """Steps as one function the mode compiles, then a call that rebinds what it binds."""
        if not region:
            return
        reads, binds = _names(region, self.registry.ops)
        steps = ", ".join(str(s.number) for s in region)
        self.function(f"_forward_{region[0].number}", reads, binds, region,
                      self.a.compile_function(f"_forward_{region[0].number}", self.mode),
                      f"steps {steps}, compiled by the mode {self.mode!r}", region[0])

    def function(self, name: str, params: Sequence[str], returns: Sequence[str], steps: Sequence[Step],
                 compiler: str | None, note: str, caller: Step, labelled: bool = False,
                 call: str | None = None) -> None:
        """*steps* as a function ``name(params)`` that returns *returns*, defined before the program and
        wrapped by *compiler* (``torch.compile(name)``; None: not wrapped); then, as *caller*, the call that
        rebinds *returns* (*labelled*: a reproducer has labelled *caller* already): ``name(params)``, or
        *call* with ``{fn}`` and ``{args}`` filled in (``checkpoint({fn}, {args})``)."""
        outer_lines, outer_depth, outer_inside = self.lines, self.depth, self.in_function
        self.lines, self.depth, self.in_function = [], 1, True
        try:
            for step in steps:
                self.step(step)
            if returns:
                self.emit(f"return {', '.join(returns)}" + ("," if len(returns) == 1 else ""))
            elif all(line.lstrip().startswith("#") for line in self.lines):
                self.emit("pass")
        finally:
            body, self.lines, self.depth, self.in_function = self.lines, outer_lines, outer_depth, outer_inside
        self.functions += [comment(note), f"def {name}({', '.join(params)}):", *body,
                           *([f"{name} = {compiler}"] if compiler is not None else []), ""]
        self.current = caller.number
        if self.in_function:  # a function called from a compiled function: the outer call is the marked one
            if not labelled:
                self.label(f"step {caller.number}: {caller.op} (line {caller.line})")
        elif self.harness or not labelled:
            self.mark(caller, phase="compiled")
        call = f"{name}({', '.join(params)})" if call is None else call.format(fn=name, args=", ".join(params))
        self.emit(f"{', '.join(returns)}{',' if len(returns) == 1 else ''} = {call}" if returns else call)

    # -- pieces of a statement -------------------------------------------------------

    def out(self, step: Step) -> str:
        return step.out[0]

    def bind(self, step: Step) -> str:
        """``name = `` when the step binds its result, else nothing."""
        return f"{step.out[0]} = " if step.out else ""

    def literal(self, value: Any) -> str:
        return literal(value)

    def arg(self, step: Step, i: int) -> str:
        """A positional argument: a name, or a number spelled as a Python literal."""
        value = step.args[i]
        return value if isinstance(value, str) else literal(value)

    def operand(self, step: Step, i: int, like: str) -> str:
        """An argument of a tensor method: a number is spelled as that framework's users make
        the call work, unless the case asks for the plain Python number (``python_scalar``)."""
        value = step.args[i]
        if (isinstance(value, str) and value not in self.loop_vars) or step.fields.get("python_scalar"):
            return self.arg(step, i)
        return self.a.scalar_operand(value if isinstance(value, str) else literal(value), like)

    def method(self, x: str, name: str, *args: str) -> str:
        return self.a.method(x, name, *args)

    def attribute(self, x: str, name: str) -> str:
        self.a.require_attribute(name)
        return f"{x}.{name}"

    def target(self, dotted: str) -> tuple[str, bool]:
        """The expression for a name or a module parameter, and whether its layout is transposed."""
        base, _, param = dotted.partition(".")
        if not param:
            return base, False
        return self.a.parameter(self.modules[base], base, param)

    # -- observations ------------------------------------------------------------------

    def key(self, name: str) -> str:
        """Source for the observation's recorded name (see judge.reference.observation_key)."""
        if not self.counters:
            return repr(name)
        escaped = name.replace("{", "{{").replace("}", "}}")
        return "f" + repr(escaped + "[" + ",".join("{" + c + "}" for c in self.counters) + "]")

    def record(self, name: str, kind: str, getter: str, transposed: bool = False, since: str | None = None) -> None:
        """Hand an observation to the harness, or print it in a reproducer."""
        key = self.key(name)
        if self.harness:
            extra = f", since={since!r}" if since else ""
            self.emit_harness(f"_observe({key}, {kind!r}, lambda: {getter}, {transposed}{extra})")
            return
        observations = self.registry.observations
        reads = observations[kind].reads if kind in observations else "int"
        if reads == "address":
            self.define_address()
            self.emit_harness(f"{_address_var(name)} = _address({getter})", f"print({key}, {_address_var(name)})")
        elif reads == "overlap" and since:
            self.define_address()
            self.emit_harness(f"print({key}, _address({getter}) == {_address_var(since)})")
        elif reads == "overlap":
            self.define_address()
            self.emit_harness(f"print({key}, _address({getter}[0]) == _address({getter}[1]))")
        elif reads == "array":
            self.define_values()
            self.emit_harness(f"print({key}, _values({getter}))" + (f"  {TRANSPOSED_NOTE}" if transposed else ""))
        else:
            self.emit_harness(f"print({key}, {getter})")

    def observe(self, step: Step) -> None:
        spec = self.registry.observations[step.kind]
        targets = [self.target(t) for t in step.of]
        getter = spec.getter(self, [expr for expr, _ in targets])
        self.record(step.name, step.kind, getter, transposed=targets[0][1], since=step.fields.get("since"))

    def define_address(self) -> None:
        """The reproducer's own memory check: the address of an object's first element."""
        self._define("_address", ["def _address(t):", "    if isinstance(t, np.ndarray):",
                                  "        return t.__array_interface__['data'][0]", "    return t.data_ptr()", ""])

    def define_values(self) -> None:
        """The reproducer's read of observed values: a tensor read as the framework's users read it (what
        the harness reads too), anything else (an array, a NumPy scalar such as ``a[0]``) as it is."""
        self._define("_values", ["def _values(t):", "    if t is None or isinstance(t, (np.ndarray, np.generic)):",
                                 "        return t", f"    return {self.reader.read_expression('t')}", ""])

    def _define(self, name: str, lines: list[str]) -> None:
        if f"def {name}(t):" not in self.helpers:
            self.helpers += lines


def _names(region: Sequence[Step], ops: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The names a run of steps reads before binding them, and the names it binds, in order."""
    reads: list[str] = []
    binds: list[str] = []
    for step in region:
        op = ops[step.op]
        used = [a for a in step.args if isinstance(a, str)]
        used += [v for k, v in step.fields.items() if op.fields[k].type == "name" and k != "var" and v]
        used += list(step.index.variables()) if step.index is not None else []
        for name in used:
            if name not in binds and name not in reads:
                reads.append(name)
        for name in list(step.out) + ([step.args[0]] if op.rebinds else []):
            if name not in binds:
                binds.append(name)
    return reads, binds


def _address_var(name: str) -> str:
    return "_address_" + "".join(c if c.isalnum() else "_" for c in name)
