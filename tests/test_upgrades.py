"""The upgrade chain (each release against the one before it) and the diff against the nearest committed
column, as a maintainer on one version runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.report.diff import BadInput, load_side
from conformance.report.upgrades import nearest_side, upgrade_chain

from .test_diff import raised, record, write


def column(tmp_path: Path, version: str, outcomes: dict[str, str], framework: str = "paddle",
           device: str = "cpu") -> Path:
    records = [record(case, outcome, framework=framework, version=version, device=device,
                      **(raised() if outcome == "raises" else {}))
               for case, outcome in outcomes.items()]
    return write(tmp_path / f"{framework}-{version}-{device}.jsonl", records)


@pytest.fixture
def line(tmp_path: Path) -> list[Path]:
    """paddle 3.0.0 -> 3.1.0 (a cell becomes wrong) -> 3.2.0 (nothing changes), a GPU column that only
    skipped, and a torch column of its own."""
    return [column(tmp_path, "3.1.0", {"a": "silent-wrong", "b": "copies"}),
            column(tmp_path, "3.0.0", {"a": "raises", "b": "copies"}),
            column(tmp_path, "3.2.0", {"a": "silent-wrong", "b": "copies"}),
            column(tmp_path, "3.2.0", {"a": "skipped", "b": "skipped"}, device="gpu"),
            column(tmp_path, "2.13.0", {"a": "raises", "b": "aliases"}, framework="torch")]


def test_the_chain_compares_each_version_with_the_one_before_it(line: list[Path]) -> None:
    chain = upgrade_chain(line)
    steps = [(c.pairs[0][0].version, c.pairs[0][1].version, [ch.case for ch in c.changes]) for c in chain]
    assert steps == [("3.0.0", "3.1.0", ["a"]), ("3.1.0", "3.2.0", [])]  # versions in order, not by file


def test_the_upgrades_page_indexes_every_step_and_ranks_its_changes(line: list[Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "UPGRADES.md"
    assert main(["upgrades", *map(str, line), "--output", str(output)]) == 0
    page = output.read_text()
    assert "| [paddle 3.0.0 → 3.1.0 (cpu)](#paddle-300-to-310-cpu) | eager | 2 | 1 | 0 | 0 | 0 | 0 | 0 |" in page
    assert '<a id="paddle-300-to-310-cpu"></a>' in page
    assert "#### 1. became wrong" in page and "| `a` | cpu | raises | silent-wrong |" in page
    assert "paddle 3.1.0 -> 3.2.0 (cpu, eager): 0 changed of 2" in capsys.readouterr().out


def test_a_step_s_eager_and_compiled_changes_are_read_in_one_place(tmp_path: Path) -> None:
    """A maintainer upgrading torch 2.12.1 -> 2.13.0 reads what changes, eager and compiled, under one heading
    (eager first), and finds its index rows side by side; before, the compiled steps came first, in a block
    of their own, far from the eager ones."""
    def mode_column(version: str, mode: str, outcomes: dict[str, str]) -> Path:
        records = [{**record(case, outcome, version=version, **(raised() if outcome == "raises" else {})),
                    "mode": mode} for case, outcome in outcomes.items()]
        suffix = "" if mode == "eager" else "-compiled"
        return write(tmp_path / f"torch-{version}-cpu{suffix}.jsonl", records)

    files = [mode_column("2.12.1", "eager", {"a": "raises", "b": "silent-correct"}),
             mode_column("2.13.0", "eager", {"a": "silent-wrong", "b": "silent-correct"}),
             mode_column("2.12.1", "compile", {"a": "raises", "b": "silent-correct"}),
             mode_column("2.13.0", "compile", {"a": "raises", "b": "silent-wrong"}),
             mode_column("2.14.1", "eager", {"a": "silent-wrong", "b": "silent-correct"})]
    output = tmp_path / "UPGRADES.md"
    assert main(["upgrades", *map(str, files), "--output", str(output)]) == 0
    page = output.read_text()
    rows = [line for line in page.splitlines() if line.startswith("| [torch")]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| [torch 2.12.1 → 2.13.0 (cpu)](#torch-2121-to-2130-cpu)", "eager"],
        ["| [torch 2.12.1 → 2.13.0 (cpu)](#torch-2121-to-2130-cpu)", "compile"],
        ["| [torch 2.13.0 → 2.14.1 (cpu)](#torch-2130-to-2141-cpu)", "eager"]]
    step = page.split("## torch 2.12.1 → 2.13.0 (cpu)", 1)[1].split("\n## ", 1)[0]
    eager, compiled = step.split("### eager", 1)[1].split("### compile", 1)
    assert "| `a` | cpu | raises | silent-wrong |" in eager and "`b`" not in eager.split("changed of")[0]
    assert "| `b` | cpu compile | silent-correct | silent-wrong |" in compiled
    assert page.count("## torch 2.12.1 → 2.13.0 (cpu)") == 1


def test_a_version_in_two_files_is_refused(line: list[Path], tmp_path: Path) -> None:
    again = tmp_path / "again"
    again.mkdir()
    with pytest.raises(BadInput, match="3.1.0 in more than one file"):
        upgrade_chain([*line, column(again, "3.1.0", {"a": "raises"})])


@pytest.mark.parametrize(("mine", "nearest"), [("3.1.0", "3.1.0"), ("3.1.5", "3.1.0"), ("3.9.0", "3.2.0"),
                                               ("2.6.2", "3.0.0"), ("3.1.0+cu128", "3.1.0")])
def test_nearest_is_the_same_version_else_the_newest_below_else_the_oldest_above(
        line: list[Path], tmp_path: Path, mine: str, nearest: str) -> None:
    (tmp_path / "mine").mkdir()
    side = load_side(column(tmp_path / "mine", mine, {"a": "raises", "b": "copies"}))
    old = nearest_side(side, tmp_path)
    assert [c.version for c in old.columns] == [nearest]


def test_the_recipe_diff_nearest_shows_what_differs_from_the_committed_column(
        line: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "mine").mkdir()
    mine = column(tmp_path / "mine", "3.1.1", {"a": "silent-correct", "b": "copies"})
    assert main(["diff", "--nearest", str(mine), "--committed", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "paddle 3.1.0 cpu  ->  paddle 3.1.1 cpu  (upgrade view)" in out
    assert "  a [cpu]  silent-wrong -> silent-correct" in out and "2 cells compared" in out


def test_nearest_without_a_committed_column_of_that_framework_is_bad_input(
        line: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "mine").mkdir()
    mine = column(tmp_path / "mine", "1.0.0", {"a": "raises"}, framework="jax")
    assert main(["diff", "--nearest", str(mine), "--committed", str(tmp_path)]) == 2
    assert "no committed column" in capsys.readouterr().err


def test_a_step_across_numpy_versions_is_attributed_by_a_control_column(tmp_path: Path) -> None:
    """torch 2.2.2 (NumPy 1) -> 2.3.1 (NumPy 2): with torch 2.3.1 also run under NumPy 1 as a control, the
    upgrade page marks each change as NumPy's or torch's; without it, it says it cannot tell them apart."""
    def under(numpy: str, version: str, outcomes: dict[str, str], name: str) -> Path:
        records = [{**record(case, outcome, framework="torch", version=version,
                             **(raised() if outcome == "raises" else {})), "run_info": {"numpy": numpy}}
                   for case, outcome in outcomes.items()]
        return write(tmp_path / name, records)

    old = under("1.26.4", "2.2.2", {"a": "raises", "b": "aliases"}, "torch-2.2.2-cpu.jsonl")
    new = under("2.4.6", "2.3.1", {"a": "silent-correct", "b": "copies"}, "torch-2.3.1-cpu.jsonl")
    control = under("1.26.4", "2.3.1", {"a": "raises", "b": "copies"}, "control.jsonl")  # 2.3.1 under NumPy 1
    [step] = upgrade_chain([old, new])
    assert any("cannot tell them apart" in note for note in step.notes)
    [step] = upgrade_chain([old, new], [control])
    causes = {change.case: change.cause for change in step.changes}
    assert causes == {"a": "NumPy", "b": "torch"}
    out = tmp_path / "UPGRADES.md"
    (tmp_path / "controls").mkdir()
    control.rename(tmp_path / "controls" / "control.jsonl")
    assert main(["upgrades", str(old), str(new), "--controls", str(tmp_path / "controls"), "--output", str(out)]) == 0
    page = out.read_text().replace("\\[", "[").replace("\\]", "]")  # as markdown shows it
    assert "[the change is NumPy's]" in page and "[the change is torch's]" in page
