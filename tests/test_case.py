"""Case loading and checking: the bad-input corpus, the shipped cases, the JSON Schema, the CLI.

Every file under ``tests/data/bad_cases`` pins one message and its line, so a
change in wording or in line tracking shows up here.  (The directory is not
named ``cases`` so the pytest plugin does not collect it as cases.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.case import _yaml
from conformance.case.load import CaseError, find_case_files, load_case, load_cases
from conformance.case.index import Index, parse_index
from conformance.ops import OBSERVATIONS, OPS, Op
from conformance.case.schema import build_schema

from .conftest import INSTALLED

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "data" / "bad_cases"
SCHEMA_FILE = ROOT / "conformance" / "case" / "schema.json"

#: file -> (line, a fragment of the message) that load_case must report.
EXPECTED: dict[str, tuple[int, str]] = {
    "alias.yaml": (6, "YAML aliases (*name) are not allowed"),
    "alias_bomb.yaml": (4, "YAML anchors (&name) are not allowed"),
    "anchor.yaml": (5, "YAML anchors (&name) are not allowed"),
    "backward_on_optimizer.yaml": (7, "'opt' is a optimizer, but this argument takes a tensor"),
    "bad_index_syntax.yaml": (6, "bad slice '0:1:1:1' in index '0:1:1:1'"),
    "getitem_of_array_as_tensor.yaml": (6, "'s' is a array, but this argument takes a tensor"),
    "binary.yaml": (3, "not UTF-8 text"),
    "call_on_tensor.yaml": (6, "'x' is a tensor, but this argument takes a module"),
    "comment_only.yaml": (1, "empty file"),
    "control_character.yaml": (3, "unacceptable character #x0007"),
    "deep_nesting.yaml": (4, "nesting deeper than 32 levels"),
    "dtype_not_allowed.yaml": (5, "dtype must be one of ['float32', 'float64', 'int64', 'float16', 'bfloat16', 'int32', 'uint8', 'bool'], not 'float8_e4m3fn'"),
    "duplicate_key.yaml": (4, "duplicate key 'title'"),
    "empty_steps.yaml": (4, "steps must not be empty"),
    "expected_unobserved.yaml": (8, "expected value for 'y_value', which no step observes"),
    "huge_number.yaml": (5, "number literal longer than 100 characters"),
    "id_not_snake_case.yaml": (2, "id 'ReluInplace' must be snake_case"),
    "implicit_timestamp.yaml": (4, "tag 'tag:yaml.org,2002:timestamp' is not allowed"),
    "index_not_counter.yaml": (7, "index uses 'j', which is not a loop counter"),
    "into_not_name.yaml": (6, "into must name a tensor defined by an earlier step, not ['x']"),
    "merge_key.yaml": (5, "tag 'tag:yaml.org,2002:merge' is not allowed"),
    "missing_field.yaml": (5, "op 'tensor' needs the field 'value'"),
    "missing_id.yaml": (2, "missing required key 'id'"),
    "multiple_documents.yaml": (4, "YAML syntax: but found another document"),
    "nan_tolerance.yaml": (4, "rtol must be a positive number, not nan"),
    "nested_undefined.yaml": (11, "name 't' is not defined by an earlier step"),
    "non_rectangular_value.yaml": (7, "value is not rectangular"),
    "non_string_key.yaml": (5, "mapping key 1 is not a string"),
    "observe_undefined.yaml": (6, "name 'y' is not defined by an earlier step"),
    "observes_nothing.yaml": (5, "the case observes nothing"),
    "out_given_for_none.yaml": (6, "op 'backward' binds no name; remove 'out'"),
    "out_missing.yaml": (6, "op 'sin' needs an 'out' name"),
    "python_tag.yaml": (3, "tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed"),
    "requires_grad_not_bool.yaml": (5, "requires_grad must be true or false, not 'yes'"),
    "remedy_not_list.yaml": (4, "remedy must be a non-empty list of case ids, not 'leaf_sin_out_of_place'"),
    "remedy_itself.yaml": (6, "a case cannot be its own remedy ('remedy_itself')"),
    "remedy_and_no_remedy.yaml": (5, "a case names a remedy or says why it has none, not both"),
    "cause_two_lines.yaml": (4, "cause must be one non-empty line"),
    "varies_by_machine_not_text.yaml": (4, "varies_by_machine must be a string, not ['amd', 'intel']"),
    "reserved_name.yaml": (5, "'torch' is reserved"),
    "same_storage_without_since.yaml": (6, "'since' (the name of an earlier 'address' observation)"),
    "shares_memory_one_name.yaml": (6, "observe shares_memory takes 2 name(s) in 'of'"),
    "since_not_address.yaml": (7, "since 'x_value' names no earlier 'address' observation"),
    "since_not_name.yaml": (7, "since ['x_address'] names no earlier 'address' observation"),
    "times_zero.yaml": (7, "times must be a positive integer, not 0"),
    "top_level_not_mapping.yaml": (2, "a case file must be a mapping"),
    "undefined_argument.yaml": (6, "name 'y' is not defined by an earlier step"),
    "unknown_field.yaml": (5, "op 'tensor' takes no field 'grad'"),
    "unknown_observation.yaml": (6, "unknown observation 'gradient'"),
    "unknown_op.yaml": (5, "unknown op 'tensr'; did you mean one of ['tensor', "),
    "unknown_parameter.yaml": (6, "'fc.weights': a linear has no parameter 'weights'"),
    "unknown_top_level_key.yaml": (4, "unknown top-level key 'author'"),
    "wrong_argument_count.yaml": (6, "op 'add' takes 2 argument(s), got 1"),
    "yaml_syntax_error.yaml": (5, "YAML syntax: expected ',' or ']', but got '}'"),
}

#: Files whose problem is structural, so the JSON Schema rejects them too.
SCHEMA_REJECTS = {
    "bad_index_syntax.yaml", "dtype_not_allowed.yaml", "empty_steps.yaml", "id_not_snake_case.yaml",
    "into_not_name.yaml", "missing_field.yaml", "missing_id.yaml", "out_given_for_none.yaml",
    "out_missing.yaml", "requires_grad_not_bool.yaml", "same_storage_without_since.yaml",
    "remedy_not_list.yaml", "remedy_and_no_remedy.yaml", "cause_two_lines.yaml", "varies_by_machine_not_text.yaml",
    "shares_memory_one_name.yaml", "since_not_name.yaml", "times_zero.yaml", "top_level_not_mapping.yaml",
    "unknown_field.yaml", "unknown_observation.yaml", "unknown_op.yaml", "unknown_parameter.yaml",
    "unknown_top_level_key.yaml", "wrong_argument_count.yaml",
}
#: Files that are not even YAML the loader accepts (no data to give the schema).
NOT_YAML = {
    "alias.yaml", "alias_bomb.yaml", "anchor.yaml", "binary.yaml", "comment_only.yaml",
    "control_character.yaml", "deep_nesting.yaml", "duplicate_key.yaml", "huge_number.yaml",
    "implicit_timestamp.yaml", "merge_key.yaml", "multiple_documents.yaml", "non_string_key.yaml",
    "python_tag.yaml", "yaml_syntax_error.yaml",
}
HOSTILE = ["alias_bomb.yaml", "deep_nesting.yaml", "binary.yaml", "control_character.yaml",
           "huge_number.yaml", "python_tag.yaml"]

GOOD_CASE = """\
id: {id}
title: a good case
steps:
  - {{op: tensor, out: x, value: [1.0, 2.0]}}
  - {{observe: value, of: x}}
"""


def _load_error(path: Path) -> CaseError:
    """The CaseError load_case raises; any other exception (or none) fails the test."""
    try:
        load_case(path)
    except CaseError as exc:
        return exc
    except BaseException as exc:  # noqa: BLE001 - RecursionError, MemoryError, ... are the point
        pytest.fail(f"{path.name}: escaped as {type(exc).__name__}: {exc}")
    pytest.fail(f"{path.name}: loaded without error")


def _check_form(exc: CaseError, path: Path, line: int) -> None:
    text = str(exc)
    assert text == f"{path}:{line}: {exc.message}"
    assert exc.path == str(path)
    assert "\n" not in text and "Traceback" not in text


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


# -- the bad corpus ------------------------------------------------------------------


def test_corpus_table_lists_every_file() -> None:
    on_disk = {p.name for p in find_case_files([BAD])}
    assert on_disk == set(EXPECTED)
    assert SCHEMA_REJECTS <= set(EXPECTED) and NOT_YAML <= set(EXPECTED)
    assert not SCHEMA_REJECTS & NOT_YAML


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_case_message_and_line(name: str) -> None:
    line, fragment = EXPECTED[name]
    path = BAD / name
    exc = _load_error(path)
    assert fragment in exc.message
    assert exc.line == line, f"{exc}"
    _check_form(exc, path, line)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_file_fails_as_case_error(name: str) -> None:
    _load_error(BAD / name)


def test_oversize_file(tmp_path: Path) -> None:
    path = tmp_path / "oversize.yaml"
    path.write_text(GOOD_CASE.format(id="oversize") + "# padding\n" * 30_000)
    assert path.stat().st_size > 256 * 1024
    exc = _load_error(path)
    assert "case files are limited to 262144" in exc.message
    _check_form(exc, path, 1)


def test_nul_byte_in_valid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"id: nul\ntitle: a\x00b\n")
    exc = _load_error(path)
    assert exc.message == "binary content (NUL byte)"
    _check_form(exc, path, 2)


def test_long_sexagesimal_number_is_refused(tmp_path: Path) -> None:
    # YAML 1.1 reads 1:1:1 as base 60; a long one used to take seconds to build a huge int.
    path = tmp_path / "sexagesimal.yaml"
    value = "1" + ":1" * 50_000
    path.write_text(f"id: sexagesimal\ntitle: t\nsteps: [{{op: tensor, out: x, value: {value}}}]\n")
    exc = _load_error(path)
    assert "number literal longer than" in exc.message
    _check_form(exc, path, 3)


@pytest.mark.parametrize("literal", ["1.0e30", "1e+30", "-5E-3"])
def test_a_number_yaml_reads_as_text_is_refused_with_the_spelling_it_wants(tmp_path: Path, literal: str) -> None:
    # YAML 1.1 takes a float only with a dot and, with an exponent, its sign: 1.0e30 is the text '1.0e30'.
    path = tmp_path / "exponent.yaml"
    path.write_text(f"id: exponent\ntitle: t\nsteps:\n  - {{op: tensor, out: x, value: [{literal}]}}\n"
                    "  - {observe: value, of: x}\n")
    exc = _load_error(path)
    assert f"not {literal!r}" in exc.message and "signed exponent, e.g. 1.0e+30" in exc.message
    _check_form(exc, path, 4)
    path.write_text(path.read_text().replace(literal, "1.0e+30"))
    assert load_case(path).steps[0].fields["value"] == [1.0e30]


def test_deeply_nested_steps_fail_on_depth(tmp_path: Path) -> None:
    inner = "{op: no_grad, steps: [" * 40 + "{op: tensor, out: x, value: 1.0}" + "]}" * 40
    path = tmp_path / "deep_steps.yaml"
    path.write_text(f"id: deep_steps\ntitle: t\nsteps: [{inner}]\n")
    exc = _load_error(path)
    assert "nesting deeper than" in exc.message


def test_a_folder_given_as_a_case_file_is_refused_as_not_a_regular_file(tmp_path: Path) -> None:
    exc = _load_error(tmp_path)
    assert exc.message.startswith("not a regular file (a folder)")


def test_duplicate_case_id_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD_CASE.format(id="same_id"))
    (tmp_path / "b.yaml").write_text("# the second file\n" + GOOD_CASE.format(id="same_id"))
    cases, errors = load_cases([tmp_path])
    assert [c.id for c in cases] == ["same_id"]
    assert len(errors) == 1
    error = errors[0]
    assert error.path == str(tmp_path / "b.yaml") and error.line == 2
    assert f"duplicate case id 'same_id', first defined at {tmp_path / 'a.yaml'}:1" in error.message


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD_CASE.format(id="good_case"))
    (tmp_path / "bad.yaml").write_text((BAD / "unknown_op.yaml").read_text())
    cases, errors = load_cases([tmp_path])
    assert [c.id for c in cases] == ["good_case"]
    assert [(e.path, e.line) for e in errors] == [(str(tmp_path / "bad.yaml"), 5)]


# -- the shipped cases -------------------------------------------------------------------


def test_shipped_cases_load() -> None:
    cases, errors = load_cases([ROOT / "cases"])
    assert errors == []
    assert cases
    duplicates = [i for i, n in Counter(c.id for c in cases).items() if n > 1]
    assert duplicates == []


@pytest.mark.parametrize("path", find_case_files([ROOT / "cases"]), ids=lambda p: p.stem)
def test_shipped_case_matches_schema(path: Path, validator: Any) -> None:
    data, _ = _yaml.load(path)
    assert [e.message for e in validator.iter_errors(data)] == []


# -- the JSON Schema ----------------------------------------------------------------------


def test_schema_file_is_generated() -> None:
    text = json.dumps(build_schema(), indent=2, sort_keys=True) + "\n"
    assert SCHEMA_FILE.read_text() == text, "run: python -m conformance.case.schema > conformance/case/schema.json"


def test_schema_follows_the_op_table(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = build_schema()
    op_step = schema["$defs"]["op_step"]
    assert op_step["properties"]["op"]["enum"] == sorted(OPS)
    assert [rule["if"]["properties"]["op"]["const"] for rule in op_step["allOf"]] == sorted(OPS)
    assert schema["$defs"]["observation"]["properties"]["observe"]["enum"] == list(OBSERVATIONS)
    monkeypatch.setitem(OPS, "brand_new", Op("brand_new", "A new op.", args=("tensor",)))
    assert "brand_new" in build_schema()["$defs"]["op_step"]["properties"]["op"]["enum"]


@pytest.mark.parametrize("name", sorted(set(EXPECTED) - NOT_YAML))
def test_schema_on_bad_corpus(name: str, validator: Any) -> None:
    """Structural problems fail the schema too; name and value problems are load_case's alone."""
    data, _ = _yaml.load(BAD / name)
    errors = list(validator.iter_errors(data))
    if name in SCHEMA_REJECTS:
        assert errors, f"the schema accepts {name}"
    else:
        assert errors == [], f"the schema is stricter than load_case on {name}"


@pytest.mark.parametrize("name", sorted(NOT_YAML))
def test_not_yaml_files_do_not_load(name: str) -> None:
    with pytest.raises(_yaml.LoadError):
        _yaml.load(BAD / name)


# -- the command line ---------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cli_validate_bad_corpus() -> None:
    result = _cli("validate", "tests/data/bad_cases")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    pattern = re.compile(r"error: (?P<path>\S+\.yaml):(?P<line>\d+): \S")
    matched = [pattern.match(line) for line in lines]
    assert all(matched), lines
    seen = {Path(m["path"]).name: int(m["line"]) for m in matched if m}
    assert seen == {name: line for name, (line, _) in EXPECTED.items()}


def test_cli_validate_shipped_cases() -> None:
    result = _cli("validate", "cases")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# -- index expressions ---------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "items", "source"), [
    (0, (0,), "0"),
    (-1, (-1,), "-1"),
    ("3", (3,), "3"),
    (":", (("slice", None, None, None),), ":"),
    ("0:2", (("slice", 0, 2, None),), "0:2"),
    ("::2", (("slice", None, None, 2),), "::2"),
    (" 1 : -1 : 2 ", (("slice", 1, -1, 2),), "1:-1:2"),
    ("i", ("i",), "i"),
    ("i, :", ("i", ("slice", None, None, None)), "i, :"),
    ("0, 1:, j", (0, ("slice", 1, None, None), "j"), "0, 1:, j"),
])
def test_parse_index_good(spec: object, items: tuple, source: str) -> None:
    index = parse_index(spec)
    assert index == Index(items)
    assert index.source() == source
    assert parse_index(index.source()) == index


def test_index_resolve() -> None:
    index = parse_index("i, 1:3, -1")
    assert index.variables() == ("i",)
    assert index.resolve({"i": 2}) == (2, slice(1, 3, None), -1)


@pytest.mark.parametrize(("spec", "fragment"), [
    (True, "index must be an integer or a string"),
    (1.5, "index must be an integer or a string"),
    ([0], "index must be an integer or a string"),
    (None, "index must be an integer or a string"),
    ("0:1:2:3", "bad slice '0:1:2:3'"),
    ("0:x", "slice bound 'x' in index '0:x' is not an integer"),
    ("1.5", "cannot read index item '1.5'"),
    ("", "cannot read index item ''"),
    ("0,", "cannot read index item ''"),
    ("i j", "cannot read index item 'i j'"),
    ("_i", "cannot read index item '_i'"),
    ("....", "cannot read index item '....'"),  # ... is an item; four dots are not
    ("x[0]", "cannot read index item 'x[0]'"),
])
def test_parse_index_bad(spec: object, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_index(spec)
    assert fragment in str(info.value)


@pytest.mark.parametrize("spec", [":", "0:2", "::2", " 1 : -1 : 2 ", "i", "i, :", "0, 1:, j", "-3",
                                  "0:1:2:3", "0:x", "1.5", "", "0,", "i j", "_i", "...", "x[0]", ":::"])
def test_schema_index_pattern_agrees_with_parse_index(spec: str) -> None:
    pattern = build_schema()["$defs"]["index"]["anyOf"][1]["pattern"]
    try:
        parse_index(spec)
        parses = True
    except ValueError:
        parses = False
    assert bool(re.search(pattern, spec)) == parses


@pytest.mark.parametrize("steps, fragment", [
    ("  - {op: tensor, out: x, value: [1.0]}\n  - {observe: value, of: x}\n  - {observe: value, of: x}\n",
     "observation name 'value(x)' is already used on line 5"),
    ("  - {op: tensor, out: x, value: [1.0]}\n  - op: repeat\n    times: 2\n    steps:\n"
     "      - {observe: address, of: x, name: a}\n", "cannot be inside a repeat"),
    ("  - {op: tensor, out: i, value: [1.0]}\n  - op: repeat\n    times: 2\n    var: i\n    steps:\n"
     "      - {observe: value, of: i}\n", "loop counter 'i' would shadow the tensor"),
    ("  - {op: rnn, out: r, weight_ih: [[1.0]], weight_hh: [[1.0]], bias_ih: [0.0], bias_hh: [0.0]}\n"
     "  - {op: tensor, out: x, value: [[[1.0]]]}\n  - {op: call, args: [r, x], out: y}\n"
     "  - {observe: value, of: y}\n", "calling a rnn binds 2 name(s)"),
])
def test_programs_that_would_blame_the_framework_are_rejected(tmp_path: Path, steps: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: c\ntitle: t\nsteps:\n" + steps)
    with pytest.raises(CaseError, match=re.escape(fragment)):
        load_case(path)


def test_a_timeout_beyond_an_hour_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: c\ntitle: t\ntimeout: 1.0e+300\nsteps:\n  - {op: tensor, out: x, value: 1.0}\n"
                    "  - {observe: value, of: x}\n")
    with pytest.raises(CaseError, match="timeout must be at most 3600"):
        load_case(path)


@pytest.mark.parametrize("steps, fragment", [
    ("  - {op: tensor, out: x, value: [[1.0, 2.0, 3.0]]}\n"
     "  - {op: split, args: [x], sections: [1, 2], dim: 1, out: [a, b, c]}\n  - {observe: value, of: a}\n",
     "split into 2 sections binds as many names"),
    ("  - {op: tensor, out: x, value: [[1.0, 2.0]]}\n"
     "  - {op: unbind, args: [x], dim: 0.5, out: [a]}\n  - {observe: value, of: a}\n",
     "dim must be an integer dimension, not 0.5"),
    ("  - {op: tensor, out: x, value: [1.0]}\n  - {op: imul, args: [x, 3.0], attribute: grad}\n"
     "  - {observe: value, of: x}\n", "attribute must be one of ['data']"),
    ("  - {op: array, out: a, value: [1.0]}\n  - {op: imul, args: [a, 3.0], attribute: data}\n"
     "  - {observe: value, of: a}\n", "'a' is an array: only a tensor has the attribute 'data'"),
])
def test_view_and_augmented_assignment_steps_are_checked(tmp_path: Path, steps: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: c\ntitle: t\nsteps:\n" + steps)
    with pytest.raises(CaseError, match=re.escape(fragment)):
        load_case(path)


@pytest.mark.parametrize("steps, fragment", [
    ("  - {op: array, out: a, value: [1.0]}\n  - {op: sgd, args: [a], lr: 0.1, out: opt}\n"
     "  - {observe: value, of: a}\n", "sgd optimizes modules and tensors, not 'a' (bound to: array)"),
    ("  - {op: activation, kind: relu, out: act}\n  - {op: parameter, args: [act], name: weight, out: w}\n"
     "  - {op: tensor, out: x, value: [1.0]}\n  - {observe: value, of: x}\n",
     "the activation module 'act' has no parameter 'weight'"),
    ("  - {op: linear, out: fc, weight: [[1.0]]}\n  - {op: parameter, args: [fc], name: weight_hh, out: w}\n"
     "  - {observe: value, of: w}\n", "the linear module 'fc' has no parameter 'weight_hh'"),
    ("  - {op: tensor, out: w, value: [1.0], requires_grad: true}\n  - {op: sgd, args: [w], lr: 0.1, out: opt}\n"
     "  - {op: zero_grad, args: [opt], set_to: nothing}\n  - {observe: value, of: w}\n",
     "set_to must be one of ['none', 'zero']"),
])
def test_optimizer_and_parameter_steps_are_checked(tmp_path: Path, steps: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("id: c\ntitle: t\nsteps:\n" + steps)
    with pytest.raises(CaseError, match=re.escape(fragment)):
        load_case(path)


def test_a_kept_case_is_the_checked_case_and_an_edit_or_a_bad_entry_is_checked_afresh(tmp_path, monkeypatch) -> None:
    """Cases kept between runs (conformance/case/kept.py) are what checking gives; an edited file, a file
    moved to another topic folder and a corrupt entry are checked again; a bad file is never kept."""
    import dataclasses

    from conformance.case.kept import load_checked

    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "views" / "kept.yaml"
    path.parent.mkdir()
    path.write_text("id: kept\ntitle: one op\nsteps:\n  - {op: tensor, out: x, value: [1.0, 2.0]}\n"
                    "  - {observe: value, of: x}\n")
    assert load_checked(path) == load_case(path).slim()
    [entry] = [p for p in (tmp_path / "cache" / "cases").rglob("*") if p.is_file()]
    assert load_checked(path) == load_case(path).slim()  # from the cache now
    path.write_text(path.read_text().replace("[1.0, 2.0]", "[3.0, 4.0]"))
    edited = load_checked(path)
    assert edited == load_case(path).slim() and "3.0" in json.dumps(dataclasses.asdict(edited), default=repr)
    moved = tmp_path / "memory" / "kept.yaml"
    moved.parent.mkdir()
    moved.write_text(path.read_text())
    assert load_checked(moved).topic == "memory" and load_checked(moved).path == str(moved)
    entry.write_bytes(b"not a kept case")
    path.write_text(path.read_text().replace("[3.0, 4.0]", "[1.0, 2.0]"))  # the first content again
    assert load_checked(path) == load_case(path).slim()
    bad = tmp_path / "views" / "bad.yaml"
    bad.write_text("id: bad\ntitle: no steps\n")
    for _ in range(2):
        with pytest.raises(CaseError):
            load_checked(bad)


def test_a_worker_is_sent_the_kept_bytes_of_a_case_and_they_decode_to_the_same_case(tmp_path, monkeypatch) -> None:
    """A case read from the cache is sent to a worker as the bytes it was read from (not pickled again),
    which decode to the checked case but for its file name; a case's own pickle never carries them."""
    import dataclasses
    import pickle

    from conformance.case.kept import load_checked
    from conformance.case.model import case_from_message

    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "views" / "sent.yaml"
    path.parent.mkdir()
    path.write_text("id: sent\ntitle: a loop\nsteps:\n  - {op: tensor, out: x, value: [1.0, 2.0]}\n"
                    "  - op: repeat\n    times: 2\n    steps:\n      - {op: add, args: [x, x], out: y}\n"
                    "  - {observe: value, of: y}\n")
    checked = load_case(path).slim()
    for case in (load_checked(path), load_checked(path)):  # checked and kept, then read from the cache
        assert case == checked and case.path == str(path)
        [entry] = [p for p in (tmp_path / "cache" / "cases").rglob("*.case")]
        assert case.pickled() in entry.read_bytes()  # the very bytes kept
        sent = case_from_message(case.to_message())
        assert sent == dataclasses.replace(checked, path="") and sent.steps[1].steps == checked.steps[1].steps
        assert "_pickled" not in pickle.loads(pickle.dumps(case)).__dict__


def test_a_pickle_planted_in_the_cache_folder_never_runs(tmp_path, monkeypatch) -> None:
    """Whatever is in the cache folder is data: a pickle planted where a kept case is looked for (or under
    any name of the folder) is never unpickled by run, show or list, and the case is checked afresh."""
    import pickle
    import subprocess
    import sys

    cache = tmp_path / "cache"
    marker = tmp_path / "planted-code-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "cases" / "views" / "kept.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("id: kept\ntitle: one op\nsteps:\n  - {op: tensor, out: x, value: [1.0, 2.0]}\n"
                    "  - {observe: value, of: x}\n")
    env = {**os.environ, "CONFORMANCE_CACHE_DIR": str(cache)}
    framework = INSTALLED[0] if INSTALLED else None
    commands = [["list", "cases"]]
    if framework:
        commands += [["run", "cases", "--framework", framework, "--device", "cpu", "--no-baselines"],
                     ["show", "kept", "--framework", framework, "--paths", "cases"]]
    else:  # with no framework, only the checker runs: it keeps the case as run does
        from conformance.case.kept import load_checked

        monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(cache))
        load_checked(path)

    def each() -> None:
        for command in commands:
            done = subprocess.run([sys.executable, "-m", "conformance.cli", *command], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    each()
    entries = [p for p in (cache / "cases").rglob("*") if p.is_file()]
    assert entries and all(p.suffix == ".case" for p in entries)
    for entry in entries:
        entry.write_bytes(pickle.dumps(Payload()))
        entry.with_suffix("").write_bytes(pickle.dumps(Payload()))  # where a pickle was kept before
    each()
    assert not marker.exists(), "code planted in the cache folder ran"
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(cache))
    from conformance.case.kept import load_checked

    assert load_checked(path) == load_case(path).slim() and not marker.exists()


def test_what_other_code_kept_is_removed_once_stale(tmp_path, monkeypatch) -> None:
    """The cache does not grow with every version of the code: another fingerprint's entries go once they
    have not been written to for a week; recent ones (a second checkout in use) and this code's stay."""
    import os
    import time

    from conformance.cache import STALE_AFTER, forget_other_code, harness_fingerprint

    folder = tmp_path / "cases"
    old, recent, ours = folder / "0123456789abcdef", folder / "fedcba9876543210", folder / harness_fingerprint()
    for path in (old, recent, ours):
        (path / "entry").mkdir(parents=True)
    then = time.time() - STALE_AFTER - 60
    os.utime(old, (then, then))
    os.utime(ours, (then, then))
    forget_other_code(folder)
    assert not old.exists() and recent.exists() and ours.exists()


def test_a_cache_write_on_a_full_filesystem_leaves_no_temporary_file(full_filesystem) -> None:
    from conformance.cache import write_atomically

    from .conftest import fill

    fill(full_filesystem)
    target = full_filesystem / "entry.json"
    assert write_atomically(target, b"x" * 65536) is False
    assert not [p.name for p in full_filesystem.rglob(".tmp-*")]


@pytest.mark.parametrize("tolerance", ["{rtol: .inf}", "{atol: .inf}", "{rtol: -.inf}", "{atol: .nan}", "{rtol: 1.0}",
                                       "{rtol: 5}", "{rtol: -0.1}"])
def test_a_tolerance_that_would_pass_any_value_is_refused(write_case, tolerance: str) -> None:
    """An infinite tolerance (or a relative one of 100% and more) turns every wrong value into a right one: the
    case could no longer find anything, so it does not load."""
    text = f"id: t\ntitle: t\ntolerance: {tolerance}\nsteps:\n  - {{op: tensor, out: x, value: [1.0]}}\n" \
           "  - {observe: value, of: x}\n"
    with pytest.raises(CaseError, match="tolerance|rtol|atol"):
        load_case(write_case(text))


def test_a_tight_tolerance_still_loads(write_case) -> None:
    text = "id: t\ntitle: t\ntolerance: {rtol: 0.001, atol: 0.0}\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n" \
           "  - {observe: value, of: x}\n"
    assert load_case(write_case(text)).tolerance.rtol == 0.001


@pytest.mark.parametrize("spec, message", [
    ("..., 0, ...", "holds '...' twice"),
    ("[True, 1]", "integers, e.g. [0, 2], or booleans"),
    ("[true]", "integers, e.g. [0, 2], or booleans"),  # YAML's spelling is not Python's
])
def test_an_index_refuses_a_second_ellipsis_and_mixed_lists(spec: str, message: str) -> None:
    from conformance.case.index import parse_index

    with pytest.raises(ValueError, match=re.escape(message)):
        parse_index(spec)


def test_a_numpy_array_s_flags_are_observed_of_arrays_only(tmp_path: Path) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text("id: flags\ntitle: t\nsteps:\n  - {op: tensor, out: x, value: [1.0]}\n"
                    "  - {observe: writeable, of: x}\n", encoding="utf-8")
    with pytest.raises(CaseError, match="writeable is a NumPy array's; 'x' is a tensor"):
        load_case(path)
