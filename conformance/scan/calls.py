"""The calls of a function being read: a method of a value, a module held in an attribute, a function of the
file, a class of the file, a framework's function, an optimizer's ``step``, a ``backward``: which op each
spells (the vocabulary), or what the frameworks' conventions say where the vocabulary is silent."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from conformance.scan.effects import FLAG_FIELDS, Effects
from conformance.scan.events import Backward, ZeroGrad
from conformance.scan.forms import INPLACE_SUFFIX, OUT_SUFFIX, argument_kind, call_form, constant, name_of
from conformance.scan.model import Memory, Module, Value, flat_values, grad_of

if TYPE_CHECKING:
    from conformance.scan.context import ClassInfo

__all__ = ["Calls"]

#: The frameworks whose conventions read a call the vocabulary does not know.
_FRAMEWORK_ROOTS = ("torch", "paddle")
#: The frameworks' tensor factories (and each ``*_like``): a function of the framework not among them, given
#: no tensor, is not known to return one (``torch.load``, ``torch.device``).
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
                        "logspace", "eye", "tensor", "as_tensor", "to_tensor", "from_numpy", "normal", "uniform",
                        "Tensor", "FloatTensor", "LongTensor", "IntTensor", "BoolTensor", "zeros_like", "ones_like"})
#: Of those, the ones that make a tensor of their own from a shape (or another tensor's shape) alone: read as
#: factories whatever op of the catalogue a program happens to spell with one (a tensor hook's holder is
#: ``zeros_like(t)``), so that ``requires_grad=True`` makes a leaf.
_SHAPE_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn", "randint", "randperm", "arange",
                              "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like", "rand_like",
                              "randn_like"})
#: Methods with a trailing underscore that write no values (the convention's exceptions).
_NOT_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "pin_memory_", "retain_grads_"})
#: Python builtins that read their arguments and keep none of them (a value passed to anything else may be
#: kept, and so reach a backward: ``Value.live``).
_KEEPS_NOTHING = frozenset({"print", "len", "isinstance", "issubclass", "type", "id", "repr", "str", "int", "float",
                            "bool", "format", "round", "abs", "hash", "callable", "hasattr", "getattr"})


class Calls(Effects):
    """The part of the interpreter that reads calls."""

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
        qualified = form[3:].removesuffix(OUT_SUFFIX).removesuffix(INPLACE_SUFFIX)
        if qualified.rsplit(".", 1)[-1] in ("compile", "to_static") and args and isinstance(args[0], Value):
            return args[0]
        if qualified.endswith(".autograd.grad") and args:
            self._backward(args[0], e, keywords)
            return Value()
        use = self.vocab.lookup(self.framework, form, argument_kind(e, self.ctx.imports))
        kw_values = {k: self._expr(v) for k, v in keywords.items()}
        if qualified.split(".", 1)[0] in _FRAMEWORK_ROOTS and qualified.rsplit(".", 1)[-1] in _SHAPE_FACTORIES:
            return self._created(e, keywords)
        if use is None:
            return self._unknown_call(e, args, keywords, kw_values, qualified)
        if qualified.split(".", 1)[0] not in _FRAMEWORK_ROOTS and use.facts.binds == "tensor" \
                and not any(self._is_tensorish(a) for a in flat_values(args + list(kw_values.values()))):
            # a function outside the frameworks (copy.deepcopy) given no tensor: what it returns is not known
            # to be one (a deep copy of a dict is a dict)
            self._escape(args + list(kw_values.values()))
            return Value(node=e)
        # tensors passed by keyword follow the positional ones (paddle.assign(x, output=y))
        args = args + [v for k, v in kw_values.items() if k != "out" and k not in FLAG_FIELDS
                       and isinstance(v, Value) and v.kind == "tensor"]
        return self._apply(use, args, e, keywords, kw_values)


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
            flag = constant(keywords["set_to_none"]) if "set_to_none" in keywords else None
            self.trace.zero_grads.append(ZeroGrad(e, self.time, flag if isinstance(flag, bool) else None))
        return Value(kind="object")

    def _backward(self, root: Any, e: ast.Call, keywords: Mapping[str, ast.expr]) -> None:
        retain = constant(keywords.get("retain_graph")) is True if "retain_graph" in keywords else False
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
            self._write(out, "out", e, name=name_of(keywords["out"]), fields={"out": True})
            self._check_out_inputs(args, e, qualified, out)
            return out
        if first is not None and self._is_tensorish(first) and (
                constant(keywords.get("inplace")) is True or (last.endswith("_") and not last.startswith("_"))):
            op = last if last.endswith("_") else last + "_"
            # torch.nn.init's functions "all run in torch.no_grad() mode" (its documentation)
            initialiser = len(parts) > 2 and parts[1:3] == ["nn", "init"]
            self._write(first, op, e, name=name_of(e.args[0]) if e.args else None,
                        grad_enabled=False if initialiser else None)
            return first
        if last == "Parameter" or last == "create_parameter":
            return self._parameter(e)
        if last[:1].isupper() and len(parts) >= 2 and parts[1] in ("optim", "optimizer"):
            return self._optimizer(e, None)
        if last[:1].isupper() and len(parts) >= 2 and parts[1] == "nn":
            inplace = constant(keywords.get("inplace")) is True
            return Value(kind="module", node=e, module=Module(None, inplace=inplace), made=self.time)
        if any(isinstance(a, Value) and a.kind == "tensor" and not a.constant for a in flat_values(args)):
            return self._fresh(e, grad_of(args), history=self._history(args), inputs=args)
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
                self._write(receiver, name, e, name=name_of(e.func.value) if isinstance(e.func, ast.Attribute)
                            else None)
            return receiver
        if name in ("item", "tolist", "size", "dim", "numel", "__len__", "data_ptr", "stride", "is_contiguous"):
            return Value(kind="number")
        if receiver.kind == "tensor":
            return self._fresh(e, receiver.requires_grad, history=self._history([receiver]))
        return Value(node=e)

    def _check_out_inputs(self, args: Sequence[Any], e: ast.Call, op: str, out: Any = None) -> None:
        """``out=`` on inputs that require grad, and ``out=`` naming one of the inputs (or memory one of them
        is on): uses the out= rules ask about."""
        tensors = [a for a in args if isinstance(a, Value) and a.kind in ("tensor", "unknown") and not a.constant]
        grad = next((a for a in tensors if a.requires_grad is True), None)
        if self.state.grad_enabled and grad is not None:
            self._use("out", grad, e, {"op": op})
        if isinstance(out, Value):
            read = next((a for a in tensors if a is out or (a.memory is not None and a.memory is out.memory)), None)
            if read is not None:
                self._use("out_reads", read, e, {"op": op})

    def _local_call(self, name: str, e: ast.Call) -> Any:
        """A function of the file: what it writes into its arguments (its summary) happens here too."""
        args = self._arguments(e)
        self._escape(args)
        if not self.summarising:
            for index, inner in self.ctx.summaries.get(name, ()):
                if index < len(args) and isinstance(args[index], Value) and self._is_tensorish(args[index]):
                    self._write(args[index], inner.op, inner.node, name=name_of(e.args[index]),
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
                self._write(first, "call", e, name=name_of(e.args[0]), function=info.function)
                self._save_roles(function.get("saves_in_place", {}).get(self.framework, ()), "call", e, [first], first)
                return first
            result = self._fresh(e, grad_of(args), history=self._history(args), inputs=args)
            self._save_roles(function.get("saves", {}).get(self.framework, ()), "call", e, args, result)
            return result
        if info.kind is None:
            if info.inplace and first is not None:
                self._write(first, "call", e, name=name_of(e.args[0]))
                return first
            return self._fresh(e, None, history=self._history(args, id(module)), inputs=args)
        outputs = int(facts.get("outputs", 1))
        results = tuple(self._fresh(e, True, history=self._history(args, id(module)), inputs=args)
                        for _ in range(outputs))
        self._save_roles(facts.get("saves", {}).get(self.framework, ()), "call", e, args, results[0])
        return results[0] if outputs == 1 else results

    # -- applying an op ------------------------------------------------------------------------------------
