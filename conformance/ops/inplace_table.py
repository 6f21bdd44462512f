"""In-place ops with parameters or a second operand, from paddle's ``test_inplace.py`` and their torch
counterparts: ``softmax_``, ``pow_`` with a scalar, ``copysign_``, ``triu_``/``tril_``, ``masked_scatter_``,
``fill_diagonal_tensor_``, ``fill_``, paddle's ``_inplace_assign``; and ``out=`` beyond add (``mul_out``, ``sub_out``,
``matmul_out``).

Each is tracked as its framework documents it: the values written in place, the gradient of the values
each op read when it ran (``docs/reference.md``).  Where a framework has no such API its adapter finds it
missing (``Unsupported``): torch has no ``softmax_`` and no ``_inplace_assign``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.elementwise import BINARY, _matmul_fuzz
from conformance.ops.special import (MAX_POLYGAMMA_ORDER, mvdigamma, mvlgamma, polygamma, regularized_gamma,
                                      regularized_gamma_slopes)
from conformance.ops.views import _axis, _integer_dim
from conformance.ops.writes import _check_mask, _mask

Array = np.ndarray


def _in_place(fn_of_step: Callable) -> Callable:
    """The reference of ``t.op_(...)``: t = fn(t, *other args) written into t, and t bound as the result."""
    def reference(m, s) -> None:
        tensor = m.tensor(s.args[0])
        m.inplace(tensor, fn_of_step(s), *s.args[1:])
        m.bind(s, tensor)
    return reference


# -- softmax: not element-wise (a dim) ----------------------------------------------------------------


def softmax(axis: int) -> Callable:
    def fn(x: Array):
        shifted = np.exp(x - x.max(axis=axis, keepdims=True))
        y = shifted / shifted.sum(axis=axis, keepdims=True)
        return y, [lambda g: y * (g - (g * y).sum(axis=axis, keepdims=True))]
    return fn


def _softmax_of(m, s) -> Callable:
    return softmax(_axis(int(s.fields["dim"]), len(m.tensor(s.args[0]).shape)))


def _softmax_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) > 0)
    return None if x is None else {"args": [x], "dim": d.dim(len(d.shape(x)))}


_SOFTMAX_DIM = Field("number", default=-1, doc="the dimension softmax normalizes over (torch dim=, paddle axis=)")

register(Op(
    "softmax", "out = F.softmax(t, dim): out of place.", args=("tensor",), fields={"dim": _SOFTMAX_DIM},
    check=_integer_dim, fuzz=_softmax_fuzz, saves=("output",),
    run_reference=lambda m, s: m.bind(s, m.new(_softmax_of(m, s), s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.activation_function('softmax')}({s.args[0]}, "
                                  f"dim={s.fields['dim']})"),
))


def _softmax_inplace_spell(w, s) -> None:
    w.a.resolve("F.softmax_")  # torch has none: Unsupported
    w.emit(w.bind(s) + f"F.softmax_({s.args[0]}, dim={s.fields['dim']})")


register(Op(
    "softmax_", "F.softmax_(t, dim): softmax in place (paddle's; torch has no in-place softmax).",
    args=("tensor",), out="optional", fields={"dim": _SOFTMAX_DIM}, check=_integer_dim, fuzz=_softmax_fuzz,
    saves=("output",), run_reference=lambda m, s: (lambda fn: _in_place(lambda _: fn)(m, s))(_softmax_of(m, s)),
    run_spell=_softmax_inplace_spell,
))


# -- pow_ with a scalar exponent ----------------------------------------------------------------------


def power(exponent: float) -> Callable:
    def fn(x: Array):
        return np.power(x, exponent), [lambda g: g * exponent * np.power(x, exponent - 1)]
    return fn


register(Op(
    "pow_", "t.pow_(exponent): t ** exponent in place, the exponent a Python number.", args=("tensor",),
    out="optional", fields={"exponent": Field("number", required=True)},
    run_reference=_in_place(lambda s: power(float(s.fields["exponent"]))),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "pow_", w.literal(s.fields["exponent"]))),
    # integral exponents: a fractional power of a negative value is NaN
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "exponent": d.choice((2.0, 3.0))})(
        d.pick("tensor")),
))


# -- fill_: every element set to a number ---------------------------------------------------------------


def filled(value: float) -> Callable:
    """Every element *value*; nothing flows back to what the tensor held (both frameworks' fill_ grad)."""
    def fn(x: Array):
        return np.full(x.shape, value), [lambda g: np.zeros(x.shape)]
    return fn


register(Op(
    "fill_", "t.fill_(value): every element of t set to value, in place.", args=("tensor",), out="optional",
    fields={"value": Field("number", required=True, doc="the number every element becomes")},
    run_reference=_in_place(lambda s: filled(float(s.fields["value"]))),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "fill_", w.literal(s.fields["value"]))),
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "value": d.choice((0.0, 1.5, -2.0))})(
        d.pick("tensor")),
))


# -- copysign_ ------------------------------------------------------------------------------------------


def copysign(x: Array, y: Array):
    """|x| with y's sign; d/dx is result / x (0 where x is 0, as torch's backward masks it), nothing to y."""
    value = np.copysign(x, y)
    ratio = np.where(x != 0, value / np.where(x != 0, x, 1.0), 0.0)
    return value, [lambda g: g * ratio, lambda g: np.zeros(np.broadcast_shapes(x.shape, y.shape))]


register(Op(
    "copysign_", "t.copysign_(other): |t| with other's signs, in place.", args=("tensor", "tensor"),
    out="optional", run_reference=_in_place(lambda s: copysign),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "copysign_", s.args[1])),
    fuzz=lambda d: (lambda x: None if x is None else (lambda y: None if y is None else {"args": [x, y]})(
        d.tensor(d.shape(x))))(d.pick("tensor")),
))


# -- hypot_ ----------------------------------------------------------------------------------------------


def hypot(x: Array, y: Array):
    """sqrt(x^2 + y^2); d/dx = x / h, d/dy = y / h (0 where both are 0)."""
    value = np.hypot(x, y)
    safe = np.where(value != 0, value, 1.0)
    return value, [lambda g: g * np.where(value != 0, x / safe, 0.0),
                   lambda g: g * np.where(value != 0, y / safe, 0.0)]


register(Op(
    "hypot_", "t.hypot_(other): sqrt(t^2 + other^2) in place (its backward reads what it wrote and other).",
    args=("tensor", "tensor"), out="optional", run_reference=_in_place(lambda s: hypot),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "hypot_", s.args[1])),
    fuzz=lambda d: (lambda x: None if x is None else (lambda y: None if y is None else {"args": [x, y]})(
        d.tensor(d.shape(x))))(d.pick("tensor")), saves=("operands",),
))


# -- addmm_: t = beta * t + alpha * (a @ b) ---------------------------------------------------------------


def added_product(beta: float, alpha: float) -> Callable:
    def fn(t: Array, a: Array, b: Array):
        return beta * t + alpha * (a @ b), [lambda g: beta * g, lambda g: alpha * g @ b.T, lambda g: alpha * a.T @ g]
    return fn


def _addmm_check(data, scope, fail) -> None:
    for name in ("beta", "alpha"):
        value = data.get(name, 1.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise fail(f"{name} must be a finite number, not {value!r}")


def _addmm_spell(w, s) -> None:
    scale = "".join(f", {name}={w.literal(s.fields[name])}" for name in ("beta", "alpha") if name in s.fields)
    w.emit(w.bind(s) + w.method(s.args[0], "addmm_", f"{s.args[1]}, {s.args[2]}{scale}"))


register(Op(
    "addmm_", "t.addmm_(a, b, beta=, alpha=): beta * t + alpha * (a @ b) written into t, a and b matrices (both "
    "frameworks take beta and alpha by keyword; its backward reads a and b).", args=("tensor", "tensor", "tensor"), out="optional",
    fields={"beta": Field("number", default=1.0, doc="the factor of t"),
            "alpha": Field("number", default=1.0, doc="the factor of a @ b")},
    check=_addmm_check, saves=("others",),
    run_reference=_in_place(lambda s: added_product(float(s.fields.get("beta", 1.0)),
                                                    float(s.fields.get("alpha", 1.0)))),
    run_spell=_addmm_spell,
    fuzz="takes two matrices whose inner dimensions agree and a third of their product's shape: the fuzzer "
         "draws no such triple",
))


# -- thresholded_relu_ (paddle's; torch has none) ------------------------------------------------------------


def thresholded(threshold: float) -> Callable:
    def fn(x: Array):
        keep = x > threshold
        return np.where(keep, x, 0.0), [lambda g: np.where(keep, g, 0.0)]
    return fn


def _thresholded_relu_spell(w, s) -> None:
    w.a.resolve("F.thresholded_relu_")  # torch has none: Unsupported
    w.emit(w.bind(s) + f"F.thresholded_relu_({s.args[0]}, threshold={w.literal(s.fields['threshold'])})")


register(Op(
    "thresholded_relu_", "F.thresholded_relu_(t, threshold): t where t > threshold, else 0, in place (paddle's; "
    "torch has no thresholded_relu, its users write F.threshold_).", args=("tensor",), out="optional",
    fields={"threshold": Field("number", default=1.0, doc="elements at or below it become 0")},
    run_reference=_in_place(lambda s: thresholded(float(s.fields.get("threshold", 1.0)))),
    run_spell=_thresholded_relu_spell,
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "threshold": d.choice((0.0, 1.0))})(
        d.pick("tensor")),
))


# -- polygamma_ and mvlgamma_: special functions with an order (paddle's TestDygraphInplacePolygamma, ...Mutilgammaln)


def polygamma_of(n: int) -> Callable:
    value, slope = polygamma(n)

    def fn(x: Array):
        return value(x), [lambda g: g * slope(x)]
    return fn


def _polygamma_check(data, scope, fail) -> None:
    n = data.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_POLYGAMMA_ORDER:
        raise fail(f"n must be a whole number from 0 to {MAX_POLYGAMMA_ORDER} (the orders the reference "
                   f"computes), not {n!r}")


register(Op(
    "polygamma_", "t.polygamma_(n): the n-th derivative of digamma, in place (both frameworks take n first).",
    args=("tensor",), out="optional", fields={"n": Field("number", required=True, doc=f"the order: 0 to {MAX_POLYGAMMA_ORDER}")},
    check=_polygamma_check, saves=("input",),
    run_reference=_in_place(lambda s: polygamma_of(int(s.fields["n"]))),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "polygamma_", str(int(s.fields["n"])))),
    fuzz="defined for positive values only, and the fuzzer's values are not kept there",
))


def multivariate_lgamma(p: int) -> Callable:
    def fn(x: Array):
        return mvlgamma(x, p), [lambda g: g * mvdigamma(x, p)]
    return fn


def _mvlgamma_check(data, scope, fail) -> None:
    p = data.get("p")
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 16:
        raise fail(f"p must be a whole number from 1 to 16, not {p!r}")


register(Op(
    "mvlgamma_", "t.mvlgamma_(p): the multivariate log-gamma function of dimension p, in place (paddle: "
    "multigammaln_); every element must exceed (p - 1) / 2.", args=("tensor",), out="optional",
    fields={"p": Field("number", required=True, doc="the dimension, a whole number")}, check=_mvlgamma_check,
    saves=("input",), run_reference=_in_place(lambda s: multivariate_lgamma(int(s.fields["p"]))),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "mvlgamma_", str(int(s.fields["p"])))),
    fuzz="defined above (p - 1) / 2 only, and the fuzzer's values are not kept there",
))


# -- nan_to_num_: NaN and infinities replaced by numbers ---------------------------------------------------


def nan_to_num(nan: float, posinf: float | None, neginf: float | None, dtype: str | None) -> Callable:
    """NaN -> nan, +inf -> posinf, -inf -> neginf (by default the largest and smallest finite numbers of the
    tensor's dtype); the gradient flows where the element was finite, and nowhere else (a constant there)."""
    biggest = None if dtype is None else float(np.finfo(np.dtype(dtype)).max)

    def fn(x: Array):
        if biggest is None and ((posinf is None and np.isposinf(x).any()) or (neginf is None and np.isneginf(x).any())):
            raise ValueError("nan_to_num_ would put the dtype's largest number in place of an infinity, and the "
                             "reference does not know this tensor's dtype (one made by an op): name posinf and "
                             "neginf, or apply it to a literal")
        high = biggest if posinf is None else posinf
        low = None if biggest is None else -biggest
        low = low if neginf is None else neginf
        finite = np.isfinite(x)
        value = np.where(np.isnan(x), nan, np.where(np.isposinf(x), high, np.where(np.isneginf(x), low, x)))
        return value, [lambda g: np.where(finite, g, 0.0)]
    return fn


_NAN_TO_NUM_FIELDS = ("nan", "posinf", "neginf")


def _nan_to_num_check(data, scope, fail) -> None:
    for name in _NAN_TO_NUM_FIELDS:
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise fail(f"{name} must be a finite number, not {value!r}")


def _nan_to_num_reference(m, s) -> None:
    def given(name: str) -> float | None:
        return None if s.fields.get(name) is None else float(s.fields[name])
    dtype = m.tensor(s.args[0]).dtype
    _in_place(lambda _: nan_to_num(given("nan") or 0.0, given("posinf"), given("neginf"), dtype))(m, s)


def _nan_to_num_spell(w, s) -> None:
    given = ", ".join(f"{name}={w.literal(s.fields[name])}" for name in _NAN_TO_NUM_FIELDS
                      if s.fields.get(name) is not None)
    w.emit(w.bind(s) + w.method(s.args[0], "nan_to_num_", given))


register(Op(
    "nan_to_num_", "t.nan_to_num_(nan=, posinf=, neginf=): NaN, +inf and -inf replaced in place (both frameworks "
    "take the three by keyword; an infinity left unnamed becomes the dtype's largest finite number).",
    args=("tensor",), out="optional",
    fields={"nan": Field("number", default=0.0, doc="what NaN becomes"),
            "posinf": Field("number", doc="what +inf becomes (unnamed: the dtype's largest finite number)"),
            "neginf": Field("number", doc="what -inf becomes (unnamed: the dtype's smallest finite number)")},
    check=_nan_to_num_check, run_reference=_nan_to_num_reference, run_spell=_nan_to_num_spell,
    fuzz=lambda d: (lambda x: None if x is None else {"args": [x]})(d.pick("tensor")),
))


# -- renorm_: each slice along a dimension scaled down to a largest p-norm -----------------------------------


def renorm(p: float, dim: int, maxnorm: float) -> Callable:
    """Each sub-tensor x.select(dim, i) whose p-norm n exceeds maxnorm is multiplied by maxnorm / n; the others
    are kept.  The factor depends on x, so the gradient of a scaled slice v is
    (maxnorm / n) (g - (g . v) |v|^(p-1) sign(v) / n^p)."""
    def fn(x: Array):
        rows = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        norm = (np.abs(rows) ** p).sum(axis=1) ** (1.0 / p)
        scaled = norm > maxnorm
        factor = np.where(scaled, maxnorm / np.where(scaled, norm, 1.0), 1.0)[:, None]

        def back(g: Array) -> Array:
            g_rows = np.moveaxis(g, dim, 0).reshape(rows.shape)
            safe = np.where(scaled, norm, 1.0)[:, None]
            along = (g_rows * rows).sum(axis=1, keepdims=True) * np.abs(rows) ** (p - 1) * np.sign(rows) / safe ** p
            out = np.where(scaled[:, None], factor * (g_rows - along), g_rows)
            return np.moveaxis(out.reshape(np.moveaxis(x, dim, 0).shape), 0, dim)
        return np.moveaxis((rows * factor).reshape(np.moveaxis(x, dim, 0).shape), 0, dim), [back]
    return fn


def _renorm_check(data, scope, fail) -> None:
    p, maxnorm, dim = data.get("p"), data.get("maxnorm"), data.get("dim")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not (np.isfinite(p) and p >= 1):
        raise fail(f"p must be a finite number of at least 1, not {p!r}")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, (int, float)) or not (np.isfinite(maxnorm) and maxnorm > 0):
        raise fail(f"maxnorm must be a finite positive number, not {maxnorm!r}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise fail(f"dim must be an integer, not {dim!r}")


def _renorm_reference(m, s) -> None:
    rank = len(m.tensor(s.args[0]).shape)
    _in_place(lambda _: renorm(float(s.fields["p"]), _axis(int(s.fields["dim"]), rank), float(s.fields["maxnorm"])))(m, s)


register(Op(
    "renorm_", "t.renorm_(p, dim, maxnorm): each slice along dim whose p-norm exceeds maxnorm scaled to it, in "
    "place (paddle: renorm_(p, axis, max_norm), the same three by position).", args=("tensor",), out="optional",
    fields={"p": Field("number", required=True, doc="the norm's power, at least 1"),
            "dim": Field("number", required=True, doc="the dimension whose slices are scaled one by one"),
            "maxnorm": Field("number", required=True, doc="the largest p-norm a slice keeps")},
    check=_renorm_check, saves=("input",), run_reference=_renorm_reference,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "renorm_", ", ".join(
        w.literal(s.fields[name]) for name in ("p", "dim", "maxnorm")))),
    fuzz="the fuzzer draws no norm bounds",
))


# -- igamma_ / igammac_: the regularized incomplete gamma functions ------------------------------------------


def incomplete_gamma(upper: bool) -> Callable:
    """P(a, x) (igamma_) or Q(a, x) = 1 - P(a, x) (igammac_), a the tensor written; the gradient reaches both."""
    sign = -1.0 if upper else 1.0

    def fn(a: Array, x: Array):
        lower = regularized_gamma(a, x)
        by_a, by_x = regularized_gamma_slopes(a, x)
        return (1.0 - lower if upper else lower), [lambda g: sign * g * by_a, lambda g: sign * g * by_x]
    return fn


for _name, _upper, _says in (("igamma_", False, "P(t, other) = gamma(t, other) / Gamma(t), the lower"),
                             ("igammac_", True, "Q(t, other) = 1 - P(t, other), the upper")):
    register(Op(
        _name, f"t.{_name}(other): {_says} regularized incomplete gamma function, written into t (paddle: "
        f"{'gammaincc_' if _upper else 'gammainc_'}); t > 0 and other >= 0.", args=("tensor", "tensor"),
        out="optional", run_reference=(lambda upper: _in_place(lambda s: incomplete_gamma(upper)))(_upper),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], name, s.args[1])))(_name),
        fuzz="defined for positive t only, and the fuzzer's values are not kept there",
    ))


# -- ldexp_: t * 2 ** other, other an integer tensor -------------------------------------------------------


def ldexp(x: Array, y: Array):
    """x * 2^y; y holds whole numbers (an int tensor: paddle refuses a float one), so nothing flows to it."""
    if not np.all(y == np.round(y)):
        raise ValueError("ldexp_'s exponent must hold whole numbers: make it a tensor of an int dtype")
    scale = np.power(2.0, y)
    return x * scale, [lambda g: g * scale, lambda g: np.zeros(np.broadcast_shapes(x.shape, y.shape))]


register(Op(
    "ldexp_", "t.ldexp_(other): t * 2 ** other in place, other an integer tensor.", args=("tensor", "tensor"),
    out="optional", run_reference=_in_place(lambda s: ldexp),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "ldexp_", s.args[1])),
    fuzz="takes an integer exponent tensor; the fuzzer draws float ones",
))


# -- triu_ / tril_ -----------------------------------------------------------------------------------


def triangle(keep: Callable[[Array, int], Array], diagonal: int) -> Callable:
    def fn(x: Array):
        return keep(x, diagonal), [lambda g: keep(g, diagonal)]
    return fn


def _integers(*names: str) -> Callable:
    """A check that the number fields *names* hold integers (a diagonal, a dimension)."""
    def check(data, scope, fail) -> None:
        for name in names:
            value = data.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise fail(f"{name} must be an integer, not {value!r}")
    return check


_matrix_check = _integers("diagonal")


for _name, _keep in (("triu_", np.triu), ("tril_", np.tril)):
    register(Op(
        _name, f"t.{_name}(diagonal): the elements {'on and above' if _name == 'triu_' else 'on and below'} "
        "the diagonal kept, the others zeroed, in place (a matrix or a batch of them).", args=("tensor",),
        out="optional", fields={"diagonal": Field("number", default=0, doc="an integer: 0 the main diagonal")},
        check=_matrix_check,
        run_reference=(lambda keep: _in_place(lambda s: triangle(keep, int(s.fields["diagonal"]))))(_keep),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], name, str(s.fields["diagonal"]))))(
            _name),
        fuzz=lambda d: (lambda x: None if x is None else {"args": [x], "diagonal": d.integer(-1, 1)})(
            d.pick("tensor", where=lambda f: len(f.shape) >= 2)),
    ))


# -- masked_scatter_ -------------------------------------------------------------------------------------


def masked_scatter(mask: Array) -> Callable:
    """Where mask (broadcast to t) is true, t takes source's elements one after another in row-major order."""
    def fn(x: Array, source: Array):
        where = np.broadcast_to(mask, x.shape)
        count = int(where.sum())
        if count > source.size:
            raise ValueError(f"the mask selects {count} elements, the source has {source.size}")
        value = x.copy()
        value[where] = source.reshape(-1)[:count]

        def to_source(g):
            out = np.zeros(source.size)
            out[:count] = np.asarray(g)[where]
            return out.reshape(source.shape)
        return value, [lambda g: np.where(where, 0.0, g), to_source]
    return fn


def _masked_scatter_spell(w, s) -> None:
    mask = w.a.tensor(w.literal(_mask(s.fields["mask"]).tolist()), "bool", False)
    w.emit(w.bind(s) + w.method(s.args[0], "masked_scatter_", mask, s.args[1]))


def _masked_scatter_fuzz(d):
    x = d.pick("tensor", where=lambda f: f.size > 0)
    if x is None:
        return None
    shape = d.shape(x)
    mask = (np.arange(int(np.prod(shape))) % 2 == 0).astype(np.int64).reshape(shape)
    source = d.tensor(shape)
    return None if source is None else {"args": [x, source], "mask": mask.tolist()}


register(Op(
    "masked_scatter_", "t.masked_scatter_(mask, source): where mask is true, t takes source's elements in "
    "order, in place (tracked: the gradient of those elements goes to source).", args=("tensor", "tensor"),
    out="optional", fields={"mask": Field("numbers", required=True, doc="0s and 1s, broadcast to t's shape")},
    check=_check_mask, run_reference=_in_place(lambda s: masked_scatter(_mask(s.fields["mask"]))),
    run_spell=_masked_scatter_spell, fuzz=_masked_scatter_fuzz,
))


# -- fill_diagonal_tensor_: paddle's op; torch's users copy into the diagonal view ---------------------


def _fill_diagonal_reference(m, s) -> None:
    f = s.fields
    target = m.tensor(s.args[0]).view(lambda a: np.diagonal(a, int(f["offset"]), int(f["dim1"]), int(f["dim2"])))
    value, node = m.compute(lambda v: (np.broadcast_to(v, target.shape), [lambda g: g]), s.args[1])
    m.write(target, value, node)


def _fill_diagonal_spell(w, s) -> None:
    f = s.fields
    w.emit(w.method(w.method(s.args[0], "diagonal", f"offset={f['offset']}", f"dim1={f['dim1']}",
                             f"dim2={f['dim2']}"), "copy_", s.args[1]))


def _fill_diagonal_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) == 2)
    if x is None:
        return None
    rows, cols = d.shape(x)
    y = d.tensor((min(rows, cols),))
    return None if y is None else {"args": [x, y], "offset": 0, "dim1": 0, "dim2": 1}


register(Op(
    "fill_diagonal_tensor_", "t's diagonal (offset, dim1, dim2) overwritten by src, in place (tracked): paddle's "
    "t.fill_diagonal_tensor_(src, offset, dim1, dim2); torch has no such op, and its users write "
    "t.diagonal(offset, dim1, dim2).copy_(src), a write through the diagonal view.", args=("tensor", "tensor"),
    out="none", fields={"offset": Field("number", default=0, doc="an integer: 0 the main diagonal"),
                        "dim1": Field("number", default=0), "dim2": Field("number", default=1)},
    check=_integers("offset", "dim1", "dim2"), run_reference=_fill_diagonal_reference, run_spell=_fill_diagonal_spell, fuzz=_fill_diagonal_fuzz,
))


# -- paddle's _inplace_assign: the tensor becomes another ------------------------------------------------


def _inplace_assign_reference(m, s) -> None:
    """Paddle shares src's whole tensor into t (``ShareTensor`` in eager_method.cc): storage, shape and
    autograd state, its gradient included.  Every name of t's object names src from now on."""
    tensor, source = m.tensor(s.args[0]), m.tensor(s.args[1])
    if tensor.base is not None or any(v is not tensor and getattr(v, "base", None) is tensor for v in m.env.values()):
        raise ValueError("_inplace_assign of a view, or of a tensor with views, is not modelled")
    for name, value in list(m.env.items()):
        if value is tensor:
            m.env[name] = source


register(Op(
    "inplace_assign", "t._inplace_assign(src): paddle's private method that makes t share src's storage, "
    "shape and autograd state (of any shape); torch has no such method (its nearest, t.set_(src) and "
    "t.data = src, keep t's own autograd state: ops set_ and set_data).", args=("tensor", "tensor"), out="none",
    run_reference=_inplace_assign_reference,
    run_spell=lambda w, s: w.emit(w.method(s.args[0], "_inplace_assign", s.args[1])),
    fuzz="a private paddle method: torch has none, so every drawn program would be unsupported in two columns",
))


# -- out= beyond add ----------------------------------------------------------------------------------------


def _out_reference(name: str) -> Callable:
    def reference(m, s) -> None:
        into = m.tensor(s.fields["into"])
        value, node = m.compute(BINARY[name].fn, *s.args)
        if value.shape != into.shape:
            raise ValueError(f"the result's shape {value.shape} is not out's {into.shape} (a resize is not modelled)")
        m.write(into, value, node)
        m.bind(s, into)
    return reference


def _out_fuzz(name: str) -> Callable:
    def fuzz(d):
        if name == "matmul":
            drawn = _matmul_fuzz(d)
            if drawn is None:
                return None
            a, b = drawn["args"]
            shape = np.empty(d.shape(a)) @ np.empty(d.shape(b))
            into = d.tensor(np.shape(shape))
            return None if into is None else {"args": [a, b], "into": into}
        a = d.pick("tensor")
        b = None if a is None else d.tensor(d.shape(a))
        into = None if b is None else d.tensor(d.shape(a))
        return None if into is None else {"args": [a, b], "into": into}
    return fuzz


for _name in ("mul", "sub", "matmul"):
    register(Op(
        f"{_name}_out", f"The framework's {_name} function writing into an out= argument (torch.{_name}(a, b, "
        f"out=c); paddle's own name for the function).", args=("tensor", "tensor"), out="optional",
        fields={"into": Field("name", required=True)}, run_reference=_out_reference(_name),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.a.binary_out(name, s.args[0], s.args[1],
                                                                               s.fields["into"])))(_name),
        fuzz=_out_fuzz(_name),
    ))


# -- out= of element-wise functions, and an out of another shape ---------------------------------------

#: The element-wise functions whose out= the vocabulary spells: their torch functions take out=.
UNARY_OUT = ("sin", "cos", "exp", "tanh", "abs")


def _unary_out_reference(m, s) -> None:
    """``torch.sin(x, out=y)``: the result written into y, tracked.  An out of another shape is resized to
    the result's first (torch: "out ... will be resized", with a warning when it held elements), as
    ``resize_`` resizes: its first elements in storage, grown where there are too few."""
    from conformance.ops.elementwise import UNARY
    from conformance.ops.layout import resize_to

    into_name = s.fields["into"]
    value, node = m.compute(UNARY[s.fields["fn"]], s.args[0])
    if value.shape != m.tensor(into_name).shape:
        resize_to(m, into_name, value.shape, "out=")
    into = m.tensor(into_name)
    m.write(into, value, node)
    m.bind(s, into)


register(Op(
    "unary_out", "The framework's element-wise function writing into an out= argument (torch.sin(x, out=y)); "
    "an out of another shape is resized to the result's.", args=("tensor",), out="optional",
    fields={"fn": Field("choice", required=True, choices=UNARY_OUT), "into": Field("name", required=True)},
    run_reference=_unary_out_reference,
    run_spell=lambda w, s: w.emit(w.bind(s) + w.a.unary_out(s.fields["fn"], s.args[0], s.fields["into"])),
    fuzz="an out= of another shape resizes it, which the fuzzer's shapes do not follow; it draws add_out",
))


# -- cumsum: a running sum along a dimension (paddle's TestDygraphInplaceCumsum) ----------------------


def cumulative_sum(axis: int) -> Callable:
    def fn(x: Array):
        return np.cumsum(x, axis=axis), [lambda g: np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)]
    return fn


def _cumsum_of(m, s) -> Callable:
    return cumulative_sum(_axis(int(s.fields["dim"]), len(m.tensor(s.args[0]).shape)))


def _cumsum_fuzz(d):
    x = d.pick("tensor", where=lambda f: len(f.shape) > 0)
    return None if x is None else {"args": [x], "dim": d.dim(len(d.shape(x)))}


_CUMSUM_DIM = Field("number", required=True, doc="the dimension summed along (torch dim, paddle axis: the "
                                                  "first argument after the tensor in both)")

register(Op(
    "cumsum", "out = cumsum(t, dim): running sums along dim, out of place.", args=("tensor",),
    fields={"dim": _CUMSUM_DIM}, check=_integer_dim, fuzz=_cumsum_fuzz,
    run_reference=lambda m, s: m.bind(s, m.new(_cumsum_of(m, s), s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.function('cumsum')}({s.args[0]}, {s.fields['dim']})"),
))
register(Op(
    "cumsum_", "t.cumsum_(dim): running sums along dim, in place (its backward needs no saved value).",
    args=("tensor",), out="optional", fields={"dim": _CUMSUM_DIM}, check=_integer_dim, fuzz=_cumsum_fuzz,
    run_reference=lambda m, s: (lambda fn: _in_place(lambda _: fn)(m, s))(_cumsum_of(m, s)),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "cumsum_", str(s.fields["dim"]))),
))


def cumulative_product(axis: int) -> Callable:
    """Running products along *axis*; the gradient of y_i = x_0 ... x_i to x_j (j <= i) is the product of
    the others, computed without dividing by x_j (a zero in x is no special case)."""
    def fn(x: Array):
        moved = np.moveaxis(x, axis, -1)
        n = moved.shape[-1]

        def back(g: Array) -> Array:
            g_moved = np.moveaxis(g, axis, -1)
            out = np.zeros_like(moved)
            for j in range(n):
                for i in range(j, n):
                    others = np.prod(np.delete(moved[..., :i + 1], j, axis=-1), axis=-1)
                    out[..., j] += g_moved[..., i] * others
            return np.moveaxis(out, -1, axis)
        return np.cumprod(x, axis=axis), [back]
    return fn


def _cumprod_of(m, s) -> Callable:
    return cumulative_product(_axis(int(s.fields["dim"]), len(m.tensor(s.args[0]).shape)))


register(Op(
    "cumprod_", "t.cumprod_(dim): running products along dim, in place (its backward reads what it wrote).", args=("tensor",), out="optional",
    fields={"dim": Field("number", required=True, doc="the dimension multiplied along (torch dim, paddle dim)")},
    check=_integer_dim, fuzz=_cumsum_fuzz, saves=("output",),
    run_reference=lambda m, s: (lambda fn: _in_place(lambda _: fn)(m, s))(_cumprod_of(m, s)),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "cumprod_", str(s.fields["dim"]))),
))


# -- index_fill_: whole slices along a dimension set to a number (paddle's TestDygraphInplaceIndexFill) ------


def index_filled(axis: int, index: list[int], value: float) -> Callable:
    def fn(x: Array):
        filled = x.copy()
        where = [slice(None)] * x.ndim
        where[axis] = index
        filled[tuple(where)] = value

        def back(g):
            g = np.array(g, dtype=np.float64)
            g[tuple(where)] = 0.0  # the filled elements no longer depend on x
            return g
        return filled, [back]
    return fn


def _index_fill_check(data, scope, fail) -> None:
    _integer_dim(data, scope, fail)
    index = data.get("positions")
    if not isinstance(index, list) or not index or not all(type(i) is int and 0 <= i < 2**31 for i in index):
        raise fail(f"positions must be a non-empty list of whole numbers (0 or more), not {index!r}")


def _index_fill_of(m, s) -> Callable:
    x = m.tensor(s.args[0])
    axis = _axis(int(s.fields["dim"]), len(x.shape))
    if max(s.fields["positions"]) >= x.shape[axis]:
        raise IndexError(f"position {max(s.fields['positions'])} is out of range for dimension {axis} of size "
                         f"{x.shape[axis]}")
    return index_filled(axis, list(s.fields["positions"]), float(s.fields["value"]))


def _index_fill_spell(w, s) -> None:
    f = s.fields
    index = w.a.tensor(w.literal(list(f["positions"])), "int64", False)
    w.emit(w.bind(s) + w.method(s.args[0], "index_fill_", str(f["dim"]), index, w.literal(f["value"])))


register(Op(
    "index_fill_", "t.index_fill_(dim, index, value): the slices of t at index along dim set to value, in place "
    "(paddle: t.index_fill_(index, axis, value)).", args=("tensor",), out="optional",
    fields={"dim": Field("number", required=True, doc="the dimension the index picks slices of"),
            "positions": Field("numbers", required=True,
                               doc="the positions along dim (the index tensor), whole numbers"),
            "value": Field("number", required=True, doc="the number the slices become")},
    check=_index_fill_check,
    run_reference=lambda m, s: (lambda fn: _in_place(lambda _: fn)(m, s))(_index_fill_of(m, s)),
    run_spell=_index_fill_spell,
    fuzz="its index must lie within the drawn tensor's shape, which the fuzzer's draws do not keep",
))


# -- pad: a constant border, out of place (torch's constant_pad_nd tests) ------------------------------


def padded(pairs: list[tuple[int, int]], value: float) -> Callable:
    """*pairs*: (before, after) for every dimension, first to last."""
    def fn(x: Array):
        inside = tuple(slice(before, before + size) for (before, _), size in zip(pairs, x.shape))
        return np.pad(x, pairs, constant_values=value), [lambda g: np.asarray(g)[inside]]
    return fn


def _pad_check(data, scope, fail) -> None:
    widths = data.get("widths")
    if (not isinstance(widths, list) or not widths or len(widths) % 2
            or not all(type(w) is int and 0 <= w <= 64 for w in widths)):
        raise fail(f"widths must be an even-length list of whole numbers from 0 to 64, not {widths!r}")


def _pad_of(m, s) -> Callable:
    """torch's documented order: the first pair pads the last dimension, the next the one before it."""
    x = m.tensor(s.args[0])
    widths = list(s.fields["widths"])
    if len(widths) > 2 * len(x.shape):
        raise ValueError(f"{len(widths) // 2} pairs of widths for a tensor of {len(x.shape)} dimensions")
    pairs = [(0, 0)] * len(x.shape)
    for i in range(len(widths) // 2):
        pairs[len(x.shape) - 1 - i] = (widths[2 * i], widths[2 * i + 1])
    return padded(pairs, float(s.fields["value"]))


register(Op(
    "pad", "out = F.pad(t, widths, value=v): a constant border around t, a new tensor; widths as torch orders "
    "them (a pair per dimension from the last), the order paddle keeps only for a list shorter than two per "
    "dimension.", args=("tensor",),
    fields={"widths": Field("numbers", required=True, doc="before and after, a pair per dimension from the last"),
            "value": Field("number", default=0.0, doc="the number the border holds")},
    check=_pad_check, run_reference=lambda m, s: m.bind(s, m.new(_pad_of(m, s), s.args[0])),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.activation_function('pad')}({s.args[0]}, "
                                  f"{list(s.fields['widths'])}, value={w.literal(s.fields['value'])})"),
    fuzz="its widths must fit the drawn tensor's dimensions, which the fuzzer's draws do not keep",
))


# -- index_put_: rows of t at positions set to (or, accumulating, added to) values ------------------------


def index_put(positions: list[int], accumulate: bool) -> Callable:
    """Along the first dimension; with accumulate, a position named twice receives the sum of its values
    (torch and paddle document accumulate as ``t[indices] += values``, summing repeated positions)."""
    def fn(x: Array, values: Array):
        where = np.asarray(positions)
        if values.shape != (len(positions),) + x.shape[1:]:
            raise ValueError(f"values of shape {list(values.shape)} for {len(positions)} rows of a tensor of "
                             f"shape {list(x.shape)}: give one row of values per position")
        out = x.copy()
        if accumulate:
            np.add.at(out, where, values)
        else:
            out[where] = values

        def to_x(g):
            g = np.array(g, dtype=np.float64)
            if not accumulate:
                g[where] = 0.0  # overwritten: the old elements no longer reach the result
            return g
        return out, [to_x, lambda g: np.asarray(g)[where]]
    return fn


def _index_put_check(data, scope, fail) -> None:
    positions = data.get("positions")
    if not isinstance(positions, list) or not positions or not all(
            type(i) is int and 0 <= i < 2**31 for i in positions):
        raise fail(f"positions must be a non-empty list of whole numbers (0 or more), not {positions!r}")


def _index_put_of(m, s) -> Callable:
    x = m.tensor(s.args[0])
    if not x.shape or max(s.fields["positions"]) >= x.shape[0]:
        raise IndexError(f"a position of {list(s.fields['positions'])} is out of range for the first dimension "
                         f"of a tensor of shape {list(x.shape)}")
    return index_put(list(s.fields["positions"]), bool(s.fields["accumulate"]))


def _index_put_reference(m, s) -> None:
    """Without accumulate, a position named twice receives one of the rows written to it: which one is
    left undefined (torch: "undefined behavior"), so each of its elements may hold any of those rows'."""
    tensor = m.tensor(s.args[0])
    m.inplace(tensor, _index_put_of(m, s), s.args[1])
    if not s.fields["accumulate"]:
        m.written_in_any_order(tensor, _repeated_rows(list(s.fields["positions"]), m.tensor(s.args[1]).value,
                                                      tensor.shape))
    m.bind(s, tensor)


def _repeated_rows(positions: list[int], values: np.ndarray, shape: tuple[int, ...]) -> dict[int, tuple[float, ...]]:
    """The elements of a tensor of *shape* (flat index -> the values written there) that rows of *values*
    written at *positions* along the first dimension give different values."""
    flat = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    choices: dict[int, tuple[float, ...]] = {}
    for row in sorted({p for p in positions if positions.count(p) > 1}):
        written = np.asarray(values)[[k for k, p in enumerate(positions) if p == row]].reshape(positions.count(row), -1)
        for element, index in enumerate(flat[row].reshape(-1).tolist()):
            distinct = tuple(dict.fromkeys(written[:, element].tolist()))
            if len(distinct) > 1:
                choices[index] = distinct
    return choices


def _index_put_spell(w, s) -> None:
    f = s.fields
    index = w.a.tensor(w.literal(list(f["positions"])), "int64", False)
    w.emit(w.bind(s) + w.method(s.args[0], "index_put_", f"({index},)", s.args[1],
                                f"accumulate={bool(f['accumulate'])}"))


register(Op(
    "index_put_", "t.index_put_((index,), values, accumulate=False): the rows of t at index (along the first "
    "dimension) set to values, or with accumulate=True values added to them, a repeated position receiving "
    "the sum (without it, any of the rows written there); in place, tracked (paddle spells it alike).",
    args=("tensor", "tensor"), out="optional",
    fields={"positions": Field("numbers", required=True, doc="the positions along the first dimension (the "
                                                              "index tensor), whole numbers"),
            "accumulate": Field("bool", default=False, doc="add the values instead of writing them")},
    check=_index_put_check, run_reference=_index_put_reference, run_spell=_index_put_spell,
    fuzz="its index must lie within the drawn tensor's shape, which the fuzzer's draws do not keep",
))


# -- scatter_add_: src's elements added into t at the positions an index names along a dimension ----------


def scatter_added(axis: int, positions: Array) -> Callable:
    """``t.scatter_add_(dim, index, src)``: for each element of src, its position with the coordinate along
    *axis* replaced by index's element there receives it; a position named twice receives the sum."""
    def fn(x: Array, src: Array):
        if src.shape != positions.shape:
            raise ValueError(f"src of shape {list(src.shape)} and an index of shape {list(positions.shape)}: the "
                             "cases give the index src's shape")
        where = list(np.indices(positions.shape))
        where[axis] = positions
        if any(p.shape and (p.max() >= size) for p, size in zip(where, x.shape)) or len(where) != x.ndim:
            raise IndexError(f"an index of {positions.tolist()} along dimension {axis} does not fit a tensor of "
                             f"shape {list(x.shape)}")
        target = tuple(where)
        out = x.copy()
        np.add.at(out, target, src)
        return out, [lambda g: g, lambda g: np.asarray(g)[target]]
    return fn


def _scatter_add_check(data, scope, fail) -> None:
    _integer_dim(data, scope, fail)
    flat = np.asarray(data.get("positions"), dtype=object).reshape(-1)
    if not flat.size or not all(type(i) is int and 0 <= i < 2**31 for i in flat):
        raise fail(f"positions must be whole numbers (0 or more) in src's shape, not {data.get('positions')!r}")


def _scatter_add_of(m, s) -> Callable:
    x = m.tensor(s.args[0])
    return scatter_added(_axis(int(s.fields["dim"]), len(x.shape)), np.asarray(s.fields["positions"], dtype=np.int64))


def _scatter_add_spell(w, s) -> None:
    f = s.fields
    index = w.a.tensor(w.literal(np.asarray(f["positions"]).tolist()), "int64", False)
    w.emit(w.bind(s) + w.a.scatter_add_(s.args[0], str(f["dim"]), index, s.args[1]))


register(Op(
    "scatter_add_", "t.scatter_add_(dim, index, src): each element of src added into t where index says along "
    "dim, a position named twice receiving the sum; in place, tracked (paddle: t.put_along_axis_(index, src, "
    "dim, reduce='add')).", args=("tensor", "tensor"), out="optional",
    fields={"dim": Field("number", required=True, doc="the dimension the index gives positions along"),
            "positions": Field("numbers", required=True, doc="the index: whole numbers, in src's shape")},
    check=_scatter_add_check,
    run_reference=lambda m, s: (lambda fn: _in_place(lambda _: fn)(m, s))(_scatter_add_of(m, s)),
    run_spell=_scatter_add_spell,
    fuzz="its index must lie within the drawn tensor's shape, which the fuzzer's draws do not keep",
))


# -- integer in-place ops: gcd_ and the bitwise ones (paddle's TestDygraphInplaceGcd, ...Bitwise*) ---------

#: name -> what it computes on whole numbers
INTEGER_IN_PLACE = {"gcd_": np.gcd, "lcm_": np.lcm, "bitwise_and_": np.bitwise_and, "bitwise_or_": np.bitwise_or,
                    "bitwise_xor_": np.bitwise_xor}


def integer_op(fn: Callable) -> Callable:
    """On integer tensors (one or two), whose values the reference holds exactly as float64; no gradient (an
    integer tensor never requires grad)."""
    def op(*tensors: Array):
        if not all(np.all(t == np.round(t)) for t in tensors):
            raise ValueError("an integer op on values that are not whole numbers: make the tensors of an int dtype")
        value = fn(*(t.astype(np.int64) for t in tensors)).astype(np.float64)
        return value, [(lambda t: lambda g: np.zeros_like(t))(t) for t in tensors]
    return op


for _name, _fn in INTEGER_IN_PLACE.items():
    register(Op(
        _name, f"t.{_name}(other): {_fn.__name__.replace('_', ' ')} of the integer tensors t and other, written "
        "into t in place.", args=("tensor", "tensor"), out="optional",
        run_reference=(lambda fn: _in_place(lambda s: integer_op(fn)))(_fn),
        run_spell=(lambda name: lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], name, s.args[1])))(_name),
        fuzz="takes integer tensors; the fuzzer draws float ones",
    ))


register(Op(
    "bitwise_not_", "t.bitwise_not_(): every bit of the integer tensor t flipped (-t - 1), in place.",
    args=("tensor",), out="optional", run_reference=_in_place(lambda s: integer_op(np.invert)),
    run_spell=lambda w, s: w.emit(w.bind(s) + w.method(s.args[0], "bitwise_not_")),
    fuzz="takes integer tensors; the fuzzer draws float ones",
))
