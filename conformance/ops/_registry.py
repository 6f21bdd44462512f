"""The op table: every op a step may name, and every kind of observation, filled by the family modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.ops._op import Observation, Op

__all__ = ["OPS", "OBSERVATIONS", "register", "register_observation"]

OPS: dict[str, "Op"] = {}
OBSERVATIONS: dict[str, "Observation"] = {}


def register(op: "Op") -> "Op":
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is declared twice")
    OPS[op.name] = op
    return op


def register_observation(observation: "Observation") -> "Observation":
    if observation.name in OBSERVATIONS:
        raise ValueError(f"observation {observation.name!r} is declared twice")
    OBSERVATIONS[observation.name] = observation
    return observation
