"""A cell's outcome is what its program does in a fresh interpreter, wherever it falls in a run: the same
case files run in reverse order give every cell the same outcome.  (Workers run many programs one after
the other; a framework's once-per-process warnings and its compilers' caches of earlier programs would
otherwise make a cell's outcome depend on the cells before it, ``-k``, ``-n`` and worker restarts.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import INSTALLED, ROOT
from .runs import records_in, run_cli

#: Topics whose programs share ops and shapes (equal functions for a compiler's caches), seed included.
FOLDERS = ("seed", "grads", "views")
PARAMS = [pytest.param(framework, mode, marks=pytest.mark.skipif(framework not in INSTALLED,
                                                                 reason=f"{framework} is not installed"))
          for framework, mode in (("torch", "eager"), ("torch", "compile"), ("paddle", "eager"),
                                  ("paddle", "to_static"), ("paddle", "to_static_full_graph"))]


def _outcomes(tmp_path: Path, name: str, files: list[Path], framework: str, mode: str) -> dict[str, tuple]:
    results = tmp_path / f"{name}.jsonl"
    run = run_cli(tmp_path, "run", *map(str, files), "--framework", framework, "--device", "cpu", "--mode", mode,
                  "--no-baselines", "--results", str(results), "--summary", str(tmp_path / f"{name}.md"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = records_in(results)
    return {r["case"]: (r["outcome"], r["details"].get("correct")) for r in records}


@pytest.mark.parametrize(("framework", "mode"), PARAMS)
def test_the_same_cells_in_reverse_order_give_the_same_outcomes(tmp_path: Path, framework: str, mode: str) -> None:
    files = sorted(path for folder in FOLDERS for path in (ROOT / "cases" / folder).glob("*.yaml"))
    forward = _outcomes(tmp_path, "forward", files, framework, mode)
    backward = _outcomes(tmp_path, "backward", files[::-1], framework, mode)
    assert len(forward) == len(files)
    assert {case: (forward[case], backward[case]) for case in forward if forward[case] != backward[case]} == {}
