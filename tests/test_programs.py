"""A run keeps the program of each cell it recorded beside its results file (records/programs.py): what the
porting guide and the site show as each framework's code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.records.programs import load_programs, newest_programs, programs_path, prune_programs, write_programs

from .conftest import INSTALLED, SEED
from .runs import FRAMEWORK, run_cli

needs_framework = pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")


@needs_framework
def test_a_run_keeps_each_cell_s_program_and_its_code_beside_its_results(tmp_path: Path) -> None:
    for name in ("leaf_sin_inplace.yaml", "iadd_keeps_storage.yaml"):
        shutil.copy(SEED / name, tmp_path / name)
    results = tmp_path / "out dir" / "r.jsonl"
    ran = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "iadd_keeps_storage.yaml",
                  "--framework", FRAMEWORK, "--device", "cpu", "--results", str(results), "--no-baselines")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    kept = load_programs([results])
    assert sorted(key[4] for key in kept) == ["iadd_keeps_storage", "leaf_sin_inplace"]
    for (framework, version, device, mode, case), entry in kept.items():
        assert (framework, device, mode) == (FRAMEWORK, "cpu", "eager")
        shown = run_cli(tmp_path, "show", case, "--framework", FRAMEWORK, "--paths", ".", "--no-run").stdout
        assert entry["source"] == shown  # the reproducer `conformance show` prints
        code = entry["code"].splitlines()
        assert code and all(line in shown.splitlines() for line in code)  # its steps, in it
        assert not any(line.lstrip().startswith(("print(", "import ", "# step ")) for line in code)
    # a second run of one case keeps the other's program
    again = run_cli(tmp_path, "run", "iadd_keeps_storage.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                    "--results", str(results), "--no-baselines")
    assert again.returncode == 0 and len(load_programs([results])) == 2


@needs_framework
def test_a_run_to_dev_null_keeps_no_program(tmp_path: Path) -> None:
    shutil.copy(SEED / "leaf_sin_inplace.yaml", tmp_path / "leaf_sin_inplace.yaml")
    ran = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                  "--results", "/dev/null", "--summary", str(tmp_path / "s.md"), "--no-baselines")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert not list(tmp_path.glob("*.programs.json")) and not Path("/dev/null.programs.json").exists()


def test_the_newest_version_s_program_of_the_case_as_it_is_now_is_chosen(tmp_path: Path) -> None:
    def entry(version: str, digest: str, mode: str = "eager") -> dict:
        return {"framework": "torch", "version": version, "device": "cpu", "mode": mode, "case": "c",
                "case_digest": digest, "code": f"# {version} {digest} {mode}\n", "source": "", "unsupported": None}

    write_programs(tmp_path / "a.jsonl", [entry("2.9.1", "new"), entry("2.10.0", "old"), entry("2.10.0", "new", "compile")])
    write_programs(tmp_path / "b.jsonl", [entry("2.4.1", "new")])
    assert programs_path(tmp_path / "a.jsonl").name == "a.programs.json"
    kept = load_programs([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    chosen = newest_programs(kept, {"c": "new"})
    # the case as it is now first, then eager before a compiled mode, then the newest version
    assert chosen[("torch", "c")]["code"] == "# 2.9.1 new eager\n"
    assert newest_programs(kept, {})[("torch", "c")]["code"] == "# 2.10.0 old eager\n"
    (tmp_path / "a.programs.json").write_text("not json")
    assert load_programs([tmp_path / "a.jsonl"]) == {}  # an unreadable file keeps nothing


def test_pruning_removes_the_programs_of_cases_gone_and_keeps_the_rest_as_written(tmp_path: Path) -> None:
    results = tmp_path / "torch-2.13.0-cpu.jsonl"

    def entry(case: str) -> dict:
        return {"framework": "torch", "version": "2.13.0", "device": "cpu", "mode": "eager", "case": case,
                "case_digest": "sha256:0", "code": f"# {case}", "source": f"print({case!r})", "unsupported": None}

    write_programs(results, [entry("kept"), entry("renamed")])
    assert prune_programs(results, {"kept", "another"}) == 1
    written = programs_path(results).read_text(encoding="utf-8")
    write_programs(tmp_path / "only.jsonl", [entry("kept")])
    assert written == programs_path(tmp_path / "only.jsonl").read_text(encoding="utf-8")
    assert prune_programs(results, {"kept"}) == 0 and programs_path(results).read_text(encoding="utf-8") == written
