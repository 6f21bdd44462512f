"""The typed record: parsing, columns and version order, bounds, strict reading, and explain()."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.records.bounds import MAX_TEXT
from conformance.records.explain import explain
from conformance.records.record import Column, Record, RecordError, version_key
from conformance.records.results import ResultsError, ResultsFile, append_record, load_records, read_records

from .committed import committed_results

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = committed_results()


def raw(case: str = "c", outcome: str = "raises", **details: Any) -> dict[str, Any]:
    return {"case": case, "case_file": f"/nowhere/{case}.yaml", "topic": "t", "title": f"title of {case}",
            "framework": "torch", "framework_version": "2.13.0", "device": "cpu", "outcome": outcome,
            "details": details, "timings": {}, "run_info": {}}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# -- the record -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_committed_record_loads_and_round_trips(path: Path) -> None:
    records = load_records([path])
    assert records
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    runs = {line["run"]: line for line in lines if "case" not in line}
    assert runs, "a committed results file holds its runs' information in run lines"
    assert all(set(run["column"]) == {"framework", "framework_version", "device", "mode"} for run in runs.values())
    record_lines = [line for line in lines if "case" in line]
    assert len(record_lines) == len(records)
    assert not any({"run_info", "framework", "framework_version", "mode"} & set(line) for line in record_lines)
    for line, record in zip(record_lines, records):
        run = runs[line["run"]]
        assert {"framework": record.framework, "framework_version": record.framework_version,
                "device": record.device, "mode": record.mode} == run["column"]
        assert record.run_info == run["run_info"]
        again = Record.from_dict(record.to_dict())
        assert again == record
        expected = {**run["column"], **{k: v for k, v in line.items() if k != "run"}, "run_info": run["run_info"]}
        assert record.to_dict() == expected  # written bounded: reading changes nothing


def test_unknown_keys_are_kept_and_mode_is_read() -> None:
    record = Record.from_dict({**raw(), "mode": "compiled", "shard": 3})
    assert record.extra == {"shard": 3}
    assert record.to_dict()["shard"] == 3
    assert record.column == Column("torch", "2.13.0", "cpu", "compiled")
    assert Record.from_dict(raw()).column == Column("torch", "2.13.0", "cpu")


@pytest.mark.parametrize("value, problem", [
    ([1, 2], "a JSON list, not an object"),
    ("text", "a JSON str, not an object"),
    ({"hello": "world"}, "missing field(s) case, framework, framework_version, device, outcome"),
    ({**raw(), "outcome": 3}, "field 'outcome' is 3, not a non-empty string"),
    ({**raw(), "case": ""}, "field 'case' is '', not a non-empty string"),
    ({**raw(), "details": [1]}, "field 'details' is a list, not an object"),
    ({**raw(), "title": 5}, "field 'title' is 5, not a string"),
])
def test_a_value_that_is_not_a_record_is_refused(value: Any, problem: str) -> None:
    with pytest.raises(RecordError) as caught:
        Record.from_dict(value)
    assert str(caught.value) == f"not a result record: {problem}"


def test_versions_order_with_packaging_and_unparseable_ones_last() -> None:
    versions = ["3.10.0", "2.13.0+cpu", "nightly-2", "3.0.0", "2.9.1", "3.0.0rc1", "3.0.0.post1", "3.3",
                "2.13.0", "nightly-10", "3.0.0-beta"]
    assert sorted(versions, key=version_key) == [
        "2.9.1", "2.13.0", "2.13.0+cpu", "3.0.0-beta", "3.0.0rc1", "3.0.0", "3.0.0.post1", "3.3", "3.10.0",
        "nightly-2", "nightly-10"]
    assert version_key("3.0") == version_key("3.0.0")


def test_columns_order_and_label() -> None:
    columns = [Column("torch", "2.14.1", "cpu"), Column("torch", "2.13.0+cpu", "gpu"),
               Column("torch", "2.13.0+cpu", "cpu", "compiled"), Column("paddle", "3.3.1", "cpu"),
               Column("torch", "2.13.0+cpu", "cpu")]
    assert [c.label for c in sorted(columns)] == [
        "paddle 3.3.1 cpu", "torch 2.13.0+cpu cpu", "torch 2.13.0+cpu cpu compiled", "torch 2.13.0+cpu gpu",
        "torch 2.14.1 cpu"]
    assert Column("torch", "2.13.0", "cpu").where == "torch 2.13.0 (cpu)"
    assert Column("torch", "2.13.0", "cpu", "compiled").where == "torch 2.13.0 (cpu, compiled)"


# -- bounds -----------------------------------------------------------------------------------------------

def test_a_huge_observation_writes_a_small_line(tmp_path: Path) -> None:
    big = np.arange(1000 * 10000, dtype=np.float64).reshape(1000, 10000) / 7
    observation = {"name": "value(y)", "kind": "value", "ok": False, "max_rel_error": 0.5,
                   "value": big.tolist(), "reference": (big * 2).tolist()}
    path = tmp_path / "r.jsonl"
    append_record(path, raw("big", "silent-wrong", observations=[observation], max_error=0.5))
    line = path.read_bytes()
    assert len(line) < 20_000
    (record,) = load_records([path])
    summary = record.observations[0]["value"]
    assert summary["summary"] is True and summary["shape"] == [1000, 10000] and summary["size"] == 10_000_000
    assert summary["digest"] == "sha256:" + hashlib.sha256(big.tobytes()).hexdigest()[:16]
    assert summary["min"] == 0.0 and summary["max"] == pytest.approx(big.max())
    assert summary["head"] == big.reshape(-1)[:8].tolist()
    assert record.observations[0]["reference"]["digest"] != summary["digest"]
    # the explanation and a second pass through the caps both cope with a summary
    assert "value(y): got array 1000x10000 (10000000 elements, min 0, max 1.429e+06, sha256:" in explain(record)
    assert Record.from_dict(record.to_dict()) == record


def test_small_arrays_stay_and_long_text_is_cut() -> None:
    small = {"name": "v", "value": [[1.0, 2.0]] * 32, "reference": [[1.0, 2.0]] * 32}  # 64 elements
    record = Record.from_dict(raw(observations=[small], message="m" * 100_000,
                                  exception={"type": "E", "message": "x" * 50_000},
                                  warnings=[{"category": "W", "message": f"{i} " + "w" * 9000} for i in range(100)]))
    written = record.to_dict()["details"]
    assert written["observations"][0]["value"] == small["value"]
    for text in (written["message"], written["warnings"][0]["message"]):
        assert len(text) <= MAX_TEXT and "…[cut: " in text
    assert len(written["exception"]["message"]) <= MAX_TEXT and "characters cut]" in written["exception"]["message"]
    assert "[cut: 100000 characters in all]" in written["message"]
    assert len(written["warnings"]) == 64 and written["warnings_omitted"] == 36
    assert Record.from_dict(record.to_dict()).to_dict() == record.to_dict()  # caps applied twice: no change


def test_the_stored_form_leaves_out_what_the_record_repeats_and_reading_puts_it_back() -> None:
    """records/storage.py: a warning raised 40 times at one step is stored once with its count, an
    observation's kind where its name says it, float32 values at float32's shortest spelling, the case file
    where topic and id give it; reading puts them back."""
    from conformance.records.storage import compact

    value32 = float(np.float32(1.7847977))  # 1.7847976684570312 as float64
    observations = [{"name": "value(y)", "kind": "value", "judged_by": "reference", "dtype": "float32",
                     "value": [value32, 2.0], "reference": [1.7847977445187577, 2.0], "ok": True,
                     "max_rel_error": 2.417504348069889e-08},
                    {"name": "v1", "kind": "version", "value": 1},
                    {"name": "grad(x)", "kind": "grad", "judged_by": "expected", "value": 3.0}]
    spam = {"category": "UserWarning", "message": "machinery", "step": 8, "why": "not about the case"}
    record = Record.from_dict({**raw(observations=observations, ignored_warnings=[spam] * 40),
                               "topic": "saved", "case_file": "cases/saved/c.yaml"})
    written = record.to_dict()
    stored = written["details"]
    assert stored["ignored_warnings"] == [{**spam, "times": 40}]
    assert "case_file" not in written
    first, version, grad = stored["observations"]
    assert "kind" not in first and first["value"] == [1.7847977, 2.0]
    assert first["max_rel_error"] == 2.418e-08 and first["reference"] == [1.78479774452, 2.0]  # 12 figures
    assert version["kind"] == "version" and "kind" not in grad and grad["judged_by"] == "expected"
    assert np.float32(first["value"][0]) == np.float32(value32)  # the same float32
    back = Record.from_dict(written)
    assert back.case_file == "cases/saved/c.yaml"
    assert [o.get("kind") for o in back.details["observations"]] == ["value", "version", "grad"]
    assert back.to_dict() == written and compact(stored) == stored  # stored twice: no change


def test_a_judged_observation_at_the_usual_tolerance_is_stored_as_one_word() -> None:
    """A float32 value judged by the reference at atol 1e-6 / rtol 1e-5 is stored as ``judged: usual`` (and
    ``usual, exact`` without error); any other tolerance, judge or error is written out, and reading puts
    every field back."""
    from conformance.records.storage import compact, expand

    base = {"name": "value(y)", "dtype": "float32", "value": [1.0], "reference": [1.0], "ok": True,
            "judged_by": "reference", "atol": 1e-06, "rtol": 1e-05}
    exact = {**base, "max_abs_error": 0.0, "max_rel_error": 0.0}
    close = {**base, "max_abs_error": 2e-07, "max_rel_error": 0.0}
    loose = {**exact, "atol": 1e-03}
    expected = {**exact, "judged_by": "expected"}
    wide = {**exact, "dtype": "float64"}
    stored = compact({"observations": [exact, close, loose, expected, wide]})["observations"]
    assert stored[0] == {"name": "value(y)", "dtype": "float32", "value": [1.0], "reference": [1.0], "ok": True,
                         "judged": "usual, exact"}
    assert stored[1]["judged"] == "usual" and stored[1]["max_abs_error"] == 2e-07 and "atol" not in stored[1]
    assert [("judged" in o) for o in stored[2:]] == [False, False, False]  # written out as they are
    back = expand({"observations": stored})["observations"]
    assert back[:2] == [{**exact, "kind": "value"}, {**close, "kind": "value"}]
    assert compact({"observations": stored})["observations"] == stored  # stored twice: no change


def test_a_results_file_holds_each_column_once_in_its_run_line(tmp_path: Path) -> None:
    """The column (framework, version, device, mode) is written in the run line, not in each record; two
    columns in one file have two run lines, and each record reads back in its own."""
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        for case in ("a", "b"):
            results.append(raw(case=case))
            results.append({**raw(case=case), "framework": "paddle", "framework_version": "3.3.1",
                            "mode": "to_static"})
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    runs = [line for line in lines if "case" not in line]
    assert [run["column"]["framework"] for run in runs] == ["torch", "paddle"]
    assert all("framework" not in line for line in lines if "case" in line)
    records = load_records([path])
    assert [(r.case, r.column) for r in records] == [
        ("a", Column("torch", "2.13.0", "cpu")), ("a", Column("paddle", "3.3.1", "cpu", "to_static")),
        ("b", Column("torch", "2.13.0", "cpu")), ("b", Column("paddle", "3.3.1", "cpu", "to_static"))]


def test_reading_only_records_that_mention_a_word_still_reads_every_run_line(tmp_path: Path) -> None:
    """``mentioning`` passes over the records whose line names none of the words, unparsed (a torn or foreign
    line among them included), and keeps reading the run lines the others refer to: a record of a second
    column, after its own run line, still reads back with that column."""
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append(raw(case="a", outcome="silent-correct"))
        results.append(raw(case="b", outcome="silent-wrong"))
        results.append({**raw(case="c", outcome="crash"), "framework": "paddle", "framework_version": "3.3.1"})
        results.append({**raw(case="d", outcome="silent-correct"), "framework": "paddle",
                        "framework_version": "3.3.1"})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("not a record\n")
    found = list(read_records([path], mentioning=(b"silent-wrong", b"crash")))
    assert [(r["case"], r["framework"], r["outcome"]) for r in found] == [("b", "torch", "silent-wrong"),
                                                                         ("c", "paddle", "crash")]
    with pytest.raises(ResultsError, match=":7:"):  # without the filter the foreign line is refused, as ever
        list(read_records([path]))


def test_an_exception_message_is_stored_without_the_machine_s_paths_and_its_long_middle() -> None:
    from conformance.records.storage import MAX_MESSAGE

    message = ('In transformed code:\n    File "/dev/shm/conformance-programs-4017-paddle-po6d/lt_.py", line 13\n'
               '    File "/work/x/.tox/paddle331/lib/python3.11/site-packages/paddle/base/wrapped.py", line 50\n'
               + "traceback " * 400 + "ValueError: the useful end")
    written = Record.from_dict(raw(exception={"type": "ValueError", "message": message})).to_dict()
    stored = written["details"]["exception"]["message"]
    assert 'File "lt_.py", line 13' in stored and 'File "<site-packages>/paddle/base/wrapped.py"' in stored
    assert len(stored) <= MAX_MESSAGE + 40 and "characters cut]" in stored
    assert stored.endswith("ValueError: the useful end")
    assert Record.from_dict(written).to_dict() == written


def test_many_observations_keep_the_wrong_ones() -> None:
    observations = [{"name": f"v[{i}]", "ok": i != 900, "value": 1.0, "reference": 1.0} for i in range(1000)]
    written = Record.from_dict(raw("loop", "silent-wrong", observations=observations)).to_dict()["details"]
    names = [o["name"] for o in written["observations"]]
    assert len(names) == 256 and "v[900]" in names and names[0] == "v[0]"
    assert written["observations_omitted"] == 744


# -- strict reading ---------------------------------------------------------------------------------------

def test_a_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(raw("a")), "{not json", json.dumps(raw("b"))])
    with pytest.raises(ResultsError) as caught:
        load_records([path])
    assert (caught.value.path, caught.value.line) == (str(path), 2)
    assert str(caught.value).startswith(f"{path}:2: not a JSON record")
    with pytest.raises(ResultsError):
        list(read_records([path]))


def test_a_torn_last_line_is_an_error_that_says_the_run_may_have_been_interrupted(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(raw("a"))])
    path.write_text(path.read_text() + '{"case": "b", "outc')
    with pytest.raises(ResultsError) as caught:
        load_records([path])
    assert caught.value.line == 2 and "may have been interrupted" in caught.value.message


def test_a_json_line_that_is_not_a_record_is_an_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(raw("a")), "", json.dumps({"note": "hello"})])
    with pytest.raises(ResultsError) as caught:
        load_records([path])
    assert str(caught.value) == f"{path}:3: not a result record: missing field(s) case, framework, " \
                                "framework_version, device, outcome"


def test_a_run_line_whose_column_is_not_an_object_names_file_and_line(tmp_path: Path) -> None:
    """A run line's ``column`` is what its records share; one that is not an object is refused where it is
    written, not read as a record missing its framework."""
    run = {"run": "abc", "run_info": {}, "column": ["torch", "2.13.0"]}
    record = {k: v for k, v in raw("a").items() if k not in ("framework", "framework_version", "run_info")}
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(run), json.dumps({**record, "run": "abc"})])
    with pytest.raises(ResultsError) as caught:
        load_records([path])
    assert str(caught.value) == f"{path}:1: the run line's column is a list, not an object"


def test_blank_lines_are_not_records(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", ["", json.dumps(raw("a")), "   ", json.dumps(raw("b"))])
    assert [r.case for r in load_records([path])] == ["a", "b"]


# -- explain ----------------------------------------------------------------------------------------------

def test_explain_says_what_raised_where_and_of_which_kind() -> None:
    record = raw("iadd", exception={"type": "RuntimeError", "kind": "autograd", "step": 4, "line": 12,
                                    "iteration": 2, "op": "backward", "phase": "backward",
                                    "message": "one of the variables needed was modified\nHint: anomaly"})
    assert explain(record) == (
        "iadd on torch 2.13.0 (cpu): raises\n"
        "  RuntimeError (step 4, line 12, iteration 2; op backward; phase backward; kind autograd): "
        "one of the variables needed was modified")
    assert explain(record, "markdown") == ("`RuntimeError` (step 4, line 12, iteration 2; op `backward`; phase "
                                           "backward; kind autograd): one of the variables needed was modified")
    assert explain(record, "brief") == "RuntimeError (backward; kind autograd): one of the variables needed was modified"
    old = raw("iadd", exception={"type": "RuntimeError", "phase": "backward", "message": "m"})
    assert explain(old, "brief") == "RuntimeError (backward): m"  # no kind recorded: none shown


TORCH_AUTOGRAD = ("one of the variables needed for gradient computation has been modified by an inplace "
                  "operation: [torch.FloatTensor [2, 3]], which is output 0 of Relu, is at version 1; expected "
                  "version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute "
                  "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


@pytest.mark.parametrize(("message", "kept", "gone"), [
    (TORCH_AUTOGRAD, "which is output 0 of Relu, is at version 1; expected version 0 instead. …", "Hint"),
    ("no sentence end in " + "a long name " * 40 + "at the very end: the tensor", "… ", None),
])
def test_a_long_message_keeps_its_useful_part_in_brief(message: str, kept: str, gone: str | None) -> None:
    """The brief form (a reproducer's verdict, a diff's message) keeps whole sentences, where torch names
    the tensor and its versions, and drops the advice after them; a first sentence too long for it keeps
    both ends (it was cut after 100 characters, at "[to…")."""
    brief = explain(raw("iadd", exception={"type": "RuntimeError", "phase": "backward", "message": message}),
                    "brief")
    assert kept in brief and len(brief) <= len("RuntimeError (backward): ") + 240, brief
    assert gone is None or gone not in brief
    if gone is None:
        assert brief.endswith("at the very end: the tensor") and brief.startswith("RuntimeError (backward): no")


def test_explain_lists_wrong_observations_reason_message_and_signal() -> None:
    wrong = raw("rnn", "silent-wrong", max_error=7.8e-4, observations=[
        {"name": "grad(w)", "ok": False, "value": [1.0, 2.0], "reference": [1.0, 2.1], "max_rel_error": 7.8e-4},
        {"name": "grad(b)", "ok": True, "value": [1.0], "reference": [1.0]}])
    text = explain(wrong)
    assert text.splitlines() == ["rnn on torch 2.13.0 (cpu): silent-wrong",
                                 "  grad(w): got [1.0, 2.0], reference [1.0, 2.1] (max rel error 0.00078)"]
    crash = raw("died", "crash", message="the torch worker died", signal=11)
    assert explain(crash).splitlines()[1:] == ["  message: the torch worker died", "  signal: 11"]
    skipped = raw("gpu", "skipped", reason="no GPU")
    assert explain(skipped, "markdown") == "reason: no GPU"
    assert explain(Record.from_dict(skipped)) == explain(skipped)


def test_a_recorded_path_is_relative_to_where_the_run_started_when_inside_it(tmp_path, monkeypatch) -> None:
    from conformance.records.results import recorded_path

    monkeypatch.chdir(tmp_path)
    assert recorded_path(tmp_path / "cases" / "seed" / "a.yaml") == "cases/seed/a.yaml"
    assert recorded_path("cases/a.yaml") == "cases/a.yaml"
    assert recorded_path("/elsewhere/cases/a.yaml") == "/elsewhere/cases/a.yaml"


def test_an_error_paddle_wraps_is_named_by_the_error_inside_not_by_its_tag() -> None:
    from conformance.records.record import RaisedException

    wrapped = RaisedException.from_dict({"type": "OSError", "message": (
        "(External) \n{\n    ===== Error message in backward of GradNodePyLayer_RecomputeFunction(0x55) =====\n"
        "    ValueError: (InvalidArgument) Leaf Var (eager_in_tmp_0) that doesn't stop gradient can't use "
        "inplace strategy.\n      [Hint: Expected ...]\n}\n")})
    assert wrapped.first_line == ("(External) ValueError: (InvalidArgument) Leaf Var (eager_in_tmp_0) that "
                                  "doesn't stop gradient can't use inplace strategy.")
    plain = RaisedException.from_dict({"type": "RuntimeError", "message": "(PreconditionNotMet) out of bound.\nmore"})
    assert plain.first_line == "(PreconditionNotMet) out of bound."
    bare = RaisedException.from_dict({"type": "OSError", "message": "(External)\nno error line here"})
    assert bare.first_line == "(External)"


def test_an_interpreter_outside_the_run_s_folder_is_recorded_by_its_name_alone(tmp_path, monkeypatch) -> None:
    """A GPU machine's Python lives in /opt/...: a committed record names no folder of the machine that ran it."""
    from conformance.records.results import _executable

    monkeypatch.chdir(tmp_path)
    assert _executable("/opt/torch/.venv/bin/python3") == "python3"
    (tmp_path / ".tox" / "bin").mkdir(parents=True)
    assert _executable(str(tmp_path / ".tox" / "bin" / "python")) == ".tox/bin/python"


def test_results_files_of_the_earlier_forms_still_read(tmp_path: Path) -> None:
    """A record that holds its own run information (the form before run lines) and a run line without a
    column (the form before columns moved there) read back as the records they are."""
    whole = raw("a")
    run = {"run": "r1", "run_info": {"numpy": "1.26.4"}}
    listed = {**raw("b"), "run": "r1"}
    del listed["run_info"]
    path = write_lines(tmp_path / "r.jsonl", [json.dumps(whole), json.dumps(run), json.dumps(listed)])
    first, second = load_records([path])
    assert (first.case, first.column) == ("a", Column("torch", "2.13.0", "cpu"))
    assert (second.case, second.column, second.run_info) == ("b", Column("torch", "2.13.0", "cpu"), {"numpy": "1.26.4"})
