"""What a reproducer expected and what it got, as ``conformance show`` prints them.

A framework developer pastes the output of ``conformance show`` into an upstream issue as it is, so it
must say what is right, not only what the framework printed: each print of an observation gets the
reference's value beside it, and the output ends with one verdict line from the judged cell
("expected grad(x) = [2, 4], got [6, 12]: wrong").  Everything added here is a comment, so the output
stays a program that runs (:mod:`conformance.records.selfcheck` then makes it check itself).  The values
are the judge's (the record's), never recomputed here.
"""

from __future__ import annotations

import ast
from typing import Any, Mapping

import numpy as np

from conformance.program.writer import TRANSPOSED_NOTE
from conformance.records.explain import explain
from conformance.records.record import Record
from conformance.records.values import VALUE_LIMIT, format_value

__all__ = ["annotate", "differs_from_memory_model", "memory_model", "printed_name", "set_aside", "verdict"]


def printed_name(line: str) -> str | None:
    """The observation a reproducer's ``print('grad(x)', ...)`` line prints (a loop's ``f'h[{i}]'`` gives
    ``h[``), else None."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print" and call.args):
        return None
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
        return str(first.values[0].value).split("[")[0] + "["
    return None


def memory_model(record: Record) -> str:
    """What the reference assumed of memory in an aliases or copies cell, whose values differ from it: the
    values follow the framework's copy (or sharing) and are evidence of it, not what was expected."""
    return {"copies": "shared memory would give", "aliases": "a copy would give"}.get(
        record.outcome, "the reference's memory model gives")


def differs_from_memory_model(record: Record) -> list[str]:
    """The observations of a memory cell whose values differ from the reference's memory model."""
    if record.outcome not in ("aliases", "copies"):
        return []
    return [str(o.get("name")) for o in record.observations if o.get("matches_reference") is False]


def annotate(source: str, expected: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> str:
    """*source* with ``# expected: VALUE`` beside each print of an observation the reference gives
    (*labels*: another word than "expected" for some, as ``memory_model`` says)."""
    labels = labels or {}
    lines = []
    for line in source.splitlines():
        name = printed_name(line) if "print(" in line else None
        if name is not None and name.endswith("["):  # one print in a loop: every iteration's value
            values = [f"{key[len(name) - 1:]} {format_value(v, 60)}" for key, v in expected.items()
                      if key.startswith(name)]
            if values:
                line += "  # expected: " + "; ".join(values)[:VALUE_LIMIT * 2]
        elif name is not None and name in expected:
            value = expected[name]
            if TRANSPOSED_NOTE in line and value is not None:  # the framework's own layout (in x out)
                value = np.asarray(value, dtype=np.float64).T.tolist()
            line += f"  # {labels.get(name, 'expected')}: {format_value(value)}"
        lines.append(line)
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def set_aside(record: Record) -> list[str]:
    """The warnings the run saw and did not count, each with why: the program prints them too, and a reader
    who meets one must not take the cell for a ``warns`` the record forgot."""
    ignored = [w for w in record.details.get("ignored_warnings") or [] if isinstance(w, Mapping)]
    if not ignored:
        return []
    lines = ["# warnings this run raised that the cell does not count (running this program may show them too):"]
    for warning in ignored:
        times = warning.get("times")
        message = " ".join(str(warning.get("message", "")).split())
        message = message if len(message) <= 160 else message[:157] + "..."
        lines.append(f"#   {warning.get('category', 'Warning')}: {message}"
                     + (f" (x{times})" if isinstance(times, int) and times > 1 else "")
                     + f" [not counted: {warning.get('why', 'not about the case')}]")
    return lines


def verdict(record: Record, expected: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The closing lines (comments) and whether the framework is wrong: the judged observations, then one
    line saying what was expected and what came.  *expected*: every value the reference gives, by
    observation, for a cell that stopped before its end (what a framework that computes would give)."""
    where = f"{record.framework} {record.framework_version} ({record.device}, {record.mode})"
    lines = [f"# ran on {where}:"]
    follows_memory = differs_from_memory_model(record)
    for observation in record.observations:
        if "value" not in observation:
            continue
        mark = "" if observation.get("ok") is not False else "   <- wrong"
        label = memory_model(record) if str(observation.get("name")) in follows_memory else "expected"
        lines.append(f"#   {observation.get('name')} = {format_value(observation.get('value'))}"
                     + (f"   {label} {format_value(observation['reference'])}" if "reference" in observation
                        else "") + mark)
    lines += set_aside(record)
    wrong = record.wrong_observations
    if record.wrong:
        said = "; ".join(f"expected {o.get('name')} = {format_value(o.get('reference'))}, "
                         f"got {format_value(o.get('value'))}" for o in wrong[:3])
        warned = " (after a warning)" if record.outcome == "warns" else ""
        lines.append(f"# verdict: {said or explain(record, 'brief')}: wrong{warned}")
        return lines, True
    if record.outcome in ("raises", "crash", "timeout"):
        seen = {str(o.get("name")) for o in record.observations}
        rest = {name: value for name, value in expected.items() if name not in seen}
        would = "; ".join(f"{name} = {format_value(value, 80)}" for name, value in list(rest.items())[:4])
        lines.append(f"# verdict: {record.outcome}: {explain(record, 'brief')}"
                     + (f"; a framework that computes gives {would}" if would else ""))
        return lines, False
    if record.outcome in ("error", "skipped", "unsupported"):
        lines.append(f"# verdict: {record.outcome}: {explain(record, 'brief')}")
        return lines, False
    judged = [o for o in record.observations if "reference" in o]
    held = (f"{', '.join(follows_memory[:3])} not what {memory_model(record)}: the values follow the "
            f"{'copy' if record.outcome == 'copies' else 'shared memory'}"
            if follows_memory else "every observation as expected" if judged else "nothing to compare")
    lines.append(f"# verdict: {record.outcome_label}: " + held + (
        f" ({explain(record, 'brief')})" if record.outcome in ("aliases", "copies") and explain(record, 'brief')
        else ""))
    return lines, False
