"""The independent reference: NumPy float64 with value semantics and closed-form gradients.

It imports no framework and judges every framework alike.  Semantics
(documented in ``docs/reference.md``):

* Values are immutable.  A Python object ("box") holds the current value; an
  in-place step puts a fresh value in the box, so names bound to the same box
  (``h = h_next``) see it, while the graph keeps the value each op consumed.
* A view (``getitem``) reads through to its base; a write through a view
  updates the base.  ``.data`` is an untracked view: a write through it changes
  the value but not the gradient of anything computed before it.
* ``from_numpy``, ``to_tensor``, ``numpy`` and ``detach`` produce fresh values
  (no aliasing); memory sharing is a memory observation, never judged here.
* An in-place write under ``no_grad`` (the optimizer's update) changes the
  value and keeps the box a leaf; earlier graph nodes keep the old value.
* Gradients are exact vector-Jacobian products, accumulated into leaf boxes.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from conformance.case.load import Case, Step
from conformance.ops import AUGMENTED, BINARY_INPLACE, BINARY_OPERATORS, UNARY

__all__ = ["ReferenceFailure", "ReferenceResult", "run_reference"]

_ids = itertools.count()


class ReferenceFailure(Exception):
    """The reference cannot give a value for this case (the case is ill-posed)."""

    def __init__(self, step: Step | None, message: str) -> None:
        where = f"step {step.number} ({step.op}, line {step.line}): " if step else ""
        super().__init__(where + message)


class Node:
    """An immutable value in the graph, with the vector-Jacobian products to its parents."""

    __slots__ = ("value", "parents", "leaf", "requires_grad", "id")

    def __init__(self, value: np.ndarray, parents: tuple = (), leaf: "Box | None" = None,
                 requires_grad: bool = False) -> None:
        self.value = value
        self.parents: tuple[tuple[Node, Callable[[np.ndarray], np.ndarray]], ...] = parents
        self.leaf = leaf
        self.requires_grad = requires_grad or any(p.requires_grad for p, _ in parents)
        self.id = next(_ids)


class Box:
    """A Python-level tensor or array; a view reads and writes through its base."""

    def __init__(self, node: Node | None = None, kind: str = "tensor", base: "Box | None" = None,
                 index: tuple | None = None, tracked: bool = True) -> None:
        self._node = node
        self.kind = kind
        self.base = base
        self.index = index
        self.tracked = tracked
        self.grad: np.ndarray | None = None

    @property
    def node(self) -> Node:
        if self.base is None:
            assert self._node is not None
            return self._node
        base = self.base.node
        value = base.value if self.index is None else base.value[self.index]
        if not self.tracked:
            return Node(np.array(value))
        index = self.index
        return Node(np.array(value), ((base, lambda g: _scatter(base.value.shape, index, g)),))

    @property
    def value(self) -> np.ndarray:
        return self.node.value

    def write(self, new: Node) -> None:
        """An in-place write recorded in the graph."""
        if self.base is None:
            self._node = new
        elif not self.tracked:
            self.write_untracked(new.value)
        else:
            self.base.write(_setitem(self.base.node, self.index, new))

    def write_untracked(self, value: np.ndarray) -> None:
        """Change the value, keeping the graph: what ``.data`` and ``no_grad`` writes do."""
        value = np.asarray(value, dtype=self.value.dtype)
        if self.base is None:
            old = self.node
            self._node = Node(value, old.parents, old.leaf, old.requires_grad)
        else:
            full = np.array(self.base.value)
            if self.index is None:
                full = value.reshape(full.shape)
            else:
                full[self.index] = value
            self.base.write_untracked(full)


@dataclass
class Module:
    kind: str
    params: dict[str, Box] = field(default_factory=dict)
    inplace: bool = False


@dataclass
class Optimizer:
    params: list[Box]
    lr: float


@dataclass
class ReferenceResult:
    """Reference observations by name: arrays, or None for "no gradient"."""

    observations: dict[str, np.ndarray | None]


def run_reference(case: Case, time_limit: float = 60.0) -> ReferenceResult:
    """Interpret *case* with value semantics; raise ReferenceFailure if it cannot,
    or if it has not finished within *time_limit* seconds (a case may loop for ever)."""
    interpreter = _Interpreter(time.monotonic() + time_limit)
    interpreter.run(case.steps, ())
    return ReferenceResult(interpreter.observations)


# -- differentiable primitives -------------------------------------------------------


def _unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if grad.ndim < len(shape):  # the value had leading singleton dimensions
        grad = grad.reshape((1,) * (len(shape) - grad.ndim) + grad.shape)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def _scatter(shape: tuple[int, ...], index: tuple | None, grad: np.ndarray) -> np.ndarray:
    out = np.zeros(shape)
    if index is None:
        return grad.reshape(shape)
    np.add.at(out, index, grad)
    return out


def _setitem(base: Node, index: tuple | None, value: Node) -> Node:
    result = np.array(base.value, dtype=np.result_type(base.value, np.float64)
                      if base.value.dtype.kind == "f" else base.value.dtype)
    target_shape = result[index].shape if index is not None else result.shape
    if index is None:
        result[...] = value.value
    else:
        result[index] = value.value

    def to_base(g: np.ndarray) -> np.ndarray:
        g = np.array(g)
        if index is None:
            return np.zeros_like(g)
        g[index] = 0.0
        return g

    def to_value(g: np.ndarray) -> np.ndarray:
        part = g if index is None else g[index]
        return _unbroadcast(np.broadcast_to(part, target_shape), value.value.shape)

    return Node(result, ((base, to_base), (value, to_value)))


def _literal(value: Any, dtype: str) -> np.ndarray:
    """A literal as the framework holds it (rounded to its declared dtype), computed on in float64."""
    if dtype == "int64":
        return np.array(value, dtype=np.int64)
    return np.array(value, dtype=dtype).astype(np.float64)


def _const(value: Any) -> Node:
    return Node(np.asarray(value, dtype=np.float64) if isinstance(value, float) else np.asarray(value))


def _unary(name: str, x: Node) -> Node:
    fn = UNARY[name]
    y = fn.forward(x.value.astype(np.float64))
    return Node(y, ((x, lambda g: g * fn.derivative(x.value, y)),))


def _binary(name: str, a: Node, b: Node) -> Node:
    av, bv = a.value, b.value
    if name == "matmul":
        return Node(av @ bv, ((a, lambda g: g @ np.swapaxes(bv, -1, -2)),
                              (b, lambda g: np.swapaxes(av, -1, -2) @ g)))
    if name == "add":
        value, da, db = av + bv, lambda g: g, lambda g: g
    elif name == "sub":
        value, da, db = av - bv, lambda g: g, lambda g: -g
    elif name == "mul":
        value, da, db = av * bv, lambda g: g * bv, lambda g: g * av
    elif name == "div":
        value, da, db = av / bv, lambda g: g / bv, lambda g: -g * av / (bv * bv)
    elif name == "pow":
        value = np.power(av.astype(np.float64), bv)
        da = lambda g: g * bv * np.power(av.astype(np.float64), bv - 1)  # noqa: E731
        with np.errstate(divide="ignore", invalid="ignore"):  # d/db of a**b is undefined for a < 0
            log_a = np.where(av > 0, np.log(np.where(av > 0, av, 1.0)), np.where(av == 0, 0.0, np.nan))
        db = lambda g: g * value * log_a  # noqa: E731
    else:  # pragma: no cover - the ops table and this function agree
        raise KeyError(name)
    return Node(value, ((a, lambda g: _unbroadcast(da(g), av.shape)),
                        (b, lambda g: _unbroadcast(db(g), bv.shape))))


def _sum(x: Node) -> Node:
    return Node(np.asarray(x.value.sum()), ((x, lambda g: np.broadcast_to(g, x.value.shape)),))


def _mean(x: Node) -> Node:
    n = x.value.size
    return Node(np.asarray(x.value.mean()), ((x, lambda g: np.broadcast_to(g / n, x.value.shape)),))


def _stack(nodes: list[Node]) -> Node:
    value = np.stack([n.value for n in nodes])
    return Node(value, tuple((n, (lambda i: lambda g: g[i])(i)) for i, n in enumerate(nodes)))


def _transpose(x: Node) -> Node:
    return Node(x.value.T, ((x, lambda g: g.T),))


def _index(x: Node, index: tuple) -> Node:
    return Node(np.array(x.value[index]), ((x, lambda g: _scatter(x.value.shape, index, g)),))


def _detached(node: Node) -> Node:
    return Node(node.value)


# -- the interpreter -----------------------------------------------------------------


class _Interpreter:
    def __init__(self, deadline: float = float("inf")) -> None:
        self.deadline = deadline
        self.env: dict[str, Any] = {}
        self.observations: dict[str, np.ndarray | None] = {}
        self.grad_enabled = True
        self.counters: dict[str, int] = {}

    def track(self, node: Node) -> Node:
        return node if self.grad_enabled else _detached(node)

    def run(self, steps: tuple[Step, ...], loop: tuple[int, ...]) -> None:
        for step in steps:
            if time.monotonic() > self.deadline:
                raise ReferenceFailure(step, "the reference ran out of time on this case")
            try:
                self.step(step, loop)
            except ReferenceFailure:
                raise
            except Exception as exc:  # a numerical or shape problem in the case itself
                raise ReferenceFailure(step, f"{type(exc).__name__}: {exc}") from exc

    def tensor(self, step: Step, name: Any) -> Box:
        value = self.env[name]
        if not isinstance(value, Box):
            raise ReferenceFailure(step, f"{name!r} is not a tensor")
        return value

    def operand(self, step: Step, arg: Any) -> Node:
        if isinstance(arg, str):
            return self.tensor(step, arg).node
        return _const(arg)

    def inplace(self, box: Box, new: Node) -> None:
        if self.grad_enabled:
            box.write(new)
        else:
            box.write_untracked(new.value)

    def bind(self, step: Step, *values: Any) -> None:
        for name, value in zip(step.out, values):
            self.env[name] = value

    def step(self, step: Step, loop: tuple[int, ...]) -> None:  # noqa: C901 - one branch per op
        op, args, f = step.op, step.args, step.fields
        if op == "observe":
            self.observe(step, loop)
        elif op in ("tensor", "array"):
            box = Box(kind=op)
            leaf = box if f.get("requires_grad") else None
            box._node = Node(_literal(f["value"], f["dtype"]), leaf=leaf, requires_grad=leaf is not None)
            self.bind(step, box)
        elif op in ("from_numpy", "to_tensor", "detach"):
            self.bind(step, Box(Node(np.array(self.env[args[0]].value))))
        elif op == "numpy":
            self.bind(step, Box(Node(np.array(self.tensor(step, args[0]).value)), kind="array"))
        elif op == "getitem":
            base = self.env[args[0]]
            self.bind(step, Box(kind=base.kind, base=base, index=step.index.resolve(self.counters)))
        elif op == "setitem":
            box = self.env[args[0]]
            self.inplace(box, _setitem(box.node, step.index.resolve(self.counters), self.operand(step, args[1])))
        elif op == "assign":
            self.bind(step, self.env[args[0]])
        elif op == "clone":
            self.bind(step, Box(self.track(Node(np.array(self.tensor(step, args[0]).value),
                                                ((self.tensor(step, args[0]).node, lambda g: g),)))))
        elif op == "data":
            self.bind(step, Box(base=self.tensor(step, args[0]), tracked=False))
        elif op == "requires_grad_":
            box = self.tensor(step, args[0])
            if not box.node.requires_grad:  # on a tensor that already requires grad: nothing to do
                box._node = Node(np.array(box.value), leaf=box, requires_grad=True)
        elif op in UNARY:
            self.bind(step, Box(self.track(_unary(op, self.tensor(step, args[0]).node))))
        elif op.endswith("_") and op[:-1] in UNARY:
            box = self.tensor(step, args[0])
            self.inplace(box, _unary(op[:-1], box.node))
            self.bind(step, box)
        elif op in BINARY_OPERATORS:
            node = _binary(op, self.operand(step, args[0]), self.operand(step, args[1]))
            self.bind(step, Box(self.track(node)))
        elif op in BINARY_INPLACE or op in AUGMENTED:
            name = op[:-1] if op in BINARY_INPLACE else op[1:]
            box = self.env[args[0]]
            self.inplace(box, _binary(name, box.node, self.operand(step, args[1])))
            self.bind(step, box)
        elif op == "add_out":
            self.inplace(self.tensor(step, f["into"]),
                         _binary("add", self.operand(step, args[0]), self.operand(step, args[1])))
        elif op in ("sum", "mean"):
            reduce = _sum if op == "sum" else _mean
            self.bind(step, Box(self.track(reduce(self.tensor(step, args[0]).node))))
        elif op in ("linear", "rnn"):
            module = Module(op)
            for pname, value in f.items():
                if value is not None:
                    box = Box()
                    box._node = Node(_literal(value, "float32"), leaf=box, requires_grad=True)
                    module.params[pname] = box
            self.bind(step, module)
        elif op == "activation":
            self.bind(step, Module(f["kind"], inplace=bool(f["inplace"])))
        elif op == "call":
            self.call(step)
        elif op == "mse_loss":
            diff = _binary("sub", self.tensor(step, args[0]).node, self.tensor(step, args[1]).node)
            self.bind(step, Box(self.track(_mean(_binary("mul", diff, diff)))))
        elif op == "sgd":
            params = [p for name in args for p in self.env[name].params.values()]
            self.bind(step, Optimizer(params, float(f["lr"])))
        elif op == "step":
            optimizer: Optimizer = self.env[args[0]]
            for p in optimizer.params:
                if p.grad is not None:
                    p.write_untracked(p.value - optimizer.lr * p.grad)
        elif op == "zero_grad":
            for p in self.env[args[0]].params:
                p.grad = None
        elif op == "backward":
            self.backward(step, self.tensor(step, args[0]).node)
        elif op == "repeat":
            for i in range(f["times"]):
                if f.get("var"):
                    self.counters[f["var"]] = i
                self.run(step.steps, loop + (i,))
        elif op == "no_grad":
            previous, self.grad_enabled = self.grad_enabled, False
            try:
                self.run(step.steps, loop)
            finally:
                self.grad_enabled = previous
        elif op == "measure_allocated":
            self.run(step.steps, loop)
        else:  # pragma: no cover - validation admits only known ops
            raise ReferenceFailure(step, f"no reference semantics for op {op!r}")

    def call(self, step: Step) -> None:
        module = self.env[step.args[0]]
        inputs = [self.tensor(step, name) for name in step.args[1:]]
        p = {name: box.node for name, box in module.params.items()}
        if module.kind == "linear":
            y = _binary("matmul", inputs[0].node, _transpose(p["weight"]))
            if "bias" in p:
                y = _binary("add", y, p["bias"])
            self.bind(step, Box(self.track(y)))
        elif module.kind == "rnn":
            x = inputs[0].node
            h = _index(inputs[1].node, (0,)) if len(inputs) > 1 else Node(
                np.zeros((x.value.shape[1], p["weight_hh"].value.shape[0])))
            outputs = []
            for t in range(x.value.shape[0]):
                pre = _binary("add", _binary("matmul", _index(x, (t,)), _transpose(p["weight_ih"])), p["bias_ih"])
                pre = _binary("add", pre, _binary("add", _binary("matmul", h, _transpose(p["weight_hh"])),
                                                  p["bias_hh"]))
                h = _unary("tanh", pre)
                outputs.append(h)
            self.bind(step, Box(self.track(_stack(outputs))), Box(self.track(_stack([h]))))
        else:
            box = inputs[0]
            if module.inplace:
                self.inplace(box, _unary(module.kind, box.node))
                self.bind(step, box)
            else:
                self.bind(step, Box(self.track(_unary(module.kind, box.node))))

    def backward(self, step: Step, root: Node) -> None:
        if root.value.size != 1:
            raise ReferenceFailure(step, "backward of a non-scalar tensor needs a gradient argument")
        if not root.requires_grad:
            raise ReferenceFailure(step, "backward of a tensor that does not require grad")
        order: dict[int, Node] = {}
        stack = [root]
        while stack:
            node = stack.pop()
            if node.id in order or not node.requires_grad:
                continue
            order[node.id] = node
            stack.extend(parent for parent, _ in node.parents)
        grads: dict[int, np.ndarray] = {root.id: np.ones_like(root.value, dtype=np.float64)}
        for node_id in sorted(order, reverse=True):
            node = order[node_id]
            grad = grads.pop(node_id, None)
            if grad is None:
                continue
            if node.leaf is not None:
                leaf = node.leaf
                leaf.grad = grad.copy() if leaf.grad is None else leaf.grad + grad
            for parent, vjp in node.parents:
                if parent.requires_grad:
                    contribution = np.asarray(vjp(grad), dtype=np.float64).reshape(parent.value.shape)
                    grads[parent.id] = grads[parent.id] + contribution if parent.id in grads else contribution

    def observe(self, step: Step, loop: tuple[int, ...]) -> None:
        name = observation_key(step.name, loop)
        if step.kind not in ("value", "grad"):
            return
        base, _, param = step.of[0].partition(".")
        target = self.env[base]
        box = target.params.get(param) if param else target
        if box is None:
            raise ReferenceFailure(step, f"{step.of[0]!r} is not set")
        if step.kind == "value":
            self.observations[name] = np.array(box.value, dtype=np.float64)
        else:
            self.observations[name] = None if box.grad is None else np.array(box.grad)


def observation_key(name: str, loop: tuple[int, ...]) -> str:
    """The recorded name of an observation: inside loops, the iteration is appended."""
    return f"{name}[{','.join(map(str, loop))}]" if loop else name
