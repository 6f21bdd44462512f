"""Which ops and observations the fuzzer draws, and why it leaves out the others (an op's own ``fuzz``
reason, no reference semantics, an argument kind or field type the generator cannot fill).
"""

from __future__ import annotations

from typing import Any, Mapping

from conformance.ops import OBSERVATIONS, OPS, Op
from conformance.ops._op import FIELD_TYPES

#: Argument kinds the generator can fill (conformance/case/load.py accepts the same).
ARG_KINDS = ("tensor", "operand", "value", "array", "data", "module", "optimizer", "any")


def fuzzable_ops(table: Mapping[str, Op] | None = None) -> tuple[dict[str, Op], dict[str, str]]:
    """The ops the generator draws, and those it leaves out with the reason."""
    table = OPS if table is None else table
    key = tuple((name, id(op)) for name, op in table.items())
    if _FUZZABLE[0] != key:
        _FUZZABLE[:] = [key, _sort_ops(table)]
    fuzzed, left_out = _FUZZABLE[1]
    return dict(fuzzed), dict(left_out)


_FUZZABLE: list[Any] = [None, None]  # the table last sorted (its names and op objects), and the result


def _sort_ops(table: Mapping[str, Op]) -> tuple[dict[str, Op], dict[str, str]]:
    fuzzed: dict[str, Op] = {}
    left_out: dict[str, str] = {}
    for name, op in table.items():
        if isinstance(op.fuzz, str):
            left_out[name] = op.fuzz
        elif op.run_reference is None:
            left_out[name] = "no reference semantics, so nothing could judge it"
        elif unknown := [k for k in op.args if k.lstrip("*") not in ARG_KINDS]:
            left_out[name] = f"argument kind {unknown[0]!r} is not one the fuzzer fills ({', '.join(ARG_KINDS)})"
        elif unknown := [f for f, spec in op.fields.items() if spec.type not in FIELD_TYPES]:
            left_out[name] = f"field {unknown[0]!r} has a type the fuzzer does not know"
        else:
            fuzzed[name] = op
    return fuzzed, left_out


def fuzzable_observations() -> tuple[list[str], dict[str, str]]:
    """The observations a program makes (judged ones: they can reveal a wrong result), and the others."""
    drawn: list[str] = []
    left_out: dict[str, str] = {}
    for name, spec in OBSERVATIONS.items():
        if spec.fuzz is not None:
            left_out[name] = spec.fuzz
        elif spec.memory:
            left_out[name] = "a memory observation makes the program an aliases/copies case, whose values are " \
                             "evidence, not verdicts"
        elif not spec.judged:
            left_out[name] = "informational: never judged, so it cannot reveal a wrong result"
        elif spec.targets != 1:
            left_out[name] = f"takes {spec.targets} names"
        else:
            drawn.append(name)
    return drawn, left_out
