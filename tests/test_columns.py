"""A column is the framework's public version: the build (cpu, cu128) and NumPy are recorded beside it, so
a user's CUDA build of a committed version is checked against that version's baselines, and a column with
no baseline is named as unchecked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.records.baseline import Baselines
from conformance.records.record import Record, slim, split_build

from .conftest import INSTALLED
from .runs import QUICK, records_in, run_cli, write_case

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("version", "public", "build"), [
    ("2.13.0+cpu", "2.13.0", "cpu"),
    ("2.13.0+cu128", "2.13.0", "cu128"),
    ("2.5.1+rocm6.2", "2.5.1", "rocm6.2"),
    ("2.1.0+cpu.cxx11.abi", "2.1.0", "cpu.cxx11.abi"),
    ("2.13.0", "2.13.0", None),
    ("3.3.1+paddle3.3.1", "3.3.1+paddle3.3.1", None),  # a converter paired with its framework: another column
    ("2.13.0+gitabc123", "2.13.0+gitabc123", None),  # a source build: not the release, so its own column
    ("+cpu", "+cpu", None),
])
def test_a_build_label_is_split_from_the_version(version: str, public: str, build: str | None) -> None:
    assert split_build(version) == (public, build)


def _record(version: str, outcome: str, build: str | None = None) -> dict:
    info = {"numpy": "2.4.6", **({"build": build} if build else {})}
    return {"case": "add_out_keeps_storage", "framework": "torch", "framework_version": version,
            "device": "cpu", "outcome": outcome, "run_info": info}


def test_a_record_of_a_labelled_build_belongs_to_the_public_versions_column() -> None:
    old = Record.from_dict(_record("2.13.0+cpu", "aliases"))
    new = Record.from_dict(_record("2.13.0", "aliases", build="cu128"))
    assert old.column == new.column and old.framework_version == "2.13.0"
    assert (old.build, new.build, new.numpy) == ("cpu", "cu128", "2.4.6")
    assert slim(_record("2.13.0+cu121", "aliases")).framework_version == "2.13.0"


def test_pypis_cuda_build_of_a_committed_version_is_checked_against_its_baselines(tmp_path: Path) -> None:
    """The committed torch 2.13.0 column came from a CPU wheel; a user's PyPI wheel reads 2.13.0 (CUDA): its
    cells are checked against the same baseline, and a changed outcome fails with old vs new."""
    directory = tmp_path / "baselines"
    shutil.copytree(ROOT / "reports" / "baselines", directory)
    store = Baselines(directory)
    committed = json.loads((directory / "torch-2.13.0-cpu.json").read_text())["cells"]
    assert committed["add_out_keeps_storage"]["outcome"] == "aliases"
    assert store.check(_record("2.13.0", "aliases", build="cu128")) is None
    for version in ("2.13.0", "2.13.0+cu128"):
        change = store.check(_record(version, "copies", build="cu128"))
        assert change is not None and "changed against baseline" in change and "old: " in change, change


@pytest.mark.skipif(not INSTALLED, reason="needs torch or paddle installed")
def test_a_column_without_a_baseline_is_named_as_unchecked(tmp_path: Path) -> None:
    write_case(tmp_path / "cases", QUICK, "quick_one")
    (tmp_path / "baselines").mkdir()
    framework = INSTALLED[0]
    result = run_cli(tmp_path, "run", "cases", "--framework", framework, "--device", "cpu", "--baselines",
                     "baselines", "--results", "r.jsonl", "--summary", "s.md")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    line = next((l for l in result.stdout.splitlines() if l.startswith("unchecked: ")), None)
    assert line is not None and f"{framework} " in line and "1 cell(s) recorded, none checked" in line, result.stdout[-2000:]
    assert "no baseline" in line and "--update-baselines" in line
    assert "unchecked: " in (tmp_path / "s.md").read_text()
    record = records_in(tmp_path / "r.jsonl")[0]
    assert record["run_info"]["build"] and record["run_info"]["numpy"]
    assert "+" not in record["framework_version"]

    recorded = run_cli(tmp_path, "run", "cases", "--framework", framework, "--device", "cpu", "--baselines",
                       "baselines", "--results", "r2.jsonl", "--summary", "s2.md", "--update-baselines")
    assert recorded.returncode == 0
    checked = run_cli(tmp_path, "run", "cases", "--framework", framework, "--device", "cpu", "--baselines",
                      "baselines", "--results", "r3.jsonl", "--summary", "s3.md")
    assert checked.returncode == 0 and "unchecked: " not in checked.stdout
