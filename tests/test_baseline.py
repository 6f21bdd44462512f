"""Baselines: merge on update, explicit prune, raise kinds, and the committed files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.outputs import OutputError
from conformance.records.baseline import Baselines, summarize
from conformance.records.results import load_records

from .committed import committed_results
from .conftest import fill

ROOT = Path(__file__).resolve().parents[1]


def record(case: str, outcome: str = "raises", version: str = "3.3.1", kind: str | None = None,
           **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if outcome == "raises":
        details["exception"] = {"type": "RuntimeError", "phase": "backward", "message": "modified", "step": 3,
                                "line": 9, "op": "backward", **({"kind": kind} if kind else {})}
    return {"case": case, "case_file": None, "topic": "t", "title": case, "framework": "paddle",
            "framework_version": version, "device": "cpu", "outcome": outcome, "details": details,
            "timings": {}, "run_info": {}, **extra}


def cells(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["cells"]


def test_update_on_a_subset_keeps_the_other_entries(tmp_path: Path) -> None:
    store = Baselines(tmp_path)
    everything = [record(f"case_{i:02}", "silent-correct") for i in range(17)]
    (path,) = store.update(everything)
    assert len(cells(path)) == 17
    assert store.update([record("case_03", "silent-wrong")]) == [path]
    after = cells(path)
    assert len(after) == 17
    assert after["case_03"] == {"outcome": "silent-wrong"}
    assert after["case_04"] == {"outcome": "silent-correct"}
    assert store.check(record("case_03", "silent-wrong")) is None  # the cache saw the update


def test_prune_removes_only_unknown_cases_and_says_which(tmp_path: Path) -> None:
    store = Baselines(tmp_path)
    store.update([record("kept", "aliases"), record("deleted", "copies")])
    store.update([record("kept", "aliases", version="2.6.2"), record("also_deleted", "copies", version="2.6.2")])
    (tmp_path / "notes.json").write_text('{"not": "a baseline"}')
    assert store.stale([record("kept", "aliases")]) == [f"{tmp_path / 'paddle-3.3.1-cpu.json'}: deleted"]
    removed = store.prune({"kept"})
    assert removed == [(tmp_path / "paddle-2.6.2-cpu.json", "also_deleted"),
                       (tmp_path / "paddle-3.3.1-cpu.json", "deleted")]
    assert cells(tmp_path / "paddle-3.3.1-cpu.json") == {"kept": {"outcome": "aliases"}}
    assert store.stale([record("kept", "aliases")]) == []
    assert store.prune({"kept"}) == []
    assert (tmp_path / "notes.json").read_text() == '{"not": "a baseline"}'


def test_baseline_entries_keep_the_raise_kind(tmp_path: Path) -> None:
    assert summarize(record("a", kind="autograd")) == {"outcome": "raises", "exception": "RuntimeError",
                                                       "phase": "backward", "kind": "autograd"}
    store = Baselines(tmp_path)
    (path,) = store.update([record("a", kind="autograd")])
    assert cells(path)["a"]["kind"] == "autograd"
    change = store.check(record("a", kind="rejection"))
    assert change is not None and "changed against baseline" in change
    assert '"kind": "rejection"' in change
    # the change message ends with the explanation of the new cell
    assert change.splitlines()[-2:] == ["a on paddle 3.3.1 (cpu): raises",
                                        "  RuntimeError (step 3, line 9; op backward; phase backward; "
                                        "kind rejection): modified"]


def test_an_old_entry_without_kind_is_not_a_change(tmp_path: Path) -> None:
    store = Baselines(tmp_path)
    (path,) = store.update([record("a")])
    assert "kind" not in cells(path)["a"]
    assert store.check(record("a", kind="autograd")) is None
    assert store.check(record("a", kind="other")) is None
    # and a kind in the baseline matches a record that predates kinds
    store.update([record("b", kind="autograd")])
    assert store.check(record("b")) is None
    # a real change is still one
    assert store.check(record("a", "silent-correct")) is not None


def test_a_case_whose_value_varies_by_machine_takes_either_silent_outcome_and_nothing_else(tmp_path: Path) -> None:
    """``varies_by_machine:`` (the value is the machine's BLAS kernel's): right on one CPU, wrong on another is
    one behaviour; a raise, a warning or a change of memory semantics is still a change of the framework."""
    store = Baselines(tmp_path)
    (path,) = store.update([record("blas", "silent-wrong", details={"varies_by_machine": "MKL by CPU"})])
    assert cells(path)["blas"] == {"outcome": "silent-wrong", "varies_by_machine": True}
    machine = {"varies_by_machine": "MKL by CPU"}
    assert store.check(record("blas", "silent-correct") | {"details": machine}) is None
    assert store.check(record("blas", "silent-correct")) is None  # the baseline's flag is enough
    for outcome in ("raises", "warns", "aliases"):
        assert store.check(record("blas", outcome)) is not None, outcome
    store.update([record("plain", "silent-wrong")])  # an old entry without the flag: the new record's flag
    assert store.check(record("plain", "silent-correct") | {"details": machine}) is None
    assert store.check(record("plain", "silent-correct")) is not None  # and without either, a change


def test_modes_other_than_eager_have_their_own_file(tmp_path: Path) -> None:
    store = Baselines(tmp_path)
    (path,) = store.update([record("a", "aliases", mode="compiled")])
    assert path.name == "paddle-3.3.1-cpu-compiled.json"
    assert json.loads(path.read_text())["mode"] == "compiled"
    assert store.check(record("a", "copies")) is None  # eager has no baseline here
    assert store.check(record("a", "copies", mode="compiled")) is not None


def test_committed_baselines_load_and_match_committed_results(tmp_path: Path) -> None:
    directory = tmp_path / "baselines"
    shutil.copytree(ROOT / "reports" / "baselines", directory)
    store = Baselines(directory)
    records = load_records(committed_results())
    assert records
    assert [change for r in records if (change := store.check(r))] == []
    before = {p.name: p.read_text() for p in directory.glob("*.json")}
    store.update(records)  # rewriting from the same results changes nothing
    assert {p.name: p.read_text() for p in directory.glob("*.json")} == before


def test_updating_baselines_on_a_full_filesystem_leaves_the_old_file_whole(full_filesystem: Path) -> None:
    directory = full_filesystem / "baselines"
    directory.mkdir()
    store = Baselines(directory)
    store.update([record(f"case_{n}", "raises") for n in range(40)])
    path = directory / "paddle-3.3.1-cpu.json"
    before = path.read_bytes()
    fill(full_filesystem)
    with pytest.raises(OutputError, match=f"cannot write {path}: No space left on device"):
        Baselines(directory).update([record(f"case_{n}", "silent-correct") for n in range(80)])
    assert path.read_bytes() == before and json.loads(before)["cells"]["case_0"]["outcome"] == "raises"
    with pytest.raises(OutputError):
        Baselines(directory).prune(["case_0"])
    assert path.read_bytes() == before
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".")], "a temporary file was left"
