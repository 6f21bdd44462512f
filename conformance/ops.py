"""The case vocabulary: every op a step may name, declared once.

Validation (``case.py``), the JSON Schema (``schema.py``), the reference
(``reference.py``) and the adapters all read this table.  Adding an op means
adding an entry here, its value semantics in the reference, and its spelling
in any adapter whose framework spells it differently from plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

__all__ = [
    "OBSERVATIONS",
    "OPS",
    "Field",
    "OpSpec",
    "UNARY",
    "JUDGED_OBSERVATIONS",
    "MEMORY_OBSERVATIONS",
]


@dataclass(frozen=True)
class Field:
    """A keyword field of a step: its type name, and whether a case must give it."""

    type: str  # numbers | dtype | bool | int | number | index | name | steps | kind | str
    required: bool = False
    default: object = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpSpec:
    """One op: positional argument kinds, what it binds, and its keyword fields.

    ``args`` holds one kind per positional argument; a kind starting with ``*``
    takes any number (at least one) of that kind.  Kinds: ``tensor`` (a name bound
    to a tensor), ``array`` (a NumPy array), ``data`` (tensor or array), ``operand``
    (a tensor name or a number), ``module``, ``optimizer``.
    ``out`` is ``required``, ``optional``, ``none`` or ``many`` (a list of names).
    ``binds`` is the kind of object the output names are bound to.
    """

    name: str
    doc: str
    args: tuple[str, ...] = ()
    out: str = "required"
    binds: str = "tensor"
    fields: Mapping[str, Field] = field(default_factory=dict)
    block: bool = False


@dataclass(frozen=True)
class Unary:
    """An element-wise function with its float64 value and derivative for the reference."""

    forward: Callable[[np.ndarray], np.ndarray]
    derivative: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (input, output) -> d out / d in
    activation: bool = False  # lives in the framework's functional namespace


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


UNARY: dict[str, Unary] = {
    "sin": Unary(np.sin, lambda x, y: np.cos(x)),
    "cos": Unary(np.cos, lambda x, y: -np.sin(x)),
    "exp": Unary(np.exp, lambda x, y: y),
    "tanh": Unary(np.tanh, lambda x, y: 1.0 - y * y),
    "sigmoid": Unary(_sigmoid, lambda x, y: y * (1.0 - y), activation=True),
    "relu": Unary(lambda x: np.maximum(x, 0.0), lambda x, y: (x > 0).astype(np.float64), activation=True),
}

#: Python operator spelling of each binary op, shared by every framework.
BINARY_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}
#: In-place tensor methods for binary ops.
BINARY_INPLACE = ("add_", "sub_", "mul_", "div_")
#: Python augmented assignment, a step of its own: ``a += b`` is not ``a.add_(b)``.
AUGMENTED = {"iadd": "+=", "isub": "-=", "imul": "*=", "idiv": "/="}

_VALUE = Field("numbers", required=True)
_STEPS = Field("steps", required=True)
_DTYPES = ("float32", "float64", "int64")


def _build() -> dict[str, OpSpec]:
    ops: list[OpSpec] = [
        OpSpec("tensor", "A tensor from a literal: torch.tensor / paddle.to_tensor.",
               fields={"value": _VALUE, "dtype": Field("dtype", default="float32", choices=_DTYPES),
                       "requires_grad": Field("bool", default=False)}),
        OpSpec("array", "A NumPy array from a literal.", binds="array",
               fields={"value": _VALUE, "dtype": Field("dtype", default="float64", choices=_DTYPES)}),
        OpSpec("from_numpy", "A tensor from a NumPy array by the framework's zero-copy constructor.",
               args=("array",)),
        OpSpec("to_tensor", "A tensor from a NumPy array by the framework's copying constructor.",
               args=("array",)),
        OpSpec("numpy", "tensor.numpy(): back to NumPy.", args=("tensor",), binds="array"),
        OpSpec("getitem", "out = t[index]: a slice or view.", args=("data",),
               fields={"index": Field("index", required=True)}),
        OpSpec("setitem", "t[index] = value: index assignment.", args=("data", "operand"), out="none",
               fields={"index": Field("index", required=True)}),
        OpSpec("assign", "out = t: Python name binding, no copy.", args=("any",), binds="same"),
        OpSpec("detach", "out = t.detach().", args=("tensor",)),
        OpSpec("clone", "out = t.clone().", args=("tensor",)),
        OpSpec("data", "out = t.data: untracked access, where the framework has it.", args=("tensor",)),
        OpSpec("requires_grad_", "Make t require grad in place (torch requires_grad_(), "
               "paddle stop_gradient = False).", args=("tensor",), out="none"),
        OpSpec("sum", "out = t.sum().", args=("tensor",)),
        OpSpec("mean", "out = t.mean().", args=("tensor",)),
        OpSpec("add_out", "The framework's add function writing into an out= argument.",
               args=("tensor", "tensor"), out="none", fields={"into": Field("name", required=True)}),
        OpSpec("linear", "A Linear module with the given weight (out x in, y = x W^T + b) and bias.",
               binds="linear", fields={"weight": _VALUE, "bias": Field("numbers")}),
        OpSpec("rnn", "A one-layer Elman RNN (tanh), time-major, with the given parameters.",
               binds="rnn", fields={"weight_ih": _VALUE, "weight_hh": _VALUE,
                                    "bias_ih": _VALUE, "bias_hh": _VALUE}),
        OpSpec("activation", "An activation module, with the in-place flag where asked.",
               binds="activation",
               fields={"kind": Field("kind", required=True, choices=("relu", "sigmoid", "tanh")),
                       "inplace": Field("bool")}),
        OpSpec("call", "out = module(*inputs); an RNN binds [output, h_n].",
               args=("module", "*tensor"), out="many"),
        OpSpec("mse_loss", "out = the framework's functional mean squared error.", args=("tensor", "tensor")),
        OpSpec("sgd", "An SGD optimizer over the modules' parameters.", args=("*module",),
               binds="optimizer", fields={"lr": Field("number", required=True)}),
        OpSpec("step", "optimizer.step().", args=("optimizer",), out="none"),
        OpSpec("zero_grad", "optimizer.zero_grad() / clear_grad().", args=("optimizer",), out="none"),
        OpSpec("backward", "t.backward(), optionally retaining the graph.", args=("tensor",), out="none",
               fields={"retain_graph": Field("bool", default=False)}),
        OpSpec("repeat", "Run the nested steps N times; var names the 0-based counter.", out="none",
               block=True, fields={"times": Field("int", required=True), "var": Field("name"),
                                   "steps": _STEPS}),
        OpSpec("no_grad", "Run the nested steps without recording gradients.", out="none", block=True,
               fields={"steps": _STEPS}),
        OpSpec("measure_allocated", "Record the device memory the nested steps allocate, where the "
               "framework and device report it.", out="none", block=True,
               fields={"name": Field("str", required=True), "steps": _STEPS}),
    ]
    for name, unary in UNARY.items():
        ops.append(OpSpec(name, f"out = {name}(t), out of place.", args=("tensor",)))
        inplace = "functional" if unary.activation else "method"
        ops.append(OpSpec(name + "_", f"{name}_ in place ({inplace} spelling).", args=("tensor",),
                          out="optional"))
    for name, symbol in BINARY_OPERATORS.items():
        ops.append(OpSpec(name, f"out = a {symbol} b.", args=("operand", "operand")))
    for name in BINARY_INPLACE:
        ops.append(OpSpec(name, f"a.{name}(b), in place.", args=("tensor", "operand"), out="optional"))
    for name, symbol in AUGMENTED.items():
        ops.append(OpSpec(name, f"a {symbol} b, Python augmented assignment.",
                          args=("data", "operand"), out="none"))
    return {op.name: op for op in ops}


OPS: dict[str, OpSpec] = _build()

#: What a case may observe.  Judged kinds are compared with the reference; memory
#: kinds decide aliases/copies; the rest are recorded as information.
OBSERVATIONS = ("value", "grad", "shares_memory", "same_storage", "address", "version",
                "requires_grad", "is_leaf")
JUDGED_OBSERVATIONS = ("value", "grad")
#: ``shares_memory`` asks whether two objects' elements overlap in memory;
#: ``same_storage`` asks whether a tensor still occupies the memory an earlier
#: ``address`` observation (named by ``since``) recorded.
MEMORY_OBSERVATIONS = ("shares_memory", "same_storage")

#: The parameters of each module kind, with their shapes' meaning in the neutral layout.
MODULE_PARAMETERS = {
    "linear": ("weight", "bias"),
    "rnn": ("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
    "activation": (),
}
