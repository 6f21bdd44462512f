"""The reference service: the reference runs under the cell's time limit and a memory limit."""

from __future__ import annotations

import pytest

from conformance.case.load import load_case
from conformance.engine import Engine


@pytest.fixture
def engine(monkeypatch, tmp_path):
    monkeypatch.setenv("CONFORMANCE_REFERENCE_MEMORY", str(512 << 20))
    monkeypatch.setenv("CONFORMANCE_CACHE_DIR", str(tmp_path / "cache"))  # no answer kept by another test
    engine = Engine(timeout=60)
    yield engine
    engine.pool.close()


SMALL = """
    id: small
    title: t
    steps:
      - {op: tensor, out: x, value: [1.0, 2.0], requires_grad: true}
      - {op: mul, args: [x, x], out: y}
      - {op: sum, args: [y], out: loss}
      - {op: backward, args: [loss]}
      - {observe: grad, of: x}
"""


def test_the_reference_is_computed_once_per_case_in_its_own_process(engine, write_case) -> None:
    case = load_case(write_case(SMALL))
    observations, failure, fault = engine.reference(case)
    assert (failure, fault) == (None, None) and observations["grad(x)"] == [2.0, 4.0]
    service = engine.pool.workers["reference"]
    assert engine.reference(case)[0] is observations and service.alive()


def test_a_reference_past_the_cell_time_limit_is_a_harness_error(engine, write_case) -> None:
    case = load_case(write_case("""
        id: endless
        title: t
        timeout: 1
        steps:
          - {op: tensor, out: x, value: [1.0]}
          - op: repeat
            times: 1000000000
            steps:
              - {op: add, args: [x, x], out: y}
          - {observe: value, of: y}
    """))
    observations, failure, fault = engine.reference(case)
    assert observations is None and failure is None and "did not finish within" in fault


def test_a_reference_past_its_memory_limit_is_a_harness_error(engine, write_case) -> None:
    row = ", ".join(["1.0"] * 12000)
    column = ", ".join(["[1.0]"] * 12000)
    case = load_case(write_case(f"""
        id: huge
        title: a broadcast to 12000 x 12000 float64 (1.1 GB) under a 512 MiB limit
        steps:
          - {{op: tensor, out: a, value: [{row}]}}
          - {{op: tensor, out: b, value: [{column}]}}
          - {{op: add, args: [a, b], out: c}}
          - {{op: sum, args: [c], out: total}}
          - {{observe: value, of: total}}
    """))
    observations, failure, fault = engine.reference(case)
    assert observations is None and failure is None and "memory" in fault
    assert engine.reference(load_case(write_case(SMALL)))[0] is not None  # the service still answers


def test_an_oversized_observation_is_a_harness_error_not_a_flood(engine, write_case) -> None:
    row = ", ".join(["1.0"] * 2000)
    col = ", ".join(f"[{i}.0]" for i in range(600))
    case = load_case(write_case(f"""
        id: broadcast
        title: t
        steps:
          - {{op: tensor, out: a, value: [{row}]}}
          - {{op: tensor, out: b, value: [{col}]}}
          - {{op: add, args: [a, b], out: c}}
          - {{observe: value, of: c}}
    """))
    observations, failure, fault = engine.reference(case)
    assert observations is None and "elements" in fault
