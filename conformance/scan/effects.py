"""What an op does when the interpreter meets it: the value it makes (new, the argument itself, a view, an
untracked alias, an array on the tensor's memory), the writes it makes, what it saves for backward, what
history its result carries (which parameters, at which version), and the uses some rules ask about."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from conformance.scan.context import FileContext, State
from conformance.scan.events import Step, Trace, Use, Write
from conformance.scan.forms import argument_kind, argument_node, constant, name_of, positional
from conformance.scan.model import Memory, Module, Saved, Value, flat_values, grad_of, memory_of

if TYPE_CHECKING:
    from conformance.scan.vocabulary import OpUse, Vocabulary

__all__ = ["Effects", "FLAG_FIELDS"]

#: Keyword fields a call may give that the rules look at (a zero-copy constructor, a copy, set_to_none).
FLAG_FIELDS = ("zero_copy", "copy", "set_to_none", "inplace", "retain_graph", "full_graph")
#: Ops that bind one view per part (``a, b = x.split(...)``).
class Effects:
    """The part of the interpreter that applies ops to values; the interpreter's state, which every part
    reads, is declared here."""

    ctx: FileContext
    vocab: "Vocabulary"
    framework: str
    trace: Trace
    compiled: str | None
    summarising: bool
    time: int
    versions: dict[int, int]
    updates: dict[int, tuple[str, ast.AST]]
    loops: list[tuple[int, int]]
    generation: int
    state: State
    in_function: bool
    attributes: dict[tuple[int, str], Value]

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

    def _apply(self, use: OpUse, args: list[Any], node: ast.AST, keywords: Mapping[str, ast.expr],
               kw_values: Mapping[str, Any] | None = None) -> Any:
        facts = use.facts
        kw_values = kw_values or {}
        fields = dict(use.fields)
        for key in FLAG_FIELDS:
            if key in keywords and isinstance(constant(keywords[key]), bool):
                fields[key] = constant(keywords[key])
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
            flag = constant(node.args[0]) if isinstance(node, ast.Call) and node.args else True
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
        if facts.no_backward:  # a write no derivative follows in these frameworks
            fields = {**fields, "no_backward": ",".join(facts.no_backward)}
        writes = set(facts.write_roles) | set(facts.relayout)
        for role in sorted(writes):
            target = out_value if role == "into" else positional(args, role)
            if isinstance(target, Value) and self._is_tensorish(target):
                name_node = keywords.get("out") if role == "into" else argument_node(node, role, self.ctx.imports)
                source = args[1] if len(args) > 1 and isinstance(args[1], Value) else None
                self._write(target, op, node, name=name_of(name_node) if name_node is not None else None,
                            source=source, rebinds=facts.rebinds, relayout=role in facts.relayout, fields=fields,
                            untracked=facts.untracked_writer)
        if op.endswith("_out") and "into" not in writes and isinstance(out_value, Value):
            self._write(out_value, op, node, name=name_of(keywords.get("out")), fields=fields)
        if op.endswith("_out") or out_value is not None:
            self._check_out_inputs(args, node, op, out_value)  # type: ignore[arg-type]
        result = self._result(op, facts, args, node, keywords, fields, out_value)
        if isinstance(result, Value) and result is not first and isinstance(node, ast.Call):
            result.argument_kind = argument_kind(node, self.ctx.imports)
        if isinstance(result, Value) and result is not first and facts.fields:
            named = {name for name, _ in facts.fields}
            result.given = tuple(sorted(set(facts.options_given(len(args) - 1))
                                        | {k for k in keywords if k in named and dict(facts.fields).get(k) is False}))
        self._save_roles(facts.saved(self.framework), op, node, args, result)
        own = set(facts.saved(self.framework))
        for other, roles in sorted(facts.saves.items()):
            extra = tuple(role for role in roles if role not in own)
            if other != self.framework and extra:
                self._save_roles(extra, op, node, args, result, elsewhere=(other,))
        return result

    def _uses(self, op: str, first: Value | None, node: ast.AST, fields: Mapping[str, Any], args: list[Any]) -> None:
        """The uses some rules ask about, whatever the op then does."""
        if first is None:
            return
        if op in ("numpy", "unfold", "to", "copy_", "pad", "view_dtype") or fields.get("copy") is True:
            numbers = tuple(constant(a) for a in node.args) if isinstance(node, ast.Call) else ()
            self._use(op, first, node, fields, numbers)

    def _result(self, op: str, facts: Any, args: list[Any], node: ast.AST, keywords: Mapping[str, ast.expr],
                fields: Mapping[str, Any], out_value: Any) -> Any:
        first = args[0] if args and isinstance(args[0], Value) else None
        returns = facts.returns
        if facts.many and "view" in returns and first is not None:  # split, unbind, unsafe_split: views, in parts
            if first.memory is None:
                first.memory = Memory()
            return Value(kind="parts", op=op, node=node, base=first, link="view", link_op=op, memory=first.memory)
        if not returns:
            if facts.in_place and first is not None:
                return first
            return self._fresh(node, grad_of(args), history=self._history(args)) if first is not None else Value()
        if returns == {"self"} and first is not None and (facts.in_place or op.endswith("_out")):
            return first
        if {"self", "view"} <= returns and first is not None:  # conj: the input itself where it is real, a view
            return self._view_of(first, op, node)               # where it is complex; a view covers both
        if "self" in returns and first is not None:  # the tensor itself where it already is what was asked
            value = Value(kind=first.kind if first.kind != "unknown" else "tensor", op=op, node=node,
                          memory=memory_of(first), requires_grad=first.requires_grad, base=first, link="self",
                          link_op=op, history=first.history, made=self.time, leaf=False)
            if fields.get("copy") is True:
                return self._fresh(node, first.requires_grad, history=self._history([first]))
            return value
        if "view" in returns and first is not None:
            return self._view_of(first, op, node)
        if "untracked" in returns and first is not None:
            return Value(kind="tensor", op=op, node=node, memory=memory_of(first), requires_grad=False, base=first,
                         link="untracked", link_op=op, made=self.time)
        if "tensor->array" in returns and first is not None:
            return Value(kind="array", op=op, node=node, memory=memory_of(first), requires_grad=False, base=first,
                         link="tensor->array", link_op=op, made=self.time)
        if "array->tensor" in returns and first is not None:  # it may share the array's memory
            return Value(kind="tensor", op=op, node=node, memory=memory_of(first), requires_grad=False, base=first,
                         link="array->tensor", link_op=op, made=self.time)
        if facts.binds == "array":
            return Value(kind="array", op=op, node=node, memory=Memory(), requires_grad=False, made=self.time)
        if facts.cuts_grad or (op in ("tensor", "full", "array", "to_tensor", "complex_tensor", "counter_tensor",
                                      "construct_tensor", "as_tensor", "from_numpy", "from_dlpack")):
            return self._created(node, keywords, op=op)
        return self._fresh(node, grad_of(args), history=self._history(args), op=op, inputs=args)

    def _created(self, node: ast.AST, keywords: Mapping[str, ast.expr], op: str | None = None) -> Value:
        """A tensor a factory makes: a leaf that requires grad where the call asks (``requires_grad=True``,
        ``stop_gradient=False``)."""
        requires = constant(keywords.get("requires_grad")) is True or constant(keywords.get("stop_gradient")) is False
        return Value(kind="tensor", op=op, node=node, memory=Memory(), requires_grad=requires, leaf=requires,
                     made=self.time)

    def _fresh(self, node: ast.AST, requires_grad: bool | None, *, history: dict[int, tuple[int, int]] | None = None,
               op: str | None = None, kind: str = "tensor", inputs: Iterable[Any] = ()) -> Value:
        recording = self.state.grad_enabled and requires_grad is not False
        return Value(kind=kind, op=op, node=node, memory=Memory(),
                     requires_grad=requires_grad if self.state.grad_enabled else False,
                     history=history if recording else None, made=self.time,
                     inputs=tuple(flat_values(inputs)) if recording else ())

    def _module(self, op: str, fields: Mapping[str, Any], node: ast.AST) -> Value:
        facts = self.vocab.modules.get(op, {})
        module = Module(op, function=fields.get("kind") if op == "activation" else None,
                        inplace=fields.get("inplace") is True)
        value = Value(kind="module", op=op, node=node, module=module, made=self.time)
        buffers = facts.get("buffers", ())
        for name in facts.get("parameters", ()):
            module.parameters[name] = (  # a buffer is the module's state: it requires no grad
                Value(kind="tensor", op="buffer", node=node, memory=Memory(), requires_grad=False, made=self.time)
                if name in buffers else self._parameter(node, group=id(value)))
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
        memory = memory_of(target)
        live = tuple(s for s in memory.saved if s.generation == self.generation)
        aliases = tuple(sorted(n for n, v in self.state.env.items() if v is target))
        enabled = self.state.grad_enabled if grad_enabled is None else grad_enabled
        write = Write(node, target, op, self.time, name, aliases, enabled,
                      compiled if compiled is not None else self.compiled, rebinds=rebinds, relayout=relayout,
                      source=source, saved=live, function=function, fields=dict(fields or {}), call=call,
                      in_function=self.in_function, requires_grad=target.requires_grad,
                      leaf=target.is_leaf_requiring_grad(), untracked=untracked,
                      after_relayout=memory.relaid is not None, relaid=memory.relaid)
        self.trace.writes.append(write)
        if relayout:
            memory.relaid = self.time
        if write.leaf and not target.untracked_path and not relayout and (untracked or not enabled):
            # a parameter updated by hand (under no_grad, or by a writer that records no history: an
            # initialiser, set_value): what was computed from it before is stale
            self._parameters_change(node, None, [v for v in target.chain() if v.leaf],
                                    by=op if untracked else "hand")
        if enabled and not untracked and not target.untracked_path and source is not None and source.kind == "tensor" \
                and source.requires_grad is True and target.requires_grad is False and not target.leaf:
            target.requires_grad = True  # copy_ of a tensor that requires grad records history

    def _use(self, op: str, value: Value, node: ast.AST, fields: Mapping[str, Any] | None = None,
             numbers: tuple[Any, ...] = ()) -> None:
        self.trace.uses.append(Use(node, op, value, self.time, self.state.grad_enabled, dict(fields or {}), numbers,
                                   compiled=self.compiled, requires_grad=value.requires_grad,
                                   leaf=value.is_leaf_requiring_grad(), view=value.through_view is not None,
                                   from_parameters=any(key != -1 for v in value.chain() for key in (v.history or {}))))

    def _save_roles(self, roles: Sequence[str], op: str, node: ast.AST, args: Sequence[Any], result: Any,
                    elsewhere: tuple[str, ...] = ()) -> None:
        """What the op's backward reads is saved, when it records history (grad on, an input that may
        require grad); *elsewhere*: the other frameworks whose op saves it, where the code's own does not."""
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
            elif role == "others":  # every tensor argument but the first (addmm_'s matrices)
                saved = tensors[1:]
            elif role == "operands":  # each operand, when another operand (by position) may require grad
                saved = [a for i, a in enumerate(tensors)
                         if any(j != i and b.requires_grad is not False for j, b in enumerate(tensors))]
            else:
                saved = []
            for value in saved:
                memory_of(value).saved.append(Saved(op, "output" if role == "output" else "input", node, self.time,
                                                  self.generation, result if isinstance(result, Value) else None,
                                                  elsewhere))

    def _parameters_change(self, node: ast.AST, optimizer: Value | None, changed: Iterable[Value] = (),
                           by: str = "hand") -> None:
        """Parameters change in place: an optimizer's (all of them when the code does not show which), or
        the ones written by hand (*by*: ``hand``, or the op of a writer that records no history)."""
        groups = {self._group(v) for v in changed} or {self._group(v) for v in (optimizer.updates if optimizer else ())}
        groups.discard(None)
        how = ("optimizer" if optimizer is not None else by, node)
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
