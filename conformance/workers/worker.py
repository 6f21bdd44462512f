"""The worker process: imports one framework once and runs cases for the parent.

Protocol: one JSON request per line on stdin, one JSON reply per line on a
private copy of stdout.  File descriptors 1 and 2 are redirected to a temporary
file while a case runs, so native output (glog lines, C++ prints) is recorded
with that case instead of corrupting the protocol.

Run as ``python -m conformance.worker FRAMEWORK``.
"""

from __future__ import annotations

import atexit
import functools
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from conformance.adapter import Adapter, ConversionFailed, load_adapter
from conformance.case.model import Case, case_from_message
from conformance.judge.raises import raise_kind
from conformance.ops import OBSERVATIONS
from conformance.ops.observations import MAX_OBSERVED_ELEMENTS
from conformance.program.check import bound_names
from conformance.workers.arrays import pack
from conformance.workers.compiled import at_file, compile_program, harness_program, keep
from conformance.workers.isolated import in_fork
from conformance.workers.faults import out_of_memory
from conformance.workers.visibility import hidden_by
from conformance.recent import Recent
from conformance.workers.pool import CASES_KEPT, PROGRAMS_ENV, program_folder_prefix, scratch_folder

if TYPE_CHECKING:
    from conformance.program.translate import Program

__all__ = ["main"]

MAX_NATIVE_OUTPUT = 8000


#: A tensor dtype NumPy has no type for, by the name both frameworks print (``torch.bfloat16``,
#: ``paddle.bfloat16``): read widened to float32, judged with that dtype's tolerance.
_LOW_PRECISION = {"bfloat16": "bfloat16"}

class HarnessFault(Exception):
    """A fault of the harness (not of the framework) while reading a result."""


class _Run:
    """The state of one case execution: current step, observations, warnings."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.step = 0
        self.iteration: list[int] = []
        self.observations: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []  # raised by the case's own steps: they decide ``warns``
        self.ignored_warnings: list[dict[str, Any]] = []  # raised by something else, with why
        self.reading = False  # the harness is reading an observation
        self.observing = False  # the harness is evaluating what an observation reads (t.grad, t._version)
        self.addresses: dict[str, list[int] | None] = {}
        self.phase: str | None = None  # "compiled": the running step is a call of a compiled function
        #: The warning filters a user's program starts with (taken before the harness records every warning),
        #: and the program's own file (its module is __main__): a warning they hide is not the user's.
        self.filters = list(warnings.filters)
        self.main_file: str | None = None

    def mark(self, number: int, iteration: tuple[int, ...] = (), phase: str | None = None) -> None:
        self.step = number
        self.iteration = list(iteration)
        self.phase = phase

    def warned(self, message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
               line: Any = None) -> None:
        """``warnings.showwarning`` while the case runs: called where the warning is raised, so the
        stack says whether the case's own step raised it."""
        entry = {"step": self.step, "category": category.__name__, "message": str(message)}
        why = self._not_the_cases(sys._getframe(1), str(message))
        if why is None:
            try:
                why = hidden_by(self.filters, category, message, filename, lineno, self.main_file)
            except Exception as exc:  # noqa: BLE001 - never into the user's program: then counted as seen
                entry["visibility"] = f"not known ({type(exc).__name__}: {exc}); counted as seen"
        if why is None:
            self.warnings.append(entry)
        else:
            self.ignored_warnings.append(dict(entry, why=why))

    def _not_the_cases(self, frame: Any, message: str) -> str | None:
        """Why a warning is not one the case's own steps raised (None when it is)."""
        if self.reading:
            return "raised while the harness read an observation"
        if self.observing:
            return ("raised by the read an observation makes (such as t.grad of a non-leaf), not by a step of "
                    "the case")
        if self.step == 0:
            return "raised before the case's first step, while the program set itself up"
        while frame is not None:
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return ("raised while a module was imported: a lazy import warns once per process, so "
                        "counting it would make an outcome depend on the order of the cells")
            frame = frame.f_back
        return self.adapter.machinery_warning(message)

    def observe(self, key: str, kind: str, getter: Callable[[], Any], transposed: bool,
                since: str | None = None) -> None:
        self.observing = True
        try:
            obj = getter()  # the framework's own action: an exception here is the framework's
        finally:
            self.observing = False
        reads = OBSERVATIONS[kind].reads if kind in OBSERVATIONS else "int"
        held_as = None  # a dtype NumPy has no type for (bfloat16): the tensor's, read widened
        if reads == "array" and obj is not None and self.adapter.is_tensor(obj):
            held_as = _LOW_PRECISION.get(str(obj.dtype).rsplit(".", 1)[-1])
            obj = self.adapter.read_values(obj)  # as a user of the framework reads them: theirs too
        self.reading = True
        try:
            record = {"name": key, "kind": kind, "step": self.step}
            record.update(self.read(key, reads, obj, transposed, since))
            if held_as and "dtype" in record:
                record["dtype"] = held_as
        except HarnessFault:
            raise
        except Exception as exc:
            raise HarnessFault(f"reading observation {key!r}: {type(exc).__name__}: {exc}") from exc
        finally:
            self.reading = False
        self.observations.append(record)

    def read(self, key: str, reads: str, obj: Any, transposed: bool, since: str | None) -> dict[str, Any]:
        """The observed object as data (an array's values, dtype and shape; an overlap; an int or bool)."""
        if reads == "array":
            if obj is None:
                return {"value": None}
            if isinstance(obj, np.generic):  # a NumPy scalar (an array indexed to one element) is a 0-d value
                obj = np.asarray(obj)
            if not isinstance(obj, np.ndarray):
                raise HarnessFault(f"observation {key!r} is a {type(obj).__name__}, not an array or a tensor")
            array = obj
            if array.size > MAX_OBSERVED_ELEMENTS:
                raise HarnessFault(f"observation {key!r} has {array.size} elements; the harness reads at "
                                   f"most {MAX_OBSERVED_ELEMENTS} per observation")
            if transposed:
                array = array.T
            if np.iscomplexobj(array):  # as its (real, imag) pairs, the layout the reference holds (ops/complex.py)
                array = np.stack((array.real, array.imag), axis=-1)
            return {"value": pack(array), "dtype": str(array.dtype), "shape": list(array.shape)}
        if reads == "overlap":
            spans = [self.span(obj), self.addresses[since]] if since else [self.span(item) for item in obj]
            return {"value": _overlap(*spans), "spans": spans}
        if reads == "address":
            span = self.span(obj)
            self.addresses[key] = span
            return {"value": span}
        if reads == "int":
            return {"value": None if obj is None else int(obj)}
        return {"value": bool(obj)}

    def span(self, obj: Any) -> list[int] | None:
        """[first byte, one past the last byte] that *obj*'s elements occupy."""
        if isinstance(obj, np.ndarray):
            ptr, shape, itemsize = obj.__array_interface__["data"][0], obj.shape, obj.itemsize
            strides = [s // itemsize for s in obj.strides]
        elif self.adapter.is_tensor(obj):
            ptr, shape, strides, itemsize = self.adapter.memory_layout(obj)
        else:
            raise TypeError(f"cannot locate the memory of a {type(obj).__name__}")
        if not ptr or 0 in shape:
            return None
        low = ptr + itemsize * sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        high = ptr + itemsize * (1 + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0))
        return [int(low), int(high)]


def _overlap(a: list[int] | None, b: list[int] | None) -> bool:
    return bool(a and b and a[0] < b[1] and b[0] < a[1])


class _CapturedOutput:
    """Redirect fds 1 and 2 into a temporary file for the duration of a case (one file for the
    worker's life, emptied for each case)."""

    _file: Any = None

    @classmethod
    def file(cls) -> Any:
        """The capture file, made now if it is not yet: a forked program writes to the worker's, which the
        worker reads when the program's process dies."""
        if cls._file is None:
            cls._file = tempfile.TemporaryFile(dir=scratch_folder())
        return cls._file

    def __enter__(self) -> "_CapturedOutput":
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = _CapturedOutput.file()
        self.file.seek(0)
        self.file.truncate()
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        size = self.file.seek(0, os.SEEK_END)
        self.file.seek(max(0, size - 4 * MAX_NATIVE_OUTPUT))  # the tail is what is kept
        data = self.file.read()
        self.text = data.decode("utf-8", "replace")[-MAX_NATIVE_OUTPUT:]


def run_case(adapter: Adapter, request: dict[str, Any], case: Case | None = None) -> dict[str, Any]:
    """Translate and execute one case (*case*, else the one the request carries); report what the
    framework did, unjudged.  A request that asks to ``keep`` the cell's program also gets its reproducer
    (``kept``: what ``conformance show`` prints), written here, once, by the process that has the framework
    imported, instead of by a request of its own when the run ends."""
    case = case if case is not None else case_from_message(request)
    reply = _run(adapter, request, case)
    if request.get("keep") and reply["status"] in ("completed", "raised", "unsupported"):
        try:
            reply["kept"] = _render(adapter, case, request)
        except Exception:  # noqa: BLE001 - a reproducer that cannot be written is not kept; the cell stands
            pass
    return reply


def _run(adapter: Adapter, request: dict[str, Any], case: Case) -> dict[str, Any]:
    device = request["device"]
    problem = adapter.device_problem(device)
    if problem:
        return {"status": "skipped", "reason": problem}
    mode = request.get("mode", "eager")
    keeps_compiled = bool(request.get("keep_compiled"))  # the engine's say (a fuzzer's programs run once)
    try:
        program, code = (harness_program(adapter, case, device, mode) if keeps_compiled
                         else (adapter.program(case, device, harness=True, mode=mode), None))
    except ConversionFailed as exc:  # the converter's own failure on the program: what its user meets
        return {"status": "raised", "step": 0, "iteration": [], "exception": {
            "type": _type_name(exc.__cause__ or exc), "message": str(exc)[:4000], "kind": "other",
            "phase": "conversion"}, "observations": [], "warnings": []}
    if program.unsupported:
        return {"status": "unsupported", "reason": program.unsupported, "step": program.unsupported_step}
    fresh = code is None  # written just now: compiled below, and kept once it ran (compiled.py)
    compilers = dict.fromkeys(([mode] if mode != "eager" else []) + list(program.compiles))
    broken = next(filter(None, (adapter.compile_problem(m, device) for m in compilers)), None)
    if broken is not None:  # a compiler that cannot compile the simplest program runs no case
        return {"status": "error", "message": broken, "environment": broken}
    run = _Run(adapter)
    for compiled_by in compilers or [mode]:  # the caches of every compiler the program calls
        adapter.before_case(compiled_by)
    filename = run.main_file = _source_file(case.id, program.source)
    # The program runs as a user's script does: as __main__, from its file.
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": filename, "__builtins__": __builtins__,
                                 "_step": run.mark, "_observe": run.observe}
    reply: dict[str, Any] = {"status": "completed"}
    started = time.perf_counter()
    with _CapturedOutput() as output, warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = run.warned
        try:
            code = compile_program(program.source, filename) if fresh else at_file(code, filename)
            exec(code, namespace)  # a kept program's code, placed at this file: as if compiled from it
        except HarnessFault as exc:
            reply = {"status": "error", "message": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - whatever the framework raised is the finding
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            reply = _raised(adapter, run, exc, filename, program)
            if isinstance(exc, AttributeError) or run.phase == "compiled":  # how a misspelt name shows
                missing = adapter.unresolved(program)
                if missing:
                    reply = {"status": "error", "message": f"the generated program refers to {', '.join(missing)}, "
                             f"which {adapter.name} {adapter.version} does not have: a fault of the {adapter.name} "
                             f"adapter"}
    reply.update(observations=run.observations, warnings=run.warnings, native_output=output.text,
                 run_seconds=time.perf_counter() - started)
    if keeps_compiled and fresh and code is not None:  # it compiled: the next run of the cell takes it as it is
        keep(adapter, case, device, mode, program, code)
    if run.ignored_warnings:
        reply["ignored_warnings"] = run.ignored_warnings
    if program.conversion is not None:
        reply["conversion"] = program.conversion
    return reply


def _sources_folder() -> str:
    """Where the programs are written: the folder the parent made for this worker (it removes it), else
    one of our own, removed at exit."""
    folder = os.environ.get(PROGRAMS_ENV, "")
    if folder and os.path.isdir(folder):
        return folder
    folder = tempfile.mkdtemp(prefix=program_folder_prefix("worker"), dir=scratch_folder())
    atexit.register(shutil.rmtree, folder, True)
    return folder


_SOURCES = _sources_folder()


def _source_file(case_id: str, source: str) -> str:
    """The program as a real file, as a user has it: compilers that read source (paddle.jit.to_static,
    inspect.getsource) find it there, and tracebacks point into it."""
    path = os.path.join(_SOURCES, f"{case_id}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    return path


def _raised(adapter: Adapter, run: _Run, exc: BaseException, filename: str,
            program: Program | None = None) -> dict[str, Any]:
    """What an exception from the running program was: the framework's (or its converter's), or the
    harness's own fault."""
    if isinstance(exc, NameError) and _innermost_file(exc) == filename and not _lost_by_converter(
            adapter, exc, program):
        return {"status": "error", "message": f"the generated program raised {type(exc).__name__}: {exc} "
                f"(step {run.step}): a fault of the {adapter.name} adapter, not of {adapter.name}"}
    type_name = _type_name(exc)
    message = str(exc)[:4000]
    if out_of_memory(type_name, message):  # the machine's limit, not the framework's behaviour
        return {"status": "error", "step": run.step,
                "message": f"step {run.step} ran out of memory ({type_name}: {first_line(message)}): a limit of the "
                           f"machine, not a behaviour of {adapter.name}"}
    exception = {"type": type_name, "message": message,
                 "kind": raise_kind(type_name, message, adapter.autograd_messages)}
    if run.phase == "compiled":  # the call of a compiled function: compiling it, or running it
        exception["phase"] = "compilation" if adapter.compile_failure(exc) else "compiled-call"
    return {"status": "raised", "step": run.step, "iteration": run.iteration, "exception": exception}


def _type_name(exc: BaseException) -> str:
    """``RuntimeError``, ``torch._dynamo.exc.Unsupported``: an exception's type as records name it."""
    return f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")


def _lost_by_converter(adapter: Adapter, exc: NameError, program: Program | None) -> bool:
    """Whether a name the running program lacks is one the harness's program bound, which a converter lost
    (a finding about the converter); a name the harness's program never bound is the harness's slip."""
    if adapter.converter is None or program is None or program.original is None:
        return False
    return getattr(exc, "name", None) in bound_names(program.original.source)


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def _innermost_file(exc: BaseException) -> str | None:
    """The file of the frame that raised *exc* (without reading any source, as a formatted traceback would)."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename


def hello(adapter: Adapter, import_seconds: float, import_warnings: list[str],
          devices: list[str]) -> dict[str, Any]:
    return {
        "framework": adapter.name,
        "framework_version": adapter.version,
        "import_seconds": import_seconds,
        "import_warnings": import_warnings,
        "devices": {d: adapter.device_problem(d) for d in devices},
        "device_names": {d: adapter.device_name(d) for d in devices if adapter.device_problem(d) is None},
        "python": platform.python_version(),
        "numpy": np.__version__,
        "build": adapter.build,
        "environment_problem": adapter.numpy_problem(),
        "pid": os.getpid(),
        "facts": adapter.facts(),
    }


def main(argv: list[str] | None = None) -> int:
    from conformance.workers.pool import ParentLines, bind_to_parent  # the lifecycle contract

    bind_to_parent()  # before the framework import, which takes seconds: never outlive the parent
    requests = ParentLines(sys.stdin.buffer)  # from now on, the parent closing stdin ends this process
    argv = sys.argv[1:] if argv is None else argv
    framework = argv[0]
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        adapter = load_adapter(framework)()
    import_warnings = [f"{w.category.__name__}: {w.message}" for w in log]
    adapter.start()
    _freeze_what_lasts()
    greeting = hello(adapter, time.perf_counter() - started, import_warnings, ["cpu", "gpu"])
    protocol.write(json.dumps(greeting) + "\n")
    # A framework that cannot work in this environment (it cannot use the installed NumPy) runs no case:
    # each cell is an error naming the cause, never a behaviour of the framework.
    environment = greeting["environment_problem"]
    # A case is sent once per process, under a key; later requests name the key.  The most recently named
    # CASES_KEPT are kept, as the parent's record of what it sent (Worker.defined) keeps them, in step.
    cases: Recent[Any, Case] = Recent(CASES_KEPT)
    for served, line in enumerate(requests, 1):  # ends, or exits mid-cell, when the parent goes
        request = json.loads(line)
        try:
            key = request.get("case_key")
            if key is not None and "case" in request:
                cases[key] = case_from_message(request)
            elif key in cases:
                cases.move_to_end(key)
            if environment is not None and request["cmd"] in ("run", "render"):
                reply = {"status": "error", "message": environment, "environment": environment}
            elif request["cmd"] == "run":
                if key is not None and key not in cases:
                    raise KeyError(f"case key {key!r} was never sent to this worker")
                run = functools.partial(run_case, adapter, request, cases.get(key))
                reply = in_fork(run, adapter.name, _CapturedOutput.file()) if adapter.isolated else run()
            elif request["cmd"] == "render":
                render = functools.partial(_render, adapter, case_from_message(request), request)
                reply = in_fork(render, adapter.name, _CapturedOutput.file()) if adapter.isolated else render()
            else:
                reply = {"status": "error", "message": f"unknown command {request['cmd']!r}"}
        except Exception:  # noqa: BLE001 - a harness fault, reported as such
            reply = {"status": "error", "message": traceback.format_exc(limit=6)}
        if "id" in request:
            reply["id"] = request["id"]  # the parent checks that replies come in the order of requests
        protocol.write(json.dumps(reply) + "\n")
        if served & (served - 1) == 0:  # after requests 1, 2, 4, 8...
            _freeze_what_lasts(collect=True)
    return 0


def _render(adapter: Adapter, case: Case, request: dict[str, Any]) -> dict[str, Any]:
    """A case's reproducer: the program that prints its observations."""
    program = adapter.program(case, request["device"], harness=False, mode=request.get("mode", "eager"))
    return {"source": program.source, "code": program.code, "unsupported": program.unsupported}


def _freeze_what_lasts(collect: bool = False) -> None:
    """Put the objects alive now out of the garbage collector's sight: the framework, then what it
    imports lazily during the first cells, and the cases kept.  They live as long as this process, and
    every collection the cells' objects set off would walk them all again (0.9 s of a torch worker's
    6 s on a 3,000-cell run).  *collect*: first free the garbage of the cells so far, so that none is frozen."""
    if collect:
        gc.collect()
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
