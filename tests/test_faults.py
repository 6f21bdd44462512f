"""Faults of the machine and of the harness, made for real: each costs its cell an ``error`` with its
cause, never a ``crash`` or ``timeout`` finding, and the run goes on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.case.load import load_case
from conformance.engine import Engine
from conformance.workers.faults import MEMORY_ENV, death_cause, out_of_memory
from conformance.workers.pool import WorkerPool, program_folder_prefix, remove_orphaned_program_folders

from .conftest import INSTALLED
from .runs import FRAMEWORK, QUICK, records_in, run_cli
from .runs import write_case as write_case_file

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")


#: 1.6 GB made five times over (a second or more of it held): a worker held to 1 GiB passes its limit.
BIG_BROADCAST = """
id: big_broadcast
title: a broadcast to 20000 x 20000 float32, five times
steps:
  - {op: full, out: a, shape: [1, 20000], value: 1.0}
  - {op: full, out: b, shape: [20000, 1], value: 2.0}
  - op: repeat
    times: 5
    steps:
      - {op: add, args: [a, b], out: c}
      - {op: sum, args: [c], out: total}
  - {observe: value, of: total}
"""


def _records(path: Path) -> list[dict]:
    return records_in(path)


@needs_framework
def test_a_framework_whose_import_fails_in_the_worker_is_an_error_for_each_cell_and_fails_the_run(
        tmp_path: Path) -> None:
    """A framework found where its import then fails (a broken install, a missing shared library): every
    cell of it is an error that says so, the run exits 1, and no cell is a crash."""
    broken = tmp_path / "site" / FRAMEWORK
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libbroken.so: cannot open shared object file')\n")
    write_case_file(tmp_path / "cases", QUICK, "first")
    write_case_file(tmp_path / "cases", QUICK, "second")
    run = run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--device", "cpu",
                  env={"PYTHONPATH": str(tmp_path / "site")})
    assert run.returncode == 1, run.stdout + run.stderr
    records = _records(tmp_path / "reports" / "results" / "latest.jsonl")
    assert [r["outcome"] for r in records] == ["error", "error"]
    for record in records:
        assert "could not start" in record["details"]["message"]
        assert "libbroken.so" in record["details"]["message"]


@needs_framework
def test_a_cell_that_runs_out_of_the_worker_s_memory_is_an_error_and_the_next_cell_runs(tmp_path: Path) -> None:
    """A real out-of-memory: the worker may hold 1 GiB, the cell broadcasts to 1.6 GB, again and again.
    The cell ends as an error naming the limit, not as a raise, a crash or a timeout."""
    write_case_file(tmp_path / "cases", BIG_BROADCAST.replace("{", "{{").replace("}", "}}")
                    .replace("id: big_broadcast", "id: {id}"), "a_too_large")
    write_case_file(tmp_path / "cases", QUICK, "b_after")
    run = run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--device", "cpu",
                  env={MEMORY_ENV: str(1 << 30)})
    records = {r["case"]: r for r in _records(tmp_path / "reports" / "results" / "latest.jsonl")}
    assert records["a_too_large"]["outcome"] == "error", records["a_too_large"]
    message = records["a_too_large"]["details"]["message"]
    assert "past its limit of 1024 MiB" in message and MEMORY_ENV in message
    assert records["b_after"]["outcome"] == "silent-correct"
    assert run.returncode == 1  # a harness error fails the run


@needs_framework
def test_a_reply_of_twenty_million_numbers_is_read_not_timed_out(tmp_path: Path, write_case) -> None:
    """Twenty observations of a million elements: the worker answers within seconds, and its reply is read
    in time linear in its size, so the cell is judged (once such a reply took 81 s to read and was a
    timeout under the default limit)."""
    steps = "\n".join(f"  - {{observe: value, of: b, name: obs{i}}}" for i in range(20))
    case = load_case(write_case(f"id: twenty\ntitle: t\nsteps:\n  - {{op: full, out: a, shape: [1000000], "
                                f"value: 0.5}}\n  - {{op: sin, args: [a], out: b}}\n{steps}\n"))
    engine = Engine(timeout=60)
    try:
        record = engine.run_cell(case, FRAMEWORK, "cpu")
    finally:
        engine.close()
    assert record["outcome"] == "silent-correct", record["details"].get("message")
    assert len(record["details"]["observations"]) == 20


def test_death_causes_that_are_not_the_framework_s() -> None:
    """Every way a worker can end a cell without a reply, and which of them is the framework's crash."""
    assert "could not start" in death_cause("torch", starting=True, signal=None, returncode=1, output="ImportError")
    assert "out-of-memory killer" in death_cause("torch", starting=False, signal="SIGKILL", returncode=-9,
                                                  output="")
    assert "out of memory" in death_cause("paddle", starting=False, signal="SIGABRT", returncode=-6,
                                          output="terminate called after throwing an instance of 'std::bad_alloc'")
    assert death_cause("torch", starting=False, signal="SIGKILL", returncode=-9, output="",
                       cause="the torch worker was out of step") == "the torch worker was out of step"
    assert death_cause("torch", starting=False, signal="SIGSEGV", returncode=-11, output="") is None  # a crash
    assert death_cause("paddle", starting=False, signal="SIGABRT", returncode=-6, output="CHECK failed") is None


@pytest.mark.parametrize(("kind", "message", "expected"), [
    ("MemoryError", "", True),
    ("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried to allocate 4000000000 bytes", True),
    ("MemoryError", "(ResourceExhausted) Fail to alloc memory of 4000000000 size, error code is 12.", True),
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB", True),
    ("RuntimeError", "one of the variables needed for gradient computation has been modified by an inplace "
                     "operation", False),
    ("ValueError", "memory layout is not contiguous", False),
])
def test_out_of_memory_is_told_by_the_exception(kind: str, message: str, expected: bool) -> None:
    assert out_of_memory(kind, message) is expected


def test_program_folders_of_a_process_that_is_gone_are_removed_and_others_kept(tmp_path: Path,
                                                                                monkeypatch) -> None:
    """A run killed with SIGKILL cannot remove its workers' program folders; the next run does."""
    import subprocess
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    from conformance.workers import pool

    monkeypatch.setattr(pool, "scratch_folder", lambda: str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    orphan = tmp_path / f"conformance-programs-{gone}-torch-abc"
    orphan.mkdir()
    (orphan / "case.py").write_text("x = 1\n")
    mine = tmp_path / f"{program_folder_prefix('paddle')}def"
    mine.mkdir()
    unrelated = tmp_path / "conformance-programs-notapid"
    unrelated.mkdir()
    assert remove_orphaned_program_folders() == [str(orphan)]
    assert not orphan.exists() and mine.exists() and unrelated.exists()


@needs_framework
def test_a_run_killed_with_sigkill_leaves_folders_that_the_next_run_removes(tmp_path: Path, monkeypatch) -> None:
    import os
    import signal
    import subprocess

    from .runs import LONG, cli_command
    from conformance.workers.pool import scratch_folder

    write_case_file(tmp_path / "cases", LONG, "long")
    # a scratch folder of its own: the runs of other tests, in parallel, sweep the shared one as they start
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("CONFORMANCE_SCRATCH_DIR", str(scratch))
    run = subprocess.Popen(cli_command("run", "cases", "--framework", FRAMEWORK, "--device", "cpu"), cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = Path(scratch_folder() or "/tmp")
    assert folder == scratch
    deadline = time.monotonic() + 120
    while not list(folder.glob(f"conformance-programs-{run.pid}-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = list(folder.glob(f"conformance-programs-{run.pid}-*"))
    assert left, "the run made no program folder"
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    time.sleep(1)  # its workers die with it (the parent-death signal)
    assert all(p.exists() for p in left)  # nothing could remove them
    WorkerPool._swept = False
    WorkerPool().close()  # what every run does first
    assert not any(p.exists() for p in left)



TOO_LARGE_TO_OBSERVE = """
    id: too_large
    title: an observation past the harness's bound
    steps:
      - {op: full, out: a, shape: [2000000], value: 1.0}
      - {observe: value, of: a}
"""
SIMPLE = """
    id: simple
    title: t
    steps:
      - {op: tensor, out: x, value: [1.0, 2.0]}
      - {op: mul, args: [x, 3.0], out: y}
      - {observe: value, of: y}
"""


def _broken_import(monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "site" / FRAMEWORK).mkdir(parents=True)
    (tmp_path / "site" / FRAMEWORK / "__init__.py").write_text("raise ImportError('no libbroken.so')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))


def _judging_fails(monkeypatch, tmp_path: Path) -> None:
    import conformance.engine

    def broken(*args, **kwargs):
        raise MemoryError("the parent could not hold the comparison")

    monkeypatch.setattr(conformance.engine, "classify", broken)


def _bookkeeping_fails(monkeypatch, tmp_path: Path) -> None:
    def broken(self, *args, **kwargs):
        raise RuntimeError("a ticket went missing")

    monkeypatch.setattr(Engine, "_execute_timed", broken)


@needs_framework
@pytest.mark.parametrize(("fault", "case", "prepare", "cause"), [
    ("the framework cannot be imported", SIMPLE, _broken_import, "could not start"),
    ("the cell needs more memory than the worker may have", BIG_BROADCAST,
     lambda mp, tmp: mp.setenv(MEMORY_ENV, str(1 << 30)), "past its limit of 1024 MiB"),
    ("an observation past the harness's bound", TOO_LARGE_TO_OBSERVE, None, "the harness reads at most"),
    ("judging fails in the parent", SIMPLE, _judging_fails, "could not judge this cell: MemoryError"),
    ("the parent's own bookkeeping fails", SIMPLE, _bookkeeping_fails, "could not run this cell"),
], ids=lambda value: value if isinstance(value, str) and " " in value else None)
def test_every_fault_of_the_harness_or_the_machine_ends_its_cell_as_an_error_with_its_cause(
        monkeypatch, tmp_path: Path, write_case, fault, case, prepare, cause) -> None:
    """The paths by which a cell's outcome is decided, each made to fail for a reason that is not the
    framework's: every one is an ``error`` naming its cause, never ``crash``, ``timeout``, ``raises``,
    ``warns`` or ``silent-wrong``.  (A worker killed from outside: test_engine; a reply out of step with the
    protocol, or a worker dying out of memory: test_death_causes_that_are_not_the_framework_s; the reference
    past its limits: test_service; float32 conditioning and the harness's own warnings: test_float32,
    test_warnings.)"""
    if prepare is not None:
        prepare(monkeypatch, tmp_path)
    engine = Engine(timeout=60)
    try:
        record = engine.run_cell(load_case(write_case(case)), FRAMEWORK, "cpu")
    finally:
        engine.close()
    assert record["outcome"] == "error", (fault, record["outcome"], record["details"])
    assert cause in record["details"]["message"]
