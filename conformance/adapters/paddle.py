"""PaddlePaddle (dynamic graph): what a Paddle user writes for each step."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from conformance.adapter import Adapter, Copying, Unsupported, lit

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PaddleAdapter"]


class PaddleAdapter(Adapter):
    name = "paddle"
    import_name = "paddle"
    distributions = ("paddlepaddle", "paddlepaddle-gpu")
    root = "paddle"
    # Paddle's own names for these in-place methods (a release without one: the cell is unsupported);
    # the torch-style aliases (mul_, sub_, div_) appeared only in 3.x.
    method_names = {"mul_": "multiply_", "sub_": "subtract_", "div_": "divide_", "gt_": "greater_than_",
                    "lt_": "less_than_", "le_": "less_equal_", "ge_": "greater_equal_", "eq_": "equal_",
                    "ne_": "not_equal_", "mvlgamma_": "multigammaln_", "igamma_": "gammainc_",
                    "igammac_": "gammaincc_"}
    # gammainc_ and gammaincc_ leave the gradient of the tensor they write unwritten ("The current MetaTensor
    # is not initialized" at backward): only the other operand is differentiated.
    no_backward = frozenset({"igamma_", "igammac_"})
    # Paddle's documented names for these functions (paddle.multiply(x, y, out=...)); paddle.mul and
    # paddle.sub are the torch-style aliases of 3.x.
    out_functions = {"mul": "multiply", "sub": "subtract"}
    reserved_names = ("paddle", "nn", "F")
    autograd_messages = (
        r"modified by an inplace operation",
        r"Leaf (Var|Tensor) .* that doesn't stop gradient can't use inplace strategy",
        r"inplace .* (leaf|view)",
    )
    # The warning names the kind of value it was read from: "Value" in paddle 3.0-3.2, "Tensor" in 3.3
    # (paddle/pir/math_op_patch.py), "Variable" in the legacy static graph (paddle/base/layers/math_op_patch.py).
    machinery_warnings = (
        (r"(Tensor|Value|Variable) do not have 'place' interface for (pir|static) graph mode",
         "raised by paddle's own to_static machinery reading .place of the values it builds (full_like in "
         "_append_backward, Tensor.to), whatever the program does; not about the case"),
        (r"^\s*Non compatible API\. Please refer to \S*/convert_from_pytorch/api_difference/",
         "paddle 3.2's notice that an API differs from torch's (ForbidKeywordsDecorator in "
         "paddle/utils/decorator_utils.py), raised on the first call of the API in a process and never "
         "again, whatever the values; not about the case"),
    )
    # Paddle documents which results share memory: reshape, flatten, squeeze, unsqueeze ("the output Tensor
    # will share data with origin Tensor"), view and basic indexing ("the output is a view"). Of split,
    # expand and Tensor.numpy() it says nothing, and they copy (split left the stride kernels in PR 56882).
    copies = {
        "split": Copying(True, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/split_en.html: "
                               "\"Split the input tensor into multiple sub-Tensors\"; no view is promised (torch "
                               "documents \"Each chunk is a view of the original tensor\")"),
        "expand": Copying(True, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/expand_en.html: "
                                "\"Expand the input tensor to a given shape\"; no view is promised (torch documents "
                                "\"Expanding a tensor does not allocate new memory\")"),
        # tensor_split, hsplit, vsplit, dsplit and split(n) copy as split does (paddle 3.3); their pages
        # promise no view (torch documents each part as "a view of input").
        **{op: Copying(True, f"https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/{page}_en.html: "
                             f"{says}; no view is promised (torch documents the parts as views of the input)")
           for op, page, says in (
               ("tensor_split", "tensor_split", "\"Split the input tensor into multiple sub-Tensors along axis, "
                                                "allowing not being of equal size\""),
               ("hsplit", "hsplit", "\"splits the input Tensor into multiple sub-Tensors along the horizontal axis\""),
               ("vsplit", "vsplit", "\"splits the input Tensor into multiple sub-Tensors along the vertical axis\""),
               ("dsplit", "dsplit", "\"splits the input Tensor into multiple sub-Tensors along the depth axis\""),
               ("split_count", "split", "\"Split the input tensor into multiple sub-Tensors\""))},
        "from_numpy": Copying(False, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/"
                                     "from_numpy_en.html: \"The returned Tensor and the input ndarray share the same "
                                     "underlying memory\"; it copies (paddle 3.3)"),
        "numpy": Copying(True, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/Tensor_en.html: "
                               "\"Returns a numpy array shows the value of current Tensor\"; the conversion guide "
                               "for torch.Tensor.numpy drops torch's shared storage without a Paddle equivalent"),
        "dropout": Copying(True, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/nn/functional/"
                                 "dropout_en.html: outside training \"out = input\" (mode upscale_in_train) gives the "
                                 "values; no shared memory is promised, and the result is a new tensor (paddle 3.3), "
                                 "where torch's F.dropout returns its input itself"),
        "conj": Copying(True, "https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/conj_en.html: "
                              "\"This function computes the conjugate of the Tensor elementwisely\"; no view is "
                              "promised (torch documents conj() as \"a view with flipped conjugate bit\")"),
    }
    # paddle's elu and silu kernels read their input and their output, its selu its output, and its in-place
    # leaky_relu_ nothing it overwrote (torch: elu, selu and silu their input, leaky_relu_ its result); its tan
    # reads its input (torch: its output), and its in-place tan_ a copy of the input it overwrote (torch checks
    # its output)
    saves = {"elu": ("input", "output"), "selu": ("output",), "leaky_relu_": (), "silu": ("input", "output"),
             "tan": ("input",), "tan_": ()}
    modes = {"to_static": "paddle.jit.to_static with its defaults",
             "to_static_full_graph": "paddle.jit.to_static(full_graph=True): the whole function as one static graph"}

    def native_build(self) -> str:
        """``cu123`` or ``cpu``, from ``paddle.version.cuda()`` (``'False'`` in a CPU build)."""
        cuda = str(self.fw.version.cuda()) if hasattr(self.fw.version, "cuda") else "False"
        return "cpu" if cuda in ("False", "", "None") else "cu" + cuda.replace(".", "")

    def numpy_round_trips(self) -> dict[str, Any]:
        routes = {"paddle.to_tensor(a).numpy()": lambda array: self.fw.to_tensor(array).numpy()}
        if hasattr(self.fw, "as_tensor"):  # paddle 3.2 and later
            routes["paddle.as_tensor(a).numpy()"] = lambda array: self.fw.as_tensor(array).numpy()
        return routes

    def device_problem(self, device: str) -> str | None:
        if device == "gpu":
            if not self.fw.device.is_compiled_with_cuda():
                return "paddle.device.is_compiled_with_cuda() is False (a CPU-only build)"
            if self.fw.device.cuda.device_count() == 0:
                return "paddle.device.cuda.device_count() is 0"
            return None
        return super().device_problem(device)

    def mode_problem(self, mode: str, device: str) -> str | None:
        problem = super().mode_problem(mode, device)
        if problem is None and mode == "to_static_full_graph":
            try:
                self.require_parameter("paddle.jit.to_static", "full_graph")
            except Unsupported as exc:
                return str(exc)
        return problem

    def compile_function(self, function: str, mode: str) -> str:
        full = ", full_graph=True" if mode == "to_static_full_graph" else ""
        return f"paddle.jit.to_static({function}{full})"

    #: SOT's caches of what it translated and compiled, by module and class (each a singleton with clear()).
    _sot_caches = (
        ("paddle.jit.sot.opcode_translator.executor.executor_cache", "OpcodeExecutorCache"),  # code -> translation
        ("paddle.jit.sot.symbolic.compile_cache", "CompileSIRCache"),  # a graph's text -> its static program
        ("paddle.jit.sot.infer_meta", "InferMetaCache"),
        ("paddle.jit.sot.infer_meta", "LayerInferMetaCache"),
    )

    def before_case(self, mode: str) -> None:
        """Forget what SOT translated and compiled for earlier programs, as a fresh process has nothing.

        SOT caches translations by code object (code objects compare by their contents) and static
        programs by the text of the graph, so a program equal in part to an earlier one reused its
        translation and skipped tracing: no "multiply_() is the same as multiply()" warning where a script
        in a fresh interpreter warns, and in paddle 2.6.2 a cached translation that names globals SOT put
        into the earlier program's namespace (``NameError: name 'paddle_set_eval_frame_fn' is not
        defined`` in ``seed/rnn_hidden_reuse`` after ``seed/rnn_hidden_detach``)."""
        if mode == "eager":
            return
        from importlib import import_module

        for module, name in self._sot_caches:
            try:
                cache = getattr(import_module(module), name)
            except (ImportError, AttributeError):  # a release without SOT, or without this cache
                continue
            cache().clear()

    def compile_failure(self, exception: BaseException) -> bool:
        text = f"{type(exception).__module__}.{type(exception).__name__}: {exception}"
        return "paddle.jit" in text or "dy2static" in text.lower() or "In transformed code" in text

    def device_name(self, device: str) -> str | None:
        return self.fw.device.cuda.get_device_name(0) if device == "gpu" else None

    def prelude(self, device: str) -> list[str]:
        return [
            "import numpy as np",
            "import paddle",
            "import paddle.nn as nn",
            "import paddle.nn.functional as F",
            f"DEVICE = {'gpu' if device == 'gpu' else 'cpu'!r}",
            "paddle.set_device(DEVICE)",
        ]

    def tensor(self, value: str, dtype: str, requires_grad: bool) -> str:
        grad = ", stop_gradient=False" if requires_grad else ""
        return f"paddle.to_tensor({value}, dtype={dtype!r}{grad})"

    def scalar_operand(self, literal: str, like: str) -> str:
        # Paddle's in-place tensor methods take a tensor operand (a Python number raises
        # AttributeError in 3.3); its users wrap the number in a tensor of the same dtype.
        return f"paddle.to_tensor({literal}, dtype={like}.dtype)"

    def spell_from_dlpack(self, w: Any, step: Any) -> None:
        # paddle.from_dlpack takes any object with __dlpack__ (3.x); before it, paddle.utils.dlpack.from_dlpack
        # was the API, and it takes the DLPack capsule, which its users get from __dlpack__().
        call = self.resolve_first("paddle.from_dlpack", "paddle.utils.dlpack.from_dlpack")
        source = step.args[0] if call == "paddle.from_dlpack" else f"{step.args[0]}.__dlpack__()"
        expr = f"{call}({source})" + (".cuda()" if w.device != "cpu" else "")
        w.emit(f"{w.out(step)} = {expr}")

    def from_numpy(self, array: str, device: str) -> str:
        self.resolve("paddle.from_numpy")
        return f"paddle.from_numpy({array})" + (".cuda()" if device != "cpu" else "")

    def to_tensor(self, array: str, device: str) -> str:
        return f"paddle.to_tensor({array})"

    def spell_transpose(self, w: Any, step: Any) -> None:
        # Paddle's transpose takes the whole permutation (perm=), in every 2.x and 3.x release.
        x, (first, second) = step.args[0], step.fields["dims"]
        w.emit(f"_perm = list(range({x}.ndim))", f"_perm[{first}], _perm[{second}] = _perm[{second}], _perm[{first}]",
               f"{w.out(step)} = {x}.transpose(perm=_perm)")

    def spell_permute(self, w: Any, step: Any) -> None:
        # What torch's users write as permute(*dims), paddle's write as transpose with the permutation.
        w.emit(f"{w.out(step)} = " + w.method(step.args[0], "transpose", f"perm={lit(list(step.fields['dims']))}"))

    def spell_transpose_(self, w: Any, step: Any) -> None:
        # The in-place twin takes the whole permutation too (paddle.Tensor.transpose_(perm)).
        x, (first, second) = step.args[0], step.fields["dims"]
        w.emit(f"_perm = list(range({x}.ndim))", f"_perm[{first}], _perm[{second}] = _perm[{second}], _perm[{first}]",
               w.method(x, "transpose_", "perm=_perm"))

    # Paddle's expand, reshape and view take the shape as one list (paddle.Tensor.reshape(shape)),
    # where torch's users pass the sizes one by one.
    def spell_expand(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = " + w.method(step.args[0], "expand", lit(step.fields["shape"])))

    def spell_reshape(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = " + w.method(step.args[0], "reshape", lit(step.fields["shape"])))

    def spell_view(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = " + w.method(step.args[0], "view", lit(step.fields["shape"])))

    def spell_split_count(self, w: Any, step: Any) -> None:
        # paddle's users split into n equal parts with split(n, axis) (num_or_sections: an int is the count;
        # torch's split(2) would be parts of size 2).
        w.emit(f"{', '.join(step.out)}{',' if len(step.out) == 1 else ''} = "
               + w.method(step.args[0], "split", str(step.fields["sections"]), str(step.fields["dim"])))

    def spell_copy_(self, w: Any, step: Any) -> None:
        # Paddle 2.x and 3.0 take copy_(src, blocking) with blocking required (one argument is rejected,
        # and the rejection's message reads stray memory); 3.x still accepts it: the form that works.
        w.emit(w.bind(step) + w.method(step.args[0], "copy_", step.args[1], "True"))

    def spell_index_copy_(self, w: Any, step: Any) -> None:
        # Replacing rows by index is Tensor.scatter_(index, updates) in paddle (overwrite=True, its default,
        # in every 2.x and 3.x release); it has no index_copy_.
        index = self.tensor(lit(step.fields["rows"]), "int64", False)
        w.emit(self.method(step.args[0], "scatter_", index, step.args[1], "overwrite=True"))

    # Complex parts (ops/complex.py): paddle's Tensor.real and Tensor.imag are methods, not properties (x.real is
    # a bound method in paddle 3.3); its users call the functions paddle.real(x), paddle.imag(x) and paddle.as_real(x)
    # (documented since 2.0), and paddle.conj(x).
    def spell_real(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self._call('paddle.real', step.args[0])}")

    def spell_imag(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self._call('paddle.imag', step.args[0])}")

    def spell_view_as_real(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self._call('paddle.as_real', step.args[0])}")

    def spell_view_as_complex(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self._call('paddle.as_complex', step.args[0])}")

    def spell_conj(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self._call('paddle.conj', step.args[0])}")

    def _call(self, dotted: str, x: str) -> str:
        self.resolve(dotted)
        return f"{dotted}({x})"

    # Paddle's softmax takes axis= (F.softmax(x, axis=-1)), and has the in-place F.softmax_ (torch has none).
    def spell_softmax(self, w: Any, step: Any) -> None:
        w.emit(f"{w.out(step)} = {self.activation_function('softmax')}({step.args[0]}, axis={step.fields['dim']})")

    def spell_softmax_(self, w: Any, step: Any) -> None:
        self.resolve("F.softmax_")
        w.emit(w.bind(step) + f"F.softmax_({step.args[0]}, axis={step.fields['dim']})")

    def spell_index_fill_(self, w: Any, step: Any) -> None:
        # Paddle's Tensor.index_fill_(index, axis, value): the index before the axis, where torch's
        # index_fill_(dim, index, value) puts the dimension first.
        f = step.fields
        index = self.tensor(w.literal(list(f["positions"])), "int64", False)
        w.emit(w.bind(step) + self.method(step.args[0], "index_fill_", index, str(f["dim"]), w.literal(f["value"])))

    def spell_fill_diagonal_tensor_(self, w: Any, step: Any) -> None:
        # Paddle's own in-place op (Tensor.fill_diagonal_tensor_), where torch's users copy into diagonal().
        f = step.fields
        w.emit(w.bind(step) + self.method(step.args[0], "fill_diagonal_tensor_", step.args[1],
                                          f"offset={f['offset']}", f"dim1={f['dim1']}", f"dim2={f['dim2']}"))

    def spell_requires_grad_(self, w: Any, step: Any) -> None:
        w.emit(f"{step.args[0]}.stop_gradient = {not step.fields.get('requires_grad', True)}")

    def spell_retain_grad(self, w: Any, step: Any) -> None:
        # Paddle's name for torch's retain_grad (paddle.Tensor.retain_grads, 2.5 and later).
        w.emit(w.method(step.args[0], "retain_grads"))

    def backward_gradient(self, x: str, gradient: str, retain_graph: bool) -> str:
        # paddle.Tensor.backward(grad_tensor=None, retain_graph=False): its users name the gradient grad_tensor.
        return f"{x}.backward(grad_tensor={gradient}" + (", retain_graph=True)" if retain_graph else ")")

    def inplace_activation(self, name: str, x: str) -> str:
        if not hasattr(self.fw.nn.functional, f"{name}_"):
            if hasattr(self.tensor_type, f"{name}_") or not hasattr(self.fw.nn.functional, name):
                return self.method(x, f"{name}_")  # e.g. sigmoid_: only a Tensor method
            self.require_parameter(f"F.{name}", "inplace")  # silu: F.silu(x, inplace=True), as torch's users write
            return f"F.{name}({x}, inplace=True)"
        return super().inplace_activation(name, x)

    def function(self, name: str) -> str:
        if name in ("relu", "sigmoid"):
            return self.activation_function(name)
        return super().function(name)

    def _set(self, target: str, values: Any) -> str:
        return f"{target}.set_value(np.array({lit(values)}, dtype='float32'))"

    def linear(self, out: str, weight: list, bias: list | None, device: str) -> list[str]:
        import numpy as np

        rows, cols = np.shape(weight)
        transposed = np.asarray(weight).T.tolist()  # paddle stores Linear weight as in x out
        lines = [f"{out} = nn.Linear({cols}, {rows}" + (", bias_attr=False)" if bias is None else ")"),
                 self._set(f"{out}.weight", transposed)]
        if bias is not None:
            lines.append(self._set(f"{out}.bias", bias))
        return lines

    def rnn(self, out: str, params: dict[str, list], device: str) -> list[str]:
        hidden, inputs = len(params["weight_ih"]), len(params["weight_ih"][0])
        lines = [f"{out} = nn.SimpleRNN({inputs}, {hidden}, time_major=True)"]
        lines += [self._set(f"{out}.{name}_l0", value) for name, value in params.items()]
        return lines

    #: paddle's names of a batch norm's running statistics
    buffer_names = {"running_mean": "_mean", "running_var": "_variance"}

    def batch_norm(self, out: str, params: dict[str, list], device: str, training: bool = False,
                   momentum: float = 0.1) -> list[str]:
        # paddle's momentum is the weight of the running statistic (running = momentum * running + (1 -
        # momentum) * batch; default 0.9), torch's the weight of the batch's (default 0.1)
        paddle_momentum = round(1 - momentum, 12)
        extra = "" if paddle_momentum == 0.9 else f", momentum={paddle_momentum!r}"
        lines = [f"{out} = nn.BatchNorm1D({len(params['weight'])}{extra})"]
        lines += [self._set(f"{out}.{self.buffer_names.get(name, name)}", value) for name, value in params.items()]
        return lines + [f"{out}.train()" if training else f"{out}.eval()"]

    def autocast(self, dtype: str, device: str) -> str:
        self.require_parameter("paddle.amp.auto_cast", "dtype")
        return f"with paddle.amp.auto_cast(dtype={dtype!r}):"

    module_class = "nn.Layer"
    context_marks = {"not_inplace": ("mark_not_inplace", "before")}
    function_class = "paddle.autograd.PyLayer"
    saved_tensors = "ctx.saved_tensor()"
    forward_hooks = {"pre": "register_forward_pre_hook", "post": "register_forward_post_hook"}

    def scatter_add_(self, x: str, dim: str, index: str, src: str) -> str:
        # Paddle documents the in-place scatter along an axis as put_along_axis_ with reduce='add' (2.6 to 3.3);
        # Tensor.scatter_add_ exists too in paddle 3.3, beside it.
        return self.method(x, "put_along_axis_", index, src, dim, "reduce='add'")

    def copy_into(self, target: str, source: str) -> str:
        return f"paddle.assign({source}, output={target})"

    def checkpoint_imports(self) -> list[str]:
        return []  # paddle.distributed.fleet.utils.recompute is reachable from `import paddle`

    def checkpoint_call(self, use_reentrant: bool) -> str:
        # recompute is paddle's documented activation checkpointing for dynamic graphs; use_reentrant chooses
        # the PyLayer implementation (True) or the one on saved-tensor hooks (False), as torch's does.
        self.require_parameter("paddle.distributed.fleet.utils.recompute", "use_reentrant")
        return f"paddle.distributed.fleet.utils.recompute({{fn}}, {{args}}, use_reentrant={use_reentrant})"

    def init_constant(self, tensor: str, value: str) -> str:
        # The initializer classes are paddle's documented way in every 2.x and 3.x release (paddle.nn.init,
        # with torch's names, arrived later); called on a tensor in dynamic mode they fill it in place.
        self.resolve("nn.initializer.Constant")
        return f"nn.initializer.Constant(value={value})({tensor})"

    def sgd(self, params: str, lr: str) -> str:
        return f"paddle.optimizer.SGD(learning_rate={lr}, parameters={params})"

    def zero_grad(self, optimizer: str, set_to: str | None = None) -> str:
        # Paddle's optimizer clears with clear_grad; its flag says the opposite of torch's
        # (set_to_zero=True zeroes, False releases), and it zeroes by default.
        if set_to is None:
            return f"{optimizer}.clear_grad()"
        self.require_parameter("paddle.optimizer.Optimizer.clear_grad", "set_to_zero")
        return f"{optimizer}.clear_grad(set_to_zero={set_to == 'zero'})"

    def parameter(self, module_kind: str, module: str, name: str) -> tuple[str, bool]:
        if module_kind == "batch_norm" and name in self.buffer_names:
            return f"{module}.{self.buffer_names[name]}", False
        expr, _ = super().parameter(module_kind, module, name)
        return expr, module_kind == "linear" and name == "weight"

    def version_counter(self, x: str) -> str:
        return f"{x}.inplace_version"

    def requires_grad(self, x: str) -> str:
        return f"(not {x}.stop_gradient)"

    def allocated_bytes(self, device: str) -> str | None:
        return "paddle.device.cuda.memory_allocated()" if device == "gpu" else None

    def read_values(self, tensor: Any) -> np.ndarray:
        import numpy as np

        # paddle's users read a tensor, on any device and whether it needs a gradient, with .numpy(); its
        # numpy() gives a bfloat16 tensor's bits as uint16, so they widen one to float32 first
        if tensor.dtype == self.fw.bfloat16:
            tensor = tensor.astype("float32")
        return np.array(tensor.numpy())

    def read_expression(self, x: str) -> str:
        return f"({x}.astype('float32') if {x}.dtype == paddle.bfloat16 else {x}).numpy()"

    def memory_layout(self, tensor: Any) -> tuple[int, Sequence[int], Sequence[int], int]:
        shape = tuple(tensor.shape)
        strides = tuple(getattr(tensor, "strides", ()) or ())
        if len(strides) != len(shape):  # contiguous layout when strides are not exposed
            strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
        return tensor.data_ptr(), shape, strides, tensor.element_size()
