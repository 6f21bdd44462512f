"""The reference's machine: storage, history and gradients in NumPy float64, and the state it keeps while it
interprets a case (``judge/reference.py`` runs it; each op's meaning, in ``conformance/ops``, acts on it).

It knows no op: the ops it dispatches to are handed to it, so the ops can name its types without an
import circle.  The model is described in ``judge/reference.py`` and ``docs/reference.md``.
"""

from __future__ import annotations

import itertools
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from conformance.case.model import Step
from conformance.judge.bits import Reinterpretation

__all__ = ["Float32Rounding", "Machine", "Module", "Node", "Optimizer", "ReferenceFailure", "ReferenceLimit", "Storage",
           "Tensor", "held_grad", "observation_key", "release_grad", "scatter", "unbroadcast", "zero_grad"]

_ids = itertools.count()
Vjp = Callable[[np.ndarray], np.ndarray]


class ReferenceFailure(Exception):
    """The reference cannot give a value for this case (the case is ill-posed)."""

    def __init__(self, step: Step | None, message: str) -> None:
        where = f"step {step.number} ({step.op}, line {step.line}): " if step else ""
        super().__init__(where + message)


class ReferenceLimit(Exception):
    """The reference went past a limit of the harness (time): the cell is an error, not a finding."""


class Node:
    """One recorded value in the autograd graph, with the vector-Jacobian products to its parents."""

    __slots__ = ("shape", "parents", "leaf", "requires_grad", "id")

    def __init__(self, shape: tuple[int, ...], parents: tuple[tuple["Node", Vjp], ...] = (),
                 leaf: "Tensor | None" = None, requires_grad: bool = False) -> None:
        self.shape = shape
        self.parents = tuple((p, vjp) for p, vjp in parents if p.requires_grad)
        self.leaf = leaf
        self.requires_grad = requires_grad or bool(self.parents)
        self.id = next(_ids)


class Storage:
    """A flat buffer that tensors and arrays look into."""

    __slots__ = ("data", "undetermined", "any_of")

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        #: elements no one has written since the storage grew (``resize_``): None when there are none
        self.undetermined: np.ndarray | None = None
        #: elements one write gave several values in no defined order (``index_put_`` of a repeated
        #: position): position -> the values written there, any of which it may hold; None when none
        self.any_of: dict[int, tuple[float, ...]] | None = None

    def grow(self, size: int) -> None:
        """Reallocate to *size* elements, keeping the old ones, as a growing ``resize_`` does; every name
        on this storage sees the new buffer, and the new elements hold whatever memory held."""
        old = self.data.size
        data = np.zeros(size, dtype=self.data.dtype)
        data[:old] = self.data
        undetermined = np.zeros(size, dtype=bool)
        undetermined[old:] = True
        if self.undetermined is not None:
            undetermined[:old] = self.undetermined
        self.data, self.undetermined = data, undetermined

    def check_determined(self, positions: np.ndarray | slice) -> None:
        if self.undetermined is not None and self.undetermined[positions].any():
            raise ValueError("the values read include elements a growing resize_ left undetermined (memory "
                             "no one has written): any value is possible")
        if self.any_of and not self.any_of.keys().isdisjoint(np.arange(self.data.size)[positions].reshape(-1).tolist()):
            raise ValueError("the values read include an element one write gave several values in no defined "
                             "order (a repeated position): a computation from it is not modelled")

    def determined(self, positions: np.ndarray | slice) -> None:
        """Elements written: their values are known from now on."""
        if self.undetermined is not None:
            self.undetermined[positions] = False
        if self.any_of:
            for position in np.arange(self.data.size)[positions].reshape(-1).tolist():
                self.any_of.pop(position, None)


class Tensor:
    """A framework tensor (or a NumPy array, ``kind == "array"``) as the reference sees it."""

    def __init__(self, storage: Storage, positions: np.ndarray, node: Node | None = None, *,
                 kind: str = "tensor", base: "Tensor | None" = None, rel: np.ndarray | None = None,
                 start: int | None = None) -> None:
        self.storage = storage
        self.positions = positions
        #: where the elements begin in storage when they lie there in order, one after another (a
        #: tensor made fresh, and its aliases); None when unknown.  Reads and writes are then slices.
        self.start = start
        self._node = node if node is not None else Node(positions.shape)
        self.kind = kind
        self.base = base  # a tracked view: its history is derived from its base's
        self.rel = rel  # the view's elements as flat indices into its base (as the base lay: see relation())
        self._base_layout = None if base is None else base.positions
        self.grad: np.ndarray | None = None
        self._derived: tuple[Node, Node] | None = None
        #: the history the views taken before a ``detach_`` of this tensor keep following (torch's
        #: test_detach_base: "detaching base does not detach view"), until a tracked write gives it another
        self.history_for_views: Node | None = None
        #: +1/-1 per element: how each is read from storage and written to it (-1: torch's neg bit, the
        #: imaginary part of a ``conj()`` view); None: as storage holds it.  Views and aliases keep it.
        self.signs: np.ndarray | None = None
        #: a complex tensor of shape S, held as float64 pairs of shape S+(2,) (``view_as_real``'s layout):
        #: its dtype (``complex64``); only ops marked ``takes_complex`` act on one (docs/reference.md)
        self.complex_dtype: str | None = None
        #: the dtype a literal gave it (``tensor``, ``array``, ``full``), kept by its aliases and views;
        #: None: not tracked.  A dtype view needs it (``ops/dtype_views.py``).
        self.dtype: str | None = None
        #: a dtype view: how its elements read (and write) the bits of storage's values; None: as they are
        self.reinterpret: Reinterpretation | None = None

    @classmethod
    def fresh(cls, value: np.ndarray, node: Node | None = None, kind: str = "tensor",
              dtype: str | None = None) -> "Tensor":
        """A tensor on new storage holding *value*; *dtype*: the dtype a literal gave it (``Tensor.dtype``)."""
        value = np.array(value, order="C")  # a copy of its own, in order
        tensor = cls(Storage(value.reshape(-1)), np.arange(value.size).reshape(value.shape), node, kind=kind, start=0)
        tensor.dtype = dtype
        return tensor

    @property
    def positions(self) -> np.ndarray:
        return self._positions

    @positions.setter
    def positions(self, positions: np.ndarray) -> None:
        """Looking at other positions (``set_``, ``resize_``, ``transpose_``): in order no longer known."""
        self._positions = positions
        self.start = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.positions.shape

    def read_partly(self) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[float, ...]]]:
        """The value, the flat indices of its elements no one has written since a growing ``resize_``
        (whatever memory held there: only the others can be judged), and its elements that may hold any
        of several values (flat index -> those values, as this tensor reads them)."""
        storage = self.storage
        undetermined, any_of = storage.undetermined, storage.any_of
        if undetermined is None and not any_of:
            return self.value, np.zeros(0, dtype=np.int64), {}
        missing = (np.zeros(0, dtype=np.int64) if undetermined is None
                   else np.flatnonzero(undetermined[self.positions]))
        flat = self.positions.reshape(-1).tolist()
        choices = {i: any_of.get(p) for i, p in enumerate(flat)} if any_of else {}
        choices = {i: values for i, values in choices.items() if values is not None}
        if (missing.size and self.reinterpret is not None) or (choices and (self.reinterpret is not None
                                                                        or self.signs is not None)):
            self.storage.check_determined(self.positions)  # read through another dtype or sign: not modelled
        storage.undetermined, storage.any_of = None, None
        try:
            return self.value, missing, choices
        finally:
            storage.undetermined, storage.any_of = undetermined, any_of

    @property
    def value(self) -> np.ndarray:
        """The elements as storage holds them now (a copy)."""
        if self.start is not None:
            size = self._positions.size
            self.storage.check_determined(slice(self.start, self.start + size))
            value = self.storage.data[self.start:self.start + size].reshape(self._positions.shape).copy()
        else:
            covered = self.positions if self.reinterpret is None else self.reinterpret.spread(self.positions)
            self.storage.check_determined(covered)
            value = self.storage.data[covered]
        if self.reinterpret is not None:
            value = self.reinterpret.read(value)
        return value if self.signs is None else value * self.signs

    @property
    def node(self) -> Node:
        if self.base is None:
            return self._node
        base_node = self.base.history_for_views or self.base.node
        if self._derived is None or self._derived[0] is not base_node or self.base.positions is not self._base_layout:
            shape = self.base.shape
            try:
                rel = self.relation()
            except ValueError as exc:  # the values are still known; only a gradient through it is not
                self._derived = (base_node, Node(self.shape, ((base_node, _unmodelled(str(exc))),)))
                return self._derived[1]
            self._derived = (base_node, Node(self.shape, ((base_node, lambda g: scatter(shape, rel, g)),)))
        return self._derived[1]

    @property
    def requires_grad(self) -> bool:
        return self.node.requires_grad

    @property
    def is_leaf(self) -> bool:
        return self.base is None and (self._node.leaf is self or not self._node.requires_grad)

    def alias(self, kind: str = "tensor") -> "Tensor":
        """An untracked alias: same storage and positions, a history of its own (``detach()``)."""
        alias = Tensor(self.storage, self.positions, kind=kind, start=self.start)
        alias.signs, alias.dtype, alias.reinterpret = self.signs, self.dtype, self.reinterpret
        return alias

    def view(self, take: Callable[[np.ndarray], np.ndarray]) -> "Tensor":
        """A tracked view: *take* maps an array of this tensor's shape to the view's elements."""
        rel_here = np.asarray(take(np.arange(self.positions.size).reshape(self.shape)))
        positions = self.positions.reshape(-1)[rel_here]
        if self.base is None:
            view = Tensor(self.storage, positions, kind=self.kind, base=self, rel=rel_here)
        else:
            view = Tensor(self.storage, positions, kind=self.kind, base=self.base,
                          rel=self.relation().reshape(-1)[rel_here])
        if self.signs is not None:
            view.signs = self.signs.reshape(-1)[rel_here]
        if self.reinterpret is not None:
            view.reinterpret = self.reinterpret.taken(rel_here)
        view.dtype = self.dtype
        return view

    def relation(self) -> np.ndarray:
        """The view's elements as flat indices into its base as the base lies now: a base that rearranged
        its own elements in place since (``t_``, ``transpose_``, ``resize_``) has them elsewhere, and the
        view, which keeps its own, is found among them by storage position."""
        base = self.base
        if base.positions is self._base_layout:
            return self.rel
        flat, mine = base.positions.reshape(-1), self.positions.reshape(-1)
        if base.storage is not self.storage:
            raise ValueError("a view of a tensor that now looks at other storage (set_, t.data = src) is not "
                             "modelled")
        order = np.argsort(flat, kind="stable")
        found = np.clip(np.searchsorted(flat[order], mine), 0, max(flat.size - 1, 0))
        if flat.size == 0 or not np.array_equal(flat[order][found], mine):
            raise ValueError("a view of elements its base no longer looks at (after resize_) is not modelled")
        self.rel, self._base_layout = order[found].reshape(self.positions.shape), base.positions
        return self.rel


@dataclass
class Module:
    kind: str
    params: dict[str, Tensor] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Optimizer:
    params: list[Tensor]
    lr: float


# -- gradients as tensors (docs/reference.md, "Gradients held in a name") -------------------


def held_grad(leaf: Tensor) -> Tensor:
    """``g = leaf.grad``: a tensor on the leaf's gradient storage, not a copy.

    Both frameworks document ``.grad`` as the gradient tensor itself, so a write through
    ``g`` is a write to the gradient, and backward accumulates into it in place
    (:meth:`Machine.backward`) while the gradient is not released.
    """
    if leaf.grad is None:
        raise ValueError("the tensor has no gradient to hold (.grad is None): run a backward first")
    flat = leaf.grad.reshape(-1)  # a view: the held tensor and the leaf's gradient share memory
    if not np.shares_memory(flat, leaf.grad):
        raise ValueError("a gradient buffer must be contiguous to be held")  # never: backward makes them
    return Tensor(Storage(flat), np.arange(flat.size).reshape(leaf.grad.shape))


def zero_grad(param: Tensor) -> None:
    """Zero a gradient in place (torch ``set_to_none=False``, paddle ``set_to_zero=True``):
    a held gradient reads zeros."""
    if param.grad is not None:
        param.grad[...] = 0.0


def release_grad(param: Tensor) -> None:
    """Release a gradient (``.grad`` becomes None); a held gradient keeps the values it had."""
    param.grad = None




def observation_key(name: str, loop: Sequence[int]) -> str:
    """The recorded name of an observation: inside loops, the iteration is appended.
    Observation names cannot contain ``[``, so the key is unambiguous."""
    return f"{name}[{','.join(map(str, loop))}]" if loop else name


# -- helpers for op semantics ----------------------------------------------------------


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast gradient back to *shape*."""
    grad = np.asarray(grad)
    if grad.ndim < len(shape):
        grad = grad.reshape((1,) * (len(shape) - grad.ndim) + grad.shape)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def _unmodelled(reason: str) -> Vjp:
    """A vector-Jacobian product the reference cannot give: a backward through it stops the reference."""
    def vjp(g: np.ndarray) -> np.ndarray:
        raise ValueError(reason)
    return vjp


def scatter(shape: tuple[int, ...], rel: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The gradient, for an array of *shape*, of its elements taken at the flat indices *rel*: each
    element's share summed back where it was taken from (a view's, or a gather's, backward)."""
    out = np.zeros(int(np.prod(shape, dtype=np.int64)))
    np.add.at(out, rel.reshape(-1), np.broadcast_to(grad, rel.shape).reshape(-1))
    return out.reshape(shape)


def _landing(flat: np.ndarray) -> np.ndarray:
    """Which elements of a write land in storage: of elements that share one position (a
    view that overlaps itself, such as an expanded one), the last one."""
    landed = np.ones(flat.size, dtype=bool)
    if flat.size < 2 or (np.diff(flat) > 0).all():  # ascending positions (any contiguous tensor): all distinct
        return landed
    if np.unique(flat).size != flat.size:
        _, last_from_end = np.unique(flat[::-1], return_index=True)
        landed[:] = False
        landed[flat.size - 1 - last_from_end] = True
    return landed


def _copy_slices(base: Node, base_shape: tuple[int, ...], rel: np.ndarray, new: Node) -> Node:
    """The base's history after its elements at *rel* were replaced by *new* (a tracked write)."""
    flat = rel.reshape(-1)
    lands = _landing(flat)

    def to_base(g: np.ndarray) -> np.ndarray:
        g = np.array(np.broadcast_to(g, base_shape), dtype=np.float64).reshape(-1)
        g[flat] = 0.0
        return g.reshape(base_shape)

    def to_new(g: np.ndarray) -> np.ndarray:
        spliced = np.where(lands, np.broadcast_to(g, base_shape).reshape(-1)[flat], 0.0)
        return unbroadcast(spliced.reshape(rel.shape), new.shape)

    return Node(base_shape, ((base, to_base), (new, to_new)))


def _refuse_complex(env: Mapping[str, Any], step: Step) -> None:
    """A complex tensor is modelled only for the ops that say so (``Op.takes_complex``): any other op
    would act on its float pairs as if they were real elements."""
    for arg in step.args:
        value = env.get(arg) if isinstance(arg, str) else None
        if isinstance(value, Tensor) and value.complex_dtype is not None:
            raise ValueError(f"{step.op} of the complex tensor {arg!r} is not modelled (the reference models "
                             f"complex tensors for their views only: docs/reference.md, Complex tensors)")


Operand = "Tensor | float | int"


class Float32Rounding:
    """The program computed in float32: every op works on float32 values in NumPy's float32 arithmetic,
    the arithmetic inside its gradient included (``1 - y*y`` of a rounded ``tanh``); given a random
    generator, each op's result is also moved up or down by an ulp at random, or left, as the kernels of
    a framework, which round differently from NumPy's, may.  The spread of several such runs says how far
    float32 arithmetic can move each result of the program."""

    dtype = np.float32

    def __init__(self, rng: np.random.Generator | None = None, approximate: Mapping[str, float] | None = None) -> None:
        self.rng = rng
        #: kernels of the device the cell ran on whose results lie further from the exact value than an
        #: ulp (``Adapter.kernel_precision``), by name, with the largest relative error they have
        self.approximate = dict(approximate or {})

    def __call__(self, value: Any, kernel: str | None = None) -> np.ndarray:
        """An op's result, as float32 (moved by an ulp at random, with a generator; the result of an
        approximate *kernel*, by up to its relative error, at random)."""
        value = np.asarray(value)
        if value.dtype.kind != "f":
            return value
        if self.rng is not None and value.size and kernel in self.approximate:
            bound = self.approximate[kernel]
            moved = value.astype(np.float64) * (1.0 + self.rng.uniform(-bound, bound, size=value.shape))
            return moved.astype(np.float32)
        value = value.astype(np.float32)
        if self.rng is not None and value.size:
            step = self.rng.integers(-1, 2, size=value.shape)  # down, stay, up
            with np.errstate(over="ignore", invalid="ignore"):
                moved = np.nextafter(value, np.where(step > 0, np.float32(np.inf), np.float32(-np.inf)))
            value = np.where(step == 0, value, moved).astype(np.float32)
        return value


class Machine:
    """The reference's state while it interprets a case: names, grad mode, observations."""

    def __init__(self, ops: Mapping[str, Any], observations: Mapping[str, Any], deadline: float = float("inf"),
                 rounding: Float32Rounding | None = None, partial: bool = False, copies: Collection[str] = ()) -> None:
        #: what each op and observation means (``conformance/ops``), by name
        self.ops, self.observation_kinds = ops, observations
        self.deadline = deadline
        #: ops whose results are copies, where the storage model has views (:func:`run_reference`)
        self.copies = frozenset(copies)
        #: an observation it cannot give is left out (``unjudged``) rather than ending the run
        self.partial = partial
        self.unjudged: dict[str, str] = {}
        #: a value some of whose elements are undetermined (a growing ``resize_``): the flat indices of
        #: those elements, by recorded name; the rest of the value is judged
        self.undetermined: dict[str, list[int]] = {}
        #: a value some of whose elements may be any of several values (a write to a repeated position):
        #: flat index -> those values, by recorded name; the rest of the value is judged as usual
        self.any_of: dict[str, dict[int, list[float]]] = {}
        #: The reference itself computes in float64; with a rounding, the program computed in float32
        #: (:func:`float32_spread`): what ops compute on, and what becomes of each result.
        self.working = np.float64 if rounding is None else rounding.dtype
        self.round: Callable[..., np.ndarray] = rounding or (lambda value, kernel=None: value)
        #: the framework kernel the values being computed stand for, where one is approximate on some
        #: device (:meth:`in_kernel`); None: an op's own arithmetic
        self.kernel: str | None = None
        self.env: dict[str, Any] = {}
        self.counters: dict[str, int] = {}
        self.loop: tuple[int, ...] = ()
        self.grad_enabled = True
        self.observations: dict[str, np.ndarray | None] = {}
        #: non-leaf tensors whose ``.grad`` a backward fills (``retain_grad()``, paddle ``retain_grads()``)
        self.retaining: list[Tensor] = []
        #: tensor hooks (``t.register_hook``): the history the tensor had when the hook was registered, and
        #: the tensor the hook copies each gradient it receives into
        self.tensor_hooks: list[tuple[Node, Tensor]] = []

    # -- running steps ---------------------------------------------------------------

    def run(self, steps: Sequence[Step]) -> None:
        for step in steps:
            if time.monotonic() > self.deadline:
                raise ReferenceLimit(f"the reference did not finish within the cell's limit (at step "
                                     f"{step.number}, line {step.line})")
            try:
                if step.op == "observe":
                    self.observation_kinds[step.kind].reference(self, step)
                else:
                    op = self.ops[step.op]
                    if not getattr(op, "takes_complex", False):
                        _refuse_complex(self.env, step)
                    op.reference(self, step)
                    if step.op in self.copies:
                        self._as_copies(step)
            except (ReferenceFailure, ReferenceLimit, MemoryError):
                raise
            except Exception as exc:  # a numerical or shape problem in the case itself
                failure = ReferenceFailure(step, f"{type(exc).__name__}: {exc}")
                if self.partial and step.op == "observe":  # the program goes on; only this value is unknown
                    self.unjudged[observation_key(step.name, self.loop)] = str(failure)
                    continue
                raise failure from exc

    @contextmanager
    def in_kernel(self, name: str) -> Iterator[None]:
        """The values computed inside stand for framework kernel *name* (``cudnn_rnn_tanh``): a device
        whose kernel is approximate (``Adapter.kernel_precision``) moves them further in the float32 spread."""
        previous, self.kernel = self.kernel, name
        try:
            yield
        finally:
            self.kernel = previous

    def _as_copies(self, step: Step) -> None:
        """Rebind the results of *step* to copies of what the storage model gave: the same values, a
        storage of their own; a tensor's copy is tracked as ``clone()`` is, an array's is a new array."""
        for name in step.out:
            value = self.env.get(name)
            if not isinstance(value, Tensor):
                continue
            if value.kind == "array":
                self.env[name] = Tensor.fresh(value.value, kind="array")
            else:
                self.env[name] = self.new(lambda x: (x.copy(), [lambda g: g]), value)
                self.env[name].complex_dtype = value.complex_dtype  # a complex copy (paddle's conj) stays complex

    # -- names -----------------------------------------------------------------------

    def get(self, name: str) -> Any:
        return self.env[name]

    def tensor(self, name: str) -> Tensor:
        value = self.env[name]
        if not isinstance(value, Tensor):
            raise TypeError(f"{name!r} is not a tensor")
        return value

    def bind(self, step: Step, *values: Any) -> None:
        for name, value in zip(step.out, values):
            self.env[name] = value

    def target(self, dotted: str) -> Tensor:
        """A name or a module parameter (``fc.weight``)."""
        base, _, param = dotted.partition(".")
        obj = self.env[base]
        return obj.params[param] if param else obj

    # -- computing ---------------------------------------------------------------------

    def operand_value(self, arg: Any) -> np.ndarray:
        if isinstance(arg, str) and arg in self.counters:  # a loop counter: the Python int of this iteration
            return np.asarray(self.counters[arg], dtype=self.working)
        return self.tensor(arg).value.astype(self.working) if isinstance(arg, str) else np.asarray(
            arg, dtype=self.working)

    def compute(self, fn: Callable[..., tuple[np.ndarray, Sequence[Vjp]]], *args: Any) -> tuple[np.ndarray, Node]:
        """Run *fn* on the current values of *args* (names or numbers) and record its node.

        *fn* returns the value and one vector-Jacobian product per argument.
        Outside grad mode the node records nothing.
        """
        values = [self.operand_value(a) if isinstance(a, (str, int, float)) else a.value.astype(self.working)
                  for a in args]
        value, vjps = fn(*values)
        value = self.round(np.asarray(value, dtype=self.working), self.kernel)
        if self.kernel in getattr(self.round, "approximate", ()) and hasattr(fn, "backward_from"):
            _, vjps = fn.backward_from(*values, value)  # the kernel's backward reads the output it gave
        if not self.grad_enabled:
            return value, Node(value.shape)
        parents = []
        for arg, vjp in zip(args, vjps):
            if isinstance(arg, str) and arg in self.counters:
                continue  # a number: no history
            tensor = self.tensor(arg) if isinstance(arg, str) else arg
            if isinstance(tensor, Tensor):
                shape = tensor.shape
                parents.append((tensor.node, (lambda v, s: lambda g: unbroadcast(v(g), s))(vjp, shape)))
        return value, Node(value.shape, tuple(parents))

    def new(self, fn: Callable[..., tuple[np.ndarray, Sequence[Vjp]]], *args: Any) -> Tensor:
        """An out-of-place op: a fresh tensor."""
        value, node = self.compute(fn, *args)
        return Tensor.fresh(value, node)

    def write(self, tensor: Tensor, value: np.ndarray, node: Node | None, unordered: bool = False) -> None:
        """An in-place write of *value* into *tensor*; *node* is its history (None: untracked).  *unordered*:
        a write whose order the frameworks leave undefined (an advanced index that repeats a position): a
        location given different values may hold any of them (``written_in_any_order``)."""
        data = tensor.storage.data
        flat = tensor.positions.reshape(-1)
        if tensor.reinterpret is not None:  # a dtype view: its elements' bits, written into storage's values
            flat, values = tensor.reinterpret.encode(np.broadcast_to(value, tensor.shape), tensor.positions, data)
        else:
            values = np.broadcast_to(self.round(value), tensor.shape).reshape(-1).astype(data.dtype)
        if tensor.signs is not None:  # stored as the view reads it back (a neg bit stores the negation)
            values = values * tensor.signs.reshape(-1)
        if tensor.start is not None:  # in order, one after another: every element lands
            data[tensor.start:tensor.start + values.size] = values
            tensor.storage.determined(slice(tensor.start, tensor.start + values.size))
            self._record_write(tensor, node)
            return
        lands = _landing(flat)
        choices: dict[int, tuple[float, ...]] = {}
        if not lands.all():  # elements sharing a memory location must agree, or the order of writes decides
            landed = np.zeros(data.shape, dtype=data.dtype)
            landed[flat[lands]] = values[lands]
            differ = ~np.isclose(landed[flat], values, rtol=0.0, atol=0.0, equal_nan=values.dtype.kind == "f")
            if differ.any() and not unordered:
                raise ValueError("an in-place write through a view that overlaps itself gives one memory "
                                 "location different values: the result depends on the order of the writes")
            for i in np.flatnonzero(differ).tolist():  # each such element: the first of its location's values
                first = int(np.flatnonzero(flat == flat[i])[0])
                choices.setdefault(first, tuple(dict.fromkeys(values[flat == flat[i]].tolist())))
        data[flat[lands]] = values[lands]
        tensor.storage.determined(flat)
        self._record_write(tensor, node)
        self.written_in_any_order(tensor, choices)

    def _record_write(self, tensor: Tensor, node: Node | None) -> None:
        """The history of a write: the tensor's own, or its base's through the view."""
        if node is None or not self.grad_enabled:
            return
        if tensor.base is None:
            tensor._node, tensor.history_for_views = node, None
        else:
            base = tensor.base
            base._node = _copy_slices(base.history_for_views or base.node, base.shape, tensor.relation(), node)
            base.history_for_views = None

    def inplace(self, tensor: Tensor, fn: Callable[..., tuple[np.ndarray, Sequence[Vjp]]], *others: Any) -> None:
        """``tensor = fn(tensor, *others)`` written in place."""
        value, node = self.compute(fn, tensor, *others)
        self.write(tensor, value, node)

    def backward(self, root: Tensor, gradient: Tensor | None = None) -> None:
        """Accumulate into leaves' (and retaining tensors') ``.grad``; *gradient*: ``backward(gradient)``, the
        vector the vector-Jacobian products start from (of the root's shape), else 1 for a one-element root."""
        node = root.node
        if gradient is None and root.value.size != 1:
            raise ReferenceFailure(None, "backward of a non-scalar tensor needs a gradient argument")
        if gradient is not None and gradient.shape != root.shape:
            raise ValueError(f"backward's gradient has shape {list(gradient.shape)}, the tensor "
                             f"{list(root.shape)}: the frameworks refuse it")
        if not node.requires_grad:
            raise ReferenceFailure(None, "backward of a tensor that does not require grad")
        retained: dict[int, list[Tensor]] = {}
        for tensor in self.retaining:  # the tensor's history as it is now (a later in-place write moves it on)
            retained.setdefault(tensor.node.id, []).append(tensor)
        order: dict[int, Node] = {}
        stack = [node]
        while stack:
            current = stack.pop()
            if current.id in order:
                continue
            order[current.id] = current
            stack.extend(parent for parent, _ in current.parents)
        start = (np.ones(node.shape, dtype=self.working) if gradient is None
                 else gradient.value.astype(self.working).reshape(node.shape))
        grads: dict[int, np.ndarray] = {node.id: start}
        for node_id in sorted(order, reverse=True):  # children are created after their parents
            current = order[node_id]
            grad = grads.pop(node_id, None)
            if grad is None:
                continue
            if current.leaf is not None:
                leaf = current.leaf
                grad = np.asarray(grad, dtype=np.float64).reshape(current.shape)
                if leaf.grad is None:
                    leaf.grad = grad.copy()
                else:  # in place: a gradient held in a name (held_grad) sees the sum
                    leaf.grad[...] = self.round(leaf.grad.astype(self.working) + grad.astype(self.working))
            for hooked, seen in self.tensor_hooks:
                if hooked.id == node_id:  # the gradient of the history the hook was registered on
                    self.write(seen, np.asarray(grad, dtype=np.float64).reshape(seen.shape), None)
            for tensor in retained.get(node_id, ()):
                held = np.asarray(grad, dtype=np.float64).reshape(tensor.shape)
                tensor.grad = held.copy() if tensor.grad is None else self.round(
                    tensor.grad.astype(self.working) + held.astype(self.working))
            for parent, vjp in current.parents:
                contribution = self.round(np.asarray(vjp(grad), dtype=self.working)).reshape(parent.shape)
                grads[parent.id] = (self.round(grads[parent.id] + contribution) if parent.id in grads
                                    else contribution)

    def leave_any_of(self, step: Step, choices: dict[int, tuple[float, ...]]) -> None:
        """The elements (flat index -> the values allowed) of the value just recorded for *step* that may
        hold any of several values."""
        self.any_of[observation_key(step.name, self.loop)] = {int(i): [float(v) for v in values]
                                                              for i, values in choices.items()}

    def written_in_any_order(self, tensor: Tensor, choices: dict[int, tuple[float, ...]]) -> None:
        """After a write to *tensor*: its elements (flat index -> the values one write gave them, in no
        defined order) hold any of those values.  A gradient through such a write is not modelled."""
        if not choices:
            return
        if tensor.reinterpret is not None or tensor.signs is not None:
            raise ValueError("a write that gives one element several values in no defined order, through a dtype "
                             "view or a conjugate, is not modelled")
        if self.grad_enabled and tensor.node.requires_grad:
            raise ValueError("a gradient through a write that gives one element several values in no defined "
                             "order is not modelled")
        storage = tensor.storage
        flat = tensor.positions.reshape(-1)
        storage.any_of = dict(storage.any_of or {})
        for i, values in choices.items():
            storage.any_of[int(flat[i])] = tuple(values)

    def leave_undetermined(self, step: Step, elements: np.ndarray) -> None:
        """The elements (flat indices) of the value just recorded for *step* that cannot be judged."""
        self.undetermined[observation_key(step.name, self.loop)] = [int(i) for i in elements]

    def record(self, step: Step, value: np.ndarray | None) -> None:
        self.observations[observation_key(step.name, self.loop)] = value
