"""The outcome diff: severity ranking, column pairing (upgrade and port), inputs and exit status."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.report.diff import BadInput, Cell, compare, load_side, render_markdown, render_text, severity

from .runs import records_in


def record(case: str, outcome: str, framework: str = "torch", version: str = "2.6.2", device: str = "cpu",
           **details: Any) -> dict[str, Any]:
    return {"case": case, "case_file": f"/nowhere/{case}.yaml", "topic": "t", "title": case,
            "framework": framework, "framework_version": version, "device": device, "outcome": outcome,
            "details": details, "timings": {}, "run_info": {}}


def raised(type_: str = "RuntimeError", message: str = "modified by an inplace operation",
           phase: str = "backward") -> dict[str, Any]:
    return {"exception": {"type": type_, "message": message + "\nHint: anomaly detection", "step": 3,
                          "op": "backward", "line": 9, "phase": phase}}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


OLD = [
    record("to_wrong", "raises", **raised()),
    record("to_crash", "silent-correct"),
    record("raise_to_silent", "raises", **raised()),
    record("aliasing", "copies"),
    record("message", "raises", **raised(message="old text")),
    record("warn_wrong", "warns", correct=True, warnings=[{"category": "UserWarning", "message": "careful"}]),
    record("same", "aliases"),
    record("gone", "raises", **raised()),
    record("now_skipped", "raises", **raised()),
    record("arrived", "unsupported", reason="torch.no_such has no parameter 'out'"),
]
NEW = [
    record("to_wrong", "silent-wrong", version="3.0.0", max_error=0.25),
    record("to_crash", "crash", version="3.0.0", message="the worker died", signal=11),
    record("raise_to_silent", "silent-correct", version="3.0.0"),
    record("aliasing", "aliases", version="3.0.0"),
    record("message", "raises", version="3.0.0", **raised(message="new | text")),
    record("warn_wrong", "warns", version="3.0.0", correct=False,
           warnings=[{"category": "UserWarning", "message": "careful"}]),
    record("same", "aliases", version="3.0.0"),
    record("added", "raises", version="3.0.0", **raised()),
    record("now_skipped", "skipped", version="3.0.0", reason="no GPU"),
    record("arrived", "silent-wrong", version="3.0.0", max_error=0.5),  # new API: not "became wrong"
]


def run_diff(tmp_path: Path, old: list[dict], new: list[dict], *extra: str) -> int:
    old_path, new_path = write(tmp_path / "old.jsonl", old), write(tmp_path / "new.jsonl", new)
    return main(["diff", str(old_path), str(new_path), *extra])


def test_severity_function() -> None:
    assert severity(Cell("raises"), Cell("silent-wrong")) == 1
    assert severity(Cell("warns", correct=True), Cell("warns", correct=False)) == 1
    assert severity(Cell("warns"), Cell("warns", correct=False)) is None  # a baseline has no correctness flag
    assert severity(Cell("silent-wrong"), Cell("silent-wrong")) is None
    assert severity(Cell("raises"), Cell("timeout")) == 2
    assert severity(Cell("raises"), Cell("silent-correct")) == 3
    assert severity(Cell("silent-correct"), Cell("unsupported")) == 3
    assert severity(Cell("silent-wrong"), Cell("silent-correct")) == 3  # a fix is still listed
    assert severity(Cell("copies"), Cell("aliases")) == 4
    assert severity(Cell("raises", "RuntimeError", "a"), Cell("raises", "ValueError", "a")) == 6
    assert severity(Cell("raises", "E", "a", "op"), Cell("raises", "E", "a", "backward")) == 6
    assert severity(Cell("raises", "E", "a"), Cell("raises", "E", "b")) == 6
    # an API that arrives is new API, whatever it does: never "became wrong" (it existed nowhere before)
    assert severity(Cell("unsupported"), Cell("silent-wrong")) == 5
    assert severity(Cell("unsupported"), Cell("raises")) == 5
    assert severity(Cell("unsupported"), Cell("error")) == 7
    assert severity(Cell("raises", "E", None), Cell("raises", "E", "b")) is None  # baseline: no message
    # run-specific tokens are not a message change
    assert severity(Cell("raises", "E", "Leaf Var (generated_tensor_20) at 0x7f3a"),
                    Cell("raises", "E", "Leaf Var (generated_tensor_31) at 0x7f99")) is None
    assert severity(Cell("raises"), Cell("skipped")) == 7


def test_upgrade_view_ranked_by_severity(tmp_path: Path, capsys) -> None:
    status = run_diff(tmp_path, OLD, NEW)
    out = capsys.readouterr().out
    assert status == 1
    assert "torch 2.6.2 cpu  ->  torch 3.0.0 cpu  (upgrade view)" in out
    headings = re.findall(r"^\[(\d)\] ", out, re.M)
    assert headings == ["1", "2", "3", "4", "5", "6", "7"]
    lines = out.splitlines()
    order = [next(i for i, line in enumerate(lines) if line.startswith(f"  {case} "))
             for case in ("to_wrong", "warn_wrong", "to_crash", "raise_to_silent", "aliasing", "message",
                          "now_skipped")]
    assert order == sorted(order)
    assert ("  to_wrong [cpu]  raises -> silent-wrong  was RuntimeError (backward): modified by an inplace "
            "operation; now max relative error 0.25") in lines
    assert any(line.startswith("  warn_wrong [cpu]  warns (right result) -> warns (wrong result)") for line in lines)
    assert any(line.startswith("  to_crash [cpu]  silent-correct -> crash  the worker died") for line in lines)
    assert "  aliasing [cpu]  copies -> aliases" in lines
    assert any(line.startswith("  message [cpu]  raises -> raises  was RuntimeError (backward): old text; "
                               "now RuntimeError (backward): new | text") for line in lines)
    assert "  same " not in out
    assert "only in OLD: 1\n  gone [cpu]" in out and "only in NEW: 1\n  added [cpu]" in out
    assert "[5] new API (unsupported before: the spelling, or the mode, arrived in this release): 1\n  arrived" in out
    assert out.rstrip().splitlines()[-1].startswith("counts: 9 cells compared in 1 column pair(s); 2 became wrong, "
                                                    "1 newly crash/timeout, 1 behaviour changed, 1 aliases/copies, "
                                                    "1 new API, 1 message-only, 1 not comparable; 1 only in OLD, "
                                                    "1 only in NEW")


def test_exit_status_zero_without_severe_changes(tmp_path: Path, capsys) -> None:
    status = run_diff(tmp_path, [record("a", "copies"), record("b", "raises", **raised())],
                         [record("a", "aliases"), record("b", "silent-correct")])
    assert status == 0
    assert "[3] " in capsys.readouterr().out
    status = run_diff(tmp_path, [record("a", "copies")], [record("a", "copies")])
    assert status == 0
    assert "no outcome changed" in capsys.readouterr().out
    status = run_diff(tmp_path, [record("a", "raises")], [record("a", "timeout", message="hung")])
    assert status == 1


def test_bad_input_exits_2_without_traceback(tmp_path: Path, capsys) -> None:
    good = write(tmp_path / "good.jsonl", [record("a", "raises")])
    assert main(["diff", str(tmp_path / "missing.jsonl"), str(good)]) == 2
    assert "error: " in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("this is not json\nnor this\n")
    assert main(["diff", str(good), str(tmp_path / "junk.json")]) == 2
    err = capsys.readouterr().err
    assert "junk.json" in err and "Traceback" not in err
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["diff", str(good), str(tmp_path / "empty.jsonl")]) == 2
    (tmp_path / "bad_baseline.json").write_text(json.dumps({"framework": "torch", "cells": {}}))
    assert main(["diff", str(tmp_path / "bad_baseline.json"), str(good)]) == 2
    assert "missing field" in capsys.readouterr().err
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    assert main(["diff", str(good), str(tmp_path / "binary.jsonl")]) == 2


def test_torn_last_line_is_an_error(tmp_path: Path, capsys) -> None:
    good = write(tmp_path / "good.jsonl", [record("a", "raises")])
    path = write(tmp_path / "r.jsonl", [record("a", "raises")])
    path.write_text(path.read_text() + '{"case": "b", "outc')
    with pytest.raises(BadInput, match="may have been interrupted"):
        load_side(path)
    assert main(["diff", str(good), str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {path}:2: truncated record") and captured.err.count("\n") == 1
    assert captured.out == ""


@pytest.mark.parametrize("line, problem", [
    ("{broken", "not a JSON record"),
    ('{"note": "hello"}', "not a result record: missing field(s) case"),
    ("[1, 2]", "not a result record: a JSON list, not an object"),
])
def test_a_line_that_is_not_a_record_is_an_error(tmp_path: Path, capsys, line: str, problem: str) -> None:
    good = write(tmp_path / "good.jsonl", [record("a", "raises")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record("a", "raises")) + "\n" + line + "\n" + json.dumps(record("b", "raises")) + "\n")
    assert main(["diff", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:2: {problem}") and err.count("\n") == 1


def with_kind(kind: str | None, **kwargs: Any) -> dict[str, Any]:
    details = raised(**kwargs)
    if kind:
        details["exception"]["kind"] = kind
    return details


def test_a_change_of_raise_kind_is_a_behaviour_change(tmp_path: Path, capsys) -> None:
    assert severity(Cell("raises", "RuntimeError", "a", kind="autograd"),
                    Cell("raises", "TypeError", "b", kind="rejection")) == 3
    assert severity(Cell("raises", "RuntimeError", "a", kind="autograd"),
                    Cell("raises", "RuntimeError", "b", kind="autograd")) == 6
    assert severity(Cell("raises", "RuntimeError", "a"), Cell("raises", "RuntimeError", "a", kind="other")) is None
    old = [record("kind", "raises", **with_kind("autograd")),
           record("text", "raises", **with_kind("autograd", message="old text")),
           record("unknown", "raises", **with_kind(None))]
    new = [record("kind", "raises", version="3.0.0", **with_kind("rejection", type_="AttributeError", phase="op")),
           record("text", "raises", version="3.0.0", **with_kind("autograd", message="new text")),
           record("unknown", "raises", version="3.0.0", **with_kind("rejection"))]
    assert run_diff(tmp_path, old, new) == 0
    out = capsys.readouterr().out
    assert ("[3] behaviour changed (raises <-> silent, an API or mode gone, a different kind of raise, and other "
            "outcome changes): 1\n  kind [cpu]  raises -> raises  was RuntimeError (backward; kind autograd): "
            "modified by an inplace operation; now AttributeError (op; kind rejection): modified by an inplace "
            "operation") in out
    assert ("  text [cpu]  raises -> raises  was RuntimeError (backward; kind autograd): old text; "
            "now RuntimeError (backward; kind autograd): new text") in out
    assert out.index("[3] ") < out.index("[6] ")
    assert "  unknown " not in out  # an old record has no kind: nothing to compare


def test_baseline_without_kind_against_results_with_kind(tmp_path: Path, capsys) -> None:
    baseline = tmp_path / "torch-2.6.2-cpu.json"
    baseline.write_text(json.dumps({"framework": "torch", "version": "2.6.2", "device": "cpu", "cells": {
        "old_entry": {"outcome": "raises", "exception": "RuntimeError", "phase": "backward"},
        "new_entry": {"outcome": "raises", "exception": "RuntimeError", "phase": "backward", "kind": "autograd"}}}))
    new = write(tmp_path / "new.jsonl", [record("old_entry", "raises", **with_kind("autograd")),
                                         record("new_entry", "raises", **with_kind("rejection"))])
    assert main(["diff", str(baseline), str(new)]) == 0
    out = capsys.readouterr().out
    assert "  old_entry " not in out
    assert ("  new_entry [cpu]  raises -> raises  was RuntimeError (backward; kind autograd); "
            "now RuntimeError (backward; kind rejection): modified by an inplace operation") in out


@pytest.mark.parametrize("where", ["uncreatable", "directory", "read-only"])
def test_unwritable_markdown_is_a_one_line_error(tmp_path: Path, capsys, where: str) -> None:
    (tmp_path / "a_file").write_text("")
    if where == "read-only":
        from tests.test_report import read_only_directory

        target = read_only_directory(tmp_path) / "diff.md"
    else:
        target = {"uncreatable": tmp_path / "a_file" / "sub" / "diff.md", "directory": tmp_path}[where]
    if where == "uncreatable":  # a folder that is not there: refused as the option is read
        with pytest.raises(SystemExit) as stopped:
            run_diff(tmp_path, [record("a", "raises")], [record("a", "copies")], "--markdown", str(target))
        assert stopped.value.code == 2
        captured = capsys.readouterr()
        assert f"no such folder: {target.parent}" in captured.err and captured.err.count("\n") == 1
    else:
        assert run_diff(tmp_path, [record("a", "raises")], [record("a", "copies")], "--markdown", str(target)) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith(f"error: cannot write {target}: ") and captured.err.count("\n") == 1
    assert captured.out == ""


def test_baseline_file_as_old(tmp_path: Path, capsys) -> None:
    baseline = tmp_path / "torch-2.6.2-cpu.json"
    baseline.write_text(json.dumps({"framework": "torch", "version": "2.6.2", "device": "cpu", "cells": {
        "a": {"outcome": "raises", "exception": "RuntimeError", "phase": "backward"},
        "b": {"outcome": "raises", "exception": "RuntimeError", "phase": "backward"},
        "c": {"outcome": "copies"}}}))
    new = write(tmp_path / "new.jsonl", [record("a", "silent-wrong", version="3.0.0", max_error=0.1),
                                         record("b", "raises", version="3.0.0", **raised(phase="op")),
                                         record("c", "copies", version="3.0.0")])
    assert main(["diff", str(baseline), str(new)]) == 1
    out = capsys.readouterr().out
    assert f"OLD: {baseline} (baseline)" in out
    assert "  a [cpu]  raises -> silent-wrong  was RuntimeError (backward); now max relative error 0.1" in out
    assert "[6] " in out and "  b [cpu]  raises -> raises  was RuntimeError (backward); now RuntimeError (op)" in out
    assert "  c " not in out


def test_porting_view_torch_vs_paddle(tmp_path: Path, capsys) -> None:
    torch = write(tmp_path / "torch.jsonl", [
        record("iadd", "raises", version="2.13.0", **raised()),
        record("rnn", "raises", version="2.13.0", **raised()),
        record("numpy", "aliases", version="2.13.0"),
        record("iadd", "skipped", version="2.13.0", device="gpu", reason="no GPU"),
        record("rnn", "skipped", version="2.13.0", device="gpu", reason="no GPU")])
    paddle = write(tmp_path / "paddle.jsonl", [
        record("iadd", "silent-correct", framework="paddle", version="3.3.1"),
        record("rnn", "silent-wrong", framework="paddle", version="3.3.1", max_error=7.8e-4),
        record("numpy", "copies", framework="paddle", version="3.3.1"),
        record("iadd", "skipped", framework="paddle", version="3.3.1", device="gpu", reason="CPU build"),
        record("rnn", "skipped", framework="paddle", version="3.3.1", device="gpu", reason="CPU build")])
    markdown = tmp_path / "out" / "diff.md"
    markdown.parent.mkdir()
    assert main(["diff", str(torch), str(paddle), "--markdown", str(markdown)]) == 1
    out = capsys.readouterr().out
    assert "  torch 2.13.0 cpu  ->  paddle 3.3.1 cpu  (porting view)" in out
    assert "  torch 2.13.0 gpu  ->  paddle 3.3.1 gpu  (porting view)" in out
    assert "  rnn [cpu]  raises -> silent-wrong" in out
    assert "  iadd [cpu]  raises -> silent-correct" in out
    assert "  numpy [cpu]  aliases -> copies" in out
    assert "[gpu]" not in out  # skipped on both sides: nothing changed
    md = markdown.read_text(encoding="utf-8")
    sections = re.findall(r"^## (\d)\. ", md, re.M)
    assert sections == ["1", "3", "4"]
    assert "| torch 2.13.0 cpu | paddle 3.3.1 cpu | porting view |" in md
    assert "| `rnn` | cpu | silent-wrong |" not in md
    assert re.search(r"^\| `rnn` \| cpu \| raises \| silent-wrong \| .*0\.00078 \|$", md, re.M)
    # and the other way round
    assert main(["diff", str(paddle), str(torch)]) == 0
    assert "  rnn [cpu]  silent-wrong -> raises" in capsys.readouterr().out


def test_a_gpu_column_against_the_cpu_column_names_the_device_as_the_difference(tmp_path: Path, capsys) -> None:
    """The GPU column (tools/gpu_column.sh) is checked against the committed CPU column of its version."""
    cpu = [record("a", "aliases"), record("b", "silent-correct")]
    gpu = [record("a", "aliases", device="gpu"), record("b", "silent-wrong", device="gpu", max_error=0.5)]
    assert main(["diff", str(write(tmp_path / "cpu.jsonl", cpu)), str(write(tmp_path / "gpu.jsonl", gpu))]) == 1
    out = capsys.readouterr().out
    assert "  torch 2.6.2 cpu  ->  torch 2.6.2 gpu  (same version, another device: the device is the difference)" in out
    assert "b [gpu]  silent-correct -> silent-wrong" in out


def test_several_columns_per_file_matched_by_framework_and_device(tmp_path: Path, capsys) -> None:
    both = [record("a", "raises", **raised()), record("a", "silent-correct", framework="paddle", version="3.3.1"),
            record("a", "skipped", device="gpu", reason="no GPU")]
    edited = [dict(r) for r in both]
    edited[1] = record("a", "silent-wrong", framework="paddle", version="3.3.1", max_error=0.5)
    assert main(["diff", str(write(tmp_path / "a.jsonl", both)), str(write(tmp_path / "b.jsonl", edited))]) == 1
    out = capsys.readouterr().out
    assert "  paddle 3.3.1 cpu  ->  paddle 3.3.1 cpu  (same version)" in out
    assert "  torch 2.6.2 cpu  ->  torch 2.6.2 cpu  (same version)" in out
    assert "  a [paddle 3.3.1 cpu]  silent-correct -> silent-wrong  max relative error 0.5" in out
    # one side holds only paddle: torch is reported as not compared, paddle still matched
    only_paddle = [record("a", "silent-correct", framework="paddle", version="3.4.0")]
    assert main(["diff", str(tmp_path / "a.jsonl"), str(write(tmp_path / "c.jsonl", only_paddle))]) == 0
    out = capsys.readouterr().out
    assert "  paddle 3.3.1 cpu  ->  paddle 3.4.0 cpu  (upgrade view)" in out
    assert "not compared: OLD column torch 2.6.2 cpu" in out


def test_no_matching_device_is_bad_input(tmp_path: Path, capsys) -> None:
    cpu = write(tmp_path / "cpu.jsonl", [record("a", "raises"), record("b", "raises", framework="paddle")])
    gpu = write(tmp_path / "gpu.jsonl", [record("a", "raises", device="gpu")])
    assert main(["diff", str(cpu), str(gpu)]) == 2
    assert "by device" in capsys.readouterr().err


def test_markdown_escapes_pipes(tmp_path: Path) -> None:
    old = write(tmp_path / "o.jsonl", [record("m", "raises", **raised(message="a | b"))])
    new = write(tmp_path / "n.jsonl", [record("m", "raises", **raised(message="c | d"))])
    md = render_markdown(compare(load_side(old), load_side(new)))
    rows = [line for line in md.splitlines() if line.startswith("| `m`")]
    assert len(rows) == 1 and len(re.split(r"(?<!\\)\|", rows[0])) == 7
    assert "a \\| b" in rows[0] and "c \\| d" in rows[0]
    assert "## 6. " in md
    assert render_text(compare(load_side(old), load_side(new))).count("\n  m [cpu]") == 1


@pytest.mark.parametrize("edit", ["silent-wrong", "copies"])
def test_real_results_against_themselves_edited(tmp_path: Path, capsys, edit: str) -> None:
    latest = Path(__file__).resolve().parents[1] / "reports" / "results" / "paddle-3.3.1-cpu.jsonl"
    records = records_in(latest)
    target = next(r for r in records if r["outcome"] not in ("skipped", edit, "silent-wrong"))
    edited = [dict(r, outcome=edit) if r is target else r for r in records]
    status = main(["diff", str(latest), str(write(tmp_path / "edited.jsonl", edited))])
    out = capsys.readouterr().out
    assert f"  {target['case']} [" in out and f"-> {edit}" in out
    assert status == (1 if edit == "silent-wrong" else 0)


def test_summarised_arrays_diff_like_any_record(tmp_path: Path, capsys) -> None:
    from conformance.records.results import append_record

    big = [float(i) for i in range(1000)]
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    append_record(old, record("big", "silent-correct", observations=[
        {"name": "value(y)", "ok": True, "value": big, "reference": big}]))
    append_record(new, record("big", "silent-wrong", version="3.0.0", max_error=2.0, observations=[
        {"name": "value(y)", "ok": False, "value": [3 * v for v in big], "reference": big, "max_rel_error": 2.0}]))
    assert '"summary":true' in new.read_text()  # the record keeps a summary of the array, not its values
    assert main(["diff", str(old), str(new)]) == 1
    assert "  big [cpu]  silent-correct -> silent-wrong  max relative error 2" in capsys.readouterr().out


def in_mode(mode: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return dict(record(*args, **kwargs), mode=mode)


def test_the_eager_to_compiled_view_pairs_each_compiled_mode_with_eager(tmp_path: Path, capsys) -> None:
    both = write(tmp_path / "both.jsonl", [
        in_mode("eager", "a", "raises", "paddle", "3.3.1", **raised()),
        in_mode("to_static", "a", "silent-wrong", "paddle", "3.3.1"),
        in_mode("to_static_full_graph", "a", "raises", "paddle", "3.3.1", **raised()),
        in_mode("eager", "a", "raises", "torch", "2.13.0", **raised()),
        in_mode("compile", "a", "raises", "torch", "2.13.0", **raised(phase="compilation")),
    ])
    assert main(["diff", "--modes", str(both)]) == 1
    out = capsys.readouterr().out
    assert "(eager -> to_static view)" in out and "(eager -> compile view)" in out
    assert "(eager -> to_static_full_graph view)" in out
    assert re.search(r"a \[cpu to_static\]\s+raises -> silent-wrong", out)
    assert re.search(r"a \[cpu compile\]\s+raises -> raises", out)  # a change of phase only


def test_the_eager_to_compiled_view_needs_both_kinds_of_column(tmp_path: Path, capsys) -> None:
    eager_only = write(tmp_path / "eager.jsonl", [record("a", "raises", **raised())])
    assert main(["diff", "--modes", str(eager_only)]) == 2
    assert "needs eager and compiled columns" in capsys.readouterr().err


def _under(numpy: str, records: list[dict[str, Any]], build: str = "cpu") -> list[dict[str, Any]]:
    return [{**r, "run_info": {"numpy": numpy, "build": build}} for r in records]


def test_columns_under_different_numpy_are_said_to_be_inseparable_without_a_control(tmp_path: Path, capsys) -> None:
    old = _under("1.26.4", [record("a", "raises", **raised())])
    new = _under("2.4.6", [record("a", "silent-correct", version="2.13.0")], build="cu128")
    assert run_diff(tmp_path, old, new) == 0
    out = capsys.readouterr().out
    assert ("note: torch 2.6.2 cpu -> torch 2.13.0 cpu: NumPy differs (1.26.4 -> 2.4.6), and NumPy can change "
            "outcomes by itself: a change below may be NumPy's rather than torch's, and this comparison cannot "
            "tell them apart") in out
    assert "builds differ (cpu -> cu128)" in out
    same = _under("2.4.6", [record("a", "silent-correct", version="2.13.0")])
    assert run_diff(tmp_path, _under("2.4.6", [record("a", "raises", **raised())]), same) == 0
    assert "NumPy differs" not in capsys.readouterr().out


@pytest.mark.parametrize("control_version", ["2.6.2", "2.13.0"])
def test_a_control_column_tells_numpys_changes_from_the_frameworks(tmp_path: Path, capsys,
                                                                   control_version: str) -> None:
    """a: NumPy's change (the old torch under the new NumPy already does it); b: torch's (it does not)."""
    old = _under("1.26.4", [record("a", "raises", **raised()), record("b", "aliases")])
    new = _under("2.4.6", [record("a", "silent-correct", version="2.13.0"),
                           record("b", "copies", version="2.13.0")])
    if control_version == "2.6.2":  # the old version under the new NumPy
        control = _under("2.4.6", [record("a", "silent-correct"), record("b", "aliases")])
    else:  # the new version under the old NumPy
        control = _under("1.26.4", [record("a", "raises", version="2.13.0", **raised()),
                                    record("b", "copies", version="2.13.0")])
    path = write(tmp_path / "control.jsonl", control)
    assert run_diff(tmp_path, old, new, "--numpy-control", str(path)) == 0
    out = capsys.readouterr().out
    assert f"each change is attributed by the control column torch {control_version} cpu" in out
    assert re.search(r"^  a \[cpu\]  raises -> silent-correct .*\[the change is NumPy's\]$", out, re.M), out
    assert re.search(r"^  b \[cpu\]  aliases -> copies .*\[the change is torch's\]$", out, re.M), out


@pytest.mark.parametrize(("numpy", "says"), [
    ("1.26.4", "the two sides ran under the same NumPy"),
    ("2.4.6", "it would need torch 2.6.2 under NumPy 2.4.6 or 2.13.0 under NumPy 1.26.4"),
])
def test_a_control_that_controls_nothing_is_refused_not_ignored(tmp_path: Path, capsys, numpy: str,
                                                                 says: str) -> None:
    """A --numpy-control whose columns are neither side's version under the other side's NumPy (or given
    where both sides ran one NumPy) attributes nothing: one line, exit 2, not a diff that looks controlled."""
    old = _under("1.26.4", [record("a", "raises", **raised())])
    new = _under(numpy, [record("a", "silent-correct", version="2.13.0")])
    control = write(tmp_path / "control.jsonl", _under("1.26.4", [record("a", "raises", version="2.9.1",
                                                                          **raised())]))
    assert run_diff(tmp_path, old, new, "--numpy-control", str(control)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    assert f"controls nothing in this comparison: {says}" in captured.err
    assert "torch 2.9.1 cpu under NumPy 1.26.4" in captured.err
    assert main(["diff", str(tmp_path / "old.jsonl"), "--modes", "--numpy-control", str(control)]) == 2
    assert "--numpy-control controls nothing with --modes" in capsys.readouterr().err


def test_versions_by_name_compare_their_committed_files(tmp_path: Path, capsys) -> None:
    committed = tmp_path / "results"
    committed.mkdir()
    write(committed / "torch-2.4.1-cpu.jsonl", [record("a", "raises", version="2.4.1", **raised())])
    write(committed / "torch-2.4.1-gpu.jsonl", [record("a", "skipped", version="2.4.1", device="gpu")])
    write(committed / "torch-2.15.0-cpu.jsonl", [record("a", "silent-wrong", version="2.15.0", max_error=0.5)])
    assert main(["diff", "torch==2.4", "torch==2.15.0", "--committed", str(committed)]) == 1
    out = capsys.readouterr().out
    assert "torch 2.4.1 cpu  ->  torch 2.15.0 cpu  (upgrade view)" in out and "gpu" not in out.split("[1]")[0]
    assert main(["diff", "torch==2.3.0", "torch==2.15.0", "--committed", str(committed)]) == 2
    assert "no committed results of torch 2.3.0" in capsys.readouterr().err


@pytest.mark.parametrize("outcome", [7, "weird-outcome", None, ["raises"]])
def test_a_baseline_entry_with_no_outcome_of_this_package_is_bad_input(tmp_path, outcome) -> None:
    """An outcome the package never writes (a number, an unknown word) is not a behaviour that changed: the
    file is refused in one line, exit 2, never read into a diff or a traceback."""
    import json

    from .runs import run_cli

    good = {"framework": "torch", "version": "2.13.0", "device": "cpu", "cells": {"a": {"outcome": "raises"}}}
    bad = {**good, "cells": {"a": {"outcome": outcome}}}
    (tmp_path / "old.json").write_text(json.dumps(good))
    (tmp_path / "new.json").write_text(json.dumps(bad))
    ran = run_cli(tmp_path, "diff", "old.json", "new.json", timeout=120)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1 and "new.json" in ran.stderr


@pytest.mark.parametrize("version", ['9.9"><img src=x onerror=alert(1)>', "7.0/../../../escaped", ""])
def test_a_results_file_whose_version_is_no_version_is_refused_by_site_and_diff(tmp_path, version) -> None:
    import json

    from .runs import run_cli

    record = {"case": "a", "framework": "torch", "framework_version": version, "device": "cpu", "outcome": "raises"}
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "cases").mkdir()
    for args in (["diff", "r.jsonl", "r.jsonl"], ["site", "--results", "r.jsonl", "--output", "out"]):
        ran = run_cli(tmp_path, *args, timeout=300)
        assert ran.returncode == 2 and "Traceback" not in ran.stderr, (args, ran.stderr)
        assert "r.jsonl" in ran.stderr
    assert not list(tmp_path.rglob("*.html")) and not (tmp_path.parent / "escaped").exists()


def test_a_message_only_change_shows_the_part_of_the_message_that_changed(tmp_path: Path, capsys) -> None:
    """Two 200-character messages that differ in one word (torch 2.4 names ReluBackward0, 2.15 Relu): the row
    shows that word with a little of its context, not the same truncated text twice."""
    long = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[torch.FloatTensor [2, 3]], which is output 0 of {}, is at version 1; expected version 0 instead.")
    old = [record("a", "raises", **raised(message=long.format("ReluBackward0")))]
    new = [record("a", "raises", version="2.15.0", **raised(message=long.format("Relu")))]
    assert run_diff(tmp_path, old, new) == 0
    out = capsys.readouterr().out
    assert ('RuntimeError (backward), the message changed: was "… is output 0 of ReluBackward0, is at version '
            '1; …"; now "… is output 0 of Relu, is at version 1; …"') in out, out


def test_a_new_api_that_arrives_silently_wrong_is_listed_first_among_the_new_apis(tmp_path: Path, capsys) -> None:
    old = [record(case, "unsupported") for case in ("a_harmless", "b_harmless", "z_dangerous")]
    new = [record("a_harmless", "silent-correct", version="2.13.0"),
           record("b_harmless", "aliases", version="2.13.0"),
           record("z_dangerous", "silent-wrong", version="2.13.0", max_error=0.5)]
    assert run_diff(tmp_path, old, new) == 0  # a spelling that did not exist before gates nothing
    lines = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")
             and line.split()[0].endswith(("harmless", "dangerous"))]
    assert lines == ["z_dangerous", "a_harmless", "b_harmless"], lines


def test_a_cell_whose_values_differ_between_two_runs_is_listed_and_never_gates(tmp_path: Path, capsys) -> None:
    """found_leaf_array_from_dlpack_set_*'s kind: a read of freed memory, wrong with other values each run.
    Its record says so (``nondeterministic``); a diff lists it under its own heading and exits 0, and a
    baseline takes it for no change."""
    from conformance.records.baseline import entries_match, summarize

    flaky = {"second_outcome": "silent-wrong", "differing": ["value(t2)"]}
    old = [record("freed", "silent-correct"), record("steady", "silent-correct")]
    new = [record("freed", "silent-wrong", version="3.0.0", max_error=3e22, nondeterministic=flaky),
           record("steady", "silent-correct", version="3.0.0")]
    assert run_diff(tmp_path, old, new) == 0
    out = capsys.readouterr().out
    assert "not the same from run to run" in out and "freed" in out and "became wrong" not in out.split("counts:")[0]
    assert severity(Cell("silent-correct"), Cell("silent-wrong", nondeterministic=True)) != 1
    assert severity(Cell("silent-correct"), Cell("silent-wrong")) == 1  # a steady wrong value still gates
    entry = summarize(new[0])
    assert entry == {"outcome": "silent-wrong", "nondeterministic": True}
    from conformance.records.record import slim

    assert summarize(slim(new[0])) == entry  # what the end of a run writes its baselines from
    assert entries_match({"outcome": "silent-correct"}, entry)
    assert not entries_match({"outcome": "silent-correct"}, summarize(record("x", "silent-wrong")))


#: A case with one value, which the tests of a wrong cell's second run give replies for.
TWICE = """
    id: twice
    title: t
    steps:
      - {op: tensor, out: x, value: [1.0, 2.0]}
      - {op: mul, args: [x, 2.0], out: y}
      - {observe: value, of: y}
"""


def test_a_wrong_cell_is_run_a_second_time_and_a_difference_is_recorded(monkeypatch, write_case) -> None:
    """Engine._once_more: a wrong cell runs again in a fresh program; values that differ from the first run
    are named in the record, the same values leave it as it was."""
    from conformance.case.load import load_case
    from conformance.engine import Engine

    case = load_case(write_case(TWICE))
    engine = Engine(timeout=60)
    replies = iter([{"status": "completed", "observations": [
        {"kind": "value", "name": "value(y)", "step": 3, "dtype": "float32", "shape": [2], "value": [7.0, 7.0]}]}])
    monkeypatch.setattr(engine, "_execute_timed", lambda *a: (next(replies), None, 0.01))
    try:
        first = {"observations": [{"name": "value(y)", "value": [5.0, 5.0]}]}
        flagged = engine._once_more(case, "torch", "cpu", "eager", {"status": "completed"}, first)
        replies = iter([{"status": "completed", "observations": [
            {"kind": "value", "name": "value(y)", "step": 3, "dtype": "float32", "shape": [2], "value": [5.0, 5.0]}]}])
        steady = engine._once_more(case, "torch", "cpu", "eager", {"status": "completed"},
                                   {"observations": [{"name": "value(y)", "value": [5.0, 5.0]}]})
    finally:
        engine.close()
    assert flagged["nondeterministic"] == {"second_outcome": "silent-wrong", "differing": ["value(y)"]}
    assert "nondeterministic" not in steady


def test_a_second_run_alike_in_all_judging_reads_is_not_judged_again(monkeypatch, write_case) -> None:
    """Engine._once_more judges a wrong cell's second reply only where it differs from the first in what
    judging reads: how long it ran and its program are not read; a bit of a value (-0.0 for 0.0), a warning
    or a large observation's bytes are."""
    from conformance.case.load import load_case
    from conformance.engine import Engine
    from conformance.workers.arrays import INLINE_ELEMENTS, pack

    case = load_case(write_case(TWICE))
    large = [float(i) for i in range(INLINE_ELEMENTS + 1)]

    def reply(value: Any, **extra: Any) -> dict[str, Any]:
        return {"status": "completed", "observations": [{"kind": "value", "name": "value(y)", "step": 3,
                                                         "dtype": "float32", "shape": [2], "value": value}],
                "warnings": [], "native_output": "", **extra}

    engine = Engine(timeout=60)
    judged: list[dict] = []
    judge = engine._judge
    monkeypatch.setattr(engine, "_judge", lambda case, reply, *a: judged.append(reply) or judge(case, reply, *a))
    seconds = iter(range(100))

    def twice(first: dict[str, Any], second: dict[str, Any]) -> tuple[dict[str, Any], int]:
        judged.clear()
        monkeypatch.setattr(engine, "_execute_timed", lambda *a: (second, None, 0.01))
        outcome, details = engine._judge(case, first, "torch", "cpu")
        assert outcome == "silent-wrong"
        details = engine._once_more(case, "torch", "cpu", "eager", first, details)
        return details, len(judged) - 1

    try:
        steady, again = twice(reply([0.0, 5.0], run_seconds=0.5, kept={"source": "a"}),
                              reply([0.0, 5.0], run_seconds=next(seconds)))
        assert (again, "nondeterministic" in steady) == (0, False)
        steady, again = twice(reply(pack(large), run_seconds=0.5), reply(pack(large), run_seconds=0.7))
        assert (again, "nondeterministic" in steady) == (0, False)
        signed, again = twice(reply([0.0, 5.0]), reply([-0.0, 5.0]))
        assert (again, "nondeterministic" in signed) == (1, False)  # judged: the same value, the same outcome
        warned, again = twice(reply([0.0, 5.0]), reply([0.0, 5.0], warnings=[{"category": "UserWarning",
                                                                              "message": "<b>x</b>"}]))
        assert again == 1 and warned["nondeterministic"] == {"second_outcome": "warns", "differing": []}
        moved = large[:-1] + [1e300]
        flagged, again = twice(reply(pack(large)), reply(pack(moved)))
        assert again == 1 and flagged["nondeterministic"] == {"second_outcome": "silent-wrong",
                                                              "differing": ["value(y)"]}
    finally:
        engine.close()


def test_a_value_that_varies_by_machine_compared_across_cpus_is_listed_and_never_gates(tmp_path: Path,
                                                                                          capsys) -> None:
    """matmul_out_names_its_input's kind: MKL's kernel on one CPU computes the product, on another zeros.
    Compared across CPUs (or with a baseline, which records no CPU), the flip between silent-correct and
    silent-wrong is listed under its own heading and exits 0; on one CPU it is a change as any other, and a
    raise or a memory change is a change on any machines."""
    why = "MKL picks its kernel by the CPU's vendor"

    def on(cpu: str, outcome: str, **details: Any) -> dict[str, Any]:
        found = record("matmul_out", outcome, **details)
        found["run_info"] = {"cpu": cpu}
        return found

    intel, amd = on("Intel Xeon <b>", "silent-correct", varies_by_machine=why), on("AMD EPYC", "silent-wrong",
                                                                                varies_by_machine=why)
    assert run_diff(tmp_path, [intel], [amd]) == 0
    out = capsys.readouterr().out
    assert "another machine's value" in out and "matmul_out" in out
    assert "became wrong" not in out.split("counts:")[0]
    assert run_diff(tmp_path, [on("AMD EPYC", "silent-correct", varies_by_machine=why)], [amd]) == 1
    assert "became wrong" in capsys.readouterr().out.split("counts:")[0]  # one CPU: the framework's change
    assert run_diff(tmp_path, [intel], [on("AMD EPYC", "raises", **raised())]) == 0
    out = capsys.readouterr().out
    assert "behaviour changed" in out.split("counts:")[0] and "another machine's value" not in out
    baseline = tmp_path / "baseline.json"
    from conformance.records.baseline import summarize

    baseline.write_text(json.dumps({"framework": "torch", "version": "2.6.2", "device": "cpu",
                                    "cells": {"matmul_out": summarize(intel)}}), encoding="utf-8")
    assert main(["diff", str(baseline), str(write(tmp_path / "amd.jsonl", [amd]))]) == 0
    assert "another machine's value" in capsys.readouterr().out
    assert severity(Cell("silent-correct", varies_by_machine=True), Cell("silent-wrong")) not in (None, 1)
    assert severity(Cell("silent-correct", varies_by_machine=True), Cell("silent-wrong"), one_machine=True) == 1
