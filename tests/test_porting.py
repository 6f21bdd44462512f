"""The porting guide (conformance/report/porting.py), built from cases and records written here: each hazard
in both directions with its cause, its verified remedy, what PaConvert did and how to reproduce it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.case.load import load_cases
from conformance.cli import main
from conformance.records.record import Record
from conformance.report.modes import confirmation_key
from conformance.report.porting import headline, render_porting, topic_titles
from conformance.report.remedies import check_remedies

from .committed import ROOT

CASES = {
    "augmented/skip_alias.yaml": """\
id: skip_alias
title: "skip = h; h += b"
cause: "paddle's Tensor has no `__iadd__`: `h += b` binds a new tensor <b>so</b> skip keeps the old value"
remedy: [skip_clone]
steps:
  - {op: tensor, out: h, value: [1.0]}
  - {op: assign, args: [h], out: skip}
  - {observe: value, of: skip}
""",
    "augmented/skip_clone.yaml": """\
id: skip_clone
title: "skip = h.clone(); h += b"
steps:
  - {op: tensor, out: h, value: [1.0]}
  - {op: clone, args: [h], out: skip}
  - {observe: value, of: skip}
""",
    "leaf/leaf_sin.yaml": """\
id: leaf_sin
title: "x.sin_() on a leaf"
cause: "an in-place op on a leaf that requires grad is refused by both"
no_remedy: "the leaf itself must change: compute sin(x) into a new tensor"
steps:
  - {op: tensor, out: x, value: [1.0], requires_grad: true}
  - {op: sin_, args: [x]}
  - {observe: value, of: x}
""",
}
TORCH = ("2.13.0+cpu", "2.15.0")
PADDLE = ("2.6.2", "3.0.0", "3.3.1")


def _records() -> list[Record]:
    def cells(case: str, framework: str, versions, outcome: str, **details) -> list[Record]:
        return [Record(case=case, framework=framework, framework_version=v, device="cpu", outcome=outcome,
                       topic=case.split("_")[0] if case.startswith("leaf") else "augmented", details=details)
                for v in versions]
    records = cells("skip_alias", "torch", TORCH, "silent-correct") + cells("skip_alias", "paddle", PADDLE[:2],
                                                                            "silent-wrong")
    records += cells("skip_alias", "paddle", PADDLE[2:], "silent-correct")
    records += cells("skip_clone", "torch", TORCH, "silent-correct") + cells("skip_clone", "paddle", PADDLE,
                                                                             "silent-correct")
    raised = {"exception": {"type": "RuntimeError", "message": "leaf", "kind": "autograd"}}
    records += cells("leaf_sin", "torch", TORCH, "raises", **raised) + cells("leaf_sin", "paddle", PADDLE, "raises",
                                                                             **raised)
    records.append(Record(case="skip_alias", framework="paconvert", framework_version="3.3.1+paddle3.3.1",
                          device="cpu", outcome="silent-wrong", topic="augmented",
                          details={"conversion": {"not_converted": 0, "rate": 1.0, "marked_lines": 0}},
                          run_info={"converter": "PaConvert", "source_version": "2.13.0+cpu",
                                    "runs_on": "paddle 3.3.1"}))
    return records


def _page(tmp_path: Path, confirmations=None) -> str:
    for name, text in CASES.items():
        path = tmp_path / "cases" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "cases" / "augmented" / "README.md").write_text("# augmented: augmented assignment\n\n`+=` and "
                                                                 "friends.\n")
    cases, errors = load_cases([tmp_path / "cases"])
    assert not errors
    records = _records()
    remedies = check_remedies(cases, records)
    assert not remedies.problems, remedies.problems
    return render_porting(cases, records, remedies, confirmations or {}, topic_titles(tmp_path / "cases"))


def test_each_hazard_is_found_by_its_code_and_given_in_both_directions(tmp_path: Path) -> None:
    page = _page(tmp_path)
    assert "| [skip = h; h += b](#t2p-skip-alias) | `augmented` | ✅ | ❌ ✅ | changes | `skip_clone` |" in page
    assert '<a name="t2p-skip-alias"></a>' in page
    assert ("*silently wrong on paddle in paddle 2.6.2–3.0.0; the newest paddle does as torch*" in page)
    assert "- paddle: ❌ silent-wrong in 2.6.2–3.0.0, ✅ silent-correct since 3.3.1" in page
    assert "- torch: ✅ silent-correct (every version)" in page
    paddle_to_torch = page[page.index("## paddle → torch"):page.index("## The same on both")]
    # on the newest versions both compute it right: the guide says which older paddle was wrong
    assert "(`skip_alias`): *torch computes it right where paddle is wrong in torch " not in paddle_to_torch
    assert "(`skip_alias`): *torch: silent-correct; torch: silent-correct" not in paddle_to_torch
    assert "(`skip_alias`): *" in paddle_to_torch
    assert "[Full entry](#t2p-skip-alias)" in paddle_to_torch
    assert "### augmented: augmented assignment" in page and "`+=` and friends." in page


def test_code_that_is_no_hazard_is_found_too_and_the_guide_says_where(tmp_path: Path) -> None:
    """A porter searching for `skip = h.clone(); h += b` (no hazard anywhere: the remedy) finds it on the page
    of code with no hazard, with its outcomes and its evidence, and "Find your code" says where that is."""
    page = _page(tmp_path)
    finder = page[page.index("## Find your code"):page.index("## torch → paddle")]
    assert "`skip_clone`" in finder.split("Not here?")[0]  # a hazard's remedy, named in the table
    assert "Not here? The 1 cases that are no hazard on any column are in [code with no hazard](#no-hazard-table)" \
        in finder
    section = page[page.index("## Code with no hazard"):]
    assert '<a name="no-hazard-table"></a>' in section
    assert ("| [skip = h.clone(); h += b](./compatibility/augmented.md#skip_clone) | `augmented` | ✅ | ✅ | – |"
            in section)
    assert "skip = h; h += b" not in section and "x.sin\\_() on a leaf" not in section  # hazards are not here


def test_the_committed_guide_finds_every_hand_written_case_and_the_seed_articles_own_from_its_index() -> None:
    """Every hand-written case that ran is in "Find your code" (a hazard) or on the page of code with no hazard;
    the seed articles' own spellings (`y[:] = y + x`, `torch.add(x, y, out=y)`) are named in the index."""
    index = (ROOT / "reports" / "PORTING.md").read_text(encoding="utf-8")
    no_hazard = (ROOT / "reports" / "porting" / "no-hazard.md").read_text(encoding="utf-8")
    cases = [c for c in load_cases([ROOT / "cases"])[0] if not c.generated]
    finder = index[index.index("## Find your code"):index.index("## torch → paddle")]
    missing = [c.id for c in cases if f"`{c.id}`" not in finder and f"#{c.id})" not in no_hazard
               and f"-{c.id.replace('_', '-')})" not in finder]
    assert not missing, missing
    assert "`y[:] = y + x writes into y's storage`" in finder
    assert "`add(x, y, out=y) writes into y's storage`" in finder


def test_the_cause_is_prose_with_code_and_no_markup(tmp_path: Path) -> None:
    page = _page(tmp_path)
    assert ("Why: paddle's Tensor has no `__iadd__`: `h += b` binds a new tensor \\<b\\>so\\</b\\> skip keeps the "
            "old value") in page


def test_the_remedy_names_where_it_is_verified_and_a_reason_stands_in_for_none(tmp_path: Path) -> None:
    page = _page(tmp_path)
    assert ("- Write instead: [`skip_clone`](./compatibility/augmented.md#skip_clone) skip = h.clone\\(\\); h += b "
            "— verified on torch (every version); paddle (every version)") in page.replace("skip = h.clone(); h",
                                                                                         "skip = h.clone\\(\\); h")
    same = page[page.index("## The same on both"):]
    assert "(`leaf_sin`): *the same on both*" in same
    assert "- No safe spelling: the leaf itself must change: compute sin\\(x\\) into a new tensor" in same.replace(
        "sin(x)", "sin\\(x\\)")


def test_what_paconvert_did_and_whether_it_was_confirmed(tmp_path: Path) -> None:
    page = _page(tmp_path)
    assert ("- PaConvert: changes the meaning (silently) — ❌ silent-wrong on paddle 3.3.1; told you: no (100% "
            "converted); **not confirmed**") in page
    assert "**breaks** 0 (the converted program raises" in page and "**changes** 1: 1 of them silently" in page
    converted = next(r for r in _records() if r.framework == "paconvert")
    confirmed = _page(tmp_path, {confirmation_key(converted): (True, "ran to the end; 1 of 1 values as recorded")})
    assert "told you: no (100% converted); confirmed in a fresh interpreter" in confirmed


def test_cli_porting_writes_the_page_and_refuses_an_unwritable_one(tmp_path: Path, capsys) -> None:
    _page(tmp_path)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in _records()))
    output = tmp_path / "reports" / "PORTING.md"
    output.parent.mkdir()
    assert main(["porting", str(results), "--cases", str(tmp_path / "cases"), "--output", str(output),
                 "--report", str(tmp_path / "reports" / "COMPATIBILITY.md")]) == 0
    pages = sorted((tmp_path / "reports" / "porting").glob("*.md"))
    assert pages and "[`skip_clone`](../compatibility/augmented.md#skip_clone)" in "".join(
        p.read_text() for p in pages)
    assert "(porting/torch-to-paddle-augmented.md#t2p-" in output.read_text()
    assert main(["porting", str(results), "--cases", str(tmp_path / "cases"), "--output", "/proc/P.md"]) == 2
    assert "error: cannot write /proc/P.md" in capsys.readouterr().err


@pytest.mark.parametrize("before, after, said", [
    ("silent-correct", "silent-wrong", "silently wrong on paddle"),
    ("raises", "silent-wrong", "torch refuses it; paddle computes a wrong result without a word"),
    ("silent-correct", "warns (wrong result)", "wrong on paddle (with a warning that does not say so)"),
    ("silent-wrong", "silent-wrong", "wrong on both"),
    ("silent-wrong", "silent-correct", "paddle computes it right where torch is wrong"),
    ("raises", "silent-correct", "paddle runs what torch refuses"),
    ("silent-correct", "raises", "paddle refuses what torch computes"),
    ("unsupported", "raises", "torch has no such API; paddle: raises"),
    ("raises", "unsupported", "paddle has no such API"),
    ("raises", "crash", "paddle crashes"),
    ("aliases", "copies", "memory copied on paddle, shared on torch"),
    ("error", "raises", "torch: error; paddle: raises"),  # never a claim the outcomes do not make
])
def test_a_headline_states_only_what_the_outcomes_say(before: str, after: str, said: str) -> None:
    assert headline("torch", "paddle", before, after) == said


@pytest.mark.parametrize("fault", ["typo", "broken file"])
def test_a_remedy_that_names_no_case_is_one_line_per_problem_and_no_guide(tmp_path: Path, fault: str) -> None:
    """A remedy id with a typo, or a remedy whose file does not load: the problems are listed as `conformance
    remedies` lists them, exit 2, and no guide is written over them (it was a KeyError traceback)."""
    import shutil
    import subprocess
    import sys

    from .committed import ROOT, committed_results

    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    hazard = tmp_path / "cases" / "augmented" / "data_imul_before_forward.yaml"
    if fault == "typo":
        hazard.write_text(re.sub(r"^remedy: \[.*\]$", "remedy: [mul_no_grad_before_fwd]", hazard.read_text(), flags=re.M))
    else:
        with open(tmp_path / "cases" / "augmented" / "mul_no_grad_before_forward.yaml", "a") as handle:
            handle.write("steps: [\n")
    guide = tmp_path / "P.md"
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "porting", *map(str, committed_results()),
                          "--output", str(guide)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr and not guide.exists()
    assert "data_imul_before_forward.yaml:" in run.stderr and "is not a case of this catalogue" in run.stderr


_ENTRY = re.compile(r'<a name="(?:t2p|p2t|same)-[^"]+"></a>\n\n\*\*.*?\*\* \(`(?P<case>[^`]+)`\)(?P<body>.*?)(?=\n<a name=|\n## |\Z)',
                    re.DOTALL)
_TABLE = re.compile(r"<table><tr>(?P<heads>.*?)</tr><tr>(?P<cells>.*?)</tr></table>", re.DOTALL)


def _tables(body: str) -> list[dict[str, tuple[str, str]]]:
    """Each code table of an entry: framework -> (the version that spelled it, the code)."""
    found = []
    for table in _TABLE.finditer(body):
        heads = re.findall(r"<th>(\w+) \(as ([^ ]+) spells it\)</th>", table["heads"])
        codes = re.findall(r"<td>\n\n(`{3,4})python\n(.*?)\1\n\n</td>", table["cells"], re.DOTALL)
        assert len(heads) == len(codes) == 2, table.group(0)[:300]
        found.append({framework: (version, code) for (framework, version), (_, code) in zip(heads, codes)})
    return found


def test_every_entry_of_the_committed_guide_shows_the_program_its_case_runs_in_each_framework() -> None:
    """The code beside each hazard (and its safe spelling) is what the installed framework's adapter writes
    for the case: the program its cells ran, without the reproducer's imports, step marks and prints."""
    from conformance.adapter import adapter_classes, installed, is_installed

    guide = "".join(page.read_text(encoding="utf-8") for page in sorted((ROOT / "reports" / "porting").glob("*.md")))
    cases = {case.id: case for case in load_cases([ROOT / "cases"])[0]}
    adapters = {}
    for framework in ("torch", "paddle"):
        cls = adapter_classes()[framework]
        if not is_installed(cls):
            pytest.skip(f"{framework} is not installed")
        adapter = cls()
        adapter.start()  # the framework imported, as a worker does before rendering
        adapters[framework] = (adapter, cls.version_label(installed(framework)[1] or ""))
    entries = list(_ENTRY.finditer(guide))
    assert len(entries) > 90
    checked = 0
    for entry in entries:
        tables = _tables(entry["body"])
        remedies = re.findall(r"<summary>Write instead: (\w+),", entry["body"])
        assert len(tables) == 1 + len(remedies), entry["case"]
        for case_id, table in zip([entry["case"], *remedies], tables):
            for framework, (version, code) in table.items():
                adapter, installed_version = adapters[framework]
                if version != installed_version:
                    continue  # spelled by another version than the one installed here
                program = adapter.program(cases[case_id], "cpu", harness=False)
                expected = program.code.rstrip("\n")
                if program.unsupported:
                    expected += f"\n# no such API in {framework}: {program.unsupported}"
                assert code.rstrip("\n") == expected.strip("\n"), (entry["case"], case_id, framework)
                checked += 1
    assert checked > 200
