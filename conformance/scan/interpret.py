"""Read a function's statements in order and keep, for each name, what its object is known to be.

The interpreter follows what the code shows and nothing else: an import resolves a name, a vocabulary
entry (``scan/vocabulary.py``) says what a call does, a ``with torch.no_grad()`` turns recording off, a
loop's body is read twice (what one iteration leaves, the next one meets), and the two branches of an
``if`` are read apart and joined.  A value it cannot know stays unknown, and a rule never takes an
unknown for a hazard on its own.  It writes a :class:`~conformance.scan.events.Trace` for the rules.
Calls are read by ``scan/calls.py``, what an op does by ``scan/effects.py``.
"""

from __future__ import annotations

import ast
from typing import Any, Sequence

from conformance.scan.calls import Calls
from conformance.scan.context import ClassInfo, FileContext, State
from conformance.scan.events import Read, Trace
from conformance.scan.forms import advanced_index, constant, name_of
from conformance.scan.model import Memory, Value, combined_constants, grad_of, merge, one_value

__all__ = ["Interpreter"]

#: Python operators and the op the vocabulary knows them by (through the kept programs' forms).
_GRAD_OFF = ("no_grad", "inference_mode")
_GRAD_ON = ("enable_grad",)
_GRAD_ON = ("enable_grad",)


class Interpreter(Calls):
    """Reads one function (or a file's top level) into a trace."""

    def __init__(self, context: FileContext, *, compiled: str | None = None, summarising: bool = False) -> None:
        self.ctx = context
        self.vocab = context.vocabulary
        self.framework = context.framework
        self.trace = Trace(compiled=compiled)
        self.compiled = compiled
        self.summarising = summarising
        self.time = 0
        #: each parameter group's version (``Value.history``), and the steps of optimizers of unknown parameters
        self.versions: dict[int, int] = {}
        self.updates: dict[int, tuple[str, ast.AST]] = {}
        #: for each enclosing loop: when its first pass began, and when the pass being read began
        self.loops: list[tuple[int, int]] = []
        self.generation = 0
        self.state = State()
        self.returned: list[Any] = []
        self.in_function = False
        self.attributes: dict[tuple[int, str], Value] = {}

    # -- entry points ----------------------------------------------------------------------------------

    def run_module(self, tree: ast.Module) -> Trace:
        self._block(tree.body)
        return self.trace

    def run_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, owner: ClassInfo | None = None,
                     instance: Value | None = None) -> Trace:
        self.trace.function = function.name
        self.in_function = True
        for decorator in function.decorator_list:
            switch = self._grad_switch(decorator)
            if switch is not None:
                self.state.grad_enabled = switch
        if owner is not None and owner.is_optimizer:
            self.state.grad_enabled = False  # an optimizer's step writes its parameters without recording
        # a module's forward takes tensors; so does a function the framework compiles, and a function read for
        # what it does to its arguments (its summary applies only where the caller passes a tensor)
        tensors = self.summarising or self.compiled is not None or (
            owner is not None and owner.is_module and (function.name.startswith("forward") or function.name == "__call__"))
        arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        for index, argument in enumerate(arguments):
            if index == 0 and owner is not None and argument.arg in ("self", "cls"):
                self.state.env[argument.arg] = instance if instance is not None else Value(kind="object")
            else:
                self.state.env[argument.arg] = Value(kind="tensor" if tensors else "unknown", argument=argument.arg,
                                                     node=argument, memory=Memory() if tensors else None)
        for extra in (function.args.vararg, function.args.kwarg):
            if extra is not None:
                self.state.env[extra.arg] = Value(kind="object")
        self._block(function.body)
        return self.trace

    # -- statements ------------------------------------------------------------------------------------

    def _block(self, statements: Sequence[ast.stmt]) -> None:
        for statement in statements:
            self._statement(statement)

    def _statement(self, s: ast.stmt) -> None:
        self.time += 1
        if isinstance(s, ast.Assign):
            value = self._expr(s.value)
            for target in s.targets:
                self._assign(target, value, s)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._assign(s.target, self._expr(s.value), s)
        elif isinstance(s, ast.AugAssign):
            self._augmented(s)
        elif isinstance(s, ast.Expr):
            self._expr(s.value)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            self._with(s)
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            self._loop(s)
        elif isinstance(s, ast.If):
            self._expr(s.test)
            self._branches([s.body, s.orelse])
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            self._block(s.body)
            for handler in s.handlers:
                self._block(handler.body)
            self._block(s.orelse)
            self._block(s.finalbody)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                value = self._expr(s.value)
                self._escape(value)
                self.returned.append(value)
        elif isinstance(s, ast.Delete):
            for target in s.targets:
                if isinstance(target, ast.Name):
                    self.state.env.pop(target.id, None)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            self.ctx.imports.add(s)
        elif isinstance(s, ast.Match):
            self._expr(s.subject)
            self._branches([*(case.body for case in s.cases), []])
        elif isinstance(s, (ast.Assert, ast.Raise)):
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self._expr(child)

    def _branches(self, bodies: Sequence[Sequence[ast.stmt]]) -> None:
        """Each branch read from the state before it; after them, a name keeps what every branch agrees on."""
        start = self.state
        ends: list[State] = []
        for body in bodies:
            self.state = start.copy()
            self._block(body)
            ends.append(self.state)
        joined = State()
        joined.grad_enabled = start.grad_enabled
        for name in set().union(*(e.env for e in ends)):
            joined.env[name] = merge([e.env.get(name, Value()) for e in ends])
        self.state = joined

    def _loop(self, s: ast.For | ast.AsyncFor | ast.While) -> None:
        if isinstance(s, ast.While):
            self._expr(s.test)
        else:
            iterated = self._expr(s.iter)
        first = self.time
        for _ in range(2):  # what one iteration leaves behind, the next one meets
            self.loops.append((first, self.time))
            if not isinstance(s, ast.While):
                self._assign(s.target, self._iterate(s.iter, iterated), s)
            self._block(s.body)
            self.loops.pop()
        self._block(s.orelse)

    def _iterate(self, iterable: ast.expr, value: Any) -> Any:
        """What a loop variable is: a number for ``range``, else nothing known."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range":
            return Value(kind="number", constant=True)
        return Value()

    def _with(self, s: ast.With | ast.AsyncWith) -> None:
        previous = self.state.grad_enabled
        for item in s.items:
            switch = self._grad_switch(item.context_expr)
            if switch is not None:
                self.state.grad_enabled = switch
            else:
                self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, Value(), s)
        self._block(s.body)
        self.state.grad_enabled = previous

    def _grad_switch(self, expr: ast.expr) -> bool | None:
        """False for a context or decorator that turns gradient recording off, True for one that turns it
        on, None for anything else."""
        call = expr if isinstance(expr, ast.Call) else None
        qualified = self.ctx.imports.qualify(call.func if call else expr)
        if not qualified:
            return None
        name = qualified.rsplit(".", 1)[-1]
        use = self.vocab.lookup(self.framework, "with:" + qualified)
        if (use is not None and use.op == "no_grad") or name in _GRAD_OFF:
            return False
        if name in _GRAD_ON:
            return True
        if name == "set_grad_enabled" and call is not None and call.args:
            flag = call.args[0]
            return flag.value if isinstance(flag, ast.Constant) and isinstance(flag.value, bool) else None
        return None

    # -- assignment --------------------------------------------------------------------------------------

    def _assign(self, target: ast.expr, value: Any, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.state.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = self._unpack(value, len(target.elts))
            for element, part in zip(target.elts, parts):
                if isinstance(element, ast.Starred):
                    self._assign(element.value, Value(kind="object"), statement)
                else:
                    self._assign(element, part, statement)
        elif isinstance(target, ast.Subscript):
            base = self._expr(target.value)
            index = self._expr(target.slice)
            if self._is_tensorish(base):
                mask = isinstance(index, Value) and index.mask
                op = "mask_setitem" if mask else "setitem"
                self._write(base, op, statement, name=name_of(target.value), source=one_value(value))
        elif isinstance(target, ast.Attribute):
            base = self._expr(target.value)
            if not isinstance(base, Value):
                return
            if target.attr == "data" and self._is_tensorish(base):
                use = self.vocab.lookup(self.framework, "setattr:data")
                self._write(base, use.op if use else "set_data", statement, name=name_of(target.value),
                            source=one_value(value), relayout=True, fields={"attribute": "data"})
            elif target.attr in ("requires_grad", "stop_gradient") and isinstance(target, ast.Attribute):
                flag = constant(statement.value) if isinstance(statement, ast.Assign) else None
                if isinstance(flag, bool):
                    wants = flag if target.attr == "requires_grad" else not flag
                    self._requires_grad(base, wants, statement)
            else:
                self._escape(value)
                self.attributes[(id(base), target.attr)] = value if isinstance(value, Value) else Value()

    def _unpack(self, value: Any, count: int) -> list[Any]:
        if isinstance(value, tuple) and len(value) == count:
            return list(value)
        if isinstance(value, Value) and value.kind == "parts":
            return [self._view_of(value.base, value.link_op or "split", value.node) if value.base is not None
                    else Value() for _ in range(count)]
        if isinstance(value, Value) and value.kind == "tensor" and value.op and self.vocab.knows(value.op) \
                and self.vocab.facts(value.op).many:  # var_mean: new tensors, each computed by the op
            return [self._fresh(value.node, value.requires_grad, history=value.history, op=value.op,
                                inputs=[value]) for _ in range(count)]
        return [Value() for _ in range(count)]

    def _augmented(self, s: ast.AugAssign) -> None:
        operator = type(s.op).__name__
        value = self._expr(s.value)
        target = s.target
        if isinstance(target, ast.Name):
            current = self.state.env.get(target.id)
            self._read(target.id, current, target)
            if isinstance(current, Value) and self._is_tensorish(current):
                use = self.vocab.lookup(self.framework, "aug:" + operator)
                if use is not None:
                    self._write(current, use.op, s, name=target.id, source=one_value(value), rebinds=True)
        elif isinstance(target, ast.Attribute):
            base = self._expr(target.value)
            if target.attr == "data" and isinstance(base, Value) and self._is_tensorish(base):
                use = self.vocab.lookup(self.framework, "aug-data:" + operator)
                if use is not None:
                    handle = self._attribute_value(base, "data", target)
                    self._write(handle, use.op, s, name=name_of(target.value), source=one_value(value), rebinds=True,
                                fields={"attribute": "data"})
            else:
                current = self._attribute_value(base, target.attr, target) if isinstance(base, Value) else None
                if isinstance(current, Value) and current.kind == "tensor":
                    use = self.vocab.lookup(self.framework, "aug:" + operator)
                    if use is not None:
                        self._write(current, use.op, s, name=None, source=one_value(value), rebinds=True)
        elif isinstance(target, ast.Subscript):
            base = self._expr(target.value)
            self._expr(target.slice)
            if self._is_tensorish(base):
                self._write(base, "setitem", s, name=name_of(target.value), source=one_value(value))

    # -- expressions -------------------------------------------------------------------------------------

    def _expr(self, e: ast.expr | None) -> Any:
        if e is None:
            return Value()
        if isinstance(e, ast.Constant):
            return Value(kind="number" if isinstance(e.value, (int, float, complex)) and not isinstance(e.value, bool)
                         else "object", constant=True, node=e)
        if isinstance(e, ast.Name):
            if e.id in self.state.env:
                value = self.state.env[e.id]
                self._read(e.id, value, e)
                return value
            if e.id in self.ctx.classes or e.id in self.ctx.functions:
                return Value(kind="object", node=e)
            value = Value(node=e)  # a name the function does not bind: a global or a builtin
            self.state.env[e.id] = value
            return value
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.BinOp):
            left, right = self._expr(e.left), self._expr(e.right)
            use = self.vocab.lookup(self.framework, "binop:" + type(e.op).__name__)
            if use is None or not (self._is_tensorish(left) or self._is_tensorish(right)):
                return combined_constants(left, right)
            if not any(isinstance(v, Value) and v.kind == "tensor" and not v.constant for v in (left, right)):
                return Value(kind="array", node=e, memory=Memory(), requires_grad=False, made=self.time)  # NumPy's
            return self._apply(use, [left, right], e, {})
        if isinstance(e, ast.Compare):
            values = [self._expr(e.left)] + [self._expr(c) for c in e.comparators]
            if len(e.ops) == 1 and any(self._is_tensorish(v) and v.kind == "tensor" for v in values):
                use = self.vocab.lookup(self.framework, "compare:" + type(e.ops[0]).__name__)
                if use is not None:
                    result = self._apply(use, values, e, {})
                    if isinstance(result, Value):
                        result.mask = True
                    return result
            return Value(kind="object")
        if isinstance(e, ast.Subscript):
            return self._subscript(e)
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return tuple(self._expr(x) for x in e.elts)
        if isinstance(e, ast.UnaryOp):
            operand = self._expr(e.operand)
            if isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)) and isinstance(operand, Value) \
                    and operand.kind == "tensor":
                return self._fresh(e, grad_of([operand]), history=self._history([operand]), inputs=[operand])
            return operand if isinstance(operand, Value) and operand.constant else Value()
        if isinstance(e, ast.IfExp):
            self._expr(e.test)
            return merge([self._expr(e.body), self._expr(e.orelse)])
        if isinstance(e, ast.Starred):
            return self._expr(e.value)
        if isinstance(e, (ast.Lambda,)):
            return Value(kind="object")
        if isinstance(e, ast.NamedExpr):
            value = self._expr(e.value)
            self._assign(e.target, value, e)  # type: ignore[arg-type]
            return value
        for child in ast.iter_child_nodes(e):  # comprehensions, f-strings, dicts ...: their reads still count
            if isinstance(child, ast.expr):
                self._expr(child)
            elif isinstance(child, ast.comprehension):
                self._expr(child.iter)
        return Value(kind="object")

    def _read(self, name: str, value: Any, node: ast.AST) -> None:
        if isinstance(value, Value):
            self.trace.reads.append(Read(node, name, value, self.time))
        elif isinstance(value, tuple):
            for part in value:
                self._read(name, part, node)

    def _attribute(self, e: ast.Attribute) -> Any:
        qualified = self.ctx.imports.qualify(e)
        if qualified and not (isinstance(e.value, ast.Name) and e.value.id in self.state.env):
            return Value(kind="object", constant=True, node=e)
        base = self._expr(e.value)
        if not isinstance(base, Value):
            return Value()
        return self._attribute_value(base, e.attr, e)

    def _attribute_value(self, base: Value, attr: str, node: ast.AST) -> Value:
        known = self.attributes.get((id(base), attr))
        if known is not None:
            return known
        if base.module is not None and attr in base.module.parameters:
            return base.module.parameters[attr]
        if attr == "grad_fn" and self._is_tensorish(base):
            self._use("grad_fn", base, node)
            return Value(kind="object")
        if attr in ("T", "mT", "H", "mH") and self._is_tensorish(base):
            return self._view_of(base, "transpose", node)
        use = self.vocab.lookup(self.framework, "attr:" + attr)
        if use is not None and self._is_tensorish(base) and use.op not in ("parameter",):
            if use.op == "grad":  # read anew each time: zero_grad may have replaced it
                return Value(kind="tensor", op="grad", node=node, memory=Memory(), requires_grad=False,
                             grad_of=base, made=self.time)
            return self._apply(use, [base], node, {})
        if base.module is not None and base.module.kind is None and use is not None and use.op == "parameter" \
                and use.fields.get("name") not in self.vocab.buffers:  # a buffer requires no grad: not known
            return self._parameter(node)
        value = Value(node=node)
        self.attributes[(id(base), attr)] = value
        return value

    def _subscript(self, e: ast.Subscript) -> Any:
        base = self._expr(e.value)
        index = self._expr(e.slice)
        if isinstance(base, tuple):
            position = constant(e.slice)
            if isinstance(position, int) and -len(base) <= position < len(base):
                return base[position]
            return Value()
        if not self._is_tensorish(base):
            return Value()
        key = constant(e.slice)
        if isinstance(key, str):  # input["features"]: the argument is a mapping (of tensors), not a tensor
            return Value(kind=base.kind if base.argument else "unknown", node=e, memory=Memory(), made=self.time)
        if isinstance(index, Value) and index.mask:
            return Value(kind="tensor", op="mask_getitem", node=e, memory=Memory(), made=self.time,
                         requires_grad=base.requires_grad, history=base.history)
        if advanced_index(e.slice, index):
            return Value(kind=base.kind if base.kind != "unknown" else "unknown", op="getitem", node=e,
                         memory=Memory(), made=self.time, requires_grad=base.requires_grad, history=base.history)
        return self._view_of(base, "getitem", e)

    def _view_of(self, base: Value | None, op: str, node: ast.AST | None) -> Value:
        if base is None:
            return Value()
        if base.memory is None:
            base.memory = Memory()
        return Value(kind=base.kind if base.kind in ("tensor", "array") else "unknown", op=op, node=node,
                     memory=base.memory, requires_grad=base.requires_grad, base=base, link="view", link_op=op,
                     history=base.history, made=self.time, argument=None, overlaps=self.vocab.facts(op).overlaps)

    # -- calls ---------------------------------------------------------------------------------------------

