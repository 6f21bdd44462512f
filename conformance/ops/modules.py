"""Modules, losses and optimizers: Linear, an Elman RNN, activation modules, SGD; and the
tensors a training loop holds in names: a parameter (``w = fc.weight``) and a gradient
(``g = w.grad``).

Parameters are given in a neutral layout (a Linear weight is out x in); an
adapter whose framework stores them otherwise says so when it reads them.  A held
gradient shares the leaf's gradient storage (``docs/reference.md``, "Gradients held in
a name").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from conformance.ops._op import Field, Op
from conformance.ops._registry import register
from conformance.ops.elementwise import UNARY, Unary

_VALUE = Field("numbers", required=True)


def _linear_fn(x, w, b=None):
    y = x @ w.T + (0.0 if b is None else b)
    def weight_grad(g):
        g = np.broadcast_to(g, y.shape)
        return g.reshape(-1, w.shape[0]).T @ np.broadcast_to(x, y.shape[:-1] + x.shape[-1:]).reshape(-1, w.shape[1])

    return y, [lambda g: np.broadcast_to(g, y.shape) @ w, weight_grad, lambda g: g]


def _linear_forward(m, module, inputs) -> list:
    p = module.params
    params = [p["weight"]] + ([p["bias"]] if "bias" in p else [])
    return [m.new(_linear_fn, inputs[0], *params)]

#: The kernel an RNN module's tanh stands for: a device may compute it approximately (``Machine.in_kernel``).
RNN_TANH = "rnn_tanh"


def _rnn_forward(m, module, inputs) -> list:
    """A one-layer Elman RNN (tanh), time-major: x is (T, B, in), h0 is (1, B, H)."""
    from conformance.judge.model import Tensor

    p = module.params
    x = inputs[0]
    if len(inputs) > 1:
        h = inputs[1].view(lambda a: a[0])
    else:
        h = Tensor.fresh(np.zeros((x.shape[1], p["weight_hh"].shape[0])))
    outputs = []
    for t in range(x.shape[0]):
        xt = x.view(lambda a, t=t: a[t])
        pre_x = m.new(_linear_fn, xt, p["weight_ih"], p["bias_ih"])
        pre_h = m.new(_linear_fn, h, p["weight_hh"], p["bias_hh"])
        pre = m.new(lambda a, b: (a + b, [lambda g: g, lambda g: g]), pre_x, pre_h)
        with m.in_kernel(RNN_TANH):  # cuDNN's tanh is approximate (TorchAdapter.kernel_precision)
            h = m.new(UNARY["tanh"], pre)
        outputs.append(h)
    output = m.new(lambda *hs: (np.stack(hs), [(lambda i: lambda g: g[i])(i) for i in range(len(hs))]),
                   *outputs)
    h_n = m.new(lambda v: (v[None], [lambda g: g[0]]), h)
    return [output, h_n]


#: The activation modules: element-wise functions of the table, and RReLU, whose programs pass lower ==
#: upper == 0.25 (``Adapter.activation_modules``): a leaky ReLU of slope 0.25 in training and eval mode alike.
ACTIVATIONS: dict[str, Unary] = {
    **{name: UNARY[name] for name in ("relu", "sigmoid", "tanh", "elu", "selu", "celu", "hardtanh", "leaky_relu")},
    "rrelu": Unary("rrelu", lambda x: np.where(x > 0, x, 0.25 * x), lambda x, y: np.where(x > 0, 1.0, 0.25),
                   saves="input"),
}


def _activation_forward(m, module, inputs) -> list:
    fn = ACTIVATIONS[module.options["kind"]]
    if module.options.get("inplace"):
        m.inplace(inputs[0], fn)
        return [inputs[0]]
    return [m.new(fn, inputs[0])]


#: The eps both frameworks' batch norm uses by default.
BATCH_NORM_EPS = 1e-5


def _batch_norm_eval_fn(x, weight, bias, mean, var):
    """Batch norm in eval mode over (N, C): the running statistics normalise; they are buffers, with no
    gradient, and backward reads them as the forward used them."""
    scale = 1.0 / np.sqrt(var + BATCH_NORM_EPS)
    normalised = (x - mean) * scale
    y = normalised * weight + bias
    return y, [lambda g: g * weight * scale, lambda g: (g * normalised).sum(axis=0), lambda g: g.sum(axis=0),
               lambda g: np.zeros_like(mean), lambda g: np.zeros_like(var)]


def _batch_norm_train_fn(x, weight, bias):
    """Batch norm in training mode over (N, C): the batch's own mean and biased variance normalise, and
    the gradient of x goes through them too."""
    n = x.shape[0]
    mean, var = x.mean(axis=0), x.var(axis=0)
    scale = 1.0 / np.sqrt(var + BATCH_NORM_EPS)
    normalised = (x - mean) * scale
    y = normalised * weight + bias

    def to_x(g):
        gn = g * weight
        return scale / n * (n * gn - gn.sum(axis=0) - normalised * (gn * normalised).sum(axis=0))
    return y, [to_x, lambda g: (g * normalised).sum(axis=0), lambda g: g.sum(axis=0)]


def _batch_norm_forward(m, module, inputs) -> list:
    p = module.params
    if not module.options.get("training"):
        return [m.new(_batch_norm_eval_fn, inputs[0], p["weight"], p["bias"], p["running_mean"], p["running_var"])]
    x = m.tensor(inputs[0]) if isinstance(inputs[0], str) else inputs[0]
    batch = x.value
    if batch.shape[0] < 2:
        raise ValueError("batch norm in training mode needs more than one value per channel (the frameworks "
                         "refuse a batch of one)")
    momentum = float(module.options.get("momentum", 0.1))
    # torch documents the running variance as the batch's unbiased variance (the normalisation uses the
    # biased one), each statistic updated in place as (1 - momentum) * running + momentum * batch
    for name, statistic in (("running_mean", batch.mean(axis=0)), ("running_var", batch.var(axis=0, ddof=1))):
        running = p[name]
        m.write(running, (1 - momentum) * running.value + momentum * statistic, None)
    return [m.new(_batch_norm_train_fn, inputs[0], p["weight"], p["bias"])]


@dataclass(frozen=True)
class ModuleKind:
    """A kind of module: its parameters (neutral layout), how many names a call binds, its forward, and what
    a call's backward reads (``Op.saves``; an activation's is its function's).  ``buffers``: the
    parameters that are state, not trained (a batch norm's running statistics): they require no grad."""

    name: str
    parameters: tuple[str, ...]
    outputs: int
    forward: Callable[[Any, Any, list], list]
    saves: tuple[str, ...] = ()
    buffers: tuple[str, ...] = ()


MODULE_KINDS: dict[str, ModuleKind] = {k.name: k for k in (
    ModuleKind("linear", ("weight", "bias"), 1, _linear_forward, saves=("input",)),
    ModuleKind("rnn", ("weight_ih", "weight_hh", "bias_ih", "bias_hh"), 2, _rnn_forward, saves=("inputs",)),
    ModuleKind("activation", (), 1, _activation_forward),
    ModuleKind("batch_norm", ("weight", "bias", "running_mean", "running_var"), 1, _batch_norm_forward,
               saves=("input",), buffers=("running_mean", "running_var")),
)}


def _module_reference(m, s) -> None:
    from conformance.judge.model import Module, Node, Tensor
    from conformance.ops.tensors import literal

    kind = MODULE_KINDS[s.op]
    module = Module(kind.name, options={k: v for k, v in s.fields.items() if k not in kind.parameters})
    for name in kind.parameters:
        if s.fields.get(name) is not None:
            param = Tensor.fresh(literal(s.fields[name], "float32"))
            if name not in kind.buffers:
                param._node = Node(param.shape, leaf=param, requires_grad=True)
            module.params[name] = param
    m.bind(s, module)


def _call_reference(m, s) -> None:
    module = m.get(s.args[0])
    inputs = [m.tensor(name) for name in s.args[1:]]
    hooks = module.options.get("hooks", ())
    for when, seen in hooks:  # a hook copies the first input as it sees it: before the forward, or after
        if when == "pre":
            m.write(seen, inputs[0].value, None)
    outputs = MODULE_KINDS[module.kind].forward(m, module, inputs)
    for when, seen in hooks:
        if when == "post":
            m.write(seen, inputs[0].value, None)
    m.bind(s, *outputs)


def _call_check(data: Mapping[str, Any], scope: Mapping[str, str], fail: Callable[[str], Exception]) -> None:
    outputs = data.get("out")
    count = len(outputs) if isinstance(outputs, list) else 1
    kind = scope.get(data["args"][0] if isinstance(data.get("args"), list) else data.get("args"))
    wanted = MODULE_KINDS[kind].outputs if kind in MODULE_KINDS else 1
    if count != wanted:
        raise fail(f"calling a {kind} binds {wanted} name(s), got {outputs!r}")


# -- how the fuzzer draws modules and their calls (Op.fuzz) -----------------------------------
# Parameters are float32 (as a user makes them), so modules appear in float32 programs only.


def _linear_fuzz(d):
    if d.dtype != "float32":
        return None
    fan_in, fan_out = d.size(), d.size()
    return {"weight": d.values((fan_out, fan_in)), "bias": d.values((fan_out,)) if d.boolean() else None}


def _rnn_fuzz(d):
    if d.dtype != "float32":
        return None
    fan_in, hidden = d.size(), d.size()
    return {"weight_ih": d.values((hidden, fan_in)), "weight_hh": d.values((hidden, hidden)),
            "bias_ih": d.values((hidden,)), "bias_hh": d.values((hidden,))}


def _call_fuzz(d):
    """Inputs of the shapes the module takes: (batch, in) for a Linear, (time, batch, in) and an optional
    (1, batch, hidden) for an RNN, anything for an activation."""
    module = d.pick("module")
    if module is None:
        return None
    kind = d.kind(module)
    weight = d.shape(f"{module}.weight" if kind == "linear" else f"{module}.weight_ih") if kind in ("linear", "rnn") \
        else ()
    if kind in ("linear", "rnn") and len(weight) != 2:  # a parameter resized in place: no input fits
        return None
    if kind == "linear":
        fan_in = weight[1]
        inputs = [d.tensor(where=lambda f: len(f.shape) in (1, 2) and f.shape[-1] == fan_in,
                           fresh=(d.size(), fan_in))]
    elif kind == "rnn":
        hidden, fan_in = weight
        inputs = [d.tensor(where=lambda f: len(f.shape) == 3 and f.shape[-1] == fan_in,
                           fresh=(d.size(), d.size(), fan_in))]
        if inputs[0] is not None and d.boolean():
            inputs.append(d.tensor((1, d.shape(inputs[0])[1], hidden)))
    elif kind in MODULE_KINDS and not MODULE_KINDS[kind].parameters:
        inputs = [d.pick("tensor")]
    else:
        return None
    if None in inputs:
        return None
    return {"args": [module, *inputs], "out": MODULE_KINDS[kind].outputs}


def _mse_loss_fuzz(d):
    """Two tensors of one shape (a broadcast target is a warning in one framework, an error in another)."""
    prediction = d.pick("tensor")
    target = None if prediction is None else d.tensor(d.shape(prediction))  # None: no literal of an empty shape
    return None if target is None else {"args": [prediction, target]}


register(Op(
    "linear", "A Linear module with the given weight (out x in, y = x W^T + b) and bias.", binds="linear",
    stage="setup",
    fields={"weight": _VALUE, "bias": Field("numbers")}, run_reference=_module_reference,
    run_spell=lambda w, s: w.emit(*w.a.linear(w.out(s), s.fields["weight"], s.fields["bias"], w.device)),
    fuzz=_linear_fuzz,
))
register(Op(
    "rnn", "A one-layer Elman RNN (tanh), time-major, with the given parameters.", binds="rnn", stage="setup",
    fields={name: _VALUE for name in MODULE_KINDS["rnn"].parameters}, run_reference=_module_reference,
    run_spell=lambda w, s: w.emit(*w.a.rnn(w.out(s), {k: s.fields[k] for k in MODULE_KINDS["rnn"].parameters},
                                           w.device)),
    fuzz=_rnn_fuzz,
))
def _batch_norm_check(data, scope, fail) -> None:
    momentum = data.get("momentum", 0.1)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 < momentum <= 1:
        raise fail(f"momentum must be a number above 0 and at most 1, not {momentum!r}")
    sizes = {name: np.shape(data.get(name)) for name in MODULE_KINDS["batch_norm"].parameters}
    if len(set(sizes.values())) != 1 or len(next(iter(sizes.values()))) != 1:
        raise fail(f"a batch norm's weight, bias, running_mean and running_var are vectors of one length "
                   f"(the channels), not of shapes {sizes}")


register(Op(
    "batch_norm", "A BatchNorm1d module over (N, C) with the given weight, bias and running statistics (buffers, "
    "not trained; paddle names them _mean and _variance).  In eval mode (the default) the running statistics "
    "normalise the input and are not updated; with training: true the batch's statistics normalise it and each "
    "call updates the running ones in place, as torch documents (momentum, and the unbiased variance).",
    binds="batch_norm", stage="setup",
    fields={**{name: _VALUE for name in MODULE_KINDS["batch_norm"].parameters},
            "training": Field("bool", default=False, doc="training mode: the module normalises by the batch "
                                                         "and updates its running statistics"),
            "momentum": Field("number", default=0.1, doc="torch's momentum: running = (1 - momentum) * running "
                                                         "+ momentum * batch (paddle spells 1 - momentum)")},
    check=_batch_norm_check,
    run_reference=_module_reference,
    run_spell=lambda w, s: w.emit(*w.a.batch_norm(w.out(s), {k: s.fields[k] for k in MODULE_KINDS["batch_norm"]
                                                                .parameters}, w.device,
                                                  training=bool(s.fields["training"]),
                                                  momentum=float(s.fields["momentum"]))),
    fuzz="a module of four vectors given by hand; the fuzzer draws Linear and RNN modules",
))
register(Op(
    "activation", "An activation module, with the in-place flag where asked.", binds="activation",
    stage="setup",
    fields={"kind": Field("choice", required=True, choices=tuple(ACTIVATIONS)),
            "inplace": Field("bool")},
    run_reference=_module_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = " + w.a.activation_module(s.fields["kind"], s.fields["inplace"])),
))
register(Op(
    "call", "out = module(*inputs); an RNN binds [output, h_n].", args=("module", "*tensor"), out="many",
    check=_call_check, run_reference=_call_reference,
    run_spell=lambda w, s: w.emit(f"{', '.join(s.out)} = {s.args[0]}({', '.join(s.args[1:])})"),
    fuzz=_call_fuzz,
))


def _mse(a, b):
    d = a - b
    n = max(d.size, 1)
    return np.asarray((d * d).mean()), [lambda g: g * 2 * d / n, lambda g: -g * 2 * d / n]


register(Op(
    "mse_loss", "out = the framework's functional mean squared error.", args=("tensor", "tensor"),
    saves=("inputs",), run_reference=lambda m, s: m.bind(s, m.new(_mse, *s.args)),
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.a.mse_loss(s.args[0], s.args[1])}"),
    fuzz=_mse_loss_fuzz,
))


def _optimized(m, names) -> list:
    """The tensors an optimizer over *names* updates: a module's parameters, or a tensor itself."""
    from conformance.judge.model import Tensor

    params = []
    for name in names:
        obj = m.get(name)
        params.extend([obj] if isinstance(obj, Tensor) else obj.params.values())
    return params


def _sgd_reference(m, s) -> None:
    from conformance.judge.model import Optimizer

    params = _optimized(m, s.args)
    if len({id(p) for p in params}) != len(params):  # torch refuses it; what paddle does is not modelled
        raise ValueError("a tensor appears twice among the optimizer's parameters")
    m.bind(s, Optimizer(params, float(s.fields["lr"])))


def _sgd_check(data: Mapping[str, Any], scope: Mapping[str, str], fail: Callable[[str], Exception]) -> None:
    for name in data["args"] if isinstance(data.get("args"), list) else [data.get("args")]:
        if scope.get(name) != "tensor" and scope.get(name) not in MODULE_KINDS:
            raise fail(f"sgd optimizes modules and tensors, not {name!r} (bound to: {scope.get(name)})")


def _sgd_spell(w, s) -> None:
    # What both frameworks' users pass: a list of tensors, a module's as list(m.parameters()).
    parts: list[str] = []
    tensors: list[str] = []
    for name in s.args:
        if name in w.modules:
            parts += [f"[{', '.join(tensors)}]"] if tensors else []
            parts.append(f"list({name}.parameters())")
            tensors = []
        else:
            tensors.append(name)
    parts += [f"[{', '.join(tensors)}]"] if tensors else []
    w.emit(f"{w.out(s)} = {w.a.sgd(' + '.join(parts), w.literal(s.fields['lr']))}")


def _sgd_fuzz(d):
    """One or two of: a module that has parameters, a leaf tensor that requires grad (what an
    optimizer takes)."""
    found = d.names("module", "tensor", where=lambda f: (f.kind in MODULE_KINDS and bool(
        MODULE_KINDS[f.kind].parameters)) or (f.kind == "tensor" and f.is_leaf and f.requires_grad))
    if not found:
        return None
    first = d.choice(found)
    rest = [name for name in found if name != first]
    return {"args": [first] + ([d.choice(rest)] if rest and d.boolean() else []), "lr": 0.5}


def _step_reference(m, s) -> None:
    optimizer = m.get(s.args[0])
    for param in optimizer.params:
        if param.grad is not None:
            m.write(param, param.value - optimizer.lr * param.grad, None)  # untracked, as under no_grad


def _zero_grad_reference(m, s) -> None:
    from conformance.judge.model import release_grad, zero_grad

    for param in m.get(s.args[0]).params:
        (zero_grad if s.fields["set_to"] == "zero" else release_grad)(param)


def _zero_grad_spell(w, s) -> None:
    set_to = s.fields["set_to"]
    # The call without arguments is each framework's own default (torch: None, paddle: zeros).
    w.emit(w.a.zero_grad(s.args[0]) if set_to is None else w.a.zero_grad(s.args[0], set_to))


register(Op(
    "sgd", "An SGD optimizer over modules' parameters and plain tensors.", args=("*any",), binds="optimizer",
    stage="setup", check=_sgd_check, fuzz=_sgd_fuzz,
    fields={"lr": Field("number", required=True)}, run_reference=_sgd_reference, run_spell=_sgd_spell,
))
register(Op(
    "step", "optimizer.step().", args=("optimizer",), out="none", stage="outside",
    run_reference=_step_reference,
    run_spell=lambda w, s: w.emit(f"{s.args[0]}.step()"),
))
register(Op(
    "zero_grad", "optimizer.zero_grad() / clear_grad(), with the framework's default or a setting.",
    args=("optimizer",), out="none", stage="outside",
    fields={"set_to": Field("choice", choices=("none", "zero"), doc=(
        "'none': release the gradients (torch set_to_none=True, paddle set_to_zero=False); 'zero': zero "
        "them in place (torch set_to_none=False, paddle set_to_zero=True); omitted: the call without "
        "arguments, each framework's own default"))},
    run_reference=_zero_grad_reference, run_spell=_zero_grad_spell,
))


# -- hooks on modules ---------------------------------------------------------------------


def _forward_hook_reference(m, s) -> None:
    """A hook that copies the module's first input into a tensor of its own (``out``), before the forward
    (``pre``) or after it (``post``): after an in-place module, the input it sees is the output."""
    from conformance.judge.model import Tensor

    seen = Tensor.fresh(np.zeros(tuple(s.fields["shape"]), dtype=np.float32))
    m.get(s.args[0]).options.setdefault("hooks", []).append((s.fields["when"], seen))
    m.bind(s, seen)


def _forward_hook_spell(w, s) -> None:
    seen = w.out(s)
    w.emit(f"{seen} = {w.a.tensor(w.literal(np.zeros(tuple(s.fields['shape'])).tolist()), 'float32', False)}")
    w.emit(*w.a.forward_hook(s.args[0], s.fields["when"], seen))


register(Op(
    "forward_hook", "out = a tensor of the given shape that a hook on the module fills with the module's "
    "first input each call: before the forward (when: pre; torch register_forward_pre_hook, paddle "
    "register_forward_pre_hook) or after it (when: post; torch register_forward_hook, paddle "
    "register_forward_post_hook).  The hook returns None, so the call is unchanged.", args=("module",),
    stage="setup",
    fields={"when": Field("choice", required=True, choices=("pre", "post")),
            "shape": Field("ints", required=True, doc="the shape of the module's first input")},
    run_reference=_forward_hook_reference, run_spell=_forward_hook_spell,
    fuzz="a hook fills a tensor of a shape given by hand",
))


def _backward_hook_reference(m, s) -> None:
    """A full backward hook that returns None changes no gradient: the program computes what it would
    without it."""
    m.get(s.args[0])


register(Op(
    "backward_hook", "module.register_full_backward_hook(hook), a hook that returns None (torch; paddle's "
    "Layer has no full backward hook).", args=("module",), out="none", stage="setup",
    run_reference=_backward_hook_reference,
    run_spell=lambda w, s: w.emit(*w.a.full_backward_hook(s.args[0])),
    fuzz="a hook that changes nothing adds no value to a drawn program",
))


# -- initialisation in place ------------------------------------------------------------


def _init_constant_reference(m, s) -> None:
    """Initialisation fills the tensor untracked: torch documents that nn.init's functions "all run in
    torch.no_grad() mode"; paddle's initializers write the parameter's values directly.  A backward that
    reads the tensor's old values (saved by an op before) must still get those."""
    target = m.tensor(s.args[0])
    m.write(target, np.full(target.shape, float(s.fields["value"])), None)


register(Op(
    "init_constant_", "nn.init.constant_(t, value): fill a parameter with a constant, as initialisation "
    "does (untracked; paddle: paddle.nn.initializer.Constant(value)(t)).", args=("tensor",), out="none",
    stage="outside", fields={"value": Field("number", required=True)}, run_reference=_init_constant_reference,
    run_spell=lambda w, s: w.emit(w.a.init_constant(s.args[0], w.literal(s.fields["value"]))),
    fuzz="initialisation writes a parameter untracked, as an optimizer step does, which the fuzzer draws",
))


# -- gradients and parameters as tensors ------------------------------------------------


def _grad_reference(m, s) -> None:
    from conformance.judge.model import held_grad

    m.bind(s, held_grad(m.tensor(s.args[0])))


register(Op(
    "grad", "out = t.grad: the gradient tensor itself, held in a name (not a copy).", args=("tensor",),
    stage="outside", run_reference=_grad_reference,
    run_spell=lambda w, s: w.emit(f"{w.out(s)} = {w.attribute(s.args[0], 'grad')}"),
    fuzz="what a held gradient reads after a later zero_grad or backward is framework-defined "
         "(docs/reference.md), and the fuzzer judges every observation",
))

_PARAMETERS = tuple(dict.fromkeys(name for kind in MODULE_KINDS.values() for name in kind.parameters))


def _parameter_check(data: Mapping[str, Any], scope: Mapping[str, str], fail: Callable[[str], Exception]) -> None:
    args = data.get("args")
    module = args[0] if isinstance(args, list) and args else args
    kind = scope.get(module)
    if kind in MODULE_KINDS and data.get("name") not in MODULE_KINDS[kind].parameters:
        raise fail(f"the {kind} module {module!r} has no parameter {data.get('name')!r}; its parameters: "
                   f"{list(MODULE_KINDS[kind].parameters)}")


def _fuzzed_parameters(kind: str) -> list[str]:
    """The parameters the fuzzer binds: all but a Linear weight, whose layout differs between
    frameworks (paddle stores it in x out), so values computed from a name bound to it cannot be
    compared element-wise with the neutral layout."""
    names = MODULE_KINDS[kind].parameters if kind in MODULE_KINDS else ()
    return [name for name in names if (kind, name) != ("linear", "weight")]


def _parameter_fuzz(d):
    module = d.pick("module", where=lambda f: bool(_fuzzed_parameters(f.kind)))
    return None if module is None else {"args": [module], "name": d.choice(_fuzzed_parameters(d.kind(module)))}


def _parameter_spell(w, s) -> None:
    expr, _ = w.target(f"{s.args[0]}.{s.fields['name']}")
    w.emit(f"{w.out(s)} = {expr}")


register(Op(
    "parameter", "out = module.<name>: the parameter tensor itself (the same object), as an operand. "
    "It has the framework's own layout (paddle stores a Linear weight as in x out): observe values "
    "through module.<name>, which is read in the neutral layout.", args=("module",), stage="setup",
    fields={"name": Field("choice", required=True, choices=_PARAMETERS)}, check=_parameter_check,
    fuzz=_parameter_fuzz,
    run_reference=lambda m, s: m.bind(s, m.get(s.args[0]).params[s.fields["name"]]),
    run_spell=_parameter_spell,
))


# -- hooks on tensors ---------------------------------------------------------------------


def _tensor_hook_reference(m, s) -> None:
    """A hook that copies the gradient it receives into a tensor of its own (``out``).  It is registered on
    the tensor's history as it is now: torch documents that a hook registered before an in-place write
    receives the gradient with respect to the tensor's value before that write (autograd mechanics, "Behavior
    of Tensor hooks when Tensor is modified in-place")."""
    from conformance.judge.model import Tensor

    tensor = m.tensor(s.args[0])
    if not tensor.requires_grad:
        raise ValueError("a hook on a tensor that requires no grad: torch refuses it (\"cannot register a hook "
                         "on a tensor that doesn't require gradient\")")
    seen = Tensor.fresh(np.zeros(tensor.shape, dtype=np.float32))
    m.tensor_hooks.append((tensor.node, seen))
    m.bind(s, seen)


def _tensor_hook_spell(w, s) -> None:
    seen = w.out(s)
    w.emit(f"{seen} = {w.a.function('zeros_like')}({s.args[0]})")
    w.emit(*w.a.tensor_hook(s.args[0], seen))


register(Op(
    "tensor_hook", "out = zeros_like(t), which a hook on t (t.register_hook) fills with each gradient t "
    "receives; the hook returns None, so no gradient changes.", args=("tensor",),
    run_reference=_tensor_hook_reference, run_spell=_tensor_hook_spell,
    fuzz="a hook that changes nothing adds no value to a drawn program",
))
