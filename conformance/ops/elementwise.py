"""Element-wise math and reductions, out of place and in place.

Each function is declared once with its float64 value and derivative; the
family makes ``sin`` / ``sin_``, ``add`` / ``add_`` / ``+=`` and so on from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.special import bessel_i1, digamma, lgamma, trigamma

Array = np.ndarray


@dataclass(frozen=True)
class Unary:
    """An element-wise function: float64 value and derivative ``(input, output) -> d out / d in``."""

    name: str
    forward: Callable[[Array], Array]
    derivative: Callable[[Array, Array], Array]
    #: lives in the framework's functional namespace (``F.relu``) rather than at its root
    activation: bool = False
    #: where the function is differentiable on part of the real line only: a map of any real input into
    #: that part (the finite-difference test in tests/test_reference.py samples through it)
    domain: Callable[[Array], Array] | None = None
    #: why the fuzzer never draws it (Op.fuzz), or None
    fuzz: str | None = None
    #: what backward reads (``Op.saves``) out of place: ``input``, ``output`` or nothing
    saves: str = ""
    #: what the in-place spelling's backward reads: its result where it computes the derivative from the
    #: output (an in-place op has overwritten its input); by default what the out-of-place op saves, when
    #: that is the output
    saves_in_place: str | None = None

    @property
    def in_place_saves(self) -> tuple[str, ...]:
        saved = self.saves_in_place if self.saves_in_place is not None else (
            "output" if self.saves == "output" else "")
        return (saved,) if saved else ()

    def __call__(self, x: Array):
        return self.backward_from(x, self.forward(x))

    def backward_from(self, x: Array, y: Array):
        """The value *y* and its vector-Jacobian product, the derivative computed from that *y* (an
        approximate kernel's output, ``Machine.in_kernel``, as its backward reads it)."""
        return y, [lambda g: g * self.derivative(x, y)]


def _sigmoid(x: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-x))


_POSITIVE = (lambda x: np.abs(x) + 0.25)
_OFF_STEPS = (lambda x: np.floor(x) + 0.3)  # neither an integer nor a half: off the steps of floor, ceil, round
_NO_DOMAIN = ("defined on part of the real line only, and the fuzzer's values are not kept within it: its "
              "NaNs and infinities would be judged, not the in-place semantics")
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805  # both frameworks' constants

#: The in-place ops of paddle's test_inplace.py and their torch counterparts (issue: in-place ops beyond
#: sin/exp), and the activations torch's nn modules take ``inplace=True`` for.  floor, ceil and round are
#: flat almost everywhere: derivative 0, as both frameworks' backward gives.
UNARY_MORE = (
    Unary("asin", np.arcsin, lambda x, y: 1.0 / np.sqrt(1.0 - x * x), domain=lambda x: 0.9 * np.tanh(x),
          fuzz=_NO_DOMAIN, saves="input"),
    Unary("sinh", np.sinh, lambda x, y: np.cosh(x), saves="input"),
    Unary("log", np.log, lambda x, y: 1.0 / x, domain=_POSITIVE, fuzz=_NO_DOMAIN, saves="input"),
    Unary("log2", np.log2, lambda x, y: 1.0 / (x * np.log(2.0)), domain=_POSITIVE, fuzz=_NO_DOMAIN,
          saves="input"),
    Unary("log10", np.log10, lambda x, y: 1.0 / (x * np.log(10.0)), domain=_POSITIVE, fuzz=_NO_DOMAIN,
          saves="input"),
    Unary("log1p", np.log1p, lambda x, y: 1.0 / (1.0 + x), domain=lambda x: np.abs(x) - 0.5, fuzz=_NO_DOMAIN,
          saves="input"),
    Unary("logit", lambda x: np.log(x / (1.0 - x)), lambda x, y: 1.0 / (x * (1.0 - x)),
          domain=lambda x: 0.5 + 0.45 * np.tanh(x), fuzz=_NO_DOMAIN, saves="input"),
    Unary("neg", np.negative, lambda x, y: -np.ones_like(x)),
    Unary("reciprocal", lambda x: 1.0 / x, lambda x, y: -y * y, saves="output"),
    Unary("sqrt", np.sqrt, lambda x, y: 0.5 / y, domain=_POSITIVE, fuzz=_NO_DOMAIN, saves="output"),
    Unary("rsqrt", lambda x: 1.0 / np.sqrt(x), lambda x, y: -0.5 * y * y * y, domain=_POSITIVE, fuzz=_NO_DOMAIN,
          saves="output"),
    Unary("floor", np.floor, lambda x, y: np.zeros_like(x), domain=_OFF_STEPS),
    Unary("ceil", np.ceil, lambda x, y: np.zeros_like(x), domain=_OFF_STEPS),
    Unary("round", np.round, lambda x, y: np.zeros_like(x), domain=_OFF_STEPS),  # halves to even, as both do
    Unary("elu", lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
          lambda x, y: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0.0))), activation=True, saves="input",
          saves_in_place="output"),
    Unary("selu", lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
          lambda x, y: _SELU_SCALE * np.where(x > 0, 1.0, _SELU_ALPHA * np.exp(np.minimum(x, 0.0))),
          activation=True, saves="input", saves_in_place="output"),
    Unary("celu", lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),  # alpha 1: elu's values
          lambda x, y: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0.0))), activation=True, saves="input",
          saves_in_place="output"),
    Unary("hardtanh", lambda x: np.clip(x, -1.0, 1.0), lambda x, y: ((x > -1.0) & (x < 1.0)).astype(np.float64),
          activation=True, saves="input"),
    Unary("leaky_relu", lambda x: np.where(x > 0, x, 0.01 * x), lambda x, y: np.where(x > 0, 1.0, 0.01),
          activation=True, saves="input", saves_in_place="output"),
    # x * sigmoid(x): d/dx = s * (1 + x * (1 - s)); both backward from the input
    Unary("silu", lambda x: x * _sigmoid(x), lambda x, y: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
          activation=True, saves="input"),
    # x * relu6(x + 3) / 6: d/dx = (2x + 3) / 6 on (-3, 3), 0 below, 1 above
    Unary("hardswish", lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
          lambda x, y: np.where(x < -3.0, 0.0, np.where(x > 3.0, 1.0, (2.0 * x + 3.0) / 6.0)), activation=True,
          saves="input"),
    # the rest of paddle's test_inplace.py table (TestDygraphInplaceAsinh ... TestDygraphInplaceI0); each
    # backward reads its input, tan's (torch) its output; torch has no derivative for its in-place asinh_,
    # acosh_ and atanh_ at all (a backward through them raises NotImplementedError)
    Unary("asinh", np.arcsinh, lambda x, y: 1.0 / np.sqrt(x * x + 1.0), saves="input"),
    Unary("acos", np.arccos, lambda x, y: -1.0 / np.sqrt(1.0 - x * x), domain=lambda x: 0.9 * np.tanh(x),
          fuzz=_NO_DOMAIN, saves="input"),
    Unary("acosh", np.arccosh, lambda x, y: 1.0 / np.sqrt(x * x - 1.0), domain=lambda x: np.abs(x) + 1.25,
          fuzz=_NO_DOMAIN, saves="input"),
    Unary("atan", np.arctan, lambda x, y: 1.0 / (1.0 + x * x), saves="input"),
    Unary("atanh", np.arctanh, lambda x, y: 1.0 / (1.0 - x * x), domain=lambda x: 0.9 * np.tanh(x),
          fuzz=_NO_DOMAIN, saves="input"),
    Unary("cosh", np.cosh, lambda x, y: np.sinh(x), saves="input"),
    Unary("tan", np.tan, lambda x, y: 1.0 + y * y, domain=lambda x: 1.2 * np.tanh(x),
          fuzz="has poles at odd multiples of pi/2, where the fuzzer's values may fall: its infinities would be "
               "judged, not the in-place semantics", saves="output"),
    Unary("trunc", np.trunc, lambda x, y: np.zeros_like(x), domain=_OFF_STEPS),
    Unary("frac", lambda x: x - np.trunc(x), lambda x, y: np.ones_like(x), domain=_OFF_STEPS),
    Unary("i0", np.i0, lambda x, y: bessel_i1(x), saves="input"),
    Unary("lgamma", lgamma, lambda x, y: digamma(x), domain=_POSITIVE, fuzz=_NO_DOMAIN, saves="input"),
    Unary("digamma", digamma, lambda x, y: trigamma(x), domain=_POSITIVE, fuzz=_NO_DOMAIN, saves="input"),
)


UNARY: dict[str, Unary] = {u.name: u for u in (
    Unary("sin", np.sin, lambda x, y: np.cos(x), saves="input"),
    Unary("cos", np.cos, lambda x, y: -np.sin(x), saves="input"),
    Unary("exp", np.exp, lambda x, y: y, saves="output"),
    Unary("tanh", np.tanh, lambda x, y: 1.0 - y * y, saves="output"),
    Unary("abs", np.abs, lambda x, y: np.sign(x), saves="input"),
    Unary("sigmoid", _sigmoid, lambda x, y: y * (1.0 - y), activation=True, saves="output"),
    Unary("relu", lambda x: np.maximum(x, 0.0), lambda x, y: (x > 0).astype(np.float64), activation=True,
          saves="output"),
    *UNARY_MORE,
)}


def _out_of_place(fn: Unary) -> Op:
    def spell(w, s) -> None:
        call = w.a.activation_function(fn.name) if fn.activation else w.a.function(fn.name)
        w.emit(f"{w.out(s)} = {call}({s.args[0]})")

    return Op(fn.name, f"out = {fn.name}(t), out of place.", args=("tensor",),
              run_reference=lambda m, s: m.bind(s, m.new(fn, s.args[0])), run_spell=spell, fuzz=fn.fuzz,
              saves=(fn.saves,) if fn.saves else ())


def _in_place(fn: Unary) -> Op:
    def reference(m, s) -> None:
        tensor = m.tensor(s.args[0])
        m.inplace(tensor, fn)
        m.bind(s, tensor)

    def spell(w, s) -> None:
        call = (w.a.inplace_activation(fn.name, s.args[0]) if fn.activation
                else w.method(s.args[0], fn.name + "_"))
        w.emit(w.bind(s) + call)

    spelling = "functional" if fn.activation else "method"
    return Op(fn.name + "_", f"{fn.name}_ in place ({spelling} spelling).", args=("tensor",),
              out="optional", run_reference=reference, run_spell=spell, fuzz=fn.fuzz, saves=fn.in_place_saves)


for _fn in UNARY.values():
    register(_out_of_place(_fn))
    register(_in_place(_fn))


def _pow(a: Array, b: Array):
    value = np.power(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):  # d/db of a**b is undefined for a < 0
        log_a = np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), np.where(a == 0, 0.0, np.nan))
    return value, [lambda g: g * b * np.power(a, b - 1), lambda g: g * value * log_a]


def _matmul(a: Array, b: Array):
    return a @ b, [lambda g: g @ np.swapaxes(b, -1, -2), lambda g: np.swapaxes(a, -1, -2) @ g]


def _matmul_fuzz(d):
    """Vectors and matrices whose inner dimensions agree."""
    a = d.pick("tensor", where=lambda f: len(f.shape) in (1, 2))
    if a is None:
        return None
    inner = d.shape(a)[-1]
    b = d.tensor(where=lambda f: len(f.shape) in (1, 2) and f.shape[0] == inner,
                 fresh=(inner, d.size()) if d.boolean() else (inner,))
    return None if b is None else {"args": [a, b]}


_POSITIVE_PAIR = ("floor division and remainder are flat or jump where a / b is an integer, and the fuzzer's "
                  "values land there; their cases keep the operands off the steps")


@dataclass(frozen=True)
class Binary:
    """A binary function, its Python operator, and its in-place method (if any)."""

    name: str
    symbol: str
    fn: Callable
    method: str | None = None
    fuzz: Callable | None = None  # the out-of-place op's rule for the fuzzer (Op.fuzz)
    saves: tuple[str, ...] = ()  # what the out-of-place op's backward reads (Op.saves)
    #: whether the vocabulary has its augmented assignment (``a **= b``), whatever the method
    augmented: bool = True


BINARY: dict[str, Binary] = {b.name: b for b in (
    Binary("add", "+", lambda a, b: (a + b, [lambda g: g, lambda g: g]), "add_"),
    Binary("sub", "-", lambda a, b: (a - b, [lambda g: g, lambda g: -g]), "sub_"),
    Binary("mul", "*", lambda a, b: (a * b, [lambda g: g * b, lambda g: g * a]), "mul_", saves=("operands",)),
    Binary("div", "/", lambda a, b: (a / b, [lambda g: g / b, lambda g: -g * a / (b * b)]), "div_",
           saves=("operands",)),
    Binary("pow", "**", _pow, saves=("input",)),
    Binary("matmul", "@", _matmul, fuzz=_matmul_fuzz, saves=("operands",), augmented=False),
    # floor(a / b), flat almost everywhere; a - b * floor(a / b), the sign of b (Python's %, NumPy's mod)
    Binary("floordiv", "//", lambda a, b: (np.floor_divide(a, b), [
        lambda g: np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b))),
        lambda g: np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b)))]), "floor_divide_", fuzz=_POSITIVE_PAIR),
    Binary("mod", "%", lambda a, b: (np.mod(a, b), [lambda g: g, lambda g: -g * np.floor_divide(a, b)]),
           "remainder_", fuzz=_POSITIVE_PAIR),
)}

_PYTHON_SCALAR = Field("bool", default=False, doc=(
    "pass a number operand as a plain Python number even where the framework's users wrap it "
    "in a tensor (to probe that rejection itself)"))


def _inplace_binary(tensor_arg: str, fn: Callable):
    def reference(m, s) -> None:
        tensor = m.get(s.args[0])
        m.inplace(tensor, fn, s.args[1])
        m.bind(s, tensor)
    return reference


_ATTRIBUTE = Field("choice", choices=("data",), doc=(
    "assign through this attribute of the tensor in one statement (a.data *= 3); where the tensor "
    "defines no in-place operator, Python stores the result through the attribute's setter"))


_TARGET_INDEX = Field("index", doc=(
    "assign into these elements in one statement (x[0, :] *= v): Python reads x[index], applies the "
    "operator, and stores the result back through x[index] = ..."))


def _attribute_check(data, scope, fail) -> None:
    args = data.get("args")
    first = args[0] if isinstance(args, list) and args else args
    if data.get("attribute") and data.get("index") is not None:
        raise fail("an augmented assignment goes through an attribute or an index, not both")
    if data.get("attribute") and scope.get(first) != "tensor":
        raise fail(f"{first!r} is an {scope.get(first)}: only a tensor has the attribute {data['attribute']!r}")


def _augmented(fn: Callable):
    def reference(m, s) -> None:
        target = m.get(s.args[0])
        if s.fields.get("attribute"):  # a.data op= b: a write into a's storage that no history records
            target = target.alias()
        if s.index is not None:  # x[i] op= b: the elements x[i] take x[i] op b (whether the operator writes
            index = s.index.resolve(m.counters)  # the view in place or binds a result stored back by setitem)
            target = target.view(lambda a: a[index])
        m.inplace(target, fn, s.args[1])
    return reference


def _augmented_fuzz(d):
    """The derived arguments, and the attribute only on a tensor (an array has no .data)."""
    target = d.pick("data")
    other = None if target is None else d.operand(d.shape(target))
    if other is None:
        return None
    return {"args": [target, other], "attribute": "data" if d.kind(target) == "tensor" and d.boolean() else None}


def _whole_target(fuzz):
    """The fuzzer's draw of an augmented assignment: into the whole target, as the fuzzer drew it before
    the index field existed (the indexed form, x[i] op= v, is written in cases by hand), so that a seed
    draws the programs it drew."""
    if not callable(fuzz):
        return fuzz

    def draw(d):
        drawn = fuzz(d)
        return None if drawn is None else {**drawn, "index": None}
    return draw


def _augmented_target(w, s) -> str:
    attribute = s.fields.get("attribute")
    if s.index is not None:
        return f"{s.args[0]}[{s.index.source()}]"
    return w.attribute(s.args[0], attribute) if attribute else s.args[0]


for _b in BINARY.values():
    register(Op(
        _b.name, f"out = a {_b.symbol} b.", args=("operand", "operand"),
        run_reference=(lambda fn: lambda m, s: m.bind(s, m.new(fn, *s.args)))(_b.fn),
        run_spell=(lambda sym: lambda w, s: w.emit(
            f"{w.out(s)} = {w.arg(s, 0)} {sym} {w.arg(s, 1)}"))(_b.symbol),
        fuzz=_b.fuzz, saves=_b.saves,
    ))
    if _b.method:
        register(Op(
            _b.method, f"a.{_b.method}(b), in place.", args=("tensor", "operand"), out="optional",
            fields={"python_scalar": _PYTHON_SCALAR},
            run_reference=_inplace_binary("tensor", _b.fn), fuzz=_b.fuzz,
            run_spell=(lambda method: lambda w, s: w.emit(w.bind(s) + w.method(
                s.args[0], method, w.operand(s, 1, like=s.args[0]))))(_b.method),
        ))
    if _b.augmented:
        register(Op(
            "i" + _b.name, f"a {_b.symbol}= b, Python augmented assignment"
            + (f" (not a.{_b.method}(b))" if _b.method else "") + f"; with attribute, a.data {_b.symbol}= b in one "
            "statement.",
            args=("data", "operand"), out="none", rebinds=True,
            fields={"attribute": _ATTRIBUTE, "index": _TARGET_INDEX},
            check=_attribute_check, run_reference=_augmented(_b.fn), fuzz=_whole_target(_b.fuzz or _augmented_fuzz),
            run_spell=(lambda sym: lambda w, s: w.emit(f"{_augmented_target(w, s)} {sym}= {w.arg(s, 1)}"))(
                _b.symbol),
        ))


def _add_out_reference(m, s) -> None:
    into = m.tensor(s.fields["into"])
    value, node = m.compute(BINARY["add"].fn, *s.args)
    m.write(into, value, node)


register(Op(
    "add_out", "The framework's add function writing into an out= argument.", args=("tensor", "tensor"),
    out="optional", fields={"into": Field("name", required=True)},
    run_reference=lambda m, s: (_add_out_reference(m, s), m.bind(s, m.tensor(s.fields["into"]))),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.a.add_out(s.args[0], s.args[1], s.fields["into"])),
))


def _reduction(name: str, fn: Callable) -> Op:
    return Op(name, f"out = t.{name}().", args=("tensor",),
              run_reference=lambda m, s: m.bind(s, m.new(fn, s.args[0])),
              run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.method(s.args[0], name)}"))


register(_reduction("sum", lambda x: (np.asarray(x.sum()), [lambda g: np.broadcast_to(g, x.shape)])))
register(_reduction("mean", lambda x: (np.asarray(x.mean()),
                                       [lambda g: np.broadcast_to(g / max(x.size, 1), x.shape)])))


def _var_mean_check(data, scope, fail) -> None:
    out = data.get("out")
    if not isinstance(out, list) or len(out) != 2:
        raise fail("var_mean binds two names, the variance's and the mean's: out: [var, mean]")
    dim = data.get("dim")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or not -64 <= dim < 64):
        raise fail(f"dim must be an integer dimension, not {dim!r}")
    correction = data.get("correction", 1)
    if isinstance(correction, bool) or correction not in (0, 1):
        raise fail(f"correction must be 1 (Bessel's, the default) or 0, not {correction!r}")


def _var_mean_reference(m, s) -> None:
    """The variance with Bessel's *correction* subtracted from the count, and the mean, along *dim* (all
    elements when absent), as two new tensors each tracking its own gradient: d var/dx = 2 (x - mean) /
    (n - correction), d mean/dx = 1 / n."""
    from conformance.ops.views import _axis  # the views' dimension rule (imported here: registration order)

    dim, correction = s.fields["dim"], int(s.fields["correction"])
    source = m.tensor(s.args[0])
    axis = None if dim is None else _axis(dim, len(source.shape))
    count = source.value.size if axis is None else source.shape[axis]
    if count - correction <= 0:
        raise ValueError(f"a variance of {count} element(s) with correction {correction}: no degrees of freedom")

    def variance(x):
        centred = x - x.mean(axis=axis, keepdims=True)
        value = (centred ** 2).sum(axis=axis) / (count - correction)
        expand = (lambda g: g) if axis is None else (lambda g: np.expand_dims(g, axis))
        return value, [lambda g: expand(g) * 2 * centred / (count - correction)]

    def mean(x):
        expand = (lambda g: g) if axis is None else (lambda g: np.expand_dims(g, axis))
        return x.mean(axis=axis), [lambda g: np.broadcast_to(expand(g) / count, x.shape)]

    m.bind(s, m.new(variance, s.args[0]), m.new(mean, s.args[0]))


def _var_mean_spell(w, s) -> None:
    call = f"{w.a.root}.var_mean"  # paddle has none: its users call paddle.var and paddle.mean
    w.a.resolve(call)
    dim = "" if s.fields["dim"] is None else f", dim={s.fields['dim']}"
    w.emit(f"{', '.join(s.out)} = {call}({s.args[0]}{dim}, correction={int(s.fields['correction'])})")


register(Op(
    "var_mean", "var, mean = torch.var_mean(t, dim=d, correction=c): the variance (count less c) and the mean "
    "along d (all elements without it), two new tensors; paddle has no var_mean (its users call paddle.var "
    "and paddle.mean).", args=("tensor",), out="many",
    fields={"dim": Field("number", doc="the dimension reduced (an integer; absent: every element)"),
            "correction": Field("number", default=1, doc="subtracted from the count: 1 (the default, "
                                "Bessel's) or 0")},
    check=_var_mean_check, run_reference=_var_mean_reference, run_spell=_var_mean_spell, saves=("input",),
    fuzz="out of place and in one framework only: a drawn program would find nothing it does not find "
    "with mean",
))


# -- functions with parameters: clip (both frameworks), scale_ (paddle's) ------------------------------


def _clip(low: float, high: float) -> Callable:
    """Clamped to [low, high]; the gradient passes where the input lies within the bounds, ends included
    (torch's clamp backward; cases keep inputs off the bounds, where the frameworks' conventions differ)."""
    def fn(x: Array):
        return np.clip(x, low, high), [lambda g: np.where((x >= low) & (x <= high), g, 0.0)]
    return fn


def _check_bounds(data, scope, fail) -> None:
    if not data["min"] <= data["max"]:
        raise fail(f"min {data['min']!r} is above max {data['max']!r}")


_BOUNDS = {"min": Field("number", required=True), "max": Field("number", required=True)}


def _clip_fuzz(d):
    x = d.pick("tensor")
    if x is None:
        return None
    low, high = sorted((d.number(), d.number()))
    return {"args": [x], "min": low, "max": high}


def _clip_reference(in_place: bool):
    def reference(m, s) -> None:
        fn = _clip(float(s.fields["min"]), float(s.fields["max"]))
        if in_place:
            tensor = m.tensor(s.args[0])
            m.inplace(tensor, fn)
            m.bind(s, tensor)
        else:
            m.bind(s, m.new(fn, s.args[0]))
    return reference


def _bounds(w, s) -> tuple[str, str]:
    return w.literal(s.fields["min"]), w.literal(s.fields["max"])


register(Op(
    "clip", "out = t.clip(min, max), out of place.", args=("tensor",), fields=dict(_BOUNDS),
    check=_check_bounds, run_reference=_clip_reference(False), fuzz=_clip_fuzz, saves=("input",),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.method(s.args[0], "clip", *_bounds(w, s))),
))
register(Op(
    "clip_", "t.clip_(min, max), in place.", args=("tensor",), out="optional", fields=dict(_BOUNDS),
    check=_check_bounds, run_reference=_clip_reference(True), fuzz=_clip_fuzz,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "clip_", *_bounds(w, s))),
))


def _scale_reference(m, s) -> None:
    scale, bias = float(s.fields["scale"]), float(s.fields["bias"])
    tensor = m.tensor(s.args[0])
    m.inplace(tensor, lambda x: (x * scale + bias, [lambda g: g * scale]))
    m.bind(s, tensor)


register(Op(
    "scale_", "t.scale_(scale, bias): t * scale + bias in place (paddle's Tensor.scale_).", args=("tensor",),
    out="optional", fields={"scale": Field("number", default=1.0), "bias": Field("number", default=0.0)},
    run_reference=_scale_reference,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "scale_", f"scale={w.literal(s.fields['scale'])}",
                                                       f"bias={w.literal(s.fields['bias'])}")),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "scale": d.number(), "bias": d.number()})(
        d.pick("tensor")),
))
