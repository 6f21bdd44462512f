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
    assert {r["run_info"]["build"] for r in records} == {"cpu"} and all(r["run_info"]["python"] for r in records)
    assert (out / f"torch-{version}-cpu.programs.json").is_file()
    assert {r["mode"] for r in read_records([compiled])} == {"compile"}
    log = (out / "log.txt").read_text()
    assert log.index("== eager") < log.index("== compiled")  # a run cut short still leaves the eager column
    baseline = json.loads((out / "baselines" / f"torch-{version}-cpu.json").read_text())
    assert set(baseline["cells"]) == {"quick", "wrong"}
