"""Drawing one program, step by step, while the reference runs it.

Every name in scope has a known kind, shape and autograd facts when the next step is drawn, so the program
is valid by construction.  What a step needs comes from its op (``conformance/ops``): its argument kinds
(``tensor``, ``operand``, ``module`` ...), its field types (``numbers``, ``index``, ``bool``, ``steps``
...), and, where those do not say enough, the op's own ``fuzz`` rule (shapes that must agree, dimensions
within bounds, a module's inputs), which draws with a :class:`Draw`.  An op added to the table is drawn
without touching this module.

Validity in three layers: arguments are drawn among names whose kind and shape fit (a second operand
broadcasts to the first; a fresh tensor is made when none fits); the live reference then runs the step,
and a step it refuses ends the program there (the steps before it are valid); finally the whole program
is checked as a case and run by a fresh reference.  A program that check refuses is a
:class:`GeneratorBug`, never a program to run.  Programs whose reference values leave the range where
float32 rounding stays within the default tolerance are rejected (hypothesis draws another).

Every choice is a hypothesis draw, so a program is reproduced from the same input and shrunk with it;
the strategy that drives a :class:`Builder` is in generate.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
from hypothesis import reject
from hypothesis.errors import UnsatisfiedAssumption
from hypothesis import strategies as st

from conformance.case import _yaml
from conformance.case.index import parse_index
from conformance.case.load import CaseError, Step, _Checker, reserved_names
from conformance.fuzz.fuzzable import ARG_KINDS, fuzzable_observations
from conformance.fuzz.model import Facts, GeneratorBug, Program
from conformance.judge.reference import Module, Optimizer, ReferenceFailure, Tensor, machine, run_reference
from conformance.ops import MODULE_KINDS, OBSERVATIONS, OPS, Op

#: Literal values: small, exact in float32, no zero (no division by zero, no relu kink); the first is
#: where hypothesis shrinks to.
VALUES = (0.5, -1.0, 1.5, 2.0, -0.5, 0.25, -2.0, 1.0, -1.5, 0.75)
#: Number fields (a learning rate, a fill value) and number operands.
NUMBERS = (2.0, 0.5, -1.0, 1.5, 3.0)
#: Dimension sizes, and the numbers of dimensions of a new tensor (shrinking goes to the first).
SIZES = (2, 3, 1)
NDIMS = (1, 2, 0)
#: A program computes in one floating dtype (mixing them probes type promotion, not in-place semantics).
DTYPES = ("float32", "float64")
#: Top-level steps at most, and steps inside one block.
MAX_STEPS = 14
MAX_BLOCK_STEPS = 5
MAX_DEPTH = 2
#: Reference values beyond this magnitude are rejected: float32 rounding there exceeds atol.
MAGNITUDE = 1e4
#: The kind a name has in the checker's scope for a loop counter (never an argument).
COUNTER = "counter"


_INTEGERS: dict[tuple[int, int], st.SearchStrategy[int]] = {}
_BOOLEANS = st.booleans()
_TAG = st.integers(0, 255)
_GO_ON = st.integers(0, 7)  # 0: the steps at this level end
_OBSERVE = st.integers(0, 5)  # 5: an observation


#: The bodies of the spans being drawn, innermost last: one strategy object serves every span (the
#: strategy reads the innermost body when hypothesis draws it).
_BODIES: list[Callable[[Callable], Any]] = []


@st.composite
def _span_strategy(draw: Callable) -> Any:
    return _BODIES[-1](draw)


_SPAN = _span_strategy()


def _nearest(group: Sequence[tuple[Op, frozenset]], position: int, usable: Callable[[Any], bool]) -> Op | None:
    """The usable op nearest *position* in *group* (the later one on a tie), or None."""
    for distance in range(len(group)):
        for index in (position + distance, position - distance):
            if 0 <= index < len(group) and usable(group[index]):
                return group[index][0]
    return None


def _below(n: int) -> st.SearchStrategy[int]:
    """``st.integers(0, n - 1)``."""
    return _between(0, n - 1)


def _between(low: int, high: int) -> st.SearchStrategy[int]:
    """``st.integers(low, high)``, made once (drawing is the generator's hot path, and a new strategy
    object costs hypothesis more than the draw)."""
    strategy = _INTEGERS.get((low, high))
    if strategy is None:
        strategy = _INTEGERS[(low, high)] = st.integers(low, high)
    return strategy


_SKIP = object()  # a field that cannot be drawn for these arguments: the step is not made
_OMIT = object()  # an optional field left at its default


class Builder:
    """One program being drawn: the steps so far, the checker's scope, and the live reference."""

    def __init__(self, draw: Callable, ops: Mapping[str, Op], max_steps: int) -> None:
        self.draw_from = draw
        # Blocks last: choices shrink towards the first option, and a plain step is simpler than a block.
        self.ops = [(op, frozenset(kind.lstrip("*") for kind in op.args))
                    for op in sorted(ops.values(), key=lambda op: op.block)]
        self.on_names = [entry for entry in self.ops if entry[0].args]
        self.sources = [entry for entry in self.ops if not entry[0].args]
        #: a drawn tag per bound name: an argument draws the tag it wants (see choose_name)
        self.tags: dict[str, int] = {}
        self.max_steps = max_steps
        self.checker = _Checker(Path("<fuzz>"), _yaml.Lines())
        self.machine = machine()
        self.scope: dict[str, str] = {}
        self.counter_limits: dict[str, int] = {}  # loop counter -> the number of iterations
        self.names = 0
        self.observation_names: set[str] = set()
        self.stopped = False
        self.depth = 0
        self.dtype = "float32"
        self.observations, _ = fuzzable_observations()

    # -- the program ------------------------------------------------------------------

    def build(self) -> Program:
        self.dtype = self.choose(DTYPES)
        steps = _Steps()
        self.fill(steps, self.scope, self.max_steps)
        self.final_observations(steps)
        program = Program(tuple(steps.data), self.dtype)
        self.check(program)
        return program

    def fill(self, steps: "_Steps", scope: dict[str, str], limit: int) -> None:
        """Draw steps into *steps* until hypothesis says stop, the limit, or a step the reference refuses."""
        count = 0
        while not self.stopped and count < limit and self.span(lambda: self.one_step(steps, scope, count == 0)):
            count += 1

    def one_step(self, steps: "_Steps", scope: dict[str, str], first: bool) -> bool:
        """Whether to go on (drawn for every step, alike, so any step's span can be deleted; the first
        step always goes on), then one step; False to stop."""
        if self.draw(_GO_ON) == 0 and not first:
            return False
        if self.draw(_OBSERVE) == 5 and self.observe(steps, scope):  # shrinks towards an op
            return True
        self.op_step(steps, scope)
        return True

    def span(self, body: Callable[[], Any]) -> Any:
        """Run *body* with its draws as one hypothesis span (as ``st.lists`` draws an element with its
        "more" flag), so the shrinker can delete a whole step, blocks and fresh operands included."""
        outer = self.draw_from

        def run(draw: Callable) -> Any:
            self.draw_from = draw
            try:
                return body()
            finally:
                self.draw_from = outer

        _BODIES.append(run)
        try:
            return outer(_SPAN)
        finally:
            _BODIES.pop()

    def final_observations(self, steps: "_Steps") -> None:
        self.stopped = False
        if not self.names_of(self.scope, ["tensor", "array"]):  # nothing was kept: observe a literal
            Draw(self, steps, self.scope).fresh(Draw(self, steps, self.scope).new_shape())
        made = 0
        while made == 0 or (made < 4 and self.draw(_between(0, 2)) != 0):
            if not self.span(lambda: self.observe(steps, self.scope)):
                break
            made += 1
        if not made:
            raise GeneratorBug("the program has nothing to observe", steps.data)

    def check(self, program: Program) -> None:
        """A program the checker or the reference refuses is a bug of the generator; one whose values
        the float32 tolerance cannot judge is rejected."""
        try:
            case = program.case("fuzz_program")
        except CaseError as exc:
            raise GeneratorBug(f"the checker refuses the program: {exc}", program.steps) from None
        try:
            result = run_reference(case)
        except ReferenceFailure as exc:
            raise GeneratorBug(f"the reference cannot judge the program: {exc}", program.steps) from None
        for value in result.observations.values():
            if value is not None and not (np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0)
                                          <= MAGNITUDE):
                reject()

    # -- drawing primitives --------------------------------------------------------------

    def draw(self, strategy: st.SearchStrategy) -> Any:
        return self.draw_from(strategy)

    def choose(self, options: Sequence[Any]) -> Any:
        """One of *options* (shrinking goes to the first): an index, cheaper to draw than sampled_from."""
        if len(options) == 1:
            return options[0]
        return options[self.draw_from(_below(len(options)))]

    def new_name(self, prefix: str = "t") -> str:
        reserved = reserved_names()
        while True:
            self.names += 1
            name = f"{prefix}{self.names}"
            if name not in reserved:
                self.tags[name] = self.draw(_TAG)
                return name

    def choose_name(self, names: Sequence[str]) -> str:
        """One of *names* (in scope order): the one whose tag is nearest a drawn tag, the most recent on a
        tie.  A name's tag and the tag an argument wants are draws of their own steps, so deleting other
        steps while shrinking leaves every argument naming what it named."""
        if len(names) == 1:
            return names[0]
        want = self.draw(_TAG)
        return min(enumerate(names), key=lambda item: (abs(self.tags.get(item[1].partition(".")[0], 0) - want),
                                                       -item[0]))[1]

    def facts(self, name: str) -> Facts:
        obj = self.machine.target(name)
        if isinstance(obj, Tensor):
            return Facts(obj.kind, tuple(obj.shape), bool(obj.requires_grad), bool(obj.is_leaf), obj.base is not None)
        if isinstance(obj, Module):
            return Facts(obj.kind)
        if isinstance(obj, Optimizer):
            return Facts("optimizer")
        return Facts(type(obj).__name__)

    def names_of(self, scope: Mapping[str, str], kinds: Sequence[str],
                 where: Callable[[Facts], bool] | None = None) -> list[str]:
        accepted = _accepted(kinds)
        found = [name for name, kind in scope.items() if kind in accepted]
        if where is not None:
            found = [name for name in found if where(self.facts(name))]
        return found

    # -- steps ---------------------------------------------------------------------------

    def op_step(self, steps: "_Steps", scope: dict[str, str]) -> None:
        kinds = {kind for kind in ARG_KINDS if self.names_of(scope, [kind])}

        def usable(entry: tuple[Op, frozenset]) -> bool:
            op, needs = entry
            return needs <= kinds and not (op.block and self.depth >= MAX_DEPTH)

        # Ops on names in scope three times in four; else a source (a literal, a module, a block).  Both
        # draws are made whatever is in scope, and the op is drawn as a position in its whole group (the
        # nearest usable op is taken): deleting an unrelated step while shrinking changes no choice.
        sources = self.draw(_between(0, 3)) == 3
        group = self.sources if sources else self.on_names
        position = self.draw(_below(len(group))) if group else 0
        if not any(usable(entry) for entry in group):
            group = self.on_names if sources else self.sources
            position = min(position, len(group) - 1)
        op = _nearest(group, position, usable)
        if op is None:
            return
        draw = Draw(self, steps, scope)
        data = self.step_data(op, draw, scope)
        if data is None:
            return
        if op.block and self.draw(_between(0, 3)) == 0:
            # The block's steps at this level instead: the same draws, so hypothesis can shrink a block
            # away by lowering this one choice.
            self.fill(steps, scope, MAX_BLOCK_STEPS)
        elif op.block:
            self.block(op, data, steps, scope)
        else:
            self.apply(data, steps, scope)

    def step_data(self, op: Op, d: "Draw", scope: dict[str, str]) -> dict | None:
        given: dict[str, Any] = {}
        if callable(op.fuzz):
            try:
                drawn = op.fuzz(d)
            except (GeneratorBug, UnsatisfiedAssumption):
                raise
            except Exception as exc:  # noqa: BLE001 - the op's rule broke: its fault, named as such
                raise GeneratorBug(f"the fuzz rule of {op.name} raised {type(exc).__name__}: {exc}", d._steps.data,
                                   op.name) from exc
            if drawn is None:
                return None
            given = dict(drawn)
        data: dict[str, Any] = {"op": op.name}
        args = given.pop("args", None)
        if args is None:
            args = self.arguments(op, d, scope)
            if args is None:
                return None
        if args:
            data["args"] = list(args)
        outputs = given.pop("out", None)
        for name, spec in op.fields.items():
            if name in given:
                if given[name] is not None:
                    data[name] = given[name]
                continue
            if spec.type == "steps":
                continue
            value = self.field(name, spec, list(args), d, scope)
            if value is _SKIP:
                return None
            if value is not _OMIT:
                data[name] = value
        if op.out == "required" or (op.out == "optional" and self.draw(_BOOLEANS)):
            data["out"] = self.new_name()
        elif op.out == "many":
            count = int(outputs or 1)
            names = [self.new_name() for _ in range(count)]
            data["out"] = names if count > 1 else names[0]
        return data

    def arguments(self, op: Op, d: "Draw", scope: Mapping[str, str]) -> list | None:
        kinds = list(op.args)
        if kinds and kinds[-1].startswith("*"):
            kinds += [kinds.pop()[1:]] * self.draw(_between(1, 2))
        args: list[Any] = []
        first: tuple[int, ...] | None = None
        for kind in kinds:
            if kind in ("tensor", "operand", "value", "data", "array") and first is not None:
                arg = d.operand(first, kinds=(kind,), numbers=kind in ("operand", "value"), fresh=kind != "array")
            else:
                arg = d.pick(kind)
            if arg is None:
                return None
            if first is None and isinstance(arg, str) and kind in ("tensor", "operand", "value", "data", "array"):
                first = self.facts(arg).shape
            args.append(arg)
        return args

    def field(self, name: str, spec: Any, args: list, d: "Draw", scope: Mapping[str, str]) -> Any:
        # Optional fields are given or left at their default, except dtypes: a program computes in one.
        if not spec.required and spec.type not in ("observation", "dtype") and not self.draw(_BOOLEANS):
            return _OMIT
        first = next((a for a in args if isinstance(a, str) and scope.get(a) in ("tensor", "array")), None)
        shape = self.facts(first).shape if first else None
        kind = spec.type
        if kind == "numbers":
            return d.values(d.new_shape())
        if kind == "dtype":
            return self.dtype if self.dtype in spec.choices else self.choose(spec.choices)
        if kind in ("choice",):
            return self.choose(spec.choices)
        if kind == "bool":
            return self.draw(_BOOLEANS)
        if kind == "int":
            return self.draw(_between(1, 3))
        if kind == "number":
            return self.choose(NUMBERS)
        if kind == "ints":
            if shape is None or not shape:
                return _SKIP
            return [d.dim(len(shape))]
        if kind == "index":
            if shape is None:
                return _SKIP
            index = d.index(shape)
            return _SKIP if index is None else index
        if kind == "name":
            if name == "var":  # the checker's rule: a field named var binds a loop counter
                return self.new_name("i")
            target = d.tensor(shape=shape, fresh=False) if shape is not None else None
            return target or d.pick("tensor") or _SKIP
        if kind == "observation":
            return self.observation_name("measured")
        if kind == "str":
            return "s"
        return _SKIP

    def apply(self, data: dict, steps: "_Steps", scope: dict[str, str]) -> bool:
        """Check the step, run it on the live reference; keep it if the reference accepts it."""
        before = dict(scope)
        try:
            step = self.checker.step(data, ("steps", len(steps.data)), scope)
        except CaseError as exc:
            raise GeneratorBug(f"the checker refuses a drawn step {data!r}: {exc.message}", steps.data,
                               data.get("op")) from None
        try:
            self.run(step)
        except GeneratorBug:
            raise
        except Exception:  # noqa: BLE001 - the reference refuses the step: the program ends before it
            scope.clear()
            scope.update(before)
            self.stopped = True
            return False
        steps.data.append(data)
        steps.checked.append(step)
        return True

    def run(self, step: Step) -> None:
        if step.op == "observe":
            OBSERVATIONS[step.kind].reference(self.machine, step)
        else:
            OPS[step.op].reference(self.machine, step)

    def block(self, op: Op, data: dict, steps: "_Steps", scope: dict[str, str]) -> None:
        """A block op (a loop, a mode): its steps are drawn while its own reference runs them the first
        time, so they see the block's mode and counters; later iterations replay them."""
        inner_scope = dict(scope)
        var = data.get("var")
        if var:
            inner_scope[var] = COUNTER
            self.counter_limits[var] = int(data.get("times", 1))
        body = _Body(self, inner_scope)
        fields = {name: data.get(name, spec.default) for name, spec in op.fields.items() if spec.type != "steps"}
        step = Step(op=op.name, line=1, number=0, fields=fields, steps=body)  # type: ignore[arg-type]
        before = dict(scope)
        self.depth += 1
        try:
            self.run(step)
        except GeneratorBug:
            raise
        except Exception:  # noqa: BLE001 - a later iteration was refused: the block and the rest are dropped
            scope.clear()
            scope.update(before)
            self.stopped = True
            return
        finally:
            self.depth -= 1
            self.counter_limits.pop(var, None)
        if body.fault is not None:
            raise body.fault
        if not body.steps.data:  # an empty block is no program (and no Python)
            return
        data["steps"] = body.steps.data
        steps.data.append(data)
        # A checked copy, to replay in an enclosing loop (a checker of its own: names are registered once).
        steps.checked.append(_Checker(Path("<fuzz>"), _yaml.Lines()).step(data, ("steps", 0), dict(before)))
        scope.update({name: kind for name, kind in inner_scope.items() if kind != COUNTER})

    def observe(self, steps: "_Steps", scope: dict[str, str]) -> bool:
        """An observation of a name (or module parameter) in scope; False when there is nothing to observe."""
        params = [f"{module}.{param}" for module in self.names_of(scope, ["module"])
                  for param in self.machine.get(module).params]
        tensors = self.names_of(scope, ["tensor"]) + params
        arrays = self.names_of(scope, ["array"])
        kinds = [k for k in self.observations if tensors or (arrays and OBSERVATIONS[k].arrays)]
        if not kinds:
            return False
        kind = self.choose(kinds)
        target = self.choose_name(tensors + (arrays if OBSERVATIONS[kind].arrays else []))
        data = {"observe": kind, "of": target}
        name = f"{kind}({target})"
        if name in self.observation_names:
            data["name"] = self.observation_name(f"{kind}_{target.replace('.', '_')}")
        else:
            self.observation_names.add(name)
        return self.apply(data, steps, scope)

    def observation_name(self, stem: str) -> str:
        n = 1
        while f"{stem}_{n}" in self.observation_names:
            n += 1
        name = f"{stem}_{n}"
        self.observation_names.add(name)
        return name


class Draw:
    """What an op's ``fuzz`` rule draws with (see ``Op.fuzz``): names in scope and what the reference
    knows of them, numbers, literals, shapes, indices, and fresh tensors made for the purpose.

    Every choice goes through hypothesis, so it is reproduced from the same input and shrunk with the
    rest of the program.
    """

    def __init__(self, builder: Builder, steps: "_Steps", scope: dict[str, str]) -> None:
        self._b = builder
        self._steps = steps
        self._scope = scope

    @property
    def dtype(self) -> str:
        """The floating dtype the program computes in."""
        return self._b.dtype

    # -- numbers and literals ---------------------------------------------------------

    def integer(self, low: int, high: int) -> int:
        return self._b.draw(_between(low, high))

    def boolean(self) -> bool:
        return self._b.draw(_BOOLEANS)

    def choice(self, options: Sequence[Any]) -> Any:
        return self._b.choose(list(options))

    def number(self) -> float:
        return self.choice(NUMBERS)

    def size(self) -> int:
        """A small dimension size."""
        return self.choice(SIZES)

    def new_shape(self, max_ndim: int = 2) -> tuple[int, ...]:
        ndim = self.choice([n for n in NDIMS if n <= max_ndim])
        return tuple(self.size() for _ in range(ndim))

    def values(self, shape: Sequence[int]) -> Any:
        """A literal (a number or nested lists) of that shape."""
        count = int(np.prod(shape, dtype=np.int64))
        return np.array([self.choice(VALUES) for _ in range(count)]).reshape(tuple(shape)).tolist()

    def dim(self, ndim: int) -> int:
        """A dimension of a tensor with *ndim* dimensions (negative ones count from the end)."""
        return self.integer(-ndim, ndim - 1) if ndim else 0

    # -- names in scope ---------------------------------------------------------------

    def facts(self, name: str) -> Facts:
        """What the reference knows of a name (or a module parameter, ``fc.weight``) now."""
        return self._b.facts(name)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._b.facts(name).shape

    def kind(self, name: str) -> str:
        return self._scope.get(name.partition(".")[0], "")

    def names(self, *kinds: str, where: Callable[[Facts], bool] | None = None) -> list[str]:
        """Names in scope bound to one of *kinds* (argument kinds, ``module``, or a module kind)."""
        return self._b.names_of(self._scope, kinds, where)

    def pick(self, *kinds: str, where: Callable[[Facts], bool] | None = None) -> str | None:
        found = self.names(*kinds, where=where)
        return self._b.choose_name(found) if found else None

    def tensor(self, shape: Sequence[int] | None = None, *, where: Callable[[Facts], bool] | None = None,
               fresh: bool | Sequence[int] = True) -> str | None:
        """A tensor in scope (of that *shape*, passing *where*), or a fresh one: of *shape*, or of the
        shape *fresh* gives; None when neither can be had."""
        wanted = None if shape is None else tuple(shape)
        found = self.names("tensor", where=lambda f: (wanted is None or f.shape == wanted)
                           and (where is None or where(f)))
        make = tuple(fresh) if not isinstance(fresh, bool) else (wanted if fresh else None)
        if found and (make is None or self.integer(0, 2) != 2):  # shrinks towards a name in scope
            return self._b.choose_name(found)
        return self.fresh(make) if make is not None else None

    def operand(self, to: Sequence[int], *, kinds: Sequence[str] = ("operand",), numbers: bool = True,
                fresh: bool = True) -> str | float | None:
        """A second operand for something of shape *to*: a name whose shape broadcasts to it, a number,
        or a fresh tensor of that shape."""
        to = tuple(to)
        found = self.names(*kinds, where=lambda f: _broadcasts_to(f.shape, to))
        modes = (["name"] if found else []) + (["number"] if numbers else []) + (["fresh"] if fresh else [])
        if not modes:
            return None
        mode = self.choice(modes)
        if mode == "name":
            return self._b.choose_name(found)
        if mode == "number":
            return self.number()
        return self.fresh(to)

    def fresh(self, shape: Sequence[int]) -> str | None:
        """A new tensor literal of *shape* (a ``tensor`` step before the one being drawn); None for a
        shape with no elements (a literal cannot be empty)."""
        if 0 in tuple(shape):
            return None
        name = self._b.new_name()
        data: dict[str, Any] = {"op": "tensor", "out": name, "value": self.values(shape), "dtype": self.dtype}
        if self.boolean():
            data["requires_grad"] = True
        return name if self._b.apply(data, self._steps, self._scope) else None

    # -- indices ------------------------------------------------------------------------

    def index(self, shape: Sequence[int]) -> str | None:
        """An index (as ``getitem``/``setitem`` spell it) within the bounds of *shape*: integers,
        slices, loop counters whose values stay in bounds, and at most one list of distinct integers
        (advanced indexing: one list, where the frameworks and NumPy agree on the result's shape); None for
        a tensor with no element (a dimension of size 0 has no index in bounds)."""
        if not shape or 0 in shape:
            return None
        items = []
        listed = False
        for size in shape[:self.integer(1, len(shape))]:
            form = self.integer(0, 4)
            if form == 4 and not listed:
                listed = True
                chosen = sorted({self.integer(0, size - 1) for _ in range(self.integer(1, 2))})
                items.append("[" + ", ".join(map(str, chosen)) + "]")
            elif form in (0, 4):
                items.append(str(self.integer(-size, size - 1)))
            elif form == 1:
                items.append(":")
            elif form == 2:
                start = self.integer(0, size - 1)
                items.append(f"{start}:{self.integer(start + 1, size)}")
            else:
                counters = [c for c, n in self._b.counter_limits.items() if n <= size
                            and self._scope.get(c) == COUNTER]
                items.append(self.choice(counters) if counters else "::2")
        return ", ".join(items)

    def selection(self, shape: Sequence[int], index: str) -> tuple[int, ...]:
        """The shape of ``x[index]`` for x of *shape* (loop counters at 0)."""
        resolved = parse_index(index).resolve({c: 0 for c in self._b.counter_limits})
        return tuple(np.empty(tuple(shape))[resolved].shape)


def _broadcasts_to(shape: Sequence[int], to: Sequence[int]) -> bool:
    """Whether *shape* broadcasts to *to* without changing it (NumPy's rule, one way)."""
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


class _Body:
    """The steps of a block, drawn the first time its reference runs them, replayed afterwards."""

    def __init__(self, builder: Builder, scope: dict[str, str]) -> None:
        self.builder = builder
        self.scope = scope
        self.steps = _Steps()
        self.drawn = False
        self.fault: GeneratorBug | None = None

    def __iter__(self) -> Iterator[Step]:
        if self.drawn:
            return iter(self.steps.checked)
        self.drawn = True
        try:  # each step runs as it is drawn (inside the block's mode and counters)
            self.builder.fill(self.steps, self.scope, MAX_BLOCK_STEPS)
        except GeneratorBug as exc:  # kept apart: the reference would take it for a refused step
            self.fault = exc
        return iter(())


@dataclass
class _Steps:
    """Steps drawn so far at one level: as case data, and as checked steps (to replay a loop)."""

    data: list[dict] = field(default_factory=list)
    checked: list[Step] = field(default_factory=list)


#: The scope kinds each argument kind accepts (as conformance/case/load.py checks them).
_ACCEPTED: dict[str, frozenset[str]] = {
    "tensor": frozenset({"tensor"}), "operand": frozenset({"tensor"}), "value": frozenset({"tensor"}),
    "array": frozenset({"array"}),
    "data": frozenset({"tensor", "array"}), "module": frozenset(MODULE_KINDS), "optimizer": frozenset({"optimizer"}),
    "any": frozenset({"tensor", "array", "optimizer"} | set(MODULE_KINDS)),
}


def _accepted(kinds: Sequence[str]) -> frozenset[str]:
    if len(kinds) == 1:
        return _ACCEPTED.get(kinds[0]) or frozenset(kinds)
    return frozenset().union(*(_ACCEPTED.get(kind) or {kind} for kind in kinds))
