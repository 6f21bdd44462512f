"""Simplifying a found program after hypothesis has shrunk it: fewer steps, then simpler ones.

Hypothesis shrinks the bytes a program was drawn from, so what it gives keeps
steps other steps were drawn around (an array assigned in a loop, converted,
then written into) and literals as they were drawn.  Here each candidate is
one edit of the program, run and judged; an edit that keeps the finding is
taken and the edits start over, until none keeps it (a fixpoint) or the budget
is spent.  The edits, roughly from biggest to smallest:

* delete a step (at any depth);
* unwrap a block (its steps in its place, once);
* replace a tensor or array that a step makes by a literal of the value the
  reference gives it there (the steps that made it then go by deletion);
* compute in float32 instead of float64;
* make a literal 0-d, or shorter along its first dimension;
* make a literal's numbers 1.0, or round them;
* leave an optional field at its default (``python_scalar: true`` dropped).

:class:`Tried` records every edit tried on the final program and what it did,
so a found case says what was verified and never more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from conformance.case.model import CaseError
from conformance.fuzz.generate import Program, outs, walk
from conformance.fuzz.verdict import Verdict
from conformance.ops import OPS

__all__ = ["Tried", "simplify"]

#: Ops that make a literal operand: what inlining turns a step into, and what shapes and values shrink in.
LITERALS = ("tensor", "array")
#: The kinds of edit, in the order they are tried; each is named in the found case's description.
KINDS = ("delete a step", "unwrap a block", "a made tensor as a literal", "float32 for float64",
         "a smaller literal", "simpler numbers", "an optional field at its default")

Edit = tuple[str, str, Program]  # (kind, what exactly, the candidate)


@dataclass
class Tried:
    """What simplification tried on the program it ended with: each edit's kind, and whether the budget
    ran out before every edit of the final program had been tried."""

    #: kind -> how many edits of that kind the final program was tried with (none kept the finding)
    needed: dict[str, int] = field(default_factory=dict)
    #: edits taken on the way, in order
    taken: list[str] = field(default_factory=list)
    evaluations: int = 0
    exhausted: bool = False

    def sentence(self) -> str:
        """What a found case may claim, as one sentence."""
        if self.exhausted:
            return (f"Simplification stopped at its budget ({self.evaluations} candidates run): not every edit of "
                    f"this program was tried, so a smaller one may have the finding.")
        if not self.needed:
            return "No edit of this program applied (every one made an invalid program)."
        tried = "; ".join(f"{kind} ({count} tried)" for kind, count in self.needed.items())
        return f"Verified minimal against these edits, each run and none keeping the finding: {tried}."


def simplify(program: Program, verdict: Verdict, target: Verdict, evaluate: Callable[[Program], Verdict],
             max_evaluations: int = 500) -> tuple[Program, Verdict, Tried]:
    """Edit *program* while it stays the finding *target* (see the module's docstring); *evaluate* runs
    and judges a candidate.  Returns the simplest program reached, its verdict and what was tried."""
    tried = Tried()
    while True:
        taken = False
        needed: dict[str, int] = {}
        for kind, what, candidate in edits(program):
            if tried.evaluations >= max_evaluations:
                tried.exhausted = True
                return program, verdict, tried
            tried.evaluations += 1
            judged = evaluate(candidate)
            if judged.keeps(target):
                program, verdict, taken = candidate, judged, True
                tried.taken.append(what)
                break
            needed[kind] = needed.get(kind, 0) + 1
        if not taken:
            tried.needed = needed
            return program, verdict, tried


def edits(program: Program) -> Iterator[Edit]:
    """Every valid one-edit candidate of *program*, smaller than it or simpler, in the order of KINDS."""
    seen = {_key(program)}
    for kind, what, candidate in _all_edits(program):
        key = _key(candidate)
        if key in seen:
            continue
        seen.add(key)
        try:
            candidate.case("candidate")
        except CaseError:
            continue
        yield kind, what, candidate


def _key(program: Program) -> str:
    return json.dumps([program.dtype, list(program.steps)], sort_keys=True)


def _all_edits(program: Program) -> Iterator[Edit]:
    steps = program.steps
    for path in reversed(list(paths(steps))):
        kept = still_observing(without(steps, path), steps)
        if sum(1 for _ in walk(kept)) < program.size():
            yield KINDS[0], f"delete {_label(steps, path)}", Program(kept, program.dtype)
    for path in paths(steps):
        step = _at(steps, path)
        if "steps" in step:
            yield KINDS[1], f"unwrap {_label(steps, path)}", Program(_replaced(steps, path, step["steps"]),
                                                                   program.dtype)
    yield from _inlined(program)
    if program.dtype == "float64" or any(s.get("dtype") == "float64" for s in walk(steps)):
        yield KINDS[3], "float32 for float64", Program(_float32(steps), "float32")
    for path in paths(steps):
        step = _at(steps, path)
        if step.get("op") not in LITERALS or not isinstance(step.get("value"), list):
            continue
        value = np.asarray(step["value"], dtype=np.float64)
        smaller = [value.reshape(-1)[0].item()]
        if value.shape[0] > 1:
            smaller.append(value[: (value.shape[0] + 1) // 2].tolist())
        for literal in smaller:
            yield KINDS[4], f"{_label(steps, path)} of shape {list(np.shape(literal))}", Program(
                _replaced(steps, path, [{**step, "value": literal}]), program.dtype)
    for path in paths(steps):
        step = _at(steps, path)
        if step.get("op") not in LITERALS:
            continue
        value = np.asarray(step["value"], dtype=np.float64)
        for name, simpler in (("ones", np.ones_like(value)), ("rounded", np.round(value))):
            yield KINDS[5], f"{_label(steps, path)} as {name}", Program(
                _replaced(steps, path, [{**step, "value": simpler.tolist()}]), program.dtype)
    for path in paths(steps):
        step = _at(steps, path)
        spec = OPS.get(step.get("op", ""))
        if spec is None:
            continue
        for name, declared in spec.fields.items():
            if name in step and not declared.required and declared.type != "steps" and step[name] != declared.default:
                rest = {k: v for k, v in step.items() if k != name}
                yield KINDS[6], f"{_label(steps, path)} without {name}", Program(
                    _replaced(steps, path, [rest]), program.dtype)


def _inlined(program: Program) -> Iterator[Edit]:
    """Each top-level step that makes one tensor or array (not already a literal), replaced by a literal of
    the value the reference gives it there, with its requires_grad."""
    from conformance.judge.reference import machine

    steps = program.steps
    for index, step in enumerate(steps):
        names = outs(step)
        if step.get("op") in LITERALS or "observe" in step or len(names) != 1:
            continue
        try:
            prefix = steps[: index + 1]
            case = Program(still_observing(prefix, prefix), program.dtype).case("prefix")
            reference = machine()
            reference.run(case.steps)
            made = reference.get(names[0])
        except Exception:  # the prefix is no program, or the reference stops in it: no literal to give
            continue
        kind = getattr(made, "kind", None)
        if kind not in ("tensor", "array"):
            continue
        value = np.asarray(made.value, dtype=np.float64).tolist()
        dtype = step.get("dtype", program.dtype)
        literal: dict[str, Any] = {"op": "tensor" if kind == "tensor" else "array", "out": names[0],
                                   "value": value, "dtype": dtype}
        if kind == "tensor" and made.requires_grad:
            literal["requires_grad"] = True
        yield KINDS[2], f"{names[0]} as a literal", Program(steps[:index] + (literal,) + steps[index + 1:],
                                                           program.dtype)


def _float32(steps: Sequence[Mapping[str, Any]]) -> tuple:
    def one(step: Mapping[str, Any]) -> dict[str, Any]:
        changed = {k: ("float32" if k == "dtype" and v == "float64" else v) for k, v in step.items()}
        if "steps" in changed:
            changed["steps"] = [one(s) for s in changed["steps"]]
        return changed
    return tuple(one(s) for s in steps)


def still_observing(steps: tuple, before: tuple) -> tuple:
    """*steps* without the observations of names no step binds any more; with none left, observing the value
    of the last name a top-level step still binds (a program observes something)."""
    bound = {name.split(".")[0] for step in walk(steps) for name in outs(step)}
    kept = tuple(step for step in steps if "observe" not in step or all(
        target.split(".")[0] in bound for target in (step["of"] if isinstance(step["of"], list) else [step["of"]])))
    if any("observe" in step for step in kept):
        return kept
    names = [name for step in kept for name in outs(step)]
    return kept + ({"observe": "value", "of": names[-1]},) if names else kept


def paths(steps: Sequence[Mapping[str, Any]], prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """Every step's position: its index, and inside a block the indices down to it."""
    for index, step in enumerate(steps):
        yield prefix + (index,)
        yield from paths(step.get("steps", ()), prefix + (index,))


def _at(steps: Sequence[Mapping[str, Any]], path: tuple[int, ...]) -> Mapping[str, Any]:
    step = steps[path[0]]
    return step if len(path) == 1 else _at(step["steps"], path[1:])


def _label(steps: Sequence[Mapping[str, Any]], path: tuple[int, ...]) -> str:
    step = _at(steps, path)
    what = step.get("op") or f"observe {step.get('observe')}"
    names = outs(step)
    return f"step {'.'.join(str(i + 1) for i in path)} ({what}{' ' + ', '.join(names) if names else ''})"


def _replaced(steps: Sequence[Mapping[str, Any]], path: tuple[int, ...], new: Sequence[Mapping[str, Any]]) -> tuple:
    """*steps* with the step at *path* replaced by the steps *new* (none: deleted)."""
    head, *rest = path
    if not rest:
        return tuple(steps[:head]) + tuple(new) + tuple(steps[head + 1:])
    inner = dict(steps[head])
    inner["steps"] = list(_replaced(inner["steps"], tuple(rest), new))
    return tuple(steps[:head]) + (inner,) + tuple(steps[head + 1:])


def without(steps: Sequence[Mapping[str, Any]], path: tuple[int, ...]) -> tuple:
    """*steps* without the step at *path*."""
    return _replaced(steps, path, ())
