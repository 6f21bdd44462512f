"""PyTorch: what a PyTorch user writes for each step."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any, Sequence

from conformance.adapter import Adapter, Copying, lit

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TorchAdapter"]


class TorchAdapter(Adapter):
    name = "torch"
    import_name = "torch"
    # "the derivative for 'inplace version of asinh' is not implemented" (torch's derivatives.yaml has no
    # in-place formula for these three; paddle's copy their input and compute), and "the derivative for
    # 'igamma: input' is not implemented" (igamma and igammac differentiate their second operand only)
    no_backward = frozenset({"asinh_", "acosh_", "atanh_", "igamma_", "igammac_"})
    distributions = ("torch",)
    root = "torch"
    reserved_names = ("torch", "nn", "F")
    autograd_messages = (
        r"modified by an inplace operation",
        r"leaf Variable that requires grad is being used in an in-place operation",
        r"is a view and (is being|its base or another view of its base has been) modified inplace",
        r"a view of a leaf Variable that requires grad",
        r"more than one element of the written-to tensor refers to a single memory location",
        r"backward through the graph a second time",
        r"cannot resize variables that require grad",
    )
    # Notices torch's compiler raises once per process, whatever the program; which cell of a run meets one first
    # depends on the order the cells ran in, so counting them would make a cell's outcome depend on its neighbours.
    machinery_warnings = (
        (r"^`torch\._prims_common\.check` is deprecated",
         "torch's own decompositions calling a function torch deprecated (torch/_prims_common), once per process, "
         "whatever the program; not about the case"),
        (r"^`torch\.cpu\.amp\.autocast\(args\.\.\.\)` is deprecated",
         "torch 2.4's own reentrant checkpoint (CheckpointFunction.backward in torch/utils/checkpoint.py) entering "
         "the autocast state it saved through the API torch deprecated, on every recomputation, whatever the "
         "program computes; not about the case"),
        (r"^Torchinductor does not support code generation for complex operators",
         "inductor's notice that it leaves complex ops to eager (a matter of speed), once per process; not about "
         "the case"),
        (r"^Attempting to run cuBLAS, but there was no current CUDA context!",
         "torch's notice that cuBLAS, first called in a thread without a CUDA context (the autograd engine's, "
         "say), set the primary one: once per process and thread, whichever cell comes first; not about the "
         "case"),
        (r"^TensorFloat32 tensor cores for float32 matrix multiplication available but not enabled",
         "inductor's advice, on a GPU with TF32 tensor cores, to trade float32 precision for speed "
         "(torch.set_float32_matmul_precision), once per process; not about the case"),
    )
    # On a GPU the tensor lives in device memory: NumPy's memory, a CPU's, cannot be shared with it, and every
    # move between the two is a copy, as torch documents for Tensor.to ("a copy ... with the desired device").
    device_copies = {"gpu": {
        op: Copying(True, f"https://docs.pytorch.org/docs/stable/generated/torch.Tensor.to.html: \"Returns a "
                          f"Tensor with the specified device\" (a copy when the device differs); {says}")
        for op, says in (
            ("from_numpy", "torch.from_numpy(a).to('cuda'): the array's memory is the CPU's"),
            ("as_tensor", "torch.as_tensor documents sharing \"if data is a NumPy array ... on the CPU\""),
            ("from_dlpack", "torch.from_dlpack(a).cuda(): the array's memory is the CPU's"),
            ("construct_tensor", "torch.Tensor(a).cuda(): the array's memory is the CPU's"),
            ("numpy", "t.cpu().numpy(): torch.Tensor.numpy reads CPU memory only"),
            ("array_from_dlpack", "np.from_dlpack(t.cpu()): NumPy reads CPU memory only"),
            ("cpu", "torch.Tensor.cpu: \"If this object is already in CPU memory, then no copy is performed\"; "
                    "from a GPU it is a copy"),
        )}}
    # nn.RNN on CUDA runs cuDNN's fused kernel, whose tanh is approximate: measured with benchmarks/
    # kernel_precision.py, which prints it again on any GPU.
    kernel_precision = {"gpu": {
        "rnn_tanh": (1.1e-5, "cuDNN's RNN kernel (nn.RNN on CUDA): tanh of 200,001 points in [-4, 4] is off "
                             "by up to 1.066e-5 relative, against 1.9e-7 for torch.tanh on CUDA and 6.2e-8 for "
                             "nn.RNN on a CPU, with or without TF32 (torch 2.11.0+cu130, NVIDIA H200)"),
    }}
    modes = {"compile": "torch.compile with its default backend (inductor)"}

    def native_build(self) -> str:
        """``cu128``, ``rocm6.2`` or ``cpu``, from ``torch.version`` (PyPI's wheels carry no label)."""
        cuda, hip = getattr(self.fw.version, "cuda", None), getattr(self.fw.version, "hip", None)
        if cuda:
            return "cu" + cuda.replace(".", "")
        return f"rocm{hip}" if hip else "cpu"

    def numpy_round_trips(self) -> dict[str, Any]:
        return {"torch.from_numpy(a).numpy()": lambda array: self.fw.from_numpy(array).numpy(),
                "torch.tensor(a).numpy()": lambda array: self.fw.tensor(array).numpy(),
                "torch.as_tensor(a).numpy()": lambda array: self.fw.as_tensor(array).numpy()}

    def device_problem(self, device: str) -> str | None:
        if device == "gpu":
            if not self.fw.cuda.is_available():
                build = f"CUDA {self.fw.version.cuda}" if self.fw.version.cuda else "a CPU-only build"
                return f"torch.cuda.is_available() is False ({build})"
            return None
        return super().device_problem(device)

    def mode_problem(self, mode: str, device: str) -> str | None:
        problem = super().mode_problem(mode, device)
        if problem or mode != "compile":
            return problem
        if not hasattr(self.fw, "compile"):
            return f"torch.compile does not exist in torch {self.version}"
        try:  # torch 2.0 does not import its compiler with torch: its users import torch._dynamo themselves
            dynamo = importlib.import_module("torch._dynamo")
        except Exception as exc:  # noqa: BLE001 - a compiler that cannot load is this environment's limit
            return f"torch._dynamo cannot be imported in torch {self.version}: {type(exc).__name__}: {exc}"
        supported = getattr(getattr(dynamo, "eval_frame", None), "check_if_dynamo_supported", None)
        try:  # torch.compile refuses a Python it does not support yet (3.11 before torch 2.1) before compiling
            if supported is not None:
                supported()
        except Exception as exc:  # noqa: BLE001 - the refusal of this Python, not of a program
            return (f"torch.compile is not supported by torch {self.version} on Python "
                    f"{'.'.join(map(str, sys.version_info[:2]))}: {exc}")
        return None

    def compile_problem(self, mode: str, device: str) -> str | None:
        checked = self.__dict__.setdefault("_compile_checked", {})
        if (mode, device) not in checked:
            checked[(mode, device)] = _toolchain_problem(device) or self._compiles_simplest(device)
        return checked[(mode, device)]

    def _compiles_simplest(self, device: str) -> str | None:
        """``torch.compile(lambda x: x * 2 + 1)`` of two ones: anything but [3, 3] is the environment's fault."""
        try:
            ones = self.fw.ones(2, device="cuda" if device == "gpu" else "cpu")
            got = self.fw.compile(lambda x: x * 2 + 1)(ones).tolist()
        except Exception as exc:  # noqa: BLE001 - the simplest program: no case can be at fault
            what = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
            return f"torch.compile cannot compile x * 2 + 1 here: {type(exc).__name__}: {what[:300]}"
        finally:
            importlib.import_module("torch._dynamo").reset()
        return None if got == [3.0, 3.0] else f"torch.compile of x * 2 + 1 gave {got} for [1, 1]"

    def compile_function(self, function: str, mode: str) -> str:
        return f"torch.compile({function})"

    def before_case(self, mode: str) -> None:
        if mode != "eager":  # compiled code of earlier cases must not count against recompile limits
            importlib.import_module("torch._dynamo").reset()

    def compile_failure(self, exception: BaseException) -> bool:
        module = type(exception).__module__
        return module.startswith(("torch._dynamo", "torch._inductor"))

    def device_name(self, device: str) -> str | None:
        return self.fw.cuda.get_device_name(0) if device == "gpu" else None

    def prelude(self, device: str) -> list[str]:
        return [
            "import numpy as np",
            "import torch",
            "import torch.nn as nn",
            "import torch.nn.functional as F",
            f"DEVICE = {'cuda' if device == 'gpu' else 'cpu'!r}",
        ]

    def tensor(self, value: str, dtype: str, requires_grad: bool) -> str:
        grad = ", requires_grad=True" if requires_grad else ""
        return f"torch.tensor({value}, dtype=torch.{dtype}{grad}, device=DEVICE)"

    def from_numpy(self, array: str, device: str) -> str:
        self.resolve("torch.from_numpy")
        return f"torch.from_numpy({array})" + (".to(DEVICE)" if device != "cpu" else "")

    def to_tensor(self, array: str, device: str) -> str:
        return f"torch.tensor({array}, device=DEVICE)"

    def numpy(self, x: str, device: str) -> str:
        return f"{x}.cpu().numpy()" if device != "cpu" else f"{x}.numpy()"

    def function(self, name: str) -> str:
        return self.activation_function(name) if name == "relu" else super().function(name)

    def inplace_activation(self, name: str, x: str) -> str:
        if name == "sigmoid":  # torch.nn.functional has no sigmoid_; torch.sigmoid_ is the spelling
            self.resolve("torch.sigmoid_")
            return f"torch.sigmoid_({x})"
        if not hasattr(self.fw.nn.functional, f"{name}_"):  # silu, hardswish, mish: F.silu(x, inplace=True)
            self.require_parameter(f"F.{name}", "inplace")
            return f"F.{name}({x}, inplace=True)"
        return super().inplace_activation(name, x)

    # Weights are set as torch's users set them in place: copied in under no_grad (``nn.init`` does the
    # same).  Assigning a new nn.Parameter would do for torch alone, but a converted program loses it
    # (PaConvert's paddle SimpleRNN ignores an assigned weight_ih_l0), and the PaConvert column converts
    # exactly this program.
    def _set(self, target: str, values: Any) -> str:
        return f"    {target}.copy_(torch.tensor({lit(values)}, dtype=torch.float32, device=DEVICE))"

    def linear(self, out: str, weight: list, bias: list | None, device: str) -> list[str]:
        rows, cols = len(weight), len(weight[0])  # (a checked, rectangular list of rows)
        lines = [f"{out} = nn.Linear({cols}, {rows}, bias={bias is not None}, device=DEVICE)", "with torch.no_grad():",
                 self._set(f"{out}.weight", weight)]
        if bias is not None:
            lines.append(self._set(f"{out}.bias", bias))
        return lines

    def rnn(self, out: str, params: dict[str, list], device: str) -> list[str]:
        hidden, inputs = len(params["weight_ih"]), len(params["weight_ih"][0])
        lines = [f"{out} = nn.RNN({inputs}, {hidden}, device=DEVICE)", "with torch.no_grad():"]
        lines += [self._set(f"{out}.{name}_l0", value) for name, value in params.items()]
        return lines

    def batch_norm(self, out: str, params: dict[str, list], device: str, training: bool = False,
                   momentum: float = 0.1) -> list[str]:
        extra = "" if momentum == 0.1 else f", momentum={momentum!r}"
        lines = [f"{out} = nn.BatchNorm1d({len(params['weight'])}{extra}, device=DEVICE)", "with torch.no_grad():"]
        lines += [self._set(f"{out}.{name}", value) for name, value in params.items()]
        return lines + [f"{out}.train()" if training else f"{out}.eval()"]

    def sgd(self, params: str, lr: str) -> str:
        return f"torch.optim.SGD({params}, lr={lr})"

    def zero_grad(self, optimizer: str, set_to: str | None = None) -> str:
        if set_to is None:
            return f"{optimizer}.zero_grad()"
        self.require_parameter("torch.optim.Optimizer.zero_grad", "set_to_none")
        return f"{optimizer}.zero_grad(set_to_none={set_to == 'none'})"

    def version_counter(self, x: str) -> str:
        return f"{x}._version"

    def allocated_bytes(self, device: str) -> str | None:
        return "torch.cuda.memory_allocated()" if device == "gpu" else None

    def read_values(self, tensor: Any) -> np.ndarray:
        # torch refuses .numpy() of a tensor that requires grad: its users read through detach(); NumPy has
        # no bfloat16, so they widen one to float32 first (every bfloat16 is a float32)
        if tensor.dtype == self.fw.bfloat16:
            tensor = tensor.float()
        return tensor.detach().cpu().resolve_conj().resolve_neg().numpy().copy()

    def read_expression(self, x: str) -> str:
        # as read_values: numpy() refuses a tensor with the conjugate or negative bit (x.conj(), x.conj().imag)
        return (f"({x}.float() if {x}.dtype == torch.bfloat16 else {x})"
                ".detach().cpu().resolve_conj().resolve_neg().numpy()")

    def memory_layout(self, tensor: Any) -> tuple[int, Sequence[int], Sequence[int], int]:
        return tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.element_size()


def _toolchain_problem(device: str) -> str | None:
    """What inductor needs beside torch, which this machine provides or lacks: without it every compiled cell
    is an error naming it, never an ``unsupported`` that reads as an API this torch lacks."""
    if device == "cpu" and not any(shutil.which(cc) for cc in (os.environ.get("CXX", "g++"), "c++", "clang++")):
        return ("torch.compile's inductor backend needs a C++ compiler on a CPU, and none was found on this machine "
                "(CXX, g++, c++, clang++)")
    if device == "gpu" and importlib.util.find_spec("triton") is None:
        return "torch.compile's inductor backend needs triton on a GPU, and it is not installed here"
    return None
