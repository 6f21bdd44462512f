"""The prepared command for the GPU column (tools/gpu_column.sh), as it behaves on a machine without a GPU: it
stops at once with one line, and its rehearsal on the CPU runs the very commands a GPU machine runs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.records.results import read_records

from .conftest import ROOT
from .runs import QUICK, WRONG, write_case

SCRIPT = ROOT / "tools" / "gpu_column.sh"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


def run(out: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHON": sys.executable, **(env or {})}
    return subprocess.run(["bash", str(SCRIPT), *(args if args is not None else (str(out),))], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=timeout)


def cuda_visible() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
    return probe.stdout.strip() == "True"


def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in ((), (str(tmp_path / "a"), str(tmp_path / "b"))):
        done = run(tmp_path, args=args)
        assert done.returncode == 2 and done.stderr.strip() == "usage: tools/gpu_column.sh OUTDIR"


@needs_torch
def test_without_a_gpu_it_stops_at_once_with_one_line(tmp_path: Path) -> None:
    if cuda_visible():
        pytest.skip("this machine has a GPU")
    start = time.monotonic()
    done = run(tmp_path / "out")
    assert done.returncode == 3, done.stdout + done.stderr
    assert time.monotonic() - start < 60
    [line] = done.stdout.splitlines()
    assert line.startswith("no GPU is visible: torch.cuda.is_available() is False")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["baselines", "log.txt"]


@needs_torch
def test_a_rehearsal_on_the_cpu_writes_a_column_eager_first_in_at_most_8_small_files(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    write_case(cases, QUICK, "quick")
    write_case(cases, WRONG, "wrong")
    out = tmp_path / "out"
    done = run(out, env={"DEVICE": "cpu", "CASES": str(cases)})
    assert done.returncode == 0, done.stdout + done.stderr + (out / "log.txt").read_text()
    files = [p for p in out.rglob("*") if p.is_file()]  # what comes back from a GPU machine: 8 files in all
    assert 0 < len(files) <= 8 and all(p.stat().st_size < 16 * 2**20 for p in files), files
    import torch

    version = torch.__version__.split("+")[0]
    eager, compiled = out / f"torch-{version}-cpu.jsonl", out / f"torch-{version}-cpu-compiled.jsonl"
    records = list(read_records([eager]))
    assert sorted(r["case"] for r in records) == ["quick", "wrong"]
    build = f"cu{torch.version.cuda.replace('.', '')}" if torch.version.cuda else "cpu"  # PyPI's torch: a CUDA build
    assert {r["run_info"]["build"] for r in records} == {build} and all(r["run_info"]["python"] for r in records)
    assert (out / f"torch-{version}-cpu.programs.json").is_file()
    assert {r["mode"] for r in read_records([compiled])} == {"compile"}
    log = (out / "log.txt").read_text()
    assert log.index("== eager") < log.index("== compiled")  # a run cut short still leaves the eager column
    baseline = json.loads((out / "baselines" / f"torch-{version}-cpu.json").read_text())
    assert set(baseline["cells"]) == {"quick", "wrong"}


@needs_torch
def test_the_cells_that_differ_from_the_cpu_column_are_confirmed_by_their_reproducers(tmp_path: Path) -> None:
    """tools/gpu_confirm.py on the CPU: a column whose cells differ from the one it is compared with has each
    of them run again by ``conformance show``; a record that show's verdict bears out agrees, one it does not
    is named (and the exit status is 1)."""
    import torch

    version = torch.__version__.split("+")[0]
    cases = tmp_path / "cases"
    write_case(cases, QUICK, "quick")
    write_case(cases, WRONG, "wrong")
    out = tmp_path / "out"
    done = run(out, env={"DEVICE": "cpu", "CASES": str(cases), "CONFIRM_SECONDS": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    column = out / f"torch-{version}-cpu.jsonl"
    lines = column.read_text().splitlines()
    records = {json.loads(line).get("case"): json.loads(line) for line in lines if '"case"' in line}
    assert records["wrong"]["outcome"] == "silent-wrong" and records["quick"]["outcome"] == "silent-correct"
    against = tmp_path / "against"
    against.mkdir()
    # what it is compared with says otherwise of both cells; the column itself is as the run recorded it
    swapped = {"silent-wrong": "silent-correct", "silent-correct": "raises"}
    (against / column.name).write_text("\n".join(
        line.replace(f'"outcome":"{records[c]["outcome"]}"', f'"outcome":"{swapped[records[c]["outcome"]]}"')
        if c in records else line for line, c in ((line, json.loads(line).get("case")) for line in lines)) + "\n")
    (out / f"torch-{version}-cpu-compiled.jsonl").unlink()
    confirm = subprocess.run([sys.executable, "tools/gpu_confirm.py", str(out), "--device", "cpu", "--jobs", "2",
                              "--against", str(against), "--paths", str(cases)], cwd=ROOT, capture_output=True,
                             text=True, timeout=600)
    table = (out / "confirmations.txt").read_text()
    assert "2 cell(s) differ" in confirm.stdout, confirm.stdout + confirm.stderr
    assert confirm.returncode == 0 and table.count("agrees\t") == 2, table
    # a record its reproducer does not bear out
    column.write_text(column.read_text().replace('"outcome":"silent-correct"', '"outcome":"aliases"'))
    again = subprocess.run([sys.executable, "tools/gpu_confirm.py", str(out), "--device", "cpu", "--jobs", "2",
                            "--against", str(against), "--paths", str(cases)], cwd=ROOT, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 1 and "DIFFERS\tquick" in (out / "confirmations.txt").read_text()
