"""A cell's harness program, kept compiled between runs (conformance/workers/compiled.py): written and compiled
once, run from the file its worker writes as if compiled there, and never taken for another cell's."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
import os
import re
import traceback
from pathlib import Path
from typing import Any

import pytest

from conformance.adapter import load_adapter
from conformance.cache import code_folder
from conformance.case.kept import load_checked
from conformance.workers.compiled import at_file, compile_program

from .conftest import CONVERTERS, INSTALLED, SEED

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")


class _Counted:
    """An installed adapter whose program writing is counted: the real adapter, each call passed on."""

    def __init__(self, name: str) -> None:
        self.adapter = load_adapter(name)()
        self.adapter.start()
        self.written: list[str] = []
        program = self.adapter.program

        def counted(case: Any, device: str, *, harness: bool, mode: str = "eager") -> Any:
            self.written.append(case.id)
            return program(case, device, harness=harness, mode=mode)

        self.adapter.program = counted


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (the code folders are looked up once per folder name)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(folder))
    return folder


def _entries(framework: str) -> list[str]:
    folder = code_folder("compiled")
    if not os.path.isdir(folder):
        return []
    return sorted(name for name in os.listdir(folder) if name.startswith(f"{framework}-"))


def _comparable(reply: dict) -> dict:
    """A reply without what differs between two runs of one program in one process: its time, memory
    addresses, and the serial numbers a framework gives the tensors it names (paddle's ``generated_tensor_3``)."""
    kept = {key: value for key, value in reply.items() if key != "run_seconds"}
    if "exception" in reply:
        kept["exception"] = dict(reply["exception"], message=re.sub(r"_\d+\b", "_N", reply["exception"]["message"]))
    kept["observations"] = [{key: value for key, value in o.items()
                             if key != "spans" and not (key == "value" and o.get("kind") == "address")}
                            for o in reply["observations"]]
    return kept


@needs_framework
@pytest.mark.parametrize("framework", INSTALLED)
@pytest.mark.parametrize("name", ["leaf_sin_inplace", "iadd_keeps_storage", "detach_shares_memory"])
def test_a_cell_s_program_is_written_and_compiled_once_and_the_kept_one_gives_the_same_reply(
        own_cache: Path, name: str, framework: str) -> None:
    from conformance.workers.worker import run_case

    counted = _Counted(framework)
    case = load_checked(SEED / f"{name}.yaml")
    request = {"cmd": "run", "device": "cpu", "mode": "eager", "keep_compiled": True}
    first = run_case(counted.adapter, request, case)
    assert counted.written == [name] and len(_entries(framework)) == 1
    second = run_case(counted.adapter, request, case)
    assert counted.written == [name]  # neither written nor compiled again
    assert first["status"] in ("completed", "raised") and _comparable(second) == _comparable(first)


@needs_framework
def test_a_changed_case_another_device_or_mode_never_takes_a_kept_program(own_cache: Path) -> None:
    from conformance.workers.compiled import harness_program

    counted = _Counted(INSTALLED[0])
    case = load_checked(SEED / "iadd_keeps_storage.yaml")
    from conformance.workers.worker import run_case

    run_case(counted.adapter, {"cmd": "run", "device": "cpu", "mode": "eager", "keep_compiled": True}, case)
    retitled = dataclasses.replace(case, title=case.title + ", retitled")
    retitled.__dict__.pop("_pickled", None)
    for cell, device, mode in ((retitled, "cpu", "eager"), (case, "gpu", "eager"),
                               (case, "cpu", next(iter(counted.adapter.modes)))):
        before = len(counted.written)
        _, code = harness_program(counted.adapter, cell, device, mode)
        assert code is None and len(counted.written) == before + 1, (device, mode)


@needs_framework
@pytest.mark.parametrize("spoil", ["edited", "planted"])
def test_an_entry_edited_or_planted_in_the_cache_is_written_afresh(own_cache: Path, spoil: str) -> None:
    from conformance.workers.worker import run_case

    counted = _Counted(INSTALLED[0])
    case = load_checked(SEED / "iadd_keeps_storage.yaml")
    request = {"cmd": "run", "device": "cpu", "mode": "eager", "keep_compiled": True}
    first = run_case(counted.adapter, request, case)
    [entry] = _entries(INSTALLED[0])
    path = Path(code_folder("compiled"), entry)
    sealed = path.read_bytes()
    mac, _, data = sealed.partition(b"\n")
    planted = marshal.dumps(((), (), (), frozenset(), frozenset(), (), compile("print('planted')", "x", "exec")))
    path.write_bytes(mac + b"\n" + data[:-1] + bytes([data[-1] ^ 1]) if spoil == "edited" else mac + b"\n" + planted)
    second = run_case(counted.adapter, request, case)
    assert counted.written == ["iadd_keeps_storage"] * 2 and _comparable(second) == _comparable(first)


@needs_framework
def test_a_cell_whose_engine_does_not_ask_neither_takes_nor_keeps_a_compiled_program(own_cache: Path) -> None:
    """A fuzzer's engine does not ask (``keep_compiled``): each generated program runs once
    (tests/test_fuzz.py holds that a fuzz run keeps none)."""
    from conformance.workers.worker import run_case

    counted = _Counted(INSTALLED[0])
    case = load_checked(SEED / "iadd_keeps_storage.yaml")
    for _ in range(2):
        run_case(counted.adapter, {"cmd": "run", "device": "cpu", "mode": "eager"}, case)
    assert counted.written == ["iadd_keeps_storage"] * 2 and _entries(INSTALLED[0]) == []


@pytest.mark.skipif(not CONVERTERS, reason="no converter (PaConvert) is installed")
def test_a_converter_s_program_is_never_kept(own_cache: Path) -> None:
    from conformance.workers.compiled import harness_program, keep

    adapter = load_adapter(CONVERTERS[0])()
    case = load_checked(SEED / "iadd_keeps_storage.yaml")
    program, code = harness_program(adapter, case, "cpu", "eager")
    assert code is None
    keep(adapter, case, "cpu", "eager", program, compile_program(program.source, "converted.py"))
    assert _entries(CONVERTERS[0]) == [] and not os.path.isdir(code_folder("compiled"))


def test_a_kept_program_placed_at_a_file_runs_as_if_compiled_from_it(tmp_path: Path) -> None:
    """A traceback, inspect.getsource and a compiler that reads a function's source find the new file, for
    the program and every function it defines, however deeply nested."""
    source = "def outer():\n    def inner():\n        raise ValueError('from inner')\n    return inner\n\nouter()()\n"
    kept = marshal.loads(marshal.dumps(compile_program(source, "/gone/worker-1/case.py")))
    program = tmp_path / "case.py"
    program.write_text(source, encoding="utf-8")
    namespace: dict = {"__name__": "__main__"}
    with pytest.raises(ValueError, match="from inner") as raised:
        exec(at_file(kept, str(program)), namespace)
    frames = traceback.extract_tb(raised.value.__traceback__)[1:]  # this test's own frame first
    assert [(f.filename, f.name, f.lineno) for f in frames] == [(str(program), "<module>", 6),
                                                                (str(program), "inner", 3)]
    assert inspect.getsource(namespace["outer"]) == source.split("\n\n")[0] + "\n"
    assert at_file(kept, str(program)) == compile_program(source, str(program))


def test_a_program_is_compiled_as_a_user_s_script_without_this_package_s_future_imports() -> None:
    """This package's modules import ``annotations`` from ``__future__``; a user's script does not, so an
    annotation in the program is evaluated as it runs, as it is for its user."""
    with pytest.raises(NameError, match="undefined_type"):
        exec(compile_program("x: undefined_type = 1\n", "script.py"), {})
