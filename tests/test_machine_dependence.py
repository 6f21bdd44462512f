"""A case whose value is the machine's BLAS kernel's (``varies_by_machine:``), run as the README's main job runs it.

``torch.matmul(a, b, out=a)`` gives zeros with the kernel MKL picks on the AMD EPYC the committed columns were
recorded on, and the right product with the kernel it picks for an Intel CPU.  MKL asks one function of its own
whether the CPU is Intel's; a library that answers yes, loaded first, makes it take that path on any x86 CPU, so
both machines can be seen here.  On either, the run must not report a change of torch against the baseline."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.adapter import installed

from .conftest import INSTALLED, ROOT
from .runs import records_in, run_cli

CASE = ROOT / "cases" / "device" / "matmul_out_names_its_input.yaml"
#: MKL's own question "is this an Intel CPU?", answered yes.
INTEL_ANSWER = "int mkl_serv_intel_cpu_true(void) { return 1; }\n"

pytestmark = [pytest.mark.skipif("torch" not in INSTALLED, reason="torch is not installed"),
              pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) to build MKL's vendor answer")]


def _intel_answer(folder: Path) -> Path:
    source, library = folder / "intel_answer.c", folder / "intel_answer.so"
    source.write_text(INTEL_ANSWER)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True)
    return library


def _baseline(folder: Path, outcome: str) -> Path:
    """The torch column's baseline as committed (written afresh, so that the installed torch has one)."""
    version = installed("torch")[1]
    folder.mkdir(exist_ok=True)
    (folder / f"torch-{version}-cpu.json").write_text(json.dumps(
        {"framework": "torch", "version": version, "device": "cpu",
         "cells": {"matmul_out_names_its_input": {"outcome": outcome}}}))
    return folder


def _run(tmp_path: Path, baselines: Path, library: Path, name: str):
    results = tmp_path / f"{name}.jsonl"
    run = run_cli(tmp_path, "run", str(CASE), "--framework", "torch", "--device", "cpu", "--results", str(results),
                  "--summary", str(tmp_path / f"{name}.md"), "--baselines", str(baselines),
                  env={"LD_PRELOAD": str(library)})
    (record,) = records_in(results)
    return run, record


def test_the_right_product_on_mkls_intel_path_is_no_change_against_a_baseline_of_zeros(tmp_path: Path) -> None:
    library = _intel_answer(tmp_path)
    run, record = _run(tmp_path, _baseline(tmp_path / "wrong", "silent-wrong"), library, "intel")
    if record["outcome"] == "silent-wrong":
        pytest.skip("MKL did not take its Intel path (a torch without MKL, or an MKL that asks otherwise)")
    assert record["outcome"] == "silent-correct", record
    assert "MKL" in record["details"]["varies_by_machine"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # the baseline is read: a raise recorded there is a change, on this machine as on any other
    run, record = _run(tmp_path, _baseline(tmp_path / "raised", "raises"), library, "raised")
    assert run.returncode == 1 and "changed against baseline" in run.stdout, run.stdout[-3000:]
