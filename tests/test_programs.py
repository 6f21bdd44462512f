"""A run keeps the program of each cell it recorded beside its results file (records/programs.py): what the
porting guide and the site show as each framework's code."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conformance.records.programs import (ProgramSpool, keep_spooled, load_programs, newest_programs, programs_path,
                                         prune_programs, spool_path, write_programs)

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
    # a run that starts its results afresh keeps its own programs alone, as its results hold its records
    # alone (the programs before are kept beside them); a resumed one keeps those of the cells it kept
    before = programs_path(results).read_text(encoding="utf-8")
    again = run_cli(tmp_path, "run", "iadd_keeps_storage.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                    "--results", str(results), "--no-baselines")
    assert again.returncode == 0 and [key[4] for key in load_programs([results])] == ["iadd_keeps_storage"]
    assert Path(str(programs_path(results)) + ".previous").read_text(encoding="utf-8") == before
    resumed = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "iadd_keeps_storage.yaml", "--framework", FRAMEWORK,
                      "--device", "cpu", "--results", str(results), "--no-baselines", "--resume")
    assert resumed.returncode == 0 and len(load_programs([results])) == 2


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
    for odd in ('{"programs": 1}', '{"programs": {"a": 1}}', '[1, 2]', '{"programs": [1, null, "x"]}'):
        (tmp_path / "a.programs.json").write_text(odd)
        assert load_programs([tmp_path / "a.jsonl"]) == {}, odd


def test_a_program_kept_without_the_digest_of_its_case_is_not_taken_for_the_case_as_it_is(tmp_path: Path) -> None:
    """A kept program that names no case digest (written by hand, or by an old run) may be of the case as
    it was: one that names the case as it is now is chosen first, whatever its version."""
    entry = {"framework": "torch", "device": "cpu", "mode": "eager", "case": "c", "source": "", "unsupported": None}
    write_programs(tmp_path / "a.jsonl", [dict(entry, version="2.99.0", code="# no digest\n"),
                                         dict(entry, version="2.1.0", case_digest="now", code="# as it is\n")])
    chosen = newest_programs(load_programs([tmp_path / "a.jsonl"]), {"c": "now"})
    assert chosen[("torch", "c")]["code"] == "# as it is\n"


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


_COUNTING = '''\
import os

if os.environ.get("RENDER_LOG"):  # every program any process of the run writes, one line each
    import conformance.program.translate as translate

    written = translate.translate

    def counted(case, adapter, device, *, harness, **options):
        with open(os.environ["RENDER_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{case.id} {adapter.name} {'harness' if harness else 'reproducer'}\\n")
        return written(case, adapter, device, harness=harness, **options)

    translate.translate = counted
'''


def _counting_renders(folder: Path, names: list[str]) -> tuple[Path, dict[str, str]]:
    """The seed cases *names* copied into *folder*, and the environment of a run that logs every program its
    workers render (to the path returned), over a cache folder of its own: no program kept by another test."""
    for name in names:
        shutil.copy(SEED / f"{name}.yaml", folder / f"{name}.yaml")
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_COUNTING, encoding="utf-8")
    log = folder / "renders.log"
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return log, {"RENDER_LOG": str(log), "PYTHONPATH": path, "CONFORMANCE_CACHE_DIR": str(folder / "cache")}


def _renders(log: Path) -> list[str]:
    return sorted(log.read_text(encoding="utf-8").splitlines()) if log.exists() else []


@needs_framework
def test_a_run_writes_each_cell_s_reproducer_once_and_a_resumed_run_none_of_the_cells_it_keeps(tmp_path: Path) -> None:
    names = ["leaf_sin_inplace", "iadd_keeps_storage", "detach_shares_memory"]
    log, env = _counting_renders(tmp_path, names + ["clone_then_requires_grad"])
    results = tmp_path / "r.jsonl"
    ran = run_cli(tmp_path, "run", *(f"{name}.yaml" for name in names), "--framework", FRAMEWORK, "--device", "cpu",
                  "--results", str(results), "--no-baselines", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # each cell's program for its run and its reproducer, each written once, by the worker that ran the cell,
    # the one right after the other (never a second pass over the cells at the end of the run)
    assert _renders(log) == sorted(f"{name} {FRAMEWORK} {kind}" for name in names for kind in ("harness", "reproducer"))
    written = log.read_text(encoding="utf-8").splitlines()
    assert all(written[i].split()[0] == written[i + 1].split()[0] and written[i].endswith("harness")
               for i in range(0, len(written), 2))
    kept = load_programs([results])
    assert sorted(key[4] for key in kept) == sorted(names)
    assert not programs_path(results).with_name(programs_path(results).name + ".spool").exists()
    for (_, _, _, _, case), entry in kept.items():
        shown = run_cli(tmp_path, "show", case, "--framework", FRAMEWORK, "--paths", ".", "--no-run",
                        env={"CONFORMANCE_CACHE_DIR": env["CONFORMANCE_CACHE_DIR"]})
        assert shown.returncode == 0 and entry["source"] == shown.stdout  # what `conformance show` prints
    before = programs_path(results).read_text(encoding="utf-8")

    log.unlink()
    resumed = run_cli(tmp_path, "run", *(f"{name}.yaml" for name in names), "clone_then_requires_grad.yaml",
                      "--framework", FRAMEWORK, "--device", "cpu", "--results", str(results), "--no-baselines",
                      "--resume", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # the one cell it runs: the `show`s above found the programs the first run kept, so they wrote none
    assert _renders(log) == [f"clone_then_requires_grad {FRAMEWORK} harness",
                             f"clone_then_requires_grad {FRAMEWORK} reproducer"]
    after = load_programs([results])
    assert sorted(key[4] for key in after) == sorted(names + ["clone_then_requires_grad"])
    assert all(after[key] == entry for key, entry in kept.items())  # the kept cells' programs, as they were
    assert all(line in programs_path(results).read_text(encoding="utf-8").splitlines()
               for line in before.splitlines()[1:-1] if line.endswith(","))
    assert "programs:" not in resumed.stdout  # no cell without its program


@needs_framework
def test_a_later_run_takes_the_programs_an_earlier_one_wrote_and_writes_those_of_changed_cases(tmp_path: Path) -> None:
    """A program depends on the case, the framework version, device, mode and this code, never on the run: a
    second run over the same cache writes no program at all, neither a reproducer nor the one it runs (kept
    compiled: conformance/workers/compiled.py), keeps the same programs, and a case whose content changed
    gets both written afresh."""
    names = ["leaf_sin_inplace", "iadd_keeps_storage"]
    log, env = _counting_renders(tmp_path, names)

    def run(results: Path) -> dict:
        ran = run_cli(tmp_path, "run", *(f"{name}.yaml" for name in names), "--framework", FRAMEWORK, "--device",
                      "cpu", "--results", str(results), "--no-baselines", env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        return load_programs([results])

    first = run(tmp_path / "first.jsonl")
    assert sum(line.endswith("reproducer") for line in _renders(log)) == len(names)
    log.unlink()
    second = run(tmp_path / "second.jsonl")
    assert _renders(log) == []
    assert {key[4]: entry["source"] for key, entry in second.items()} == \
        {key[4]: entry["source"] for key, entry in first.items()}
    changed = tmp_path / "iadd_keeps_storage.yaml"
    changed.write_text(changed.read_text(encoding="utf-8").replace("title: ", "title: retitled, ", 1), encoding="utf-8")
    log.unlink(missing_ok=True)  # the second run wrote no program at all
    third = run(tmp_path / "third.jsonl")
    assert _renders(log) == [f"iadd_keeps_storage {FRAMEWORK} harness", f"iadd_keeps_storage {FRAMEWORK} reproducer"]
    [retitled] = [entry for key, entry in third.items() if key[4] == "iadd_keeps_storage"]
    assert "# iadd_keeps_storage: retitled, " in retitled["source"]


def _entry(case: str, text: str = "", version: str = "2.13.0") -> dict:
    return {"framework": "torch", "version": version, "device": "cpu", "mode": "eager", "case": case,
            "case_digest": "sha256:0", "code": f"# {case} {text}\n", "source": f"print({case!r}, {text!r})\n",
            "unsupported": None}


def _key(case: str, version: str = "2.13.0") -> tuple[str, str, str, str, str]:
    return ("torch", version, "cpu", "eager", case)


def test_the_spooled_programs_of_the_run_s_cells_join_those_kept_the_latest_of_a_cell_winning(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    write_programs(results, [_entry("old"), _entry("rerun", "before")])
    spool = ProgramSpool(results, shared=True)
    for entry in (_entry("rerun", "first try"), _entry("new"), _entry("rerun", "after"), _entry("errored"),
                  _entry("new", "2.12", version="2.12.0")):
        spool.add(entry)
    spool.close()
    # an error's cell and another version's are no cells of this run: their spooled programs are not kept
    assert keep_spooled(results, [_key("rerun"), _key("new"), _key("old"), _key("never written")]) == (3, 1)
    kept = load_programs([results])
    assert sorted(kept) == [_key("new"), _key("old"), _key("rerun")]
    assert kept[_key("rerun")]["code"] == "# rerun after\n" and kept[_key("old")] == _entry("old")
    assert not spool_path(results).exists()
    # the file is what write_programs writes for the same entries, byte for byte
    write_programs(tmp_path / "same.jsonl", [_entry("old"), _entry("new"), _entry("rerun", "after")])
    assert programs_path(results).read_bytes() == programs_path(tmp_path / "same.jsonl").read_bytes()


def test_a_programs_file_written_another_way_is_read_whole_and_an_unreadable_one_replaced(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    programs_path(results).write_text(json.dumps({"programs": [_entry("one_line"), _entry("b")]}), encoding="utf-8")
    spool = ProgramSpool(results, shared=False)
    spool.add(_entry("c"))
    spool.close()
    assert keep_spooled(results, [_key("c")]) == (1, 0)
    assert sorted(load_programs([results])) == [_key("b"), _key("c"), _key("one_line")]
    programs_path(results).write_text('{"programs": [\n{"case": "no column"},\nnot json\n]}\n', encoding="utf-8")
    spool = ProgramSpool(results, shared=False)
    spool.add(_entry("c", "again"))
    spool.close()
    assert keep_spooled(results, [_key("c")]) == (1, 0) and list(load_programs([results])) == [_key("c")]


@needs_framework
def test_a_fresh_run_drops_an_interrupted_run_s_spool_and_a_resumed_one_keeps_its_programs(tmp_path: Path) -> None:
    shutil.copy(SEED / "leaf_sin_inplace.yaml", tmp_path / "leaf_sin_inplace.yaml")
    results = tmp_path / "r.jsonl"
    ran = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                  "--results", str(results), "--no-baselines")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    kept = load_programs([results])
    (key, entry), = kept.items()
    # as a run killed after its cell leaves it: the cell's record written, its program spooled, not yet kept
    programs_path(results).unlink()
    ProgramSpool(results, shared=False).add(entry)
    resumed = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                      "--results", str(results), "--no-baselines", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert load_programs([results]) == kept and not spool_path(results).exists()
    # a fresh run starts with no spool: a stale program is never kept as this run's
    stale = dict(entry, case="gone", source="stale\n")
    ProgramSpool(results, shared=False).add(stale)
    again = run_cli(tmp_path, "run", "leaf_sin_inplace.yaml", "--framework", FRAMEWORK, "--device", "cpu",
                    "--results", str(results), "--no-baselines")
    assert again.returncode == 0 and load_programs([results]) == kept


def test_a_spool_path_that_is_no_regular_file_refuses_the_run_before_any_cell(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("")
    os.mkfifo(spool_path(results))
    ran = run_cli(tmp_path, "run", str(SEED / "leaf_sin_inplace.yaml"), "--framework", FRAMEWORK, "--results",
                  str(results), "--no-baselines", timeout=120)
    assert ran.returncode == 2
    assert f"cannot write {spool_path(results)}: it is not a regular file" in ran.stdout + ran.stderr
    assert results.read_text() == ""
