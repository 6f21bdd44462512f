"""flake8 runs the scanner's rules (the ``IC`` codes) through the package's ``flake8.extension`` entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .test_scan_command import HAZARD, SAFE

pytest.importorskip("flake8", reason="flake8 is not installed")


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--select=IC", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_flake8_reports_what_conformance_scan_reports(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    (tmp_path / "safe.py").write_text(SAFE)
    run = flake8(tmp_path, "model.py", "safe.py")
    assert run.returncode == 1, run.stderr
    [line] = run.stdout.splitlines()
    assert line.startswith("model.py:13:9: IC101 ") and "(iadd_after_relu)" in line
    assert "torch 2.0.1–2.15.0 raises at backward" in line
    scan = subprocess.run([sys.executable, "-m", "conformance.cli", "scan", "model.py", "safe.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert scan.stdout.splitlines()[0].startswith("model.py:13:9: IC101")


def test_flake8_takes_the_question_from_its_options_and_honours_noqa(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    port = flake8(tmp_path, "--conformance-to=paddle==3.3.1", "model.py")
    assert "paddle 2.6.2–3.3.1 computes it right" in port.stdout
    (tmp_path / "quiet.py").write_text(HAZARD.replace("x += feature", "x += feature  # noqa: IC101"))
    assert flake8(tmp_path, "quiet.py").returncode == 0
    (tmp_path / "setup.cfg").write_text("[flake8]\nconformance-to = paddle\n")
    assert "paddle 2.6.2–3.3.1" in flake8(tmp_path, "model.py").stdout
