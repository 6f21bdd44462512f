"""The case reader's two paths (libyaml's events, the pure-Python scanner) read every file alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.case import _yaml

from .conftest import ROOT

FILES = sorted((ROOT / "cases").rglob("*.yaml")) + sorted((ROOT / "tests" / "data").rglob("*.yaml"))


def _pure_python(path: Path):
    """What the pure-Python reader alone makes of *path*: (data, lines), or its error."""
    original = _yaml._read_fast
    _yaml._read_fast = lambda text: None
    try:
        return _yaml.load(path)
    except _yaml.LoadError as exc:
        return ("error", exc.line, exc.message)
    finally:
        _yaml._read_fast = original


def _as_read(path: Path):
    try:
        return _yaml.load(path)
    except _yaml.LoadError as exc:
        return ("error", exc.line, exc.message)


@pytest.mark.skipif(_yaml._CParser is None, reason="PyYAML without libyaml")
def test_both_readers_give_the_same_data_lines_and_errors() -> None:
    assert len(FILES) > 100
    for path in FILES:
        assert _as_read(path) == _pure_python(path), path


@pytest.mark.skipif(_yaml._CParser is None, reason="PyYAML without libyaml")
def test_the_fast_reader_reads_valid_files_and_leaves_every_problem_to_the_other() -> None:
    valid = ROOT / "cases" / "seed" / "leaf_sin_inplace.yaml"
    assert _yaml._read_fast(valid.read_text()) is not None
    for text in ("a: *x\n", "a: &x 1\n", "a: [1, 2}\n", "a: 1\n---\nb: 2\n", "# only a comment\n", "a: \x07\n",
                 "a:" + " [" * 40 + " ]" * 40 + "\n", "".join(f"{' ' * i}k{i}:\n" for i in range(40)) + " " * 40 + "v\n",
                 "a: 1\na: 2\n", "1: a\n", "a: !!python/object:os.system x\n", "a: !!set {b}\n", "a: !t [1]\n",
                 "a: " + "9" * 101 + "\n", "[1, 2]\n[3]\n"):
        assert _yaml._read_fast(text) is None, text


@pytest.mark.skipif(_yaml._CParser is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize("depth", [30, 31, 32, 33])
def test_both_readers_draw_the_depth_limit_at_the_same_node(tmp_path: Path, depth: int) -> None:
    """Nested flow sequences with a scalar at the bottom: the node at depth MAX_DEPTH + 1 is refused by
    both readers alike, whether it is a collection or a scalar."""
    path = tmp_path / "deep.yaml"
    path.write_text("[" * depth + "1" + "]" * depth + "\n")
    assert _as_read(path) == _pure_python(path)
    assert (_as_read(path)[0] == "error") == (depth + 1 > _yaml.MAX_DEPTH)
