"""tools/confirm_reproducers.py: a changed cell is confirmed by its reproducer in a fresh interpreter only
when the reproducer does what the record says the framework did, values included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import INSTALLED, ROOT
from .runs import FRAMEWORK, records_in, run_cli, write_case

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")

CASE = """\
id: {id}
title: a gradient to confirm
steps:
  - {{op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}}
  - {{op: mul, args: [x, x], out: y}}
  - {{op: sum, args: [y], out: s}}
  - {{op: backward, args: [s]}}
  - {{observe: grad, of: x}}
  - {{observe: value, of: y}}
"""


def _confirm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "confirm_reproducers.py"), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


@needs_framework
def test_a_changed_cell_is_confirmed_by_the_values_its_reproducer_prints(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", CASE, "confirmed")
    assert run_cli(tmp_path, "run", "cases", "--framework", FRAMEWORK, "--device", "cpu",
                   "--results", "new.jsonl").returncode == 0
    [record] = records_in(tmp_path / "new.jsonl")
    assert record["outcome"] == "silent-correct"
    (tmp_path / "old.jsonl").write_text(json.dumps(dict(record, outcome="silent-wrong")) + "\n")
    confirmed = _confirm(tmp_path, "new.jsonl", "--since", "old.jsonl")
    assert confirmed.returncode == 0, confirmed.stdout + confirmed.stderr
    assert "silent-wrong → silent-correct" in confirmed.stdout and "2 of 2 values as recorded" in confirmed.stdout
    # a record whose value the framework does not compute is not confirmed
    for observation in record["details"]["observations"]:
        if observation["name"] == "grad(x)":
            observation["value"] = [2.0, 4.5]
    (tmp_path / "new.jsonl").write_text(json.dumps(record) + "\n")
    refuted = _confirm(tmp_path, "new.jsonl", "--since", "old.jsonl")
    assert refuted.returncode == 1 and "| NO |" in refuted.stdout and "1 of 2 values" in refuted.stdout


def test_a_confirmation_recorded_under_a_build_label_is_found_for_the_public_version(tmp_path) -> None:
    import json as _json

    from conformance.records.record import Record
    from conformance.report.modes import confirmation_key, load_confirmations

    record = Record(case="c", case_digest="sha256:1", framework="torch", framework_version="2.13.0", device="cpu",
                    outcome="raises", mode="compile")
    old_key = _json.dumps(["c", "sha256:1", "torch", "2.13.0+cpu", "cpu", "compile", "raises", None])
    path = tmp_path / "confirmations.jsonl"
    path.write_text(_json.dumps({"key": old_key, "confirms": True, "reproducer": "raised RuntimeError"}) + "\n")
    assert load_confirmations(path)[confirmation_key(record)] == (True, "raised RuntimeError")


@pytest.mark.parametrize(("source", "confirms"), [("assert 1 == 2\n", True), ("raise AssertionError('why')\n", True),
                                                  ("raise ValueError('other')\n", False), ("x = 1\n", False)])
def test_a_raise_is_confirmed_by_its_type_also_when_its_message_is_empty(tmp_path: Path, source: str,
                                                                         confirms: bool) -> None:
    """torch 2.1.2's compiled backward raises a bare AssertionError: the traceback's last line is the type
    alone, and that confirms a recorded AssertionError as 'AssertionError: message' does."""
    import importlib.util

    from conformance.records.record import Record

    spec = importlib.util.spec_from_file_location("confirm_reproducers", ROOT / "tools" / "confirm_reproducers.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    record = Record(case="c", framework="torch", framework_version="2.1.2", device="cpu", outcome="raises",
                    details={"exception": {"type": "AssertionError", "message": "", "phase": "backward"}})
    assert tool.confirm(record, source, None, tmp_path)[0] is confirms
