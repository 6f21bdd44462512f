"""The compatibility report, on synthetic records (no framework needed) and one real torch run."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.case.load import load_case
from conformance.cli import main
from conformance.records.record import version_key
from conformance.report.render import (GENERATED, default_results, load_sources, page_name, render_pages,
                                       render_report, version_ranges)

from .runs import records_in

ROOT = Path(__file__).resolve().parents[1]


def record(case: str, framework: str, version: str, outcome: str, device: str = "cpu", topic: str = "grad",
           title: str | None = None, **details: Any) -> dict[str, Any]:
    return {"case": case, "case_file": f"/nowhere/{case}.yaml", "topic": topic, "title": title or f"title of {case}",
            "framework": framework, "framework_version": version, "device": device, "outcome": outcome,
            "details": details, "timings": {},
            "run_info": {"python": "3.11.7", "os": "Linux-test", "cpu": "Test CPU", "gpu": None,
                         "numpy": "2.0.0", "cases_revision": "abc123"}}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def cells_of(line: str) -> list[str]:
    """A markdown table row split on unescaped pipes."""
    assert line.startswith("| ") and line.endswith(" |"), line
    return [c.strip() for c in re.split(r"(?<!\\)\|", line[1:-1])]


def row(report: str, first_cell: str) -> list[str]:
    for line in report.splitlines():
        if line.startswith("| ") and cells_of(line)[0] == first_cell:
            return cells_of(line)[1:]
    raise AssertionError(f"no row {first_cell!r} in report")


RAISE = {"exception": {"type": "RuntimeError", "message": "modified by an inplace operation\nHint: more",
                       "step": 4, "op": "backward", "line": 12, "phase": "backward"}}


def read_only_directory(tmp_path: Path) -> Path:
    """A directory no file can be created in: mode 0555, or /sys where root ignores modes."""
    directory = tmp_path / "locked"
    directory.mkdir()
    directory.chmod(0o555)
    for candidate in (directory, Path("/sys")):
        try:
            (candidate / "probe").write_text("")
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no directory here refuses writes")


def history() -> list[dict[str, Any]]:
    """Two frameworks over several versions; the skipped GPU column has no cell that ran."""
    records = []
    for version, a, b in (("2.6.2", "silent-wrong", "copies"), ("3.0.0", "raises", "aliases"),
                          ("3.3.1", "raises", "aliases")):
        extra = RAISE if a == "raises" else {"max_error": 0.0123}
        records += [record("hidden_reuse", "torch", version, a, **extra),
                    record("from_numpy", "torch", version, b, topic="memory")]
        records.append(record("hidden_reuse", "torch", version, "skipped", device="gpu",
                              reason="torch.cuda.is_available() is False"))
    for version, a in (("2.6.2", "silent-wrong"), ("3.0.0", "silent-wrong"), ("3.3.1", "silent-wrong"),
                       ("3.10.0", "raises")):
        records.append(record("hidden_reuse", "paddle", version, a, **(RAISE if a == "raises" else {})))
    records.append(record("from_numpy", "paddle", "3.10.0", "unsupported", topic="memory",
                          reason="no zero-copy constructor in paddle"))
    return records


def test_version_key_is_numeric() -> None:
    versions = ["3.10.0", "2.13.0+cpu", "3.0.0", "2.9.1", "3.0.0rc1", "3.0.0.post1", "3.3"]
    assert sorted(versions, key=version_key) == ["2.9.1", "2.13.0+cpu", "3.0.0rc1", "3.0.0", "3.0.0.post1",
                                                 "3.3", "3.10.0"]
    assert version_key("3.0") == version_key("3.0.0")


def test_version_ranges_sentences() -> None:
    def say(outcomes: dict[str, str | None], axis: list[str] | None = None) -> str:
        return ", ".join(str(r) for r in version_ranges(outcomes, axis))

    assert say({"2.6.2": "silent-wrong", "3.0.0": "raises", "3.3.1": "raises"}) == \
        "silent-wrong in 2.6.2, raises since 3.0.0"
    assert say({"3.10.0": "raises", "2.6.2": "silent-wrong", "3.3.1": "silent-wrong", "3.0.0": "silent-wrong"}) \
        == "silent-wrong in 2.6.2–3.3.1, raises since 3.10.0"
    assert say({"2.6.2": "copies", "3.0.0": "aliases", "3.3.1": "aliases"}) == "copies in 2.6.2, aliases since 3.0.0"
    # a version where the case did not run breaks a range instead of being bridged
    assert say({"1.0": "raises", "2.0": "skipped", "3.0": "raises"}) == "raises in 1.0, raises since 3.0"
    assert say({"1.0": "raises", "3.0": "raises"}, ["1.0", "2.0", "3.0"]) == "raises in 1.0, raises since 3.0"
    # the newest version present did not run this case: no "since"
    assert say({"1.0": "raises", "2.0": "raises"}, ["1.0", "2.0", "3.0"]) == "raises in 1.0–2.0"
    # a single version present is not a "since"
    assert say({"3.3.1": "aliases"}) == "aliases in 3.3.1"


def test_table_columns_cells_and_counts(tmp_path: Path) -> None:
    records, sources = load_sources([write(tmp_path / "history.jsonl", history())])
    report = render_report(records, sources)
    header = next(line for line in report.splitlines() if line.startswith("| case |"))
    assert cells_of(header) == ["case", "paddle 2.6.2 cpu", "paddle 3.0.0 cpu", "paddle 3.3.1 cpu",
                                "paddle 3.10.0 cpu", "torch 2.6.2 cpu", "torch 3.0.0 cpu", "torch 3.3.1 cpu"]
    assert row(report, "[`hidden_reuse`](#hidden_reuse)") == [
        "❌ silent-wrong", "❌ silent-wrong", "❌ silent-wrong", "🛑 raises", "❌ silent-wrong", "🛑 raises",
        "🛑 raises"]
    assert row(report, "[`from_numpy`](#from_numpy)") == ["", "", "", "➖ unsupported", "📄 copies",
                                                          "🔗 aliases", "🔗 aliases"]
    # topics are header rows, in order
    topics = [cells_of(line)[0] for line in report.splitlines() if line.startswith("| **")]
    assert topics == ["**grad**", "**memory**", "**counts**"]
    assert row(report, "❌ silent-wrong") == ["1", "1", "1", "0", "1", "0", "0"]
    assert row(report, "🛑 raises") == ["0", "0", "0", "1", "0", "1", "1"]
    assert row(report, "total") == ["1", "1", "1", "2", "2", "2", "2"]
    # the all-skipped GPU columns collapse to notes with the reason
    assert "gpu" not in header
    for version in ("2.6.2", "3.0.0", "3.3.1"):
        assert f"- ⏭️ torch {version} gpu: every cell skipped: torch.cuda.is\\_available() is False" in report


def test_behaviour_by_version_section(tmp_path: Path) -> None:
    records, sources = load_sources([write(tmp_path / "history.jsonl", history())])
    report = render_report(records, sources)
    section = report.split("## Behaviour by version", 1)[1].split("## Cases", 1)[0]
    paddle, torch = section.split("### paddle", 1)[1].split("### torch", 1)
    assert "- **`hidden_reuse`**: silent-wrong in 2.6.2–3.3.1, raises since 3.10.0" in paddle
    assert "- `from_numpy`: unsupported since 3.10.0" in paddle
    assert "cpu, versions present: 2.6.2, 3.0.0, 3.3.1, 3.10.0" in paddle
    assert "- **`hidden_reuse`**: silent-wrong in 2.6.2, raises since 3.0.0" in torch
    assert "- **`from_numpy`**: copies in 2.6.2, aliases since 3.0.0" in torch
    assert "gpu, versions present" not in torch


def test_case_details(tmp_path: Path) -> None:
    records = history() + [
        record("warned", "torch", "3.3.1", "warns", correct=False, max_error=0.5,
               observations=[{"name": "grad(x)", "ok": False}],
               warnings=[{"category": "UserWarning", "message": "w" * 300}]),
        record("warned", "torch", "3.0.0", "skipped", reason="needs torch >= 3.3"),
        record("died", "torch", "3.3.1", "crash", message="the torch worker died", signal=11),
    ]
    merged, sources = load_sources([write(tmp_path / "r.jsonl", records)])
    report = render_report(merged, sources)
    cases = report.split("## Cases", 1)[1]
    hidden = cases.split("### `hidden_reuse`", 1)[1].split("### ", 1)[0]
    # consecutive versions whose cells read alike share a line
    assert ("- **torch 3.0.0–3.3.1 cpu**: 🛑 raises — `RuntimeError` (step 4, line 12; op `backward`; "
            "phase backward): modified by an inplace operation\n") in hidden
    assert "- **paddle 2.6.2–3.3.1 cpu**: ❌ silent-wrong\n- **paddle 3.10.0 cpu**: 🛑 raises" in hidden
    assert "Hint: more" not in hidden
    assert "- **torch 2.6.2 cpu**: ❌ silent-wrong — max relative error 0.0123" in hidden
    assert "Reproduce: `conformance show hidden_reuse --framework paddle`, " \
           "`conformance show hidden_reuse --framework torch`" in hidden
    assert "**title of hidden\\_reuse**" in hidden
    warned = cases.split("### `warned`", 1)[1].split("### ", 1)[0]
    assert "⚠️ warns (wrong result) — max relative error 0.5; wrong: `grad(x)`; result **wrong**" in warned
    assert "warning `UserWarning`: " + "w" * 199 + "…" in warned
    assert "w" * 201 not in warned
    assert "- **torch 3.0.0 cpu**: ⏭️ skipped — reason: needs torch >= 3.3".replace(">", "\\>") in warned
    assert "- **torch 3.3.1 cpu**: 💥 crash — message: the torch worker died; signal 11" in report
    from_numpy = cases.split("### `from_numpy`", 1)[1]
    assert "➖ unsupported — reason: no zero-copy constructor in paddle" in from_numpy
    assert row(report, "[`warned`](#warned)")[-2:] == ["⏭️ skipped", "⚠️ warns (wrong result)"]


def test_a_warning_beside_right_values_says_so_in_every_table(tmp_path: Path) -> None:
    """paddle's to_static warns "add_() is the same as add() and does not perform inplace operation" where the
    write happens and every value is right: a bare "warns" reads as a warning about a hazard, so each table
    names the result beside the warning, right or wrong, as MODE-CHANGES already did."""
    from conformance.records.record import Record
    from conformance.report.summary import render_summary

    records = [record("told", "paddle", "3.3.1", "warns", correct=True,
                      warnings=[{"category": "UserWarning", "message": "add_() ... does not perform inplace"}]),
               record("told", "torch", "2.13.0", "warns", correct=False, max_error=0.5,
                      observations=[{"name": "value(x)", "ok": False}])]
    merged, sources = load_sources([write(tmp_path / "r.jsonl", records)])
    report = render_report(merged, sources)
    assert row(report, "[`told`](#told)")[-2:] == ["⚠️ warns (right result)", "⚠️ warns (wrong result)"]
    evidence = report.split("### `told`", 1)[1]
    assert "- **paddle 3.3.1 cpu**: ⚠️ warns (right result) — " in evidence
    summary = render_summary([Record.from_dict(r) for r in records])
    assert "| ⚠️ warns (right result) | ⚠️ warns (wrong result) |" in summary
    unjudged = render_summary([Record.from_dict(record("bare", "paddle", "3.3.1", "warns"))])
    assert "| ⚠️ warns |" in unjudged  # values not judged: nothing to say of them


def test_pipes_and_newlines_are_escaped(tmp_path: Path) -> None:
    nasty = record("a_b", "torch", "1.0", "raises", topic="mem|ory", title="x | y <z>",
                   exception={"type": "Err", "message": "bad | worse\nline two", "step": 1, "op": "add_",
                              "line": 3, "phase": "op"})
    nasty["run_info"]["os"] = "Linux | odd\nkernel"
    merged, sources = load_sources([write(tmp_path / "r|x.jsonl", [nasty])])
    report = render_report(merged, sources)
    tables = [line for line in report.splitlines() if line.startswith("|")]
    assert any("mem\\|ory" in line for line in tables)
    assert any("Linux \\| odd kernel" in line for line in tables)
    assert any(f"`{tmp_path}/r\\|x.jsonl`" in line for line in tables)
    widths = {len(cells_of(line)) for line in tables if line.startswith("| ") and "---" not in line}
    assert widths == {2, 10}  # the matrix (case + 1 column) and the sources table
    assert "x \\| y \\<z\\>" in report
    assert "bad \\| worse" in report and "line two" not in report


def test_default_results_prefers_kept_files(tmp_path: Path) -> None:
    assert default_results(tmp_path) == []
    write(tmp_path / "latest.jsonl", [record("a", "torch", "1.0", "raises")])
    assert default_results(tmp_path) == [tmp_path / "latest.jsonl"]
    write(tmp_path / "torch-2.jsonl", [record("a", "torch", "2.0", "raises")])
    write(tmp_path / "torch-1.jsonl", [record("a", "torch", "1.0", "raises")])
    assert default_results(tmp_path) == [tmp_path / "torch-1.jsonl", tmp_path / "torch-2.jsonl"]


def test_cli_report_merges_files_and_notes_missing_matplotlib(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    old = write(tmp_path / "torch-2.6.jsonl", [record("a", "torch", "2.6.2", "silent-wrong")])
    new = write(tmp_path / "torch-3.0.jsonl", [record("a", "torch", "3.0.0", "raises", **RAISE)])
    output = tmp_path / "out" / "COMPAT.md"
    output.parent.mkdir()
    assert main(["report", str(old), str(new), "--output", str(output), "--plot", str(tmp_path / "p.png")]) == 0
    report = output.read_text(encoding="utf-8")
    assert "silent-wrong in 2.6.2, raises since 3.0.0" in (tmp_path / "out" / "compat" / "grad.md").read_text()
    assert f"`{old}`" in report and f"`{new}`" in report
    assert "matplotlib is not installed" in report
    assert not (tmp_path / "p.png").exists()
    assert main(["report", str(old), "--output", str(output), "--no-plot"]) == 0
    assert "matplotlib" not in output.read_text(encoding="utf-8")


def test_cli_report_bad_input(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "r.md")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["report", str(tmp_path / "empty.jsonl"), "--output", str(tmp_path / "r.md")]) == 2
    assert not (tmp_path / "r.md").exists()


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed")
def test_cli_report_draws_heatmap(tmp_path: Path) -> None:
    results = write(tmp_path / "r.jsonl", history())
    output, plot = tmp_path / "docs" / "R.md", tmp_path / "img" / "heat.png"
    output.parent.mkdir(), plot.parent.mkdir()
    assert main(["report", str(results), "--output", str(output), "--plot", str(plot)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ("![per topic and eager column: cases wrong and cases that raise](../img/heat.png)"
            in output.read_text(encoding="utf-8"))


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed")
def test_each_topic_page_shows_its_own_heatmap_and_a_topic_with_nothing_drawn_none(tmp_path: Path) -> None:
    records = history() + [record("gpu_only", "torch", "3.3.1", "skipped", device="gpu", topic="only-gpu",
                                  reason="no GPU")]
    results = write(tmp_path / "r.jsonl", records)
    output = tmp_path / "R.md"
    assert main(["report", str(results), "--output", str(output)]) == 0
    pages = tmp_path / "r"
    for topic in ("grad", "memory"):
        assert (pages / f"{topic}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"](./{topic}.png)" in (pages / f"{topic}.md").read_text(encoding="utf-8")
    assert not (pages / "only-gpu.png").exists()  # every cell skipped: no picture, and no link to one
    assert ".png)" not in (pages / "only-gpu.md").read_text(encoding="utf-8")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_report_on_a_real_torch_run(tmp_path: Path) -> None:
    results, summary = tmp_path / "torch.jsonl", tmp_path / "summary.md"
    cases = [str(ROOT / "cases" / "seed" / f"{name}.yaml") for name in ("leaf_sin_inplace", "detach_shares_memory")]
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", *cases, "--framework", "torch",
                          "--results", str(results), "--summary", str(summary)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    output = tmp_path / "COMPAT.md"
    assert main(["report", str(results), "--output", str(output), "--no-plot"]) == 0
    index = output.read_text(encoding="utf-8")
    first = records_in(results)[0]
    version, kind = first["framework_version"], first["details"]["exception"].get("kind")
    assert row(index, "[`leaf_sin_inplace`](./compat/seed.md#leaf_sin_inplace)") == ["🛑 raises"]
    assert row(index, "[`detach_shares_memory`](./compat/seed.md#detach_shares_memory)") == ["🔗 aliases"]
    assert "[seed](./compat/seed.md)" in index
    report = (tmp_path / "compat" / "seed.md").read_text(encoding="utf-8")
    assert "[The index](./../COMPAT.md)" in report
    assert f"- `leaf_sin_inplace`: raises in {version}" in report
    line = load_case(ROOT / "cases" / "seed" / "leaf_sin_inplace.yaml").step(2).line
    assert f"`RuntimeError` (step 2, line {line}; op `sin_`; phase op" + (f"; kind {kind})" if kind else ")") in report
    assert "`conformance show leaf_sin_inplace --framework torch`" in report
    gpu_ran = "gpu: no cells of torch" not in run.stdout  # a machine without a GPU says so once, and records none
    assert (f"torch {version} gpu" in index) == gpu_ran


def test_report_shows_the_raise_kind(tmp_path: Path) -> None:
    kinds = [record("a", "torch", "2.13.0", "raises", exception={**RAISE["exception"], "kind": "autograd"}),
             record("a", "paddle", "3.3.1", "raises", exception={**RAISE["exception"], "type": "AttributeError",
                                                                 "kind": "rejection", "phase": "op"})]
    report = render_report(*load_sources([write(tmp_path / "r.jsonl", kinds)]))
    assert ("- **torch 2.13.0 cpu**: 🛑 raises — `RuntimeError` (step 4, line 12; op `backward`; phase backward; "
            "kind autograd): modified by an inplace operation") in report
    assert "`AttributeError` (step 4, line 12; op `backward`; phase op; kind rejection)" in report


def test_report_labels_a_mode_other_than_eager(tmp_path: Path) -> None:
    records = [record("a", "torch", "2.13.0", "raises", **RAISE), {**record("a", "torch", "2.13.0", "aliases"),
                                                                   "mode": "compiled"}]
    report = render_report(*load_sources([write(tmp_path / "r.jsonl", records)]))
    headers = [line for line in report.splitlines() if line.startswith("| case |")]
    assert cells_of(headers[0]) == ["case", "torch 2.13.0 cpu"]  # the matrix keeps to eager columns
    assert cells_of(headers[1]) == ["case", "torch 2.13.0 cpu", "torch 2.13.0 cpu compiled"]
    assert "## Compiled modes" in report
    assert "| **[`a`](#a)** | 🛑 raises | 🔗 aliases |" in report  # bold: the outcome depends on the mode
    assert "cpu, compiled, versions present: 2.13.0" in report
    assert "- **torch 2.13.0 cpu compiled**: 🔗 aliases" in report


def test_report_renders_summarised_arrays(tmp_path: Path) -> None:
    from conformance.records.results import append_record

    path = tmp_path / "r.jsonl"
    big = [[float(i + j) for j in range(100)] for i in range(100)]
    append_record(path, record("big", "torch", "2.13.0", "silent-wrong", max_error=0.5, observations=[
        {"name": "value(y)", "ok": False, "value": big, "reference": big, "max_rel_error": 0.5}]))
    assert '"summary":true' in path.read_text()  # the record keeps a summary of the array, not its values
    output = tmp_path / "R.md"
    assert main(["report", str(path), "--output", str(output), "--no-plot"]) == 0
    assert "[`big`](./r/grad.md#big)" in output.read_text()  # the index links to the topic's page
    shown = "array 100x100 (10000 elements, min 0, max 198, sha256:71e8ae741adb29d2)"
    assert (f"- **torch 2.13.0 cpu**: ❌ silent-wrong — `value(y)` expected `{shown}`, got `{shown}` (relative error 0.5)"
            in (tmp_path / "r" / "grad.md").read_text())


def test_evidence_shows_expected_and_observed_values_and_no_relative_error_against_zero(tmp_path: Path) -> None:
    records = [record("zero", "torch", "2.13.0", "silent-wrong", max_error=1.8e308, observations=[
                   {"name": "grad(x)", "ok": False, "value": [0.0, 3.0], "reference": [0.0, 0.0],
                    "max_rel_error": 1.8e308}]),
               record("scaled", "paddle", "3.3.1", "silent-wrong", max_error=2.0, observations=[
                   {"name": "grad(w)", "ok": True, "value": [1.0], "reference": [1.0], "max_rel_error": 0.0},
                   {"name": "value(y)", "ok": False, "value": [6.0, 12.0], "reference": [2.0, 4.0],
                    "max_rel_error": 2.0}])]
    merged, sources = load_sources([write(tmp_path / "r.jsonl", records)])
    report = render_report(merged, sources)
    assert "❌ silent-wrong — `grad(x)` expected `[0, 0]`, got `[0, 3]`\n" in report
    assert "e+308" not in report
    assert "❌ silent-wrong — `value(y)` expected `[2, 4]`, got `[6, 12]` (relative error 2)\n" in report


@pytest.mark.parametrize("line, problem", [
    ('{"note": "not a record"}', "2: not a result record: missing field(s) case"),
    ('[1, 2, 3]', "2: not a result record: a JSON list, not an object"),
    ("{broken", "2: not a JSON record"),
])
def test_cli_report_rejects_a_line_that_is_not_a_record(tmp_path: Path, capsys, line: str, problem: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record("a", "torch", "1.0", "raises")) + "\n" + line + "\n"
                    + json.dumps(record("b", "torch", "1.0", "raises")) + "\n")
    output = tmp_path / "R.md"
    assert main(["report", str(path), "--output", str(output), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:{problem}") and err.count("\n") == 1
    assert not output.exists()


def test_cli_report_rejects_a_torn_last_line(tmp_path: Path, capsys) -> None:
    path = write(tmp_path / "r.jsonl", [record("a", "torch", "1.0", "raises")])
    path.write_text(path.read_text() + '{"case": "b", "fram')
    assert main(["report", str(path), "--output", str(tmp_path / "R.md"), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2: truncated record") and "may have been interrupted" in err


@pytest.mark.parametrize("where", ["read-only", "uncreatable", "directory"])
@pytest.mark.parametrize("option", ["--output", "--plot"])
def test_cli_report_unwritable_paths_are_one_line_errors(tmp_path: Path, capsys, where: str, option: str) -> None:
    results = write(tmp_path / "r.jsonl", [record("a", "torch", "1.0", "raises")])
    (tmp_path / "a_file").write_text("")
    (tmp_path / "ok").mkdir()
    target = {"read-only": lambda: read_only_directory(tmp_path) / "R.md",
              "uncreatable": lambda: tmp_path / "a_file" / "deeper" / "R.md",
              "directory": lambda: tmp_path}[where]()
    paths = {"--output": target, "--plot": tmp_path / "ok" / "heat.png"}
    if option == "--plot":
        paths = {"--output": tmp_path / "ok" / "R.md", "--plot": target}
    argv = ["report", str(results), "--output", str(paths["--output"]), "--plot", str(paths["--plot"])]
    if where == "uncreatable":  # a folder that is not there: refused as the option is read, never created
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {option}: no such folder: {target.parent}" in err and err.count("\n") == 1
    else:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: cannot write {target}: ") and err.count("\n") == 1
    assert not (tmp_path / "ok" / "R.md").exists() and not (tmp_path / "ok" / "heat.png").exists()


# -- the index and the topic pages --------------------------------------------------------------------------

def test_the_index_holds_the_matrix_and_each_topic_page_its_own_cases(tmp_path: Path) -> None:
    records, sources = load_sources([write(tmp_path / "history.jsonl", history())])
    index, pages = render_pages(records, sources, index="R.md", pages="r")
    assert set(pages) == {"grad.md", "memory.md"}
    assert row(index, "[grad](./r/grad.md)") == ["1", "4 silent-wrong, 3 raises"]
    assert row(index, "[`hidden_reuse`](./r/grad.md#hidden_reuse)")[0] == "❌ silent-wrong"
    assert "## Cases" not in index and "## Behaviour by version" not in index
    grad = pages["grad.md"]
    assert "[The index](./../R.md)" in grad
    assert "- **`hidden_reuse`**: silent-wrong in 2.6.2–3.3.1, raises since 3.10.0" in grad
    assert "### `hidden_reuse`" in grad and "### `from_numpy`" not in grad and "`from_numpy`" not in grad
    assert "### `from_numpy`" in pages["memory.md"]
    assert index.splitlines()[0] == GENERATED and all(p.splitlines()[0] == GENERATED for p in pages.values())


def test_a_topic_page_s_name_is_a_plain_file_name_whatever_the_folder_is_called() -> None:
    taken: set[str] = set()
    assert page_name("views", taken) == "views.md"
    assert page_name("<img src=x onerror=alert(1)>", taken) == "img-src-x-onerror-alert-1.md"
    assert page_name("left|right", taken) == "left-right.md"
    assert page_name("../../etc", taken) == "etc.md"
    assert page_name("", taken) == "no-topic.md"
    assert page_name("views", taken) == "views-2.md"  # two topics never share a page


def test_a_report_removes_the_pages_of_topics_gone_and_nothing_else(tmp_path: Path) -> None:
    both = write(tmp_path / "both.jsonl", history())
    output = tmp_path / "out" / "R.md"
    output.parent.mkdir()
    assert main(["report", str(both), "--output", str(output), "--no-plot"]) == 0
    folder = tmp_path / "out" / "r"
    assert sorted(p.name for p in folder.iterdir()) == ["grad.md", "memory.md"]
    (folder / "notes.md").write_text("my own notes\n")
    (folder / "old.md").write_text("# not the report's\n")
    only_grad = write(tmp_path / "grad.jsonl", [r for r in history() if r["topic"] == "grad"])
    assert main(["report", str(only_grad), "--output", str(output), "--no-plot"]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["grad.md", "notes.md", "old.md"]
    assert "(./r/memory.md)" not in output.read_text()


def test_one_page_keeps_everything_on_the_output(tmp_path: Path) -> None:
    output = tmp_path / "R.md"
    assert main(["report", str(write(tmp_path / "h.jsonl", history())), "--output", str(output), "--no-plot",
                 "--one-page"]) == 0
    report = output.read_text()
    assert "## Behaviour by version" in report and "### `hidden_reuse`" in report
    assert not (tmp_path / "r").exists()


def test_a_report_is_the_same_wherever_the_results_were_recorded(tmp_path: Path, monkeypatch) -> None:
    """Records name case files by the absolute path they ran from (this machine, a CI runner, a matrix
    job); the report links the file at the same place under ``cases/`` of the tree it is built in."""
    (tmp_path / "cases" / "t").mkdir(parents=True)
    (tmp_path / "cases" / "t" / "here.yaml").write_text(
        "id: here\ntitle: t\nsource: seed 001\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n"
        "  - {observe: value, of: x}\n")
    (tmp_path / "reports").mkdir()
    monkeypatch.chdir(tmp_path)
    records = [{**record("here", "torch", "2.13.0", "silent-correct", topic="t"),
                "case_file": "/another/checkout/cases/t/here.yaml"},
               {**record("gone", "torch", "2.13.0", "silent-correct", topic="t"),
                "case_file": "/another/checkout/cases/t/gone.yaml"}]
    merged, sources = load_sources([write(tmp_path / "r.jsonl", records)])
    from conformance.report.render import case_attributions
    report = render_report(merged, sources, attributions=case_attributions(merged), link_base=tmp_path / "reports")
    assert "case file [`cases/t/here.yaml`](./../cases/t/here.yaml); source: seed 001" in report
    assert "case file `/another/checkout/cases/t/gone.yaml`" in report  # not in this tree: the path as recorded


def test_version_ranges_tell_a_warning_beside_a_wrong_result_from_a_harmless_one(tmp_path: Path) -> None:
    records = [record("w", "paddle", "3.0.0", "warns", correct=True, warnings=[{"message": "m"}]),
               record("w", "paddle", "3.1.0", "warns", correct=False, warnings=[{"message": "m"}]),
               record("w", "paddle", "3.2.0", "warns", correct=False, warnings=[{"message": "m"}])]
    report = render_report(*load_sources([write(tmp_path / "r.jsonl", records)]))
    assert "- **`w`**: warns (right result) in 3.0.0, warns (wrong result) since 3.1.0" in report


def test_the_mode_changes_page_is_built_from_the_results_and_reads_the_confirmations(tmp_path: Path) -> None:
    """``conformance mode-changes``: every case a compiled mode changes, a warning beside a wrong result told
    from a harmless one, and a confirmation shown only for the cell as it is now."""
    from conformance.records.record import Record
    from conformance.report.modes import confirmation_line, load_confirmations

    def cell(case: str, mode: str, outcome: str, **details: Any) -> dict[str, Any]:
        return {**record(case, "paddle", "3.3.1", outcome, **details), "mode": mode, "case_digest": "sha256:1"}

    eager = write(tmp_path / "paddle-3.3.1-cpu.jsonl", [
        cell("dropped", "eager", "silent-correct"), cell("same", "eager", "raises"),
        cell("harmless", "eager", "silent-correct")])
    compiled = write(tmp_path / "paddle-3.3.1-cpu-compiled.jsonl", [
        cell("dropped", "to_static_full_graph", "warns", correct=False),
        cell("same", "to_static_full_graph", "raises"),
        cell("harmless", "to_static_full_graph", "warns", correct=True)])
    confirmed = Record.from_dict(cell("dropped", "to_static_full_graph", "warns", correct=False))
    stale = Record.from_dict({**cell("harmless", "to_static_full_graph", "warns", correct=True),
                              "case_digest": "sha256:old"})
    confirmations = tmp_path / "confirmations.jsonl"
    confirmations.write_text(confirmation_line(confirmed, True, "ran to the end; 1 of 1 values as recorded") + "\n"
                             + confirmation_line(stale, True, "an older case") + "\n")
    output = tmp_path / "MODE-CHANGES.md"
    assert main(["mode-changes", str(eager), str(compiled), "--confirmations", str(confirmations),
                 "--output", str(output)]) == 0
    page = output.read_text()
    rows = [cells_of(line) for line in page.splitlines() if line.startswith("| `")]
    assert [(r[0], r[2], r[3], r[5]) for r in rows] == [
        ("`dropped`", "eager", "silent-correct", "not confirmed"),
        ("`dropped`", "to_static_full_graph", "warns (wrong result)", "yes"),
        ("`harmless`", "eager", "silent-correct", "not confirmed"),
        ("`harmless`", "to_static_full_graph", "warns (right result)", "not confirmed")]  # confirmed when older
    assert "silent-correct → warns (wrong result): 1" in page and "`same`" not in page
    assert "1 of 4 cells confirmed" in page
    confirmations.write_text("not json\n")
    with pytest.raises(ValueError, match="confirmations.jsonl:1"):
        load_confirmations(confirmations)
    assert main(["mode-changes", str(eager), "--confirmations", str(confirmations), "--output", str(output)]) == 2
