"""Pipelined requests: many requests queued on one worker, and every fault still costs one request.

The pool tests use a worker without a framework (``tests/fake_worker.py``), so they run in a
fraction of a second each; the engine tests at the end run real cells through a framework.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from conformance.case.load import load_case
from conformance.engine import IN_FLIGHT, Engine, parallel_processes
from conformance.workers.pool import REFERENCE_SERVICE, WorkerCrashed, WorkerPool, WorkerTimeout

from .conftest import INSTALLED, ROOT
from .runs import FRAMEWORK, LONG, QUICK, run_cli, write_case

FAKE = "tests.fake_worker"
needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.chdir(ROOT)  # the fake worker is imported as tests.fake_worker
    pool = WorkerPool()
    yield pool
    pool.close()


def submit(pool: WorkerPool, cmd: str, label: str, timeout: float = 30, **fields) -> object:
    return pool.submit("fake", {"cmd": cmd, "label": label, **fields}, timeout, module=FAKE)


def test_queued_requests_are_answered_in_order_by_one_process(pool) -> None:
    tickets = [submit(pool, "echo", str(n)) for n in range(50)]
    replies = [pool.wait(t) for t in tickets]
    assert [r["label"] for r in replies] == [str(n) for n in range(50)]
    assert len({r["pid"] for r in replies}) == 1


def test_a_crash_mid_queue_costs_one_request_and_the_queued_ones_run_on_a_fresh_worker(pool) -> None:
    first, crash, *rest = [submit(pool, "echo", "a"), submit(pool, "crash", "boom"),
                           submit(pool, "echo", "b"), submit(pool, "sleep", "c", seconds=0.1),
                           submit(pool, "echo", "d")]
    before = pool.wait(first)["pid"]
    with pytest.raises(WorkerCrashed) as crashed:
        pool.wait(crash)
    assert crashed.value.signal == "SIGKILL" and not crashed.value.starting
    replies = [pool.wait(t) for t in rest]
    assert [r["label"] for r in replies] == ["b", "c", "d"]
    assert {r["pid"] for r in replies} == {pool.workers["fake"].pid} != {before}


def test_a_hang_mid_queue_times_out_alone(pool) -> None:
    first = submit(pool, "echo", "a")
    hang = submit(pool, "sleep", "hang", timeout=1.0, seconds=600)
    after = submit(pool, "echo", "b")
    started = time.monotonic()
    assert pool.wait(first)["label"] == "a"
    with pytest.raises(WorkerTimeout, match="1 s"):
        pool.wait(hang)
    assert pool.wait(after)["label"] == "b"
    assert time.monotonic() - started < 15


def test_a_deadline_counts_from_the_previous_reply_not_from_the_request(pool) -> None:
    """Five requests of 0.6 s queued at once, each with 1.5 s: the last is answered 3 s after it was
    sent, and still in time, since its worker could begin it only when the one before it was answered."""
    tickets = [submit(pool, "sleep", str(n), timeout=1.5, seconds=0.6) for n in range(5)]
    assert [pool.wait(t)["label"] for t in tickets] == [str(n) for n in range(5)]
    assert tickets[-1].finished - tickets[-1].submitted > 2.5
    assert all(t.seconds < 1.5 for t in tickets)


def test_the_deadline_of_the_first_request_does_not_count_the_workers_start(pool, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_WORKER_START_SECONDS", "2")
    ticket = submit(pool, "echo", "a", timeout=1.0)
    assert pool.wait(ticket)["label"] == "a"


def test_an_unreadable_reply_fails_its_request_and_the_rest_run(pool) -> None:
    bad, good = submit(pool, "garbage", "x"), submit(pool, "echo", "y")
    with pytest.raises(WorkerCrashed, match="unreadable reply"):
        pool.wait(bad)
    assert pool.wait(good)["label"] == "y"


def test_a_case_is_sent_once_per_worker_process(pool) -> None:
    case = ("case-1", {"case": {"id": "c"}, "path": "c.yaml", "lines": []})
    first, second = (pool.submit("fake", {"cmd": "echo"}, 30, case=case, module=FAKE) for _ in range(2))
    assert (pool.wait(first)["had_case"], pool.wait(second)["had_case"]) == (True, False)
    crash = submit(pool, "crash", "boom")
    again = pool.submit("fake", {"cmd": "echo"}, 30, case=case, module=FAKE)
    with pytest.raises(WorkerCrashed):
        pool.wait(crash)
    assert pool.wait(again)["had_case"] is True  # a fresh process is sent the case again


def test_closing_the_pool_ends_a_busy_worker_at_once_and_fails_what_was_queued(pool) -> None:
    hang, queued = submit(pool, "sleep", "hang", seconds=600), submit(pool, "echo", "b")
    worker = pool.workers["fake"]
    time.sleep(0.5)
    started = time.monotonic()
    pool.close()
    assert not worker.alive() and time.monotonic() - started < 5
    for ticket in (hang, queued):
        assert ticket.done.is_set() and ticket.error is not None


def test_a_worker_killed_from_outside_while_idle_is_replaced_for_the_next_request(pool) -> None:
    first = pool.wait(submit(pool, "echo", "a"))["pid"]
    os.kill(first, signal.SIGKILL)
    pool.workers["fake"].exited.wait(10)
    assert pool.wait(submit(pool, "echo", "b"))["pid"] != first


@pytest.mark.parametrize(("cells", "frameworks", "cores", "processes"), [
    (256, 2, 2, 1),  # this catalogue on two cores: one process already keeps three busy
    (256, 2, 16, 1),  # too few cells to win back another process's start-up
    (4096, 2, 16, 5),  # sixteen cores: five pipelines of three
    (4096, 1, 4, 2),
])
def test_n_auto_runs_serially_where_parallelism_cannot_pay(cells, frameworks, cores, processes) -> None:
    chosen, why = parallel_processes(cells, frameworks, cores)
    assert chosen == processes
    assert why.startswith("serial" if processes == 1 else f"{processes} processes")


# -- real cells -------------------------------------------------------------------------------------

@pytest.fixture
def engine(monkeypatch, tmp_path):
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(tmp_path / "cache"))  # every reference asked of the service
    engine = Engine(timeout=60)
    yield engine
    engine.close()


@needs_framework
def test_prefetched_cells_after_a_worker_death_mid_queue_get_their_own_outcomes(engine, tmp_path: Path) -> None:
    """Every cell queued at once; the worker is killed in the middle of the second: that cell alone is lost
    (an error: SIGKILL from outside the harness), and the cells queued behind it run on a fresh worker with
    their own outcomes."""
    cases = [load_case(write_case(tmp_path / "cases" / "t", template, name))
             for template, name in [(QUICK, "a_first"), (LONG, "b_long"), (QUICK, "c_after"), (QUICK, "d_last")]]
    engine.timeout = 10  # the reference of the long case, asked for ahead, gives up after this (not 60 s)
    engine.prefetch((case, FRAMEWORK, "cpu", "eager") for case in cases)
    worker = engine.pool.workers[FRAMEWORK]
    assert len(worker.queue) == 4  # all four were sent before any ran
    assert engine.run_cell(cases[0], FRAMEWORK, "cpu")["outcome"] == "silent-correct"
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(engine.run_cell(cases[1], FRAMEWORK, "cpu")))
    thread.start()
    time.sleep(1.5)  # the long cell is now inside its loop
    os.kill(worker.pid, signal.SIGKILL)
    thread.join(timeout=60)
    assert result["outcome"] == "error" and result["details"]["signal"] == "SIGKILL"
    after = [engine.run_cell(case, FRAMEWORK, "cpu") for case in cases[2:]]
    assert [r["outcome"] for r in after] == ["silent-correct", "silent-correct"]
    assert engine.pool.workers[FRAMEWORK].pid != worker.pid


@needs_framework
def test_a_prefetched_hang_times_out_alone(engine, tmp_path: Path) -> None:
    cases = [load_case(write_case(tmp_path / "cases" / "t", template, name))
             for template, name in [(LONG, "a_long"), (QUICK, "b_after")]]
    engine.timeout = 3
    engine.prefetch((case, FRAMEWORK, "cpu", "eager") for case in cases)
    records = [engine.run_cell(case, FRAMEWORK, "cpu") for case in cases]
    assert [r["outcome"] for r in records] == ["timeout", "silent-correct"]
    assert "3 s" in records[0]["details"]["message"]


#: A cell of some tens of milliseconds: a queue of sixty-four of them takes seconds.
SLOW = LONG.replace("a loop far longer than the test", "a loop of a few thousand adds").replace(
    "times: 1000000000", "times: 3000")


@needs_framework
def test_a_cell_sent_out_of_turn_waits_for_a_few_cells_not_for_every_cell_queued(engine, tmp_path: Path) -> None:
    """Sixty-four slow cells queued ahead; then a cell that was not (as a wrong cell's second run is sent,
    mid-run).  The worker's pipe holds at most IN_FLIGHT of the queued cells, and each reply sends the next,
    so the cell sent now is answered after those few, not after all sixty-four; and every queued cell still
    runs, in turn."""
    folder = tmp_path / "cases" / "t"
    slow = [load_case(write_case(folder, SLOW, f"slow_{n:02d}")) for n in range(64)]
    now = load_case(write_case(folder, QUICK, "sent_now"))
    engine.prefetch((case, FRAMEWORK, "cpu", "eager") for case in slow)
    assert engine.pool.unanswered(FRAMEWORK) == IN_FLIGHT
    tickets = list(engine._tickets.values())
    reply, _, _ = engine._execute_timed(now, FRAMEWORK, "cpu", "eager")  # the worker's reply, before judging
    answered = [ticket for ticket in engine._tickets.values() if ticket.done.is_set()]
    assert reply["status"] == "completed"
    assert len(answered) <= IN_FLIGHT + 2, f"{len(answered)} of the 64 queued cells ran before the cell sent now"
    assert set(tickets) <= set(engine._tickets.values())  # those sent first are still there, to be taken
    assert [engine.run_cell(case, FRAMEWORK, "cpu")["outcome"] for case in slow] == ["silent-correct"] * 64


def _wait_until(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.05)


@needs_framework
def test_references_are_computed_ahead_of_the_cells_that_need_them(engine, tmp_path: Path) -> None:
    """Prefetching cells asks the reference service for their cases at once, in order: it runs beside
    the workers instead of after them.  Once it has answered, the cells are judged even with it gone."""
    cases = [load_case(write_case(tmp_path / "cases" / "t", QUICK, f"case_{n}")) for n in range(3)]
    engine.prefetch((case, FRAMEWORK, "cpu", "eager") for case in cases)
    reference = engine.pool.workers[REFERENCE_SERVICE]
    assert len(reference.queue) == 3  # asked for before any cell was taken
    _wait_until(lambda: not reference.queue)
    reference.kill()
    assert [engine.run_cell(case, FRAMEWORK, "cpu")["outcome"] for case in cases] == ["silent-correct"] * 3


@needs_framework
def test_unread_replies_past_the_byte_bound_hold_back_further_requests(engine, tmp_path: Path,
                                                                       monkeypatch) -> None:
    """The parent's memory is bounded by the bytes of replies it has read and not taken: past the bound
    nothing more is sent; taking a reply makes room again, and every cell still gets its outcome."""
    monkeypatch.setattr("conformance.engine.REPLY_BYTES_AHEAD", 1)
    cases = [load_case(write_case(tmp_path / "cases" / "t", QUICK, f"case_{n}")) for n in range(4)]

    def sent() -> set[str]:  # the cells sent and not yet taken, by case id
        return {key[0].split(":", 1)[1] for key in engine._tickets}

    engine.prefetch([(cases[0], FRAMEWORK, "cpu", "eager")])
    worker = engine.pool.workers[FRAMEWORK]
    _wait_until(lambda: not worker.queue)  # the first reply is read, and not taken
    engine.prefetch((case, FRAMEWORK, "cpu", "eager") for case in cases[1:])
    assert sent() == {"case_0"}  # past the bound: nothing more was sent
    assert engine.run_cell(cases[0], FRAMEWORK, "cpu")["outcome"] == "silent-correct"
    # taking its reply made room: the next request went out (how many more follow depends on when the reader
    # thread reads case_1's reply, which a loaded machine can make as soon as it is sent)
    assert "case_1" in sent() and sent() <= {"case_1", "case_2", "case_3"}
    assert [engine.run_cell(case, FRAMEWORK, "cpu")["outcome"] for case in cases[1:]] == ["silent-correct"] * 3


@needs_framework
def test_n_auto_says_what_it_chose_and_gives_the_outcomes_of_a_serial_run(tmp_path: Path) -> None:
    for name in ("first", "second"):
        write_case(tmp_path / "cases", QUICK, name)
    run = run_cli(tmp_path, "run", "--framework", FRAMEWORK, "--device", "cpu", "-n", "auto")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "conformance: -n auto: serial (" in run.stdout
    assert "2 silent-correct" in run.stdout


def test_each_worker_s_program_folder_goes_with_it(pool) -> None:
    """A worker writes every program it runs into a folder of its own; the folder is removed when the
    worker is replaced (after a crash) or closed, so runs leave no files behind."""
    assert pool.wait(submit(pool, "echo", "a"))["label"] == "a"
    first = Path(pool.workers["fake"].programs)
    assert first.is_dir()
    (first / "program.py").write_text("x = 1\n")
    with pytest.raises(WorkerCrashed):
        pool.wait(submit(pool, "crash", "boom"))
    assert pool.wait(submit(pool, "echo", "b"))["label"] == "b"
    second = Path(pool.workers["fake"].programs)
    assert second != first and second.is_dir() and not first.exists()
    pool.close()
    assert not second.exists()
