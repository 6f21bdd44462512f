"""The catalogue under cases/: valid, with provenance, no program twice, and no state leaking between cells."""

from __future__ import annotations

import json
import random
import re

import pytest

from conformance.case.load import load_cases
from conformance.engine import Engine
from conformance.workers.pool import WorkerPool

from .conftest import ROOT, framework_params

CASES = ROOT / "cases"
#: Where a case's hazard comes from: a seed article, a documentation page or issue thread by URL, the
#: differential fuzzer (cases/found/, with its seed and the framework versions), or the hazard of the
#: catalogue it is the safe spelling of (checked below: that hazard names it as its remedy).
PROVENANCE = re.compile(r"\bseed 00[0-4]\b|https?://\S+|^found by fuzzing: .*--seed \d+|^safe spelling of [a-z_]+/[a-z0-9_]+")
SAFE_SPELLING_OF = re.compile(r"([a-z_]+)/([a-z0-9_]+)")


def catalogue():
    cases, errors = load_cases([CASES])
    return cases, errors


def test_every_case_validates() -> None:
    cases, errors = catalogue()
    assert not errors, "\n".join(map(str, errors))
    assert len(cases) >= 17


def test_every_case_cites_where_its_hazard_comes_from() -> None:
    cases, _ = catalogue()
    missing = [f"{c.path}: source {c.source!r}" for c in cases if not PROVENANCE.search(c.source or "")]
    assert not missing, "cases without provenance (a seed article, a URL, or the fuzzer):\n" + "\n".join(missing)


def test_a_safe_spelling_is_the_remedy_of_the_hazards_it_cites() -> None:
    cases, _ = catalogue()
    by_id = {case.id: case for case in cases}
    for case in cases:
        if not case.source.startswith("safe spelling of "):
            continue
        cited = SAFE_SPELLING_OF.findall(case.source.split("(")[0])
        assert cited, case.path
        for topic, hazard in cited:
            assert hazard in by_id and by_id[hazard].topic == topic, f"{case.path}: no case {topic}/{hazard}"
            assert case.id in by_id[hazard].remedy, f"{case.path}: {hazard} does not name {case.id} as its remedy"


def test_no_two_cases_are_the_same_program() -> None:
    cases, _ = catalogue()
    seen: dict[str, str] = {}
    for case in cases:
        program = json.dumps(case.raw["steps"], sort_keys=True)
        assert program not in seen, f"{case.id} is the same program as {seen[program]}"
        seen[program] = case.id


def _outcomes(engine: Engine, cases, framework: str) -> dict[str, str]:
    return {case.id: engine.run_cell(case, framework, "cpu")["outcome"] for case in cases}


@pytest.mark.parametrize("framework", framework_params())
def test_a_shared_worker_leaks_no_state_between_cases(framework: str) -> None:
    """A sample of cases run one after another in one worker, then each in a fresh worker, then the
    whole catalogue in reverse order: the outcomes agree (grad mode, default dtype and device,
    warnings filters and seeds do not leak from one case into the next)."""
    cases, _ = catalogue()
    sample = random.Random(20261122).sample(cases, min(8, len(cases)))
    shared = Engine(timeout=120)
    try:
        forward = _outcomes(shared, cases, framework)
        backward = _outcomes(shared, list(reversed(cases)), framework)
    finally:
        shared.pool.close()
    assert backward == forward
    for case in sample:
        fresh = Engine(pool=WorkerPool(), timeout=120)
        try:
            alone = fresh.run_cell(case, framework, "cpu")["outcome"]
        finally:
            fresh.pool.close()
        assert alone == forward[case.id], case.id
