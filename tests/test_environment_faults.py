"""A framework that cannot work in its environment is never recorded as behaving: torch 2.0-2.2 were built
against NumPy 1 and, under NumPy 2, import with "Failed to initialize NumPy" and refuse every conversion
("Numpy is not available").  Each cell is then an error naming NumPy, and the run says so in one line.

It needs that environment for real: ``tox -e numpy-fault`` installs torch 2.1.2 under NumPy 2 and runs this
file (.ci/run does); elsewhere those tests are skipped, saying so.  A broken compiler is made for real anywhere
(CXX=/bin/false).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from packaging.version import Version

from .runs import records_in, run_cli

SEED = Path(__file__).resolve().parent.parent / "cases" / "seed"


def _versions() -> tuple[Version | None, Version | None]:
    found = []
    for dist in ("torch", "numpy"):
        try:
            found.append(Version(importlib.metadata.version(dist)))
        except importlib.metadata.PackageNotFoundError:
            found.append(None)
    return found[0], found[1]


TORCH, NUMPY = _versions()
NUMPY_FAULT = TORCH is not None and NUMPY is not None and TORCH.release < (2, 3) and NUMPY.release >= (2,)
needs_numpy_fault = pytest.mark.skipif(
    not NUMPY_FAULT,
    reason=f"needs torch < 2.3 under NumPy 2 (here torch {TORCH}, NumPy {NUMPY}): `tox -e numpy-fault` "
           f"installs torch 2.1.2 with NumPy 2 and runs this file")


@needs_numpy_fault
def test_torch_built_for_numpy_1_under_numpy_2_is_an_error_naming_numpy(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "run", str(SEED), "--framework", "torch", "--device", "cpu", "--no-baselines",
                     "--results", "r.jsonl", "--summary", "s.md")
    records = records_in(tmp_path / "r.jsonl")
    assert records and result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    outcomes = {record["outcome"] for record in records}
    assert outcomes == {"error"}, outcomes
    for record in records:
        assert "cannot use NumPy" in record["details"]["message"], record["details"]
        assert record["run_info"]["numpy"] == str(NUMPY)
    lines = [line for line in result.stdout.splitlines()
             if line.startswith("error: ") and "the environment is at fault" in line]
    assert len(lines) == 1 and f"torch {TORCH.public} cpu" in lines[0] and "NumPy" in lines[0], result.stdout[-3000:]
    assert "the environment is at fault" in (tmp_path / "s.md").read_text()


@needs_numpy_fault
def test_the_same_torch_under_numpy_1_is_not_at_fault(tmp_path: Path) -> None:
    """The check is of this environment, not of the torch version: the committed torch 2.1.2 column ran
    under NumPy 1.26.4 (constraints/numpy1.txt) with no error."""
    committed = Path(__file__).resolve().parent.parent / "reports" / "results" / f"torch-{TORCH.public}-cpu.jsonl"
    if not committed.is_file():
        pytest.skip(f"no committed column {committed.name}")
    records = records_in(committed)
    assert {r["run_info"]["numpy"] for r in records} == {"1.26.4"}
    assert not [r["case"] for r in records if r["outcome"] == "error"]


@pytest.mark.skipif(TORCH is None or NUMPY_FAULT, reason="torch is not installed, or cannot use this NumPy")
def test_a_compiler_that_cannot_compile_the_simplest_program_is_an_error_not_a_raise(tmp_path: Path) -> None:
    """A broken C++ compiler (CXX=/bin/false, for real) or a package torch's inductor imports that is missing
    (pkg_resources for torch 2.1): every compiled cell is an error naming it, never a raise of the case."""
    if TORCH.release < (2, 1):
        pytest.skip(f"torch {TORCH} has no torch.compile on this Python")
    result = run_cli(tmp_path, "run", str(SEED), "--framework", "torch", "--device", "cpu", "--mode", "compile",
                     "--no-baselines", "--results", "r.jsonl", "--summary", "s.md", env={"CXX": "/bin/false"})
    records = records_in(tmp_path / "r.jsonl")
    assert records and result.returncode == 1, result.stdout[-3000:]
    assert {r["outcome"] for r in records} == {"error"}
    assert all("torch.compile cannot compile x * 2 + 1 here" in r["details"]["message"] for r in records)
    lines = [line for line in result.stdout.splitlines()
             if line.startswith("error: ") and "the environment is at fault" in line]
    assert len(lines) == 1 and "compile" in lines[0] and "/bin/false" in lines[0], result.stdout[-3000:]


@pytest.mark.skipif(TORCH is None or NUMPY_FAULT, reason="torch is not installed, or cannot use this NumPy")
def test_no_c_compiler_on_the_machine_is_an_error_of_the_environment_not_a_missing_api(tmp_path: Path) -> None:
    """With no C++ compiler on PATH (and CXX empty), torch.compile cannot run here: every compiled cell is an
    error naming the missing compiler and the run fails, as for a broken one, never `unsupported` and exit 0."""
    if TORCH.release < (2, 1):
        pytest.skip(f"torch {TORCH} has no torch.compile on this Python")
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_cli(tmp_path, "run", str(SEED / "leaf_sin_inplace.yaml"), "--framework", "torch", "--device", "cpu",
                     "--mode", "compile", "--no-baselines", "--results", "r.jsonl", "--summary", "s.md",
                     env={"CXX": "", "PATH": str(empty)})
    records = records_in(tmp_path / "r.jsonl")
    assert records and result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert {r["outcome"] for r in records} == {"error"}
    assert all("needs a C++ compiler on a CPU, and none was found" in r["details"]["message"] for r in records)
    assert any("the environment is at fault" in line for line in result.stdout.splitlines())


@pytest.mark.skipif(TORCH is None or NUMPY_FAULT, reason="torch is not installed, or cannot use this NumPy")
def test_the_environment_check_takes_every_route_from_an_array_the_cells_take(monkeypatch) -> None:
    """A torch whose torch.tensor of an ndarray fails while from_numpy(a).numpy() works (a build at odds with
    this NumPy) would record `raises` in every cell that writes torch.tensor(a): the check takes each route
    (from_numpy, tensor, as_tensor) and names the one that fails, so those cells are errors of the environment."""
    import numpy as np

    from conformance.adapters.torch import TorchAdapter

    adapter = TorchAdapter()
    adapter.start()
    assert adapter.numpy_problem() is None
    real = adapter.fw.tensor

    def refusing(data, *args, **kwargs):  # what such a build does with an array, and only with an array
        if isinstance(data, np.ndarray):
            raise RuntimeError("Could not infer dtype of numpy.ndarray")
        return real(data, *args, **kwargs)

    monkeypatch.setattr(adapter.fw, "tensor", refusing)
    problem = adapter.numpy_problem()
    assert problem is not None and "(torch.tensor(a).numpy()) raised RuntimeError: Could not infer dtype" in problem
