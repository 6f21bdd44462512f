"""Read a function's statements in order and keep, for each name, what its object is known to be.

The interpreter follows what the code shows and nothing else: an import resolves a name, a vocabulary
entry (``scan/vocabulary.py``) says what a call does, a ``with torch.no_grad()`` turns recording off, a
loop's body is read twice (what one iteration leaves, the next one meets), and the two branches of an
``if`` are read apart and joined.  A value it cannot know stays unknown, and a rule never takes an
unknown for a hazard on its own.  It writes a :class:`~conformance.scan.events.Trace` for the rules.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from conformance.scan.events import Backward, Read, Step, Trace, Use, Write, ZeroGrad
from conformance.scan.forms import OUT_SUFFIX, Imports, argument_kind, call_form
from conformance.scan.model import Memory, Module, Saved, Value, merge
from conformance.scan.vocabulary import OpUse, Vocabulary

__all__ = ["FileContext", "Interpreter", "ClassInfo"]

#: Python operators and the op the vocabulary knows them by (through the kept programs' forms).
_GRAD_OFF = ("no_grad", "inference_mode")
_GRAD_ON = ("enable_grad",)
#: Keyword fields a call may give that the rules look at (a zero-copy constructor, a copy, set_to_none).
_FLAG_FIELDS = ("zero_copy", "copy", "set_to_none", "inplace", "retain_graph", "full_graph")
#: The frameworks whose conventions read a call the vocabulary does not know.
_FRAMEWORK_ROOTS = ("torch", "paddle")
#: The frameworks' tensor factories (and each ``*_like``): a function of the framework not among them, given
#: no tensor, is not known to return one (``torch.load``, ``torch.device``).
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
                        "logspace", "eye", "tensor", "as_tensor", "to_tensor", "from_numpy", "normal", "uniform",
                        "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "zeros_like", "ones_like"})
#: Methods with a trailing underscore that write no values (the convention's exceptions).
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "pin_memory_", "retain_grads_"})
#: Python builtins that read their arguments and keep none of them (a value passed to anything else may be
#: kept, and so reach a backward: ``Value.live``).
_KEEPS_NOTHING = frozenset({"print", "len", "isinstance", "issubclass", "type", "id", "repr", "str", "int", "float",
                            "bool", "format", "round", "abs", "hash", "callable", "hasattr", "getattr"})
#: Ops that bind one view per part (``a, b = x.split(...)``).
_MULTI_OUTPUT_OPS = ("split", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "split_count")


@dataclass
class ClassInfo:
    """A class of the file: its base classes (qualified where imported) and its methods."""

    node: ast.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def is_module(self) -> bool:
        return any(b.endswith(("nn.Module", "nn.Layer", "Module", "Layer")) for b in self.bases)

    @property
    def is_optimizer(self) -> bool:
        return any(b.endswith("Optimizer") and (".optim" in b or ".optimizer" in b) for b in self.bases)


@dataclass
class FileContext:
    """What a file defines, for every function's reading."""

    framework: str
    imports: Imports
    vocabulary: Vocabulary
    classes: dict[str, ClassInfo]
    functions: dict[str, ast.FunctionDef]
    compiled: dict[str, str]  # function name -> mode
    summaries: dict[str, list[tuple[int, Write]]] = field(default_factory=dict)
    _arities: dict[str, int] = field(default_factory=dict)

    def returned_tuple(self, name: str) -> int:
        """How many values a function of the file returns when its one return is a tuple, else 0."""
        if name not in self._arities:
            returns = [n for n in ast.walk(self.functions[name]) if isinstance(n, ast.Return) and n.value is not None]
            single = len(returns) == 1 and isinstance(returns[0].value, ast.Tuple)
            self._arities[name] = len(returns[0].value.elts) if single else 0
        return self._arities[name]


class _State:
    """The names of one function at one point, and the modes in force."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}
        self.grad_enabled = True

    def copy(self) -> "_State":
        other = _State()
        other.env = dict(self.env)
        other.grad_enabled = self.grad_enabled
        return other


class Interpreter:
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
        self.state = _State()
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
        ends: list[_State] = []
        for body in bodies:
            self.state = start.copy()
            self._block(body)
            ends.append(self.state)
        joined = _State()
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
                value = self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, Value(), s)
                del value
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
                self._write(base, op, statement, name=_name_of(target.value), source=_one(value))
        elif isinstance(target, ast.Attribute):
            base = self._expr(target.value)
            if not isinstance(base, Value):
                return
            if target.attr == "data" and self._is_tensorish(base):
                use = self.vocab.lookup(self.framework, "setattr:data")
                self._write(base, use.op if use else "set_data", statement, name=_name_of(target.value),
                            source=_one(value), relayout=True, fields={"attribute": "data"})
            elif target.attr in ("requires_grad", "stop_gradient") and isinstance(target, ast.Attribute):
                flag = _constant(statement.value) if isinstance(statement, ast.Assign) else None
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
                    self._write(current, use.op, s, name=target.id, source=_one(value), rebinds=True)
        elif isinstance(target, ast.Attribute):
            base = self._expr(target.value)
            if target.attr == "data" and isinstance(base, Value) and self._is_tensorish(base):
                use = self.vocab.lookup(self.framework, "aug-data:" + operator)
                if use is not None:
                    handle = self._attribute_value(base, "data", target)
                    self._write(handle, use.op, s, name=_name_of(target.value), source=_one(value), rebinds=True,
                                fields={"attribute": "data"})
            else:
                current = self._attribute_value(base, target.attr, target) if isinstance(base, Value) else None
                if isinstance(current, Value) and current.kind == "tensor":
                    use = self.vocab.lookup(self.framework, "aug:" + operator)
                    if use is not None:
                        self._write(current, use.op, s, name=None, source=_one(value), rebinds=True)
        elif isinstance(target, ast.Subscript):
            base = self._expr(target.value)
            self._expr(target.slice)
            if self._is_tensorish(base):
                self._write(base, "setitem", s, name=_name_of(target.value), source=_one(value))

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
                return _combine_constants(left, right)
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
                return self._fresh(e, _grad_of([operand]), history=self._history([operand]), inputs=[operand])
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
        if base.module is not None and base.module.kind is None and use is not None and use.op == "parameter":
            return self._parameter(node)
        value = Value(node=node)
        self.attributes[(id(base), attr)] = value
        return value

    def _subscript(self, e: ast.Subscript) -> Any:
        base = self._expr(e.value)
        index = self._expr(e.slice)
        if isinstance(base, tuple):
            position = _constant(e.slice)
            if isinstance(position, int) and -len(base) <= position < len(base):
                return base[position]
            return Value()
        if not self._is_tensorish(base):
            return Value()
        key = _constant(e.slice)
        if isinstance(key, str):  # input["features"]: the argument is a mapping (of tensors), not a tensor
            return Value(kind=base.kind if base.argument else "unknown", node=e, memory=Memory(), made=self.time)
        if isinstance(index, Value) and index.mask:
            return Value(kind="tensor", op="mask_getitem", node=e, memory=Memory(), made=self.time,
                         requires_grad=base.requires_grad, history=base.history)
        if _advanced(e.slice, index):
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
                     history=base.history, made=self.time, argument=None)

    # -- calls ---------------------------------------------------------------------------------------------

    def _call(self, e: ast.Call) -> Any:
        func = e.func
        keywords = {k.arg: k.value for k in e.keywords if k.arg}
        # a method of a value (x.add_(y)), or a module held in an attribute (self.relu(x))
        if isinstance(func, ast.Attribute) and not self._is_import(func):
            receiver = self._expr(func.value)
            if isinstance(receiver, Value):
                held = self.attributes.get((id(receiver), func.attr))
                if held is None and receiver.module is not None:
                    held = receiver.module.parameters.get(func.attr)
                if held is not None and held.kind == "module":
                    return self._module_call(held, e, keywords)
                return self._method(receiver, func.attr, e, keywords)
            self._escape(self._arguments(e))
            return Value()
        if isinstance(func, ast.Name) and func.id in self.state.env and not self._is_import(func):
            callee = self.state.env[func.id]
            self._read(func.id, callee, func)
            if isinstance(callee, Value) and callee.kind == "module":
                return self._module_call(callee, e, keywords)
            self._escape(self._arguments(e) + [self._expr(k.value) for k in e.keywords])
            return Value()
        if isinstance(func, ast.Name) and func.id in _KEEPS_NOTHING and func.id not in self.state.env:
            self._arguments(e)
            for keyword in e.keywords:
                self._expr(keyword.value)
            return Value(kind="number" if func.id in ("len", "id", "int", "float", "round", "abs") else "object")
        if isinstance(func, ast.Name) and func.id in self.ctx.functions:
            return self._local_call(func.id, e)
        if isinstance(func, ast.Name) and func.id in self.ctx.classes:
            return self._instance(self.ctx.classes[func.id], e)
        form = call_form(e, self.ctx.imports)
        args = self._arguments(e)
        if not form.startswith("fn:"):
            self._escape(args + [self._expr(k.value) for k in e.keywords])
            return Value()
        qualified = form[3:].removesuffix(OUT_SUFFIX)
        if qualified.rsplit(".", 1)[-1] in ("compile", "to_static") and args and isinstance(args[0], Value):
            return args[0]
        if qualified.endswith(".autograd.grad") and args:
            self._backward(args[0], e, keywords)
            return Value()
        use = self.vocab.lookup(self.framework, form, argument_kind(e, self.ctx.imports))
        kw_values = {k: self._expr(v) for k, v in keywords.items()}
        if use is None:
            return self._unknown_call(e, args, keywords, kw_values, qualified)
        # tensors passed by keyword follow the positional ones (paddle.assign(x, output=y))
        args = args + [v for k, v in kw_values.items() if k != "out" and k not in _FLAG_FIELDS
                       and isinstance(v, Value) and v.kind == "tensor"]
        return self._apply(use, args, e, keywords, kw_values)

    @staticmethod
    def _is_tensorish(value: Any) -> bool:
        """A tensor or an array the code shows to be one (a value of unknown kind is never taken for one)."""
        return isinstance(value, Value) and value.kind in ("tensor", "array") and not value.constant

    def _escape(self, value: Any) -> None:
        if isinstance(value, Value):
            value.escape()
        elif isinstance(value, tuple):
            for part in value:
                self._escape(part)

    def _is_import(self, func: ast.expr) -> bool:
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in self.ctx.imports.names and root.id not in self.state.env

    def _arguments(self, e: ast.Call) -> list[Any]:
        return [self._expr(a) for a in e.args]

    def _method(self, receiver: Value, name: str, e: ast.Call, keywords: Mapping[str, ast.expr]) -> Any:
        args = [receiver, *self._arguments(e)]
        kw_values = {k: self._expr(v) for k, v in keywords.items()}
        if receiver.kind == "optimizer" or (receiver.kind in ("unknown", "object") and not e.args
                                            and name in ("step", "zero_grad", "clear_grad")):
            return self._optimizer_method(receiver, name, e, keywords)
        use = self.vocab.lookup(self.framework, "method:" + name, argument_kind(e, self.ctx.imports))
        if use is not None and use.op == "backward":
            self._backward(receiver, e, keywords)
            return Value(kind="object")
        if use is not None and use.op in ("step", "zero_grad"):
            if receiver.kind == "optimizer":
                return self._optimizer_method(receiver, name, e, keywords)
            return Value()
        if not self._is_tensorish(receiver):
            self._escape(args[1:] + list(kw_values.values()))  # list.append(t), a logger, a buffer: kept
            return Value()
        if use is None:
            return self._unknown_method(receiver, name, e, args, keywords, kw_values)
        return self._apply(use, args, e, keywords, kw_values)

    def _optimizer_method(self, optimizer: Value, name: str, e: ast.Call, keywords: Mapping[str, ast.expr]) -> Any:
        use = self.vocab.lookup(self.framework, "method:" + name)
        op = use.op if use is not None else name
        if op == "step":
            self._parameters_change(e, optimizer)
        elif op == "zero_grad" or name in ("zero_grad", "clear_grad"):
            flag = _constant(keywords["set_to_none"]) if "set_to_none" in keywords else None
            self.trace.zero_grads.append(ZeroGrad(e, self.time, flag if isinstance(flag, bool) else None))
        return Value(kind="object")

    def _parameters_change(self, node: ast.AST, optimizer: Value | None, changed: Iterable[Value] = ()) -> None:
        """Parameters change in place: an optimizer's (all of them when the code does not show which), or
        the ones written by hand."""
        groups = {self._group(v) for v in changed} or {self._group(v) for v in (optimizer.updates if optimizer else ())}
        groups.discard(None)
        how = ("optimizer" if optimizer is not None else "hand", node)
        for group in groups or {-1}:
            self.versions[group] = self.versions.get(group, 0) + 1
            self.updates[group] = how
        self.trace.steps.append(Step(node, self.time, optimizer))

    @staticmethod
    def _group(value: Value) -> int | None:
        if value.kind == "module":
            return id(value)
        if value.group is not None:
            return value.group
        return id(value) if value.leaf else -1

    def _history(self, args: Iterable[Any], *groups: int) -> dict[int, tuple[int, int]]:
        """The history of a result of *args* (and of the parameter *groups* an op reads): for each group of
        parameters it was computed from, the group's version then and when."""
        merged: dict[int, tuple[int, int]] = {}

        def add(key: int, entry: tuple[int, int]) -> None:
            merged[key] = min(merged.get(key, entry), entry)

        for arg in args:
            if not isinstance(arg, Value):
                continue
            for key, entry in (arg.history or {}).items():
                add(key, entry)
            if arg.leaf:
                key = arg.group if arg.group is not None else id(arg)
                add(key, (self.versions.get(key, 0), self.time))
        for group in (*groups, -1):
            add(group, (self.versions.get(group, 0), self.time))
        return merged

    def _stale(self, history: dict[int, tuple[int, int]] | None) -> tuple[str, ast.AST, int] | None:
        """The update since which *history* is stale (how, where, and when the stale part was computed)."""
        found = None
        for group, (version, time) in (history or {}).items():
            if group != -1 and version < self.versions.get(group, 0):
                how, node = self.updates[group]
                if found is None or time < found[2]:
                    found = (how, node, time)
        wildcard = (history or {}).get(-1)
        if found is None and wildcard is not None and wildcard[0] < self.versions.get(-1, 0):
            how, node = self.updates[-1]
            found = (how, node, wildcard[1])
        return found

    def _backward(self, root: Any, e: ast.Call, keywords: Mapping[str, ast.expr]) -> None:
        retain = _constant(keywords.get("retain_graph")) is True if "retain_graph" in keywords else False
        self._escape(root)
        if isinstance(root, Value):
            stale = self._stale(root.history)
            where = None
            if stale is not None:
                first, this_pass = self.loops[-1] if self.loops else (0, 0)
                where = ("before-loop" if self.loops and stale[2] < first else
                         "carried" if self.loops and stale[2] < this_pass else "straight")
            self.trace.backwards.append(Backward(e, root, self.time, retain, stale[0] if stale else None,
                                                 stale[1] if stale else None, where))
        if not retain:
            self.generation += 1

    def _unknown_call(self, e: ast.Call, args: list[Any], keywords: Mapping[str, ast.expr],
                      kw_values: Mapping[str, Any], qualified: str) -> Any:
        """A function the vocabulary does not know, read by the frameworks' documented conventions: ``out=``
        writes into its argument, ``inplace=True`` and a trailing underscore (``nn.init.zeros_``) write into
        the first, ``nn.X(...)`` builds a module, ``optim.X(...)`` an optimizer, ``nn.Parameter`` a leaf
        that requires grad; any other function of the framework gives a tensor."""
        parts = qualified.split(".")
        root, last = parts[0], parts[-1]
        first = args[0] if args and isinstance(args[0], Value) else None
        if root not in _FRAMEWORK_ROOTS:
            if root == "numpy" and not any(isinstance(a, Value) and a.kind == "tensor" for a in args):
                return Value(kind="array", node=e, memory=Memory(), requires_grad=False, made=self.time)
            self._escape(args + list(kw_values.values()))
            return Value(node=e)
        out = kw_values.get("out")
        if isinstance(out, Value) and self._is_tensorish(out):
            self._write(out, "out", e, name=_name_of(keywords["out"]), fields={"out": True})
            self._check_out_inputs(args, e, qualified)
            return out
        if first is not None and self._is_tensorish(first) and (
                _constant(keywords.get("inplace")) is True or (last.endswith("_") and not last.startswith("_"))):
            op = last if last.endswith("_") else last + "_"
            # torch.nn.init's functions "all run in torch.no_grad() mode" (its documentation)
            initialiser = len(parts) > 2 and parts[1:3] == ["nn", "init"]
            self._write(first, op, e, name=_name_of(e.args[0]) if e.args else None,
                        grad_enabled=False if initialiser else None)
            return first
        if last == "Parameter" or last == "create_parameter":
            return self._parameter(e)
        if last[:1].isupper() and len(parts) >= 2 and parts[1] in ("optim", "optimizer"):
            return self._optimizer(e, None)
        if last[:1].isupper() and len(parts) >= 2 and parts[1] == "nn":
            inplace = _constant(keywords.get("inplace")) is True
            return Value(kind="module", node=e, module=Module(None, inplace=inplace), made=self.time)
        if any(isinstance(a, Value) and a.kind == "tensor" and not a.constant for a in _flat_values(args)):
            return self._fresh(e, _grad_of(args), history=self._history(args), inputs=args)
        if last in _FACTORIES or last.endswith("_like"):
            return self._created(e, keywords)
        return Value(node=e)  # torch.load, torch.device, paddle.get_device ...: not known to be a tensor

    def _unknown_method(self, receiver: Value, name: str, e: ast.Call, args: list[Any],
                        keywords: Mapping[str, ast.expr], kw_values: Mapping[str, Any]) -> Any:
        """A tensor method the vocabulary does not know: a trailing underscore is the frameworks' documented
        mark of an in-place op (``zero_()``, ``uniform_()``); anything else is a new value of unknown kind."""
        if name == "create_parameter" or name == "register_parameter":
            return self._parameter(e)
        if name == "register_buffer" and len(args) > 2 and isinstance(e.args[0], ast.Constant) \
                and isinstance(args[2], Value):
            self.attributes[(id(receiver), str(e.args[0].value))] = args[2]
            return Value(kind="object")
        if name.endswith("_") and not name.startswith("_") and receiver.kind in ("tensor", "unknown"):
            if name not in _NOT_WRITES:
                self._write(receiver, name, e, name=_name_of(e.func.value) if isinstance(e.func, ast.Attribute)
                            else None)
            return receiver
        if name in ("item", "tolist", "size", "dim", "numel", "__len__", "data_ptr", "stride", "is_contiguous"):
            return Value(kind="number")
        if receiver.kind == "tensor":
            return self._fresh(e, receiver.requires_grad, history=self._history([receiver]))
        return Value(node=e)

    def _check_out_inputs(self, args: Sequence[Any], e: ast.Call, op: str) -> None:
        """``out=`` on inputs that require grad: a use the out= rule asks about."""
        tensors = [a for a in args if isinstance(a, Value) and a.kind in ("tensor", "unknown") and not a.constant]
        grad = next((a for a in tensors if a.requires_grad is True), None)
        if self.state.grad_enabled and grad is not None:
            self._use("out", grad, e, {"op": op})

    def _local_call(self, name: str, e: ast.Call) -> Any:
        """A function of the file: what it writes into its arguments (its summary) happens here too."""
        args = self._arguments(e)
        self._escape(args)
        if not self.summarising:
            for index, inner in self.ctx.summaries.get(name, ()):
                if index < len(args) and isinstance(args[index], Value) and self._is_tensorish(args[index]):
                    self._write(args[index], inner.op, inner.node, name=_name_of(e.args[index]),
                                source=inner.source, rebinds=inner.rebinds, relayout=inner.relayout,
                                fields=inner.fields, call=e, compiled=self.ctx.compiled.get(name),
                                grad_enabled=inner.grad_enabled, untracked=inner.untracked)
        arity = self.ctx.returned_tuple(name)
        if arity:
            return tuple(Value(node=e) for _ in range(arity))
        return Value(node=e)  # what it returns is not followed

    def _instance(self, info: ClassInfo, e: ast.Call) -> Value:
        self._arguments(e)
        for k in e.keywords:
            self._expr(k.value)
        kind = "module" if info.is_module else "optimizer" if info.is_optimizer else "object"
        return Value(kind=kind, node=e, module=Module(None) if info.is_module else None, made=self.time)

    def _module_call(self, module: Value, e: ast.Call, keywords: Mapping[str, ast.expr]) -> Any:
        args = self._arguments(e)
        for v in keywords.values():
            self._expr(v)
        info = module.module
        if info is None:
            return Value()
        facts = self.vocab.modules.get(info.kind or "", {})
        first = args[0] if args and isinstance(args[0], Value) else None
        if info.kind == "activation" and info.function:
            function = facts.get("functions", {}).get(info.function, {})
            if info.inplace and first is not None:
                self._write(first, "call", e, name=_name_of(e.args[0]), function=info.function)
                self._save_roles(function.get("saves_in_place", {}).get(self.framework, ()), "call", e, [first], first)
                return first
            result = self._fresh(e, _grad_of(args), history=self._history(args), inputs=args)
            self._save_roles(function.get("saves", {}).get(self.framework, ()), "call", e, args, result)
            return result
        if info.kind is None:
            if info.inplace and first is not None:
                self._write(first, "call", e, name=_name_of(e.args[0]))
                return first
            return self._fresh(e, None, history=self._history(args, id(module)), inputs=args)
        outputs = int(facts.get("outputs", 1))
        results = tuple(self._fresh(e, True, history=self._history(args, id(module)), inputs=args)
                        for _ in range(outputs))
        self._save_roles(facts.get("saves", {}).get(self.framework, ()), "call", e, args, results[0])
        return results[0] if outputs == 1 else results

    # -- applying an op ------------------------------------------------------------------------------------

    def _apply(self, use: OpUse, args: list[Any], node: ast.AST, keywords: Mapping[str, ast.expr],
               kw_values: Mapping[str, Any] | None = None) -> Any:
        facts = use.facts
        kw_values = kw_values or {}
        fields = dict(use.fields)
        for key in _FLAG_FIELDS:
            if key in keywords and isinstance(_constant(keywords[key]), bool):
                fields[key] = _constant(keywords[key])
        op = use.op
        if op == "backward":
            if args and isinstance(args[0], Value):
                self._backward(args[0], node, keywords)  # type: ignore[arg-type]
            return Value(kind="object")
        if fields.get("inplace") is True and not facts.in_place and self.vocab.knows(op + "_"):
            op = op + "_"  # F.relu(x, inplace=True) is relu_
            facts = self.vocab.facts(op)
        if facts.binds in ("linear", "rnn", "activation") or op in ("linear", "rnn", "activation"):
            return self._module(op, fields, node)
        if facts.binds == "optimizer" or op == "sgd":
            return self._optimizer(node, op)
        tensors = [a for a in args if isinstance(a, Value)]
        first = tensors[0] if tensors else None
        self._uses(op, first, node, fields, args)
        if op in ("requires_grad_",) and first is not None:
            flag = _constant(node.args[0]) if isinstance(node, ast.Call) and node.args else True
            self._requires_grad(first, flag is not False, node)
            return first
        if op == "detach_" and first is not None:
            self._use("detach_", first, node)
            first.requires_grad, first.history, first.leaf = False, None, False
            return first
        if op == "retain_grad" and first is not None:
            self._use("retain_grad", first, node)
            return Value(kind="object")
        out_value = kw_values.get("out")
        writes = set(facts.write_roles) | set(facts.relayout)
        for role in sorted(writes):
            target = out_value if role == "into" else _positional(args, role)
            if isinstance(target, Value) and self._is_tensorish(target):
                name_node = keywords.get("out") if role == "into" else _argument_node(node, role)
                source = args[1] if len(args) > 1 and isinstance(args[1], Value) else None
                self._write(target, op, node, name=_name_of(name_node) if name_node is not None else None,
                            source=source, rebinds=facts.rebinds, relayout=role in facts.relayout, fields=fields,
                            untracked=facts.untracked_writer)
        if op.endswith("_out") and "into" not in writes and isinstance(out_value, Value):
            self._write(out_value, op, node, name=_name_of(keywords.get("out")), fields=fields)
        if op.endswith("_out") or out_value is not None:
            self._check_out_inputs(args, node, op)  # type: ignore[arg-type]
        result = self._result(op, facts, args, node, keywords, fields, out_value)
        if isinstance(result, Value) and result is not first and isinstance(node, ast.Call):
            result.argument_kind = argument_kind(node, self.ctx.imports)
        if isinstance(result, Value) and result is not first and facts.fields:
            named = {name for name, _ in facts.fields}
            result.given = tuple(sorted(set(facts.options_given(len(args) - 1))
                                        | {k for k in keywords if k in named and dict(facts.fields).get(k) is False}))
        self._save_roles(facts.saved(self.framework), op, node, args, result)
        return result

    def _uses(self, op: str, first: Value | None, node: ast.AST, fields: Mapping[str, Any], args: list[Any]) -> None:
        """The uses some rules ask about, whatever the op then does."""
        if first is None:
            return
        if op in ("numpy", "unfold", "to", "copy_") or fields.get("copy") is True:
            numbers = tuple(_constant(a) for a in node.args) if isinstance(node, ast.Call) else ()
            self._use(op, first, node, fields, numbers)

    def _result(self, op: str, facts: Any, args: list[Any], node: ast.AST, keywords: Mapping[str, ast.expr],
                fields: Mapping[str, Any], out_value: Any) -> Any:
        first = args[0] if args and isinstance(args[0], Value) else None
        returns = facts.returns
        if op in _MULTI_OUTPUT_OPS and first is not None:
            if first.memory is None:
                first.memory = Memory()
            return Value(kind="parts", op=op, node=node, base=first, link="view", link_op=op, memory=first.memory)
        if not returns:
            if facts.in_place and first is not None:
                return first
            return self._fresh(node, _grad_of(args), history=self._history(args)) if first is not None else Value()
        if returns == {"self"} and first is not None and (facts.in_place or op.endswith("_out")):
            return first
        if "self" in returns and first is not None:  # the tensor itself where it already is what was asked
            value = Value(kind=first.kind if first.kind != "unknown" else "tensor", op=op, node=node,
                          memory=_memory(first), requires_grad=first.requires_grad, base=first, link="self",
                          link_op=op, history=first.history, made=self.time, leaf=False)
            if fields.get("copy") is True:
                return self._fresh(node, first.requires_grad, history=self._history([first]))
            return value
        if "view" in returns and first is not None:
            return self._view_of(first, op, node)
        if "untracked" in returns and first is not None:
            return Value(kind="tensor", op=op, node=node, memory=_memory(first), requires_grad=False, base=first,
                         link="untracked", link_op=op, made=self.time)
        if "tensor->array" in returns and first is not None:
            return Value(kind="array", op=op, node=node, memory=_memory(first), requires_grad=False, base=first,
                         link="tensor->array", link_op=op, made=self.time)
        if "array->tensor" in returns and first is not None:  # it may share the array's memory
            return Value(kind="tensor", op=op, node=node, memory=_memory(first), requires_grad=False, base=first,
                         link="array->tensor", link_op=op, made=self.time)
        if facts.binds == "array":
            return Value(kind="array", op=op, node=node, memory=Memory(), requires_grad=False, made=self.time)
        if facts.cuts_grad or (op in ("tensor", "full", "array", "to_tensor", "complex_tensor", "counter_tensor",
                                      "construct_tensor", "as_tensor", "from_numpy", "from_dlpack")):
            return self._created(node, keywords, op=op)
        return self._fresh(node, _grad_of(args), history=self._history(args), op=op, inputs=args)

    def _created(self, node: ast.AST, keywords: Mapping[str, ast.expr], op: str | None = None) -> Value:
        """A tensor a factory makes: a leaf that requires grad where the call asks (``requires_grad=True``,
        ``stop_gradient=False``)."""
        requires = _constant(keywords.get("requires_grad")) is True or _constant(keywords.get("stop_gradient")) is False
        return Value(kind="tensor", op=op, node=node, memory=Memory(), requires_grad=requires, leaf=requires,
                     made=self.time)

    def _fresh(self, node: ast.AST, requires_grad: bool | None, *, history: dict[int, tuple[int, int]] | None = None,
               op: str | None = None, kind: str = "tensor", inputs: Iterable[Any] = ()) -> Value:
        recording = self.state.grad_enabled and requires_grad is not False
        return Value(kind=kind, op=op, node=node, memory=Memory(),
                     requires_grad=requires_grad if self.state.grad_enabled else False,
                     history=history if recording else None, made=self.time,
                     inputs=tuple(_flat_values(inputs)) if recording else ())

    def _module(self, op: str, fields: Mapping[str, Any], node: ast.AST) -> Value:
        facts = self.vocab.modules.get(op, {})
        module = Module(op, function=fields.get("kind") if op == "activation" else None,
                        inplace=fields.get("inplace") is True)
        value = Value(kind="module", op=op, node=node, module=module, made=self.time)
        for name in facts.get("parameters", ()):
            module.parameters[name] = self._parameter(node, group=id(value))
        return value

    def _parameter(self, node: ast.AST, group: int | None = None) -> Value:
        return Value(kind="tensor", op="parameter", node=node, memory=Memory(), requires_grad=True, leaf=True,
                     made=self.time, group=group)

    def _optimizer(self, node: ast.AST, op: str | None) -> Value:
        """An optimizer, with the parameters it updates where the code shows them: ``m.parameters()`` of a
        module, or tensors listed (``[w1, w2]``)."""
        updates: list[Value] = []
        if isinstance(node, ast.Call):
            given = [*node.args[:1], *(k.value for k in node.keywords if k.arg in ("params", "parameters"))]
            for expr in given:
                for part in ast.walk(expr):
                    if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) \
                            and part.func.attr in ("parameters", "named_parameters"):
                        updates.append(self._expr(part.func.value))
                    elif isinstance(part, (ast.List, ast.Tuple)):
                        updates += [self._expr(x) for x in part.elts if isinstance(x, (ast.Name, ast.Attribute))]
        updates = [u for u in updates if isinstance(u, Value) and (u.kind == "module" or u.leaf)]
        return Value(kind="optimizer", op=op, node=node, made=self.time, updates=tuple(updates))

    def _requires_grad(self, value: Value, wants: bool, node: ast.AST) -> None:
        """``x.requires_grad_(flag)``, ``x.requires_grad = flag``, ``x.stop_gradient = not flag``: a tensor
        without history becomes a leaf that requires grad (or stops being one); one with history is left
        as it is (the frameworks differ there, which is the rule's to say)."""
        self._use("requires_grad_", value, node, {"requires_grad": wants})
        has_history = value.base is not None or (value.requires_grad is not False and not value.leaf
                                                 and value.op not in (None, "tensor", "full", "parameter"))
        if not has_history:
            value.leaf = wants
            value.requires_grad = wants

    # -- writes and saves ----------------------------------------------------------------------------------

    def _write(self, target: Value, op: str, node: ast.AST, *, name: str | None, source: Value | None = None,
               rebinds: bool = False, relayout: bool = False, function: str | None = None,
               fields: Mapping[str, Any] | None = None, call: ast.AST | None = None,
               compiled: str | None = None, grad_enabled: bool | None = None, untracked: bool = False) -> None:
        self.time += 1  # what the same statement reads after its write comes after it
        memory = _memory(target)
        live = tuple(s for s in memory.saved if s.generation == self.generation)
        aliases = tuple(sorted(n for n, v in self.state.env.items() if v is target))
        enabled = self.state.grad_enabled if grad_enabled is None else grad_enabled
        write = Write(node, target, op, self.time, name, aliases, enabled,
                      compiled if compiled is not None else self.compiled, rebinds=rebinds, relayout=relayout,
                      source=source, saved=live, function=function, fields=dict(fields or {}), call=call,
                      in_function=self.in_function, requires_grad=target.requires_grad,
                      leaf=target.is_leaf_requiring_grad(), untracked=untracked,
                      after_relayout=memory.relaid is not None)
        self.trace.writes.append(write)
        if relayout:
            memory.relaid = self.time
        if write.leaf and not untracked and not enabled and not target.untracked_path:
            # a parameter updated by hand: what was computed from it before is stale
            self._parameters_change(node, None, [v for v in target.chain() if v.leaf])
        if enabled and not untracked and not target.untracked_path and source is not None and source.kind == "tensor" \
                and source.requires_grad is True and target.requires_grad is False and not target.leaf:
            target.requires_grad = True  # copy_ of a tensor that requires grad records history

    def _use(self, op: str, value: Value, node: ast.AST, fields: Mapping[str, Any] | None = None,
             numbers: tuple[Any, ...] = ()) -> None:
        self.trace.uses.append(Use(node, op, value, self.time, self.state.grad_enabled, dict(fields or {}), numbers,
                                   compiled=self.compiled, requires_grad=value.requires_grad,
                                   leaf=value.is_leaf_requiring_grad(), view=value.through_view is not None,
                                   from_parameters=any(key != -1 for v in value.chain() for key in (v.history or {}))))

    def _save_roles(self, roles: Sequence[str], op: str, node: ast.AST, args: Sequence[Any], result: Any) -> None:
        """What the op's backward reads is saved, when it records history (grad on, an input that may
        require grad)."""
        if not self.state.grad_enabled or not roles:
            return
        tensors = [a for a in args if isinstance(a, Value) and not a.constant and a.kind == "tensor"]
        if not tensors or all(a.requires_grad is False for a in tensors):
            return
        for role in roles:
            if role == "output":
                saved = [result] if isinstance(result, Value) else []
            elif role == "input":
                saved = tensors[:1]
            elif role == "inputs":
                saved = tensors
            elif role == "operands":  # each operand, when another operand (by position) may require grad
                saved = [a for i, a in enumerate(tensors)
                         if any(j != i and b.requires_grad is not False for j, b in enumerate(tensors))]
            else:
                saved = []
            for value in saved:
                _memory(value).saved.append(Saved(op, "output" if role == "output" else "input", node, self.time,
                                                  self.generation, result if isinstance(result, Value) else None))


def _flat_values(items: Iterable[Any]) -> Iterator[Value]:
    for item in items:
        if isinstance(item, Value):
            yield item
        elif isinstance(item, tuple):
            yield from _flat_values(item)


def _memory(value: Value) -> Memory:
    if value.memory is None:
        value.memory = Memory()
    return value.memory


def _one(value: Any) -> Value | None:
    return value if isinstance(value, Value) else None


def _name_of(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _constant(node: ast.AST | None) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    return None


def _combine_constants(left: Any, right: Any) -> Value:
    both = isinstance(left, Value) and isinstance(right, Value) and left.constant and right.constant
    return Value(kind="number", constant=True) if both else Value()


def _grad_of(args: Iterable[Any]) -> bool | None:
    """Whether a result of *args* requires grad: True if one does, None if one may, else False."""
    flags = [a.requires_grad for a in args if isinstance(a, Value) and not a.constant
             and a.kind in ("tensor", "unknown")]
    if any(f is True for f in flags):
        return True
    if any(f is None for f in flags):
        return None
    return False


def _positional(args: Sequence[Any], role: str) -> Any:
    if role.startswith("arg") and role[3:].isdigit():
        index = int(role[3:])
        return args[index] if index < len(args) else None
    return None


def _argument_node(node: ast.AST, role: str) -> ast.AST | None:
    """The expression the code wrote for argument *role* (``arg0`` of a method call is its receiver)."""
    if not isinstance(node, ast.Call) or not role.startswith("arg"):
        return None
    index = int(role[3:])
    if isinstance(node.func, ast.Attribute):
        items = [node.func.value, *node.args]
    else:
        items = list(node.args)
    return items[index] if index < len(items) else None


def _advanced(index_node: ast.AST, index: Any) -> bool:
    """Advanced indexing (a list, a tensor of indices): a copy, not a view."""
    nodes = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    for node in nodes:
        if isinstance(node, (ast.List, ast.ListComp)):
            return True
    values = index if isinstance(index, tuple) else (index,)
    return any(isinstance(v, Value) and v.kind in ("tensor", "array") for v in values)
