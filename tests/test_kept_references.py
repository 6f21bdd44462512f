"""The reference service's answers kept between runs (conformance/judge/kept.py): a case's reference is
computed once per case content, NumPy and harness code, for every framework version's column; what the
limits decided, what is too large and what was edited in the cache is never taken from it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.cache import harness_fingerprint
from conformance.case.load import load_case
from conformance.engine import Engine
from conformance.judge import kept
from conformance.workers.pool import REFERENCE_SERVICE

from .conftest import INSTALLED
from .test_float32 import SIN_OF_SQUARE
from .test_service import SMALL


@pytest.fixture
def cache(monkeypatch, tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(folder))
    return folder


def _reference(case):
    engine = Engine(timeout=60)
    try:
        return engine.reference(case), REFERENCE_SERVICE in engine.pool.workers
    finally:
        engine.close()


def test_a_reference_computed_once_is_taken_from_the_cache_by_the_next_run(cache, write_case) -> None:
    case = load_case(write_case(SMALL))
    (first, asked_first) = _reference(case)
    (second, asked_second) = _reference(case)
    assert first[0]["grad(x)"] == [2.0, 4.0] and first[1:] == (None, None)
    assert second == first
    assert asked_first and not asked_second  # the second engine never started the service


def test_a_case_with_the_same_steps_under_another_id_shares_its_reference(cache, write_case) -> None:
    one = load_case(write_case(SMALL))
    other = load_case(write_case(SMALL.replace("id: small", "id: renamed").replace("title: t", "title: u")))
    _reference(one)
    (observations, asked) = _reference(other)
    assert observations[0]["grad(x)"] == [2.0, 4.0] and not asked
    changed = load_case(write_case(SMALL.replace("[1.0, 2.0]", "[1.0, 3.0]").replace("id: small", "id: changed")))
    (observations, asked) = _reference(changed)
    assert observations[0]["grad(x)"] == [2.0, 6.0] and asked  # other steps: computed, not taken


def test_an_answer_edited_in_the_cache_is_asked_for_afresh(cache, write_case) -> None:
    case = load_case(write_case(SMALL))
    _reference(case)
    [path] = [p for p in cache.rglob("*.json") if "references" in p.parts]
    path.write_bytes(path.read_bytes().replace(b"4.0", b"5.0"))  # the seal no longer fits
    (observations, asked) = _reference(case)
    assert observations[0]["grad(x)"] == [2.0, 4.0] and asked


def test_what_the_limits_decided_is_never_kept(cache) -> None:
    for status in ("limit", "error"):
        kept.keep_answer({}, "sha256:0123456789abcdef", {"status": status, "message": "ran out of time"})
        assert kept.kept_answer({}, "sha256:0123456789abcdef") is None
    kept.keep_answer({}, "sha256:0123456789abcdef", {"status": "failed", "message": "no model of op z"})
    assert kept.kept_answer({}, "sha256:0123456789abcdef") == {"status": "failed", "message": "no model of op z"}


def test_a_large_answer_and_a_case_without_a_digest_are_not_kept(cache) -> None:
    large = {"status": "ok", "observations": {"x": [1.0] * (kept.MAX_KEPT_BYTES // 4)}}
    kept.keep_answer({}, "sha256:aaaaaaaaaaaaaaaa", large)
    assert kept.kept_answer({}, "sha256:aaaaaaaaaaaaaaaa") is None
    kept.keep_answer({}, "", {"status": "ok", "observations": {}})
    assert kept.kept_answer({}, "") is None and not kept.is_kept({}, "")


def test_the_key_is_what_was_asked_and_numpy_not_the_time_limit(cache, monkeypatch, request) -> None:
    request.addfinalizer(kept._name.cache_clear)  # names worked out under another NumPy go with it
    digest = "sha256:0123456789abcdef"
    plain = kept.answer_path({"time_limit": 60}, digest)
    assert plain == kept.answer_path({"time_limit": 5}, digest) == kept.answer_path({}, digest)
    assert plain != kept.answer_path({"spread": True, "copies": [], "approximate": {}}, digest)
    assert plain != kept.answer_path({}, "sha256:fedcba9876543210")
    # the plain reference is the same for another id with the same steps; the float32 spread, whose random
    # rounding the case's id seeds, is not
    assert kept.answer_path({}, digest, "one") == kept.answer_path({}, digest, "other") == plain
    spread = {"spread": True, "copies": [], "approximate": {}}
    assert kept.answer_path(spread, digest, "one") != kept.answer_path(spread, digest, "other")
    monkeypatch.setattr(kept, "_numpy_version", lambda: "0.0.0")
    kept._name.cache_clear()
    assert plain != kept.answer_path({}, digest)
    assert os.path.dirname(plain).endswith(os.path.join("references", harness_fingerprint()))


def test_a_cache_that_cannot_be_written_keeps_nothing_and_the_reference_is_still_computed(
        monkeypatch, tmp_path: Path, write_case) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(blocked))
    case = load_case(write_case(SMALL))
    for _ in range(2):
        (observations, asked) = _reference(case)
        assert observations[0]["grad(x)"] == [2.0, 4.0] and asked


@pytest.mark.skipif(not INSTALLED, reason="neither torch nor paddle is installed")
def test_a_cell_judged_from_kept_answers_is_judged_as_it_was_afresh(cache, write_case) -> None:
    """d/dx sin(x*x) at 7.2 misses the float64 reference in float32 and is judged again against the float32
    spread: the second engine takes the reference and the spread from the cache, asks no process for
    either, and records the same judgement."""
    case = load_case(write_case(SIN_OF_SQUARE))
    judged = []
    for _ in range(2):
        engine = Engine(timeout=60)
        try:
            record = engine.run_cell(case, INSTALLED[0], "cpu")
            judged.append((record["outcome"], record["details"]["observations"],
                           REFERENCE_SERVICE in engine.pool.workers))
        finally:
            engine.close()
    (first, observed, asked), (again, observed_again, asked_again) = judged
    assert first == again == "silent-correct" and observed[0]["float32_spread"] > 0
    assert observed_again == observed and asked and not asked_again
