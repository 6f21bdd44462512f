"""What each op's backward reads (``Op.saves``, and ``Adapter.saves`` where a framework differs) is what the
framework itself saves: a write to that tensor after the op makes its backward raise, and a write to any
other does not.  The scanner reasons with these facts (conformance scan)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conformance.adapter import adapter_classes
from conformance.ops import OPS
from conformance.ops.elementwise import UNARY

from .conftest import INSTALLED

#: Ops whose saves the probe can observe alone: unary functions out of place and in place, binary operators.
BINARY = ("add", "sub", "mul", "div", "pow", "matmul")

PROBE = textwrap.dedent("""
    import json, sys
    framework = sys.argv[1]
    names = json.loads(sys.argv[2])
    binary = json.loads(sys.argv[3])
    if framework == "torch":
        import torch as fw
        import torch.nn.functional as F
        leaf = lambda: fw.tensor([0.3, 0.5, 0.7], requires_grad=True)
        const = lambda: fw.tensor(0.0)
    else:
        import paddle as fw
        import paddle.nn.functional as F
        leaf = lambda: fw.to_tensor([0.3, 0.5, 0.7], stop_gradient=False)
        const = lambda: fw.to_tensor(0.0)

    def function(name):
        return getattr(F, name, None) or getattr(fw, name, None)

    def raises(run):
        # the version check of a saved tensor, in both frameworks' words (not another error that names
        # in-place ops: torch's "the derivative for 'inplace version of asinh' is not implemented")
        try:
            run()
            return False
        except Exception as exc:
            return "modified by an inplace operation" in str(exc)

    def out_of_place(f, which):
        def run():
            x = leaf() * 1.0
            y = f(x)
            (x if which == "input" else y).add_(const())
            y.sum().backward()
        return raises(run)

    def in_place(name):
        def run():
            x = leaf() * 1.0
            method = getattr(x, name + "_", None)
            method() if method is not None else function(name + "_")(x)
            x.add_(const())
            x.sum().backward()
        return raises(run)

    operators = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
                 "div": lambda a, b: a / b, "pow": lambda a, b: a ** 2.0,
                 "matmul": lambda a, b: a.reshape([1, 3]) @ b.reshape([3, 1])}
    seen = {}
    for name in names:
        f = function(name)
        if f is None:
            continue
        seen[name] = [role for role in ("input", "output") if out_of_place(f, role)]
        if getattr(fw.ones([1]), name + "_", None) is not None or function(name + "_") is not None:
            seen[name + "_"] = ["output"] if in_place(name) else []
    for name in binary:
        def run(name=name):
            a, b = leaf() * 1.0, leaf() * 1.0
            y = operators[name](a, b)
            a.add_(const())
            y.sum().backward()
        seen[name] = ["input"] if raises(run) else []
    print(json.dumps(seen))
""")


def declared(framework: str, op: str) -> list[str]:
    saves = adapter_classes()[framework].saves.get(op, OPS[op].saves)
    return sorted({"input" if role in ("operands", "inputs") else role for role in saves})


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_what_an_op_saves_is_what_the_framework_saves(framework: str) -> None:
    if framework not in INSTALLED:
        pytest.skip(f"{framework} is not installed")
    probe = subprocess.run([sys.executable, "-c", PROBE, framework, json.dumps(sorted(UNARY)), json.dumps(BINARY)],
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert len(seen) > 40
    wrong = {op: {"declared": declared(framework, op), "seen": sorted(roles)} for op, roles in seen.items()
             if op in OPS and declared(framework, op) != sorted(roles)}
    assert not wrong, f"{framework} saves otherwise than declared: {wrong}"


NO_BACKWARD_PROBE = textwrap.dedent("""
    import json, sys
    framework, methods = sys.argv[1], json.loads(sys.argv[2])
    if framework == "torch":
        import torch as fw
        leaf = lambda: fw.tensor([1.3, 1.5, 1.7], requires_grad=True)
        other = lambda: fw.tensor([0.5, 1.0, 1.5])
    else:
        import paddle as fw
        leaf = lambda: fw.to_tensor([1.3, 1.5, 1.7], stop_gradient=False)
        other = lambda: fw.to_tensor([0.5, 1.0, 1.5])
    # the frameworks' words for a backward without a derivative for the tensor written: torch's "the
    # derivative for ... is not implemented", and paddle's for a grad kernel that leaves that input's
    # gradient unwritten
    words = ("not implemented", "metatensor is not initialized")
    lacking = []
    for op, (method_name, operands) in methods.items():
        x = leaf() * 1.0
        method = getattr(x, method_name, None)
        if method is None:
            continue
        method(*[other() for _ in range(operands)])
        try:
            x.sum().backward()
        except Exception as exc:
            if any(w in str(exc).lower() for w in words) or "NotImplemented" in type(exc).__name__:
                lacking.append(op)
    print(json.dumps(sorted(lacking)))
""")

#: In-place ops with a second tensor the probe also runs (its values in their domain: 0.5 to 1.5).
BINARY_IN_PLACE = ("hypot_", "copysign_", "igamma_", "igammac_")


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_the_in_place_ops_without_a_derivative_are_the_ones_declared(framework: str) -> None:
    """``Adapter.no_backward``: a backward through the in-place op raises in that framework whatever was
    saved (torch: "the derivative for 'inplace version of asinh' is not implemented")."""
    if framework not in INSTALLED:
        pytest.skip(f"{framework} is not installed")
    adapter = adapter_classes()[framework]
    methods = {f"{name}_": (f"{name}_", 0) for name in UNARY}
    methods.update({op: (adapter.method_names.get(op, op), 1) for op in BINARY_IN_PLACE})
    probe = subprocess.run([sys.executable, "-c", NO_BACKWARD_PROBE, framework, json.dumps(methods)],
                           capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen == sorted(adapter_classes()[framework].no_backward)
