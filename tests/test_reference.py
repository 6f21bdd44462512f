"""The reference: value semantics, and gradients checked against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.judge import reference as ref
from conformance.case.load import load_case
from conformance.ops.elementwise import BINARY, UNARY
from conformance.judge.reference import ReferenceFailure, run_reference

from .conftest import SEED


def numeric_grad(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central finite differences of a scalar function, float64."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(up) - f(down)) / (2 * h)
    return grad


X = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])


def vjp_of(fn, *values: np.ndarray) -> list[np.ndarray]:
    """The vector-Jacobian products of *fn* (value, vjps) for an all-ones output gradient."""
    value, vjps = fn(*values)
    ones = np.ones_like(np.asarray(value, dtype=np.float64))
    return [ref.unbroadcast(vjp(ones), v.shape) for vjp, v in zip(vjps, values)]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_finite_differences(name: str) -> None:
    fn = UNARY[name]
    x = X if fn.domain is None else fn.domain(X)  # log, sqrt, asin: inputs within the domain
    (got,) = vjp_of(fn, x)
    want = numeric_grad(lambda v: fn.forward(v).sum(), x)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients_match_finite_differences(name: str) -> None:
    a_value = np.abs(X) + 0.5
    b_value = np.array([1.5, -0.5, 2.0]) if name != "matmul" else np.array([[0.2], [-1.0], [0.4]])
    fn = BINARY[name].fn
    got_a, got_b = vjp_of(fn, a_value, b_value)

    def f(av, bv):
        return np.sum(fn(av, bv)[0])

    np.testing.assert_allclose(got_a, numeric_grad(lambda v: f(v, b_value), a_value), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_b, numeric_grad(lambda v: f(a_value, v), b_value), rtol=1e-6, atol=1e-7)


def test_inplace_on_a_leaf_gives_the_gradient_of_the_original_value(write_case) -> None:
    case = load_case(SEED / "leaf_sin_inplace.yaml")
    obs = run_reference(case).observations
    x0 = np.array([0.5, 1.0, 1.5])
    np.testing.assert_allclose(obs["value(x)"], np.sin(x0))
    np.testing.assert_allclose(obs["grad(x)"], np.cos(x0))


def test_write_through_a_view_updates_its_base(write_case) -> None:
    case = load_case(write_case("""
        id: view_write
        title: t
        steps:
          - {op: tensor, out: y, value: [1.0, 2.0, 3.0], requires_grad: true}
          - {op: mul, args: [y, 1.0], out: z}
          - {op: getitem, args: [z], index: "0:2", out: v}
          - {op: tensor, out: two, value: 2.0}
          - {op: mul_, args: [v, two]}
          - {op: sum, args: [z], out: loss}
          - {op: backward, args: [loss]}
          - {observe: value, of: z}
          - {observe: grad, of: y}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(z)"], [2.0, 4.0, 3.0])
    np.testing.assert_allclose(obs["grad(y)"], [2.0, 2.0, 1.0])


def test_untracked_write_does_not_change_earlier_gradients(write_case) -> None:
    case = load_case(write_case("""
        id: data_write
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
          - {op: mul, args: [x, x], out: y}
          - {op: data, args: [x], out: d}
          - {op: imul, args: [d, 3.0]}
          - {op: sum, args: [y], out: loss}
          - {op: backward, args: [loss]}
          - {observe: value, of: x}
          - {observe: grad, of: x}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(x)"], [3.0, 6.0])
    np.testing.assert_allclose(obs["grad(x)"], [2.0, 4.0])  # 2 * x as it was when y was computed


def test_assignment_and_detach_alias_while_clone_copies(write_case) -> None:
    case = load_case(write_case("""
        id: alias_vs_detach
        title: t
        steps:
          - {op: tensor, out: a, value: [1.0, 2.0]}
          - {op: assign, args: [a], out: same}
          - {op: detach, args: [a], out: shared}
          - {op: clone, args: [a], out: fresh}
          - {op: tensor, out: one, value: 1.0}
          - {op: add_, args: [a, one]}
          - {observe: value, of: same}
          - {observe: value, of: shared}
          - {observe: value, of: fresh}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(same)"], [2.0, 3.0])
    np.testing.assert_allclose(obs["value(shared)"], [2.0, 3.0])  # detach() shares storage
    np.testing.assert_allclose(obs["value(fresh)"], [1.0, 2.0])


def test_clone_grad_flow_matches_the_seed_article() -> None:
    obs = run_reference(load_case(SEED / "clone_grad_flow.yaml")).observations
    assert float(obs["a_grad_after_y"]) == pytest.approx(2.0)
    assert obs["clone_grad"] is None
    assert float(obs["a_grad_after_z"]) == pytest.approx(7.0)


def _elman(params: dict, x: float, h: float) -> float:
    return np.tanh(params["weight_ih"] * x + params["bias_ih"] + params["weight_hh"] * h + params["bias_hh"])


def test_rnn_hidden_reuse_gradients_match_finite_differences_over_the_history() -> None:
    """Step i's loss depends on every earlier step, each at the parameters of its own time.

    An independent NumPy re-implementation: record the parameter snapshot each step
    used, then differentiate loss_i with respect to a perturbation added to the
    parameter in every step that loss_i reaches back to.
    """
    case = load_case(SEED / "rnn_hidden_reuse.yaml")
    obs = run_reference(case).observations
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    params = {"weight_ih": 0.5, "weight_hh": -0.3, "bias_ih": 0.1, "bias_hh": 0.2}
    xs, ys, lr = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0], 0.01
    snapshots: list[dict] = []

    def loss_at(i: int, name: str, delta: float) -> float:
        h = 0.0
        for k in range(i + 1):
            p = dict(snapshots[k])
            p[name] += delta
            h = _elman(p, xs[k], h)
        return (h - ys[i]) ** 2

    for i in range(5):
        snapshots.append(dict(params))
        grads = {}
        for name in names:
            grads[name] = (loss_at(i, name, 1e-6) - loss_at(i, name, -1e-6)) / 2e-6
            np.testing.assert_allclose(np.ravel(obs[f"grad(rnn.{name})[{i}]"]), [grads[name]],
                                       rtol=1e-6, err_msg=f"{name} at step {i}")
        np.testing.assert_allclose(float(np.ravel(obs[f"value(loss)[{i}]"])[0]), loss_at(i, names[0], 0.0))
        params = {name: params[name] - lr * grads[name] for name in names}


def test_iadd_after_relu_reference_gradient_matches_finite_differences() -> None:
    obs = run_reference(load_case(SEED / "iadd_after_relu.yaml")).observations
    inp = np.array([[1.0, -2.0], [0.5, 3.0]])
    feature = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    weight = np.array([[0.5, -0.4], [0.3, 0.8], [-0.6, 0.2]])
    bias = np.array([0.1, -0.2, 0.05])

    def loss(w, b):
        x = np.maximum(inp @ w.T + b, 0.0) + feature
        return (x * x).sum()

    np.testing.assert_allclose(obs["grad(fc.weight)"], numeric_grad(lambda w: loss(w, bias), weight), rtol=1e-7)
    np.testing.assert_allclose(obs["grad(fc.bias)"], numeric_grad(lambda b: loss(weight, b), bias), rtol=1e-7)


def test_an_ill_posed_case_is_a_reference_failure(write_case) -> None:
    case = load_case(write_case("""
        id: no_grad_backward
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0]}
          - {op: sum, args: [x], out: s}
          - {op: backward, args: [s]}
          - {observe: value, of: x}
    """))
    with pytest.raises(ReferenceFailure, match="does not require grad"):
        run_reference(case)


def test_requires_grad_on_a_tensor_that_already_requires_grad_keeps_its_graph(write_case) -> None:
    case = load_case(write_case("""
        id: rg_nonleaf
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
          - {op: mul, args: [x, 2.0], out: y}
          - {op: requires_grad_, args: [y]}
          - {op: sum, args: [y], out: loss}
          - {op: backward, args: [loss]}
          - {observe: grad, of: x}
    """))
    np.testing.assert_allclose(run_reference(case).observations["grad(x)"], [2.0, 2.0])


def test_literals_are_rounded_to_their_declared_dtype(write_case) -> None:
    case = load_case(write_case("""
        id: f32_literal
        title: t
        steps:
          - {op: tensor, out: x, value: [10000.001]}
          - {op: sub, args: [x, 10000.0], out: y}
          - {observe: value, of: y}
    """))
    y = run_reference(case).observations["value(y)"]
    assert y[0] == np.float64(np.float32(10000.001)) - 10000.0  # float32 input, exact float64 arithmetic


def test_pow_gradient_in_the_exponent_is_undefined_for_a_negative_base() -> None:
    _, grad_b = vjp_of(BINARY["pow"].fn, np.array([-2.0, 3.0]), np.array([2.0, 2.0]))
    assert np.isnan(grad_b[0]) and grad_b[1] == pytest.approx(9 * np.log(3.0))


def test_conversions_to_what_a_tensor_is_return_it_and_copy_is_tracked(write_case) -> None:
    case = load_case(write_case("""
        id: conversions_same_or_copy
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
          - {op: exp, args: [x], out: y}
          - {op: float, args: [y], out: same}
          - {op: to, args: [y], dtype: float32, copy: true, out: copied}
          - {op: tensor, out: two, value: 2.0}
          - {op: mul_, args: [copied, two]}
          - {observe: value, of: y, name: y_after_copy_write}
          - {op: mul_, args: [same, two]}
          - {observe: value, of: y, name: y_after_same_write}
          - {op: add, args: [copied, same], out: both}
          - {op: sum, args: [both], out: loss}
          - {op: backward, args: [loss]}
          - {observe: grad, of: x}
    """))
    obs = run_reference(case).observations
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(obs["y_after_copy_write"], e)  # copy=True: storage of its own
    np.testing.assert_allclose(obs["y_after_same_write"], 2 * e)  # float() of a float32 tensor: y itself
    np.testing.assert_allclose(obs["grad(x)"], 4 * e)  # 2 e through each path, as exp recorded it


def test_zero_copy_interop_aliases_and_full_fills(write_case) -> None:
    case = load_case(write_case("""
        id: interop_storage
        title: t
        steps:
          - {op: array, out: a, value: [1.0, 2.0], dtype: float32}
          - {op: from_dlpack, args: [a], out: shared}
          - {op: construct_tensor, args: [a], out: copied}
          - {op: array_from_dlpack, args: [shared], out: back}
          - {op: setitem, args: [back, 5.0], index: 0}
          - {observe: value, of: a}
          - {observe: value, of: copied}
          - {op: full, shape: [2, 3], value: -1.5, out: f}
          - {observe: value, of: f}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(a)"], [5.0, 2.0])  # array -> DLPack tensor -> DLPack array
    np.testing.assert_allclose(obs["value(copied)"], [1.0, 2.0])  # Tensor(a) without zero_copy copies
    np.testing.assert_allclose(obs["value(f)"], np.full((2, 3), -1.5))


# -- writes that are not element-wise math: copy_, set_value, transpose_, resize_, set_ ----------

_X = np.array([[0.5, -1.0, 1.5], [2.0, -0.5, 0.25]])
_S = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.5]])


def _grads(write_case, text: str) -> dict:
    return run_reference(load_case(write_case(text))).observations


def test_copy_is_a_tracked_write_whose_gradient_flows_to_the_source(write_case) -> None:
    obs = _grads(write_case, f"""
        id: copy_grad
        title: t
        steps:
          - {{op: tensor, out: x, value: {_X.tolist()}, requires_grad: true}}
          - {{op: tensor, out: s, value: {_S[0].tolist()}, requires_grad: true}}
          - {{op: mul, args: [x, 2.0], out: c}}
          - {{op: copy_, args: [c, s]}}
          - {{op: mul, args: [c, x], out: p}}
          - {{op: sum, args: [p], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: value, of: c}}
          - {{observe: grad, of: x}}
          - {{observe: grad, of: s}}
    """)

    def loss(x, s):  # c takes s's values (broadcast over rows), then meets x again
        return (np.broadcast_to(s, x.shape) * x).sum()

    np.testing.assert_allclose(obs["value(c)"], np.broadcast_to(_S[0], _X.shape))
    np.testing.assert_allclose(obs["grad(x)"], numeric_grad(lambda v: loss(v, _S[0]), _X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(obs["grad(s)"], numeric_grad(lambda v: loss(_X, v), _S[0]), rtol=1e-6, atol=1e-8)


def test_transpose_in_place_differentiates_like_numpy(write_case) -> None:
    obs = _grads(write_case, f"""
        id: transpose_grad
        title: t
        steps:
          - {{op: tensor, out: x, value: {_X.tolist()}, requires_grad: true}}
          - {{op: tensor, out: w, value: {_S.T.tolist()}}}
          - {{op: sin, args: [x], out: c}}
          - {{op: transpose_, args: [c], dims: [1, 0]}}
          - {{op: mul, args: [c, w], out: p}}
          - {{op: sum, args: [p], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: value, of: c}}
          - {{observe: grad, of: x}}
    """)
    np.testing.assert_allclose(obs["value(c)"], np.sin(_X).T)
    want = numeric_grad(lambda v: (np.sin(v).T * _S.T).sum(), _X)
    np.testing.assert_allclose(obs["grad(x)"], want, rtol=1e-6, atol=1e-8)


def test_resize_keeps_the_first_elements_and_differentiates_like_numpy(write_case) -> None:
    obs = _grads(write_case, f"""
        id: resize_grad
        title: t
        steps:
          - {{op: tensor, out: x, value: {_X.tolist()}, requires_grad: true}}
          - {{op: tensor, out: w, value: [[1.0, 2.0], [3.0, 4.0]]}}
          - {{op: mul, args: [x, x], out: c}}
          - {{op: resize_, args: [c], shape: [2, 2]}}
          - {{op: mul, args: [c, w], out: p}}
          - {{op: sum, args: [p], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: value, of: c}}
          - {{observe: grad, of: x}}
    """)
    w = np.array([[1.0, 2.0], [3.0, 4.0]])

    def loss(x):
        return ((x * x).reshape(-1)[:4].reshape(2, 2) * w).sum()

    np.testing.assert_allclose(obs["value(c)"], (_X * _X).reshape(-1)[:4].reshape(2, 2))
    np.testing.assert_allclose(obs["grad(x)"], numeric_grad(loss, _X), rtol=1e-6, atol=1e-8)


def test_set_shares_the_source_storage_and_takes_its_gradient(write_case) -> None:
    obs = _grads(write_case, f"""
        id: set_grad
        title: t
        steps:
          - {{op: tensor, out: x, value: {_X[0].tolist()}, requires_grad: true}}
          - {{op: tensor, out: s, value: {_S[0].tolist()}, requires_grad: true}}
          - {{op: mul, args: [x, 3.0], out: c}}
          - {{op: set_, args: [c, s]}}
          - {{op: mul, args: [c, c], out: p}}
          - {{op: sum, args: [p], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: grad, of: x}}
          - {{observe: grad, of: s}}
          - op: no_grad
            steps:
              - {{op: mul_, args: [c, 2.0]}}
          - {{observe: value, of: s}}
    """)
    np.testing.assert_allclose(obs["grad(x)"], np.zeros(3))
    np.testing.assert_allclose(obs["grad(s)"], numeric_grad(lambda v: (v * v).sum(), _S[0]), rtol=1e-6)
    np.testing.assert_allclose(obs["value(s)"], 2 * _S[0])  # a write through c lands in s's storage


def test_set_value_is_an_untracked_write(write_case) -> None:
    obs = _grads(write_case, """
        id: set_value_untracked
        title: t
        steps:
          - {op: tensor, out: x, value: [0.5, -1.0, 1.5], requires_grad: true}
          - {op: exp, args: [x], out: y}
          - {op: sum, args: [y], out: loss}
          - {op: array, out: ones, value: [1.0, 1.0, 1.0]}
          - {op: set_value, args: [y, ones]}
          - {op: backward, args: [loss]}
          - {observe: value, of: y}
          - {observe: grad, of: x}
    """)
    np.testing.assert_allclose(obs["value(y)"], np.ones(3))
    np.testing.assert_allclose(obs["grad(x)"], np.exp([0.5, -1.0, 1.5]), rtol=1e-6)  # exp as it ran


@pytest.mark.parametrize("op, step, want", [
    ("copy_", "{op: copy_, args: [x, src]}", lambda x, src: np.zeros(4)),
    ("set_", "{op: set_, args: [x, src]}", lambda x, src: np.zeros(4)),
    ("transpose_", "{op: transpose_, args: [x], dims: [0, 1]}", lambda x, src: 2 * x),
    ("resize_", "{op: resize_, args: [x], shape: [3]}", lambda x, src: np.where(np.arange(4) < 3, 2 * x, 0.0)),
])
def test_a_leaf_written_in_place_gets_the_gradient_of_its_original_value(write_case, op, step, want) -> None:
    """Reference rule 7, for the writes that change a leaf's values, shape or storage: the loss
    sum(x * x) after the write, differentiated with respect to the value x had before it."""
    x = np.array([0.5, -1.0, 1.5, 2.0])
    src = np.array([1.0, 2.0, 3.0, 4.0])
    obs = _grads(write_case, f"""
        id: leaf_{op.rstrip('_')}
        title: t
        steps:
          - {{op: tensor, out: x, value: {x.reshape(2, 2).tolist()}, requires_grad: true}}
          - {{op: tensor, out: src, value: {src.reshape(2, 2).tolist()}}}
          - {step}
          - {{op: mul, args: [x, x], out: sq}}
          - {{op: sum, args: [sq], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: grad, of: x}}
    """)
    got = obs["grad(x)"]
    assert got.shape == (2, 2)  # the leaf's gradient has the shape the leaf had
    np.testing.assert_allclose(got.reshape(-1), want(x, src))


def test_resize_beyond_the_tensor_is_not_modelled(write_case) -> None:
    case = load_case(write_case("""
        id: resize_grow
        title: t
        steps:
          - {op: tensor, out: x, value: [1.0, 2.0]}
          - {op: resize_, args: [x], shape: [3]}
          - {observe: value, of: x}
    """))
    with pytest.raises(ReferenceFailure, match="undetermined"):
        run_reference(case)


# -- views that reshape, split and broadcast: a write through them reaches the base ---------

_W = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def _doubled_through_view(x: np.ndarray, view) -> np.ndarray:
    """An independent NumPy program: double the elements a view takes, by index on a copy."""
    x = x.copy()
    flat = x.reshape(-1)
    flat[np.unique(view(np.arange(x.size).reshape(x.shape)))] *= 2.0
    return x


VIEW_WRITES = {
    # op step, the NumPy elements it writes, whether the loss reads the view (else the base)
    "unbind": ("{op: unbind, args: [x], dim: 1, out: [v, other, third]}", lambda a: a[:, 0], False),
    "split": ("{op: split, args: [x], sections: [1, 2], dim: 1, out: [v, other]}", lambda a: a[:, 0:1], False),
    "reshape": ("{op: reshape, args: [x], shape: [3, 2], out: v}", lambda a: a, False),
    "view": ("{op: view, args: [x], shape: [6], out: v}", lambda a: a, False),
    "expand": ("{op: expand, args: [top], shape: [2, 3], out: v}", lambda a: a[0:1], True),
}


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_a_write_through_a_view_op_differentiates_like_numpy(write_case, name: str) -> None:
    step, takes, loss_of_view = VIEW_WRITES[name]
    read = "v" if loss_of_view else "x"
    case = load_case(write_case(f"""
        id: view_op_{name}
        title: t
        steps:
          - {{op: tensor, out: w, value: {_W.tolist()}, requires_grad: true}}
          - {{op: mul, args: [w, 2.0], out: x}}
          - {{op: getitem, args: [x], index: "0:1", out: top}}
          - {step}
          - {{op: mul_, args: [v, 2.0]}}
          - {{op: mul, args: [{read}, {read}], out: sq}}
          - {{op: sum, args: [sq], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{observe: value, of: x}}
          - {{observe: grad, of: w}}
    """))
    obs = run_reference(case).observations

    def forward(w: np.ndarray) -> np.ndarray:
        return _doubled_through_view(2.0 * w, takes)

    def loss(w: np.ndarray) -> float:
        x = forward(w)
        seen = np.broadcast_to(x[0:1], (2, 3)) if loss_of_view else x
        return float((seen * seen).sum())

    np.testing.assert_allclose(obs["value(x)"], forward(_W))
    np.testing.assert_allclose(obs["grad(w)"], numeric_grad(loss, _W), rtol=1e-7, atol=1e-6)


def test_unbind_and_split_views_alias_their_base(write_case) -> None:
    case = load_case(write_case("""
        id: multi_views
        title: t
        steps:
          - {op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}
          - {op: unbind, args: [x], dim: 0, out: [r0, r1]}
          - {op: split, args: [x], sections: [2, 1], dim: -1, out: [left, right]}
          - {op: mul_, args: [x, 10.0]}
          - {observe: value, of: r1}
          - {observe: value, of: right}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(r1)"], [40.0, 50.0, 60.0])
    np.testing.assert_allclose(obs["value(right)"], [[30.0], [60.0]])


def test_an_overlapping_write_lands_once_per_memory_location(write_case) -> None:
    case = load_case(write_case("""
        id: expand_write
        title: t
        steps:
          - {op: tensor, out: x, value: [[1.0, 2.0]]}
          - {op: expand, args: [x], shape: [3, -1], out: e}
          - {op: add_, args: [e, 1.0]}
          - {observe: value, of: x}
          - {observe: value, of: e}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(x)"], [[2.0, 3.0]])  # once, not three times
    np.testing.assert_allclose(obs["value(e)"], [[2.0, 3.0]] * 3)


def test_an_overlapping_write_of_different_values_is_ill_posed(write_case) -> None:
    case = load_case(write_case("""
        id: expand_conflict
        title: t
        steps:
          - {op: tensor, out: x, value: [[1.0, 2.0]]}
          - {op: tensor, out: rows, value: [[1.0, 1.0], [2.0, 2.0]]}
          - {op: expand, args: [x], shape: [2, 2], out: e}
          - {op: add_, args: [e, rows]}
          - {observe: value, of: x}
    """))
    with pytest.raises(ReferenceFailure, match="overlaps itself"):
        run_reference(case)


def test_reshape_of_strides_no_view_has_is_a_copy_and_view_of_them_is_refused(write_case) -> None:
    """torch documents reshape as "a view of input when possible, otherwise a copy", and view as refusing
    strides no view of the shape has (ATen's computeStride decides both)."""
    program = """
        id: {op}_of_transposed
        title: t
        steps:
          - {{op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}}
          - {{op: transpose, args: [x], dims: [0, 1], out: xt}}
          - {{op: {op}, args: [xt], shape: [6], out: flat}}
          - {{op: mul_, args: [flat, 10.0]}}
          - {{observe: value, of: flat}}
          - {{observe: value, of: x}}
    """
    obs = run_reference(load_case(write_case(program.format(op="reshape")))).observations
    np.testing.assert_array_equal(obs["value(flat)"], [10.0, 40.0, 20.0, 50.0, 30.0, 60.0])
    np.testing.assert_array_equal(obs["value(x)"], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # a copy: x untouched
    with pytest.raises(ReferenceFailure, match="refuse"):
        run_reference(load_case(write_case(program.format(op="view"))))


def test_a_view_of_strided_elements_that_a_view_can_have_is_a_view(write_case) -> None:
    case = load_case(write_case("""
        id: view_of_columns
        title: a column slice (not contiguous) viewed with a dimension of size 1 added
        steps:
          - {op: tensor, out: x, value: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}
          - {op: getitem, args: [x], index: ":, 0:2", out: cols}
          - {op: view, args: [cols], shape: [2, 2, 1], out: v}
          - {op: mul_, args: [v, 10.0]}
          - {observe: value, of: x}
    """))
    np.testing.assert_array_equal(run_reference(case).observations["value(x)"], [[10.0, 20.0, 3.0], [40.0, 50.0, 6.0]])


# -- optimizers and gradients held in names -------------------------------------------------

OPTIMIZER = SEED.parent / "optimizer"
GRADS = SEED.parent / "grads"


def test_a_held_gradient_is_the_gradient_storage(write_case) -> None:
    case = load_case(write_case("""
        id: held_grad_storage
        title: t
        steps:
          - {op: tensor, out: w, value: [1.0, -2.0], requires_grad: true}
          - {op: mul, args: [w, w], out: sq}
          - {op: sum, args: [sq], out: l1}
          - {op: backward, args: [l1]}
          - {op: grad, args: [w], out: g}
          - op: no_grad
            steps:
              - {op: mul_, args: [g, 0.5]}
          - {observe: grad, of: w, name: scaled_through_g}
          - {op: mul, args: [w, 3.0], out: tw}
          - {op: sum, args: [tw], out: l2}
          - {op: backward, args: [l2]}
          - {observe: value, of: g, name: g_accumulated}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["scaled_through_g"], [1.0, -2.0])  # 2w halved, written through g
    np.testing.assert_allclose(obs["g_accumulated"], [4.0, 1.0])  # backward adds 3 into g's storage


@pytest.mark.parametrize("set_to, grad_after, held_after", [
    ("zero", [0.0, 0.0], [0.0, 0.0]),  # zeroed in place: the held tensor reads zeros
    ("none", None, [2.0, -4.0]),  # released: the leaf has no gradient, the held tensor keeps its values
])
def test_zero_grad_settings_zero_in_place_or_release(write_case, set_to, grad_after, held_after) -> None:
    case = load_case(write_case(f"""
        id: zero_grad_{set_to}
        title: t
        steps:
          - {{op: tensor, out: w, value: [1.0, -2.0], requires_grad: true}}
          - {{op: sgd, args: [w], lr: 0.1, out: opt}}
          - {{op: mul, args: [w, w], out: sq}}
          - {{op: sum, args: [sq], out: loss}}
          - {{op: backward, args: [loss]}}
          - {{op: grad, args: [w], out: g}}
          - {{op: zero_grad, args: [opt], set_to: {set_to}}}
          - {{observe: grad, of: w}}
          - {{observe: value, of: g}}
    """))
    obs = run_reference(case).observations
    if grad_after is None:
        assert obs["grad(w)"] is None
    else:
        np.testing.assert_allclose(obs["grad(w)"], grad_after)
    np.testing.assert_allclose(obs["value(g)"], held_after)


def test_an_optimizer_over_a_tensor_and_a_bound_parameter_updates_in_place(write_case) -> None:
    case = load_case(write_case("""
        id: sgd_tensor_and_parameter
        title: t
        steps:
          - {op: tensor, out: w, value: [1.0, -2.0], requires_grad: true}
          - {op: linear, out: fc, weight: [[0.5, -1.0]], bias: [0.25]}
          - {op: parameter, args: [fc], name: bias, out: b}
          - {op: sgd, args: [w, fc], lr: 0.5, out: opt}
          - {op: call, args: [fc, w], out: y}
          - {op: sum, args: [y], out: loss}
          - {op: backward, args: [loss]}
          - {op: step, args: [opt]}
          - {observe: value, of: w}
          - {observe: value, of: b}
    """))
    obs = run_reference(case).observations
    np.testing.assert_allclose(obs["value(w)"], [1.0 - 0.5 * 0.5, -2.0 + 0.5 * 1.0])  # dloss/dw = W
    np.testing.assert_allclose(obs["value(b)"], [0.25 - 0.5])  # the bound name is fc.bias itself


def test_an_optimizer_over_one_tensor_twice_is_not_modelled(write_case) -> None:
    case = load_case(write_case("""
        id: sgd_twice
        title: t
        steps:
          - {op: linear, out: fc, weight: [[0.5]], bias: [0.25]}
          - {op: parameter, args: [fc], name: bias, out: b}
          - {op: sgd, args: [fc, b], lr: 0.5, out: opt}
          - {observe: value, of: b}
    """))
    with pytest.raises(ReferenceFailure, match="twice"):
        run_reference(case)


def _f32(value) -> np.ndarray:
    """A literal as the case holds it: rounded to float32, computed on in float64."""
    return np.array(value, dtype=np.float32).astype(np.float64)


def _two_layer_loss(x, y, w1, w2) -> float:
    out = np.tanh(x @ w1) @ w2
    return float(np.mean((out - y) ** 2))


def test_steps_on_one_forward_keep_the_gradient_of_the_forwards_values() -> None:
    """sgd_tensors_steps_on_one_forward: every backward walks the one forward, so every iteration's
    gradient is the finite difference at the initial tensors, and the steps add it up."""
    obs = run_reference(load_case(OPTIMIZER / "sgd_tensors_steps_on_one_forward.yaml")).observations
    x, y = _f32([[1.0, -0.5], [0.3, 0.8]]), _f32([[0.5], [-0.2]])
    w1, w2 = _f32([[0.4, -0.6], [0.7, 0.2]]), _f32([[0.9], [-0.3]])
    g1 = numeric_grad(lambda v: _two_layer_loss(x, y, v, w2), w1)
    g2 = numeric_grad(lambda v: _two_layer_loss(x, y, w1, v), w2)
    for i in range(3):
        np.testing.assert_allclose(obs[f"grad(w1)[{i}]"], g1, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(obs[f"grad(w2)[{i}]"], g2, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(obs["value(w1)"], w1 - 3 * 0.5 * g1, rtol=1e-6)


def test_a_second_loss_after_a_step_has_the_gradient_at_the_forwards_parameters() -> None:
    """stacked_linear_step_between_backwards: loss_b's gradient at the parameters the forward read."""
    obs = run_reference(load_case(OPTIMIZER / "stacked_linear_step_between_backwards.yaml")).observations
    x = _f32([[1.0, -2.0], [0.5, 3.0]])
    w1, b1 = _f32([[0.5, -0.4], [0.3, 0.8], [-0.6, 0.2]]), _f32([0.1, -0.2, 0.05])
    w2, b2 = _f32([[0.7, -0.5, 0.4]]), _f32([0.1])

    def loss_b(w1_, b1_) -> float:
        return float(np.mean(np.tanh(x @ w1_.T + b1_) @ w2.T + b2))

    np.testing.assert_allclose(obs["grad(fc1.weight)"], numeric_grad(lambda v: loss_b(v, b1), w1), rtol=1e-6)
    np.testing.assert_allclose(obs["grad(fc1.bias)"], numeric_grad(lambda v: loss_b(w1, v), b1), rtol=1e-6)


def test_a_penalty_reused_across_steps_differentiates_at_the_weight_it_was_computed_from() -> None:
    """parameter_penalty_reused_across_steps, re-implemented: iteration i's gradient is the fit's at
    the current weight plus the penalty's at the initial weight (0.2 * w0)."""
    obs = run_reference(load_case(GRADS / "parameter_penalty_reused_across_steps.yaml")).observations
    x, y = _f32([[1.0, 2.0], [0.5, -1.0]]), _f32([[0.3], [-0.2]])
    w, b = _f32([[0.5, -0.4]]), _f32([0.1])
    w0 = w.copy()

    def fit(w_, b_) -> float:
        return float(np.mean((x @ w_.T + b_ - y) ** 2))

    for i in range(3):
        gw = numeric_grad(lambda v: fit(v, b), w) + numeric_grad(lambda v: 0.1 * float(np.sum(v * v)), w0)
        gb = numeric_grad(lambda v: fit(w, v), b)
        np.testing.assert_allclose(obs[f"grad(fc.weight)[{i}]"], gw, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(obs[f"grad(fc.bias)[{i}]"], gb, rtol=1e-6, atol=1e-9)
        w, b = w - 0.5 * gw, b - 0.5 * gb
    np.testing.assert_allclose(obs["value(fc.weight)"], w, rtol=1e-6)
