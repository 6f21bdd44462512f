"""The adapter interface: how one framework spells what differs, and how to read its tensors.

Each op spells itself by default (``conformance/ops``).  An adapter overrides
only what its framework spells differently: a ``spell_<op>`` method for a whole
step, or one of the expression hooks below (a tensor literal, a module, an
optimizer); and it reads the framework's objects (NumPy data, memory layout,
version).  Structure, comparison and classification live once elsewhere.  This
module imports no framework; an adapter imports its framework when it is
instantiated, inside a worker.  A third party adds a framework with one module
and one entry point in the ``conformance.adapters`` group.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from conformance.records.record import split_build
from conformance.unsupported import Unsupported

if TYPE_CHECKING:  # NumPy is imported by the frameworks, in the workers; the parent looks adapters up first
    import numpy as np

    from conformance.case.model import Case
    from conformance.program.translate import Program

__all__ = ["Adapter", "ConversionFailed", "Copying", "Unsupported", "adapter_classes", "load_adapter", "installed",
           "installed_version", "missing_modules", "source_version"]

ENTRY_POINT_GROUP = "conformance.adapters"


class ConversionFailed(Exception):
    """A converter (``Adapter.converter``) failed on a program: its own failure, a finding about it."""


def lit(value: Any) -> str:
    """A Python literal for a validated number or nested list of numbers (NaN and infinities too)."""
    from conformance.program.literals import literal

    return literal(value)


@dataclass(frozen=True)
class Copying:
    """An op whose result a framework copies, and what the framework's documentation says of it."""

    #: True when the documentation says (or shows) that the result is a copy; False when it promises a view.
    documented: bool
    #: Where: the documentation page, and the sentence.
    source: str


class Adapter:
    #: The adapter's name in results and on the command line.
    name: ClassVar[str]
    #: The module to import; also how the parent checks it is installed without importing it.
    import_name: ClassVar[str]
    #: Other modules the adapter needs, checked the same way (a converter's column needs both frameworks).
    imports: ClassVar[tuple[str, ...]] = ()
    #: Distribution names whose version is the framework's version, first installed wins.
    distributions: ClassVar[tuple[str, ...]]
    #: The alias the generated code uses for the framework module.
    root: ClassVar[str]
    #: Tensor methods the framework names differently from the vocabulary (``mul_`` -> ``multiply_``).
    method_names: ClassVar[dict[str, str]] = {}
    #: Names the generated programs bind (the framework's module aliases); cases may not use them.
    reserved_names: ClassVar[tuple[str, ...]] = ()
    #: Regular expressions for the messages of the framework's autograd safety checks
    #: (version counter, in-place on a leaf or a view): a raise matching one is of kind ``autograd``.
    autograd_messages: ClassVar[tuple[str, ...]] = ()
    #: Warnings that are not about the program's values, by message pattern, with why: raised by the
    #: framework's own machinery whatever the program does (its own code using its own API, found by the
    #: warning's stack), or once per process whatever the values (so counting one would make an outcome
    #: depend on the order of the cells).  Recorded, never a ``warns``.
    machinery_warnings: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The compiled modes users of the framework choose, by name, with what each one is
    #: (``eager`` is every framework's and is not listed).
    modes: ClassVar[dict[str, str]] = {}
    #: Ops whose results the framework copies where the reference's storage model has a view (one the
    #: other framework documents), with what its documentation says: a copy it documents makes a cell
    #: whose values follow that copy ``copies``, never ``silent-wrong``; a copy where it documents a view
    #: stays wrong and says so.  The reference judges such a cell again with those results copied.
    copies: ClassVar[dict[str, "Copying"]] = {}
    #: Ops whose results the framework copies on one device only, by device, as ``copies`` says: memory a
    #: CPU shares with NumPy cannot be shared with a GPU, so a move to or from one is a copy.
    device_copies: ClassVar[dict[str, dict[str, "Copying"]]] = {}
    #: Kernels of the framework that are less exact than float32 rounding on a device, by device, then by
    #: the reference's kernel name (``Machine.in_kernel``): the largest relative error measured, and where
    #: it was measured.  The float32 spread of a cell on that device moves their results that far.
    kernel_precision: ClassVar[dict[str, dict[str, tuple[float, str]]]] = {}
    #: Ops whose backward reads other tensors in this framework than the op declares (``Op.saves``), by op
    #: name: a framework fact the scanner reasons with (tests/test_op_saves.py checks it against the framework).
    saves: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: In-place ops this framework implements no derivative for: a backward through one raises, whatever was
    #: saved (tests/test_op_saves.py checks it against the framework); the scanner reasons with it.
    no_backward: ClassVar[frozenset[str]] = frozenset()
    #: The tool that rewrites the programs before they run (a converter), or None when the harness's
    #: program runs as written.  Then a name the running program lacks is the tool's doing, a finding; only
    #: one the harness's own program lacks is a fault of the harness.
    converter: ClassVar[str | None] = None
    #: The framework whose programs a converter rewrites (PaConvert's: torch), or None: its installed version
    #: decides the programs a column holds, as the column's own version does (``source_version``).
    source: ClassVar[str | None] = None
    #: Whether each program runs in a process of its own (a fork of the worker), because a program may
    #: change the framework for those after it (a converter's helper code that patches its tensor class).
    isolated: ClassVar[bool] = False

    def __init__(self) -> None:
        self.fw = importlib.import_module(self.import_name)
        self.namespace: dict[str, Any] = {}

    def start(self) -> None:
        """Ready the adapter in its worker: the names its spellings are looked up in (``resolve``)."""
        exec("\n".join(self.prelude("cpu")), self.namespace)

    def program(self, case: Case, device: str, *, harness: bool, mode: str = "eager") -> Program:
        """The program a user of the framework writes for *case*: the harness's (with ``_step`` and
        ``_observe`` hooks), or a reproducer that prints."""
        from conformance.program.translate import translate

        return translate(case, self, device, harness=harness, mode=mode)

    def unresolved(self, program: Program) -> list[str]:
        """The framework names the harness wrote into *program* that the installed framework lacks."""
        from conformance.program.check import unresolved_names

        return unresolved_names(program.source, self.namespace)

    def facts(self) -> dict[str, str]:
        """What a record's run information adds about this column besides the framework's version."""
        return {}

    @classmethod
    def version_label(cls, version: str) -> str:
        """The version a column names, given the installed distribution's: the public release (``2.13.0``
        whether the wheel reads ``2.13.0+cpu`` or ``2.13.0``: a build is recorded beside it, by
        :meth:`build`); an adapter that runs a pair of tools names both."""
        return split_build(version)[0]

    @functools.cached_property
    def build(self) -> str:
        """Which build of the release is installed (``cpu``, ``cu128``, ``rocm6.2``): recorded beside the
        version, never part of the column.  The distribution's local label where it has one, else what the
        framework says of itself (:meth:`native_build`); read once per adapter, like :attr:`version`."""
        version = distribution_version(self.distributions) or ""
        return split_build(version)[1] or self.native_build()

    def native_build(self) -> str:
        """The build as the framework reports it, for a wheel whose version carries no label."""
        return "unknown"

    def numpy_problem(self) -> str | None:
        """None when the framework can exchange arrays with the installed NumPy, else what fails: a build
        against another NumPy ABI (torch 2.0-2.2 under NumPy 2: "Failed to initialize NumPy") fails every
        case that touches NumPy, a fault of the environment and never the framework's behaviour."""
        import numpy as np

        for route, round_trip in self.numpy_round_trips().items():
            try:
                back = np.asarray(round_trip(np.arange(3.0)))
            except Exception as exc:  # noqa: BLE001 - whatever fails here fails every cell alike
                what = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
                return (f"{self.name} {self.version} cannot use NumPy {np.__version__}: a NumPy array to a tensor "
                        f"and back ({route}) raised {type(exc).__name__}: {what[:300]}")
            if back.tolist() != [0.0, 1.0, 2.0]:
                return (f"{self.name} {self.version} cannot use NumPy {np.__version__}: [0.0, 1.0, 2.0] to a tensor "
                        f"and back ({route}) gave {back.tolist()[:10]}")
        return None

    def numpy_round_trips(self) -> dict[str, Any]:
        """Each route by which the cells take a NumPy array to a tensor and back, by the code a user writes
        (the checks of :meth:`numpy_problem`): one route that fails while another works would otherwise be
        recorded as the framework raising in every cell that takes it."""
        return {"as is": lambda array: array}

    # -- facts about the installed framework -------------------------------------

    @functools.cached_property
    def version(self) -> str:
        """The installed version, read from the distribution's metadata once per adapter (ops that depend
        on the version ask for it while each program is written)."""
        return installed_version(self) or str(getattr(self.fw, "__version__", "unknown"))

    def device_problem(self, device: str) -> str | None:
        """None when *device* can run cells, else the reason it cannot."""
        return None if device == "cpu" else f"unknown device {device!r}"

    def device_name(self, device: str) -> str | None:
        return None

    def prelude(self, device: str) -> list[str]:
        """Source lines that import the framework and select *device*."""
        raise NotImplementedError

    def mode_problem(self, mode: str, device: str) -> str | None:
        """None when *mode* can compile here, else why not (a missing compiler, say)."""
        if mode not in self.modes:
            return f"{self.name} has no mode {mode!r} (its modes: eager, {', '.join(self.modes)})"
        return None

    def compile_problem(self, mode: str, device: str) -> str | None:
        """None when the framework compiles the simplest program here in *mode*, else why not: a compiler it
        needs that is broken, a package its compiler imports that is missing.  A fault of the environment
        (every compiled cell an ``error`` naming it), never a behaviour, and checked once per worker."""
        return None

    def compile_function(self, function: str, mode: str) -> str:
        """The expression that compiles the function named *function* in *mode*."""
        raise Unsupported(f"{self.name} has no mode {mode!r}")

    def before_case(self, mode: str) -> None:
        """Reset per-process state a mode keeps between cases (compiler caches of earlier programs)."""

    def compile_failure(self, exception: BaseException) -> bool:
        """Whether *exception* came from compiling rather than from running the compiled code."""
        return False

    # -- inspection helpers: a missing API is Unsupported, found by looking --------

    def resolve(self, dotted: str) -> Any:
        """The object a dotted name in generated code refers to, or Unsupported."""
        head, *rest = dotted.split(".")
        obj = self.namespace[head]
        for i, part in enumerate(rest):
            if not hasattr(obj, part):
                raise Unsupported(f"{'.'.join([head, *rest[:i + 1]])} does not exist in "
                                  f"{self.name} {self.version}")
            obj = getattr(obj, part)
        return obj

    def resolve_first(self, *dotted: str) -> str:
        """The first of *dotted* names that exists in the installed framework (an API that moved between
        releases has several), or Unsupported naming every one looked for."""
        for name in dotted:
            try:
                self.resolve(name)
            except Unsupported:
                continue
            return name
        raise Unsupported(f"none of {', '.join(dotted)} exists in {self.name} {self.version}")

    def require_attribute(self, name: str) -> None:
        if not hasattr(self.tensor_type, name):
            raise Unsupported(f"{self.tensor_type.__module__}.{self.tensor_type.__name__} has no "
                              f"attribute {name!r} in {self.name} {self.version}")

    def require_method(self, method: str) -> None:
        if not hasattr(self.tensor_type, method):
            raise Unsupported(f"{self.tensor_type.__module__}.{self.tensor_type.__name__} has no "
                              f"method {method!r} in {self.name} {self.version}")

    def require_parameter(self, dotted: str, parameter: str) -> None:
        target = self.resolve(dotted)
        try:
            params = inspect.signature(target).parameters
        except (TypeError, ValueError):
            return  # a builtin without a signature: let the call itself answer
        if parameter not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            raise Unsupported(f"{dotted}() has no parameter {parameter!r} in {self.name} {self.version}")

    @property
    def tensor_type(self) -> type:
        """The framework's tensor class (``torch.Tensor``, ``paddle.Tensor``)."""
        return self.fw.Tensor

    # -- spellings: each returns an expression or a list of statements -------------

    def tensor(self, value: str, dtype: str, requires_grad: bool) -> str:
        """A tensor from *value*, a Python literal already spelled."""
        raise NotImplementedError

    def from_numpy(self, array: str, device: str) -> str:
        raise NotImplementedError

    def to_tensor(self, array: str, device: str) -> str:
        raise NotImplementedError

    def numpy(self, x: str, device: str) -> str:
        return f"{x}.numpy()"

    def method(self, x: str, method: str, *args: str) -> str:
        method = self.method_names.get(method, method)
        self.require_method(method)
        return f"{x}.{method}({', '.join(args)})"

    def scalar_operand(self, literal: str, like: str) -> str:
        """A number as the argument of an in-place tensor method of *like*, spelled as the
        framework's users write it so that the call works (plain Python where it accepts one)."""
        return literal

    def function(self, name: str) -> str:
        """The out-of-place function for an element-wise op, e.g. ``torch.sin``."""
        dotted = f"{self.root}.{name}"
        self.resolve(dotted)
        return dotted

    def activation_function(self, name: str) -> str:
        dotted = f"F.{name}"
        self.resolve(dotted)
        return dotted

    def inplace_activation(self, name: str, x: str) -> str:
        """The in-place activation call, e.g. ``F.relu_(x)``."""
        dotted = f"F.{name}_"
        self.resolve(dotted)
        return f"{dotted}({x})"

    def add_out(self, a: str, b: str, into: str) -> str:
        self.require_parameter(f"{self.root}.add", "out")
        return f"{self.root}.add({a}, {b}, out={into})"

    #: The framework's function for a binary op of the vocabulary, where its name differs (paddle.multiply).
    out_functions: ClassVar[dict[str, str]] = {}

    def binary_out(self, op: str, a: str, b: str, into: str) -> str:
        """The framework's function for *op* (mul, sub, matmul) writing into an out= argument."""
        dotted = f"{self.root}.{self.out_functions.get(op, op)}"
        self.require_parameter(dotted, "out")
        return f"{dotted}({a}, {b}, out={into})"

    def unary_out(self, fn: str, x: str, into: str) -> str:
        """The framework's element-wise function *fn* of *x* writing into an out= argument."""
        dotted = f"{self.root}.{fn}"
        self.require_parameter(dotted, "out")
        return f"{dotted}({x}, out={into})"

    def linear(self, out: str, weight: list, bias: list | None, device: str) -> list[str]:
        raise NotImplementedError

    def rnn(self, out: str, params: dict[str, list], device: str) -> list[str]:
        raise NotImplementedError

    def batch_norm(self, out: str, params: dict[str, list], device: str, training: bool = False,
                   momentum: float = 0.1) -> list[str]:
        """A BatchNorm1d over (N, C) with the given weight, bias and running statistics, in eval mode unless
        *training*; *momentum* as torch defines it (the weight of the batch's statistic)."""
        raise NotImplementedError

    #: Each activation module's class, and the arguments every program passes it: RReLU's lower bound
    #: equals its upper, so its slope is 0.25 and not drawn at random in training mode (the module's
    #: default mode in both frameworks).
    activation_modules: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "relu": ("ReLU", ()), "sigmoid": ("Sigmoid", ()), "tanh": ("Tanh", ()), "elu": ("ELU", ()),
        "selu": ("SELU", ()), "celu": ("CELU", ()), "rrelu": ("RReLU", ("0.25", "0.25")),
        "hardtanh": ("Hardtanh", ()), "leaky_relu": ("LeakyReLU", ())}

    def activation_module(self, kind: str, inplace: bool | None) -> str:
        cls, args = self.activation_modules[kind]
        dotted = f"nn.{cls}"
        self.resolve(dotted)
        if inplace is None:
            return f"{dotted}({', '.join(args)})"
        self.require_parameter(dotted, "inplace")
        return f"{dotted}({', '.join([*args, f'inplace={inplace}'])})"

    #: The class of modules, as generated code names it.
    module_class: ClassVar[str] = "nn.Module"
    #: The method that registers a forward hook, by when it runs (torch's names).
    forward_hooks: ClassVar[dict[str, str]] = {"pre": "register_forward_pre_hook", "post": "register_forward_hook"}

    def forward_hook(self, module: str, when: str, seen: str) -> list[str]:
        """A hook that copies the module's first input into *seen* and returns None (a hook that returns a
        value replaces the input or the output)."""
        method = self.forward_hooks[when]
        self.require_attribute_of(self.module_class, method)
        hook = f"_{seen}_hook"
        return [f"def {hook}(module, inputs, *output):",
                f"    {self.copy_into(seen, 'inputs[0].detach()')}",
                f"{module}.{method}({hook})"]

    def scatter_add_(self, x: str, dim: str, index: str, src: str) -> str:
        return self.method(x, "scatter_add_", dim, index, src)

    def tensor_hook(self, x: str, seen: str) -> list[str]:
        """A hook on tensor *x* that copies each gradient it receives into *seen* and returns None (a hook
        that returns a tensor replaces the gradient)."""
        self.require_attribute_of(f"{self.root}.Tensor", "register_hook")
        hook = f"_{seen}_hook"
        return [f"def {hook}(grad):", f"    {self.copy_into(seen, 'grad')}", f"{x}.register_hook({hook})"]

    def copy_into(self, target: str, source: str) -> str:
        return f"{target}.copy_({source})"

    def full_backward_hook(self, module: str) -> list[str]:
        self.require_attribute_of(self.module_class, "register_full_backward_hook")
        return [f"{module}.register_full_backward_hook(lambda module, grad_input, grad_output: None)"]

    def require_attribute_of(self, dotted: str, attribute: str) -> None:
        """Unsupported unless the class *dotted* names has *attribute* in the installed framework."""
        if not hasattr(self.resolve(dotted), attribute):
            raise Unsupported(f"{dotted} has no {attribute} in {self.name} {self.version}")

    #: How a custom function's context is marked, by the case language's mark: the context's method, and
    #: whether its documentation calls it before or after the forward's write (a mark it lacks: none).
    context_marks: ClassVar[dict[str, tuple[str, str]]] = {"dirty": ("mark_dirty", "after")}
    #: The base class of a custom autograd function, and the method that returns its saved tensors.
    function_class: ClassVar[str] = "torch.autograd.Function"
    saved_tensors: ClassVar[str] = "ctx.saved_tensors"

    def custom_function(self, cls: str, inplace: bool, mark: str) -> list[str]:
        """A class whose forward saves x, squares it (in place into x, or as a new tensor) and returns it;
        its backward returns g * 2 * the saved x.  A mark the framework's context lacks is Unsupported."""
        self.resolve(self.function_class)
        method, when = self.context_marks.get(mark, (None, None)) if mark != "none" else (None, None)
        if mark != "none" and method is None:
            marks = ", ".join(name for name, _ in self.context_marks.values())
            raise Unsupported(f"the context of a {self.function_class} has no mark for {mark!r} in {self.name} "
                              f"{self.version} (its marks here: {marks})")
        marked = [f"        ctx.{method}(x)"] if method else []
        write = [f"        {self.method('x', 'mul_', 'x')}" if inplace else "        x = x * x"]
        body = ["        ctx.save_for_backward(x)", *(marked + write if when == "before" else write + marked)]
        return [f"class {cls}({self.function_class}):",
                "    @staticmethod",
                "    def forward(ctx, x):",
                *body,
                "        return x",
                "    @staticmethod",
                "    def backward(ctx, g):",
                f"        x, = {self.saved_tensors}",
                "        return g * 2 * x"]

    def checkpoint_imports(self) -> list[str]:
        """What a program imports to checkpoint: ``import torch`` does not import torch.utils.checkpoint before
        torch 2.8, so its users import it themselves."""
        return ["import torch.utils.checkpoint"]

    def checkpoint_call(self, use_reentrant: bool) -> str:
        """The call of a checkpointed function (``{fn}``, ``{args}`` to fill in)."""
        importlib.import_module("torch.utils.checkpoint")  # as the program's import does, in this worker
        self.require_parameter("torch.utils.checkpoint.checkpoint", "use_reentrant")
        return f"torch.utils.checkpoint.checkpoint({{fn}}, {{args}}, use_reentrant={use_reentrant})"

    def init_constant(self, tensor: str, value: str) -> str:
        """Initialise a parameter in place with a constant, as model code does (``nn.init.constant_``)."""
        self.resolve("nn.init.constant_")
        return f"nn.init.constant_({tensor}, {value})"

    def mse_loss(self, a: str, b: str) -> str:
        self.resolve("F.mse_loss")
        return f"F.mse_loss({a}, {b})"

    def sgd(self, params: str, lr: str) -> str:
        """An SGD optimizer over *params*, an expression for a list of tensors."""
        raise NotImplementedError

    def zero_grad(self, optimizer: str, set_to: str | None = None) -> str:
        """Clear the optimizer's gradients: the call without arguments (the framework's default),
        or with the framework's argument that releases (``"none"``) or zeroes (``"zero"``) them."""
        if set_to is not None:
            raise Unsupported(f"the {self.name} adapter spells no setting for clearing gradients")
        return f"{optimizer}.zero_grad()"

    def backward(self, x: str, retain_graph: bool) -> str:
        return f"{x}.backward(retain_graph=True)" if retain_graph else f"{x}.backward()"

    def backward_gradient(self, x: str, gradient: str, retain_graph: bool) -> str:
        """``x.backward(gradient)``: the backward from *x* starting from the tensor *gradient*."""
        return f"{x}.backward({gradient}, retain_graph=True)" if retain_graph else f"{x}.backward({gradient})"

    def autocast(self, dtype: str, device: str) -> str:
        """The ``with`` line that opens a mixed-precision region on *device*."""
        self.resolve("torch.autocast")
        return f"with torch.autocast({'cuda' if device == 'gpu' else 'cpu'!r}, dtype=torch.{dtype}):"

    def no_grad(self) -> str:
        self.resolve(f"{self.root}.no_grad")
        return f"with {self.root}.no_grad():"

    def parameter(self, module_kind: str, module: str, name: str) -> tuple[str, bool]:
        """The expression for a module's parameter, and whether its layout is transposed
        relative to the neutral one (Linear weight as out x in)."""
        if module_kind == "rnn":
            return f"{module}.{name}_l0", False
        return f"{module}.{name}", False

    def version_counter(self, x: str) -> str:
        raise NotImplementedError

    def requires_grad(self, x: str) -> str:
        return f"{x}.requires_grad"

    def allocated_bytes(self, device: str) -> str | None:
        """An expression for the bytes the framework has allocated on *device*, if it reports it."""
        return None

    # -- reading framework objects (run in the worker, never in generated code) ----

    def is_tensor(self, obj: Any) -> bool:
        return isinstance(obj, self.tensor_type)

    def read_values(self, tensor: Any) -> np.ndarray:
        """A tensor's values, read as a user of the framework reads them (its exceptions, and whatever
        memory it reads, are the framework's), as a NumPy array the harness may keep."""
        raise NotImplementedError

    def read_expression(self, x: str) -> str:
        """The same read, as a reproducer spells it."""
        raise NotImplementedError

    @classmethod
    def machinery_warning(cls, message: str) -> str | None:
        """Why a warning with *message* is not about the program's values (it then does not decide the
        cell's outcome), or None.  Each entry states its evidence."""
        for pattern, why in cls.machinery_warnings:
            if re.search(pattern, message):
                return why
        return None

    def memory_layout(self, tensor: Any) -> tuple[int, Sequence[int], Sequence[int], int]:
        """(address of the first element, shape, strides in elements, bytes per element)."""
        raise NotImplementedError


def adapter_classes() -> dict[str, type[Adapter]]:
    """Registered adapters by name, without importing any framework."""
    found: dict[str, type[Adapter]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.load())
    if not found:  # running from a source tree that was never installed: the bundled adapters
        import pkgutil

        adapters = importlib.import_module("conformance.adapters")

        for info in pkgutil.iter_modules(adapters.__path__):
            module = importlib.import_module(f"{adapters.__name__}.{info.name}")
            for obj in vars(module).values():
                if isinstance(obj, type) and issubclass(obj, Adapter) and obj.__module__ == module.__name__:
                    found.setdefault(obj.name, obj)
    return found


def load_adapter(name: str) -> type[Adapter]:
    classes = adapter_classes()
    if name not in classes:
        raise KeyError(f"no adapter named {name!r}; registered: {sorted(classes)}")
    return classes[name]


def is_installed(cls: type[Adapter]) -> bool:
    return not missing_modules(cls)


def missing_modules(cls: type[Adapter]) -> list[str]:
    """The modules an adapter needs that cannot be imported here (looked up, never imported)."""
    return [name for name in (cls.import_name, *cls.imports) if importlib.util.find_spec(name) is None]


@functools.lru_cache(maxsize=None)
def installed(name: str) -> tuple[bool, str | None]:
    """Whether the adapter named *name* is registered and its framework importable, and the framework's
    version: looked up once per process (each lookup of the adapters reads every installed entry point)."""
    cls = adapter_classes().get(name)
    return (cls is not None and is_installed(cls)), (installed_version(cls) if cls is not None else None)


def source_version(name: str) -> str | None:
    """The installed version of the framework whose programs the adapter *name* converts (None for a
    framework that runs its own programs, or where that framework is not installed)."""
    cls = adapter_classes().get(name)
    source = getattr(cls, "source", None)
    return installed(source)[1] if source else None


def installed_version(cls: type[Adapter] | Adapter) -> str | None:
    return distribution_version(cls.distributions, cls.version_label)


def distribution_version(distributions: Sequence[str], label: Any = None) -> str | None:
    """The version of the first of *distributions* that is installed (passed through *label*), or None."""
    for dist in distributions:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        return label(version) if label else version
    return None
