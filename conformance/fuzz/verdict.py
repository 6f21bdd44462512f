"""What one program's outcomes mean: a finding, a suspected reference bug, a harness fault, or nothing.

* A **finding**: a cell ``silent-wrong`` (or ``warns`` with a wrong result: the
  warning did not say the result is wrong), ``crash`` or ``timeout``; or the
  frameworks disagree on raising against computing silently.
* A **suspected reference bug**: every framework is wrong, and they agree with
  each other (within the observation's tolerance) on every observation the
  reference disagrees with (the modes of one framework count as one); or the frameworks that ran agree there is no
  gradient where the reference has one: those that computed give none, and
  those that raised did so in backward, not by an autograd safety check (a
  framework without an op of the program, ``unsupported``, says nothing
  either way).  It is reported apart, never written as a case.
* A **harness error**: a cell ``error`` (a fault of an adapter, an op or the
  judge, never a framework behaviour).

The **signature** of a program is what shrinking keeps: per framework, the
outcome and what characterises it (the kinds of the wrong observations, the
kind of the raise and the op that raised, the signal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from conformance.case.model import Case
from conformance.fuzz import ERROR, FINDING, NOTHING, REFERENCE
from conformance.judge.classify import compare, wrong_result

__all__ = ["Cell", "Verdict", "judge", "FINDING", "REFERENCE", "ERROR", "NOTHING"]

_SILENT = ("silent-correct", "silent-wrong", "warns")
#: What joins a framework and a compiled mode in a cell's name (``torch:compile``; an eager cell is the
#: framework's name alone).
MODE_SEPARATOR = ":"


@dataclass(frozen=True)
class Cell:
    """One framework's outcome on one program, with the details the judge gave."""

    outcome: str
    details: Mapping[str, Any]

    @property
    def wrong(self) -> bool:
        return wrong_result(self.outcome, self.details)

    def wrong_observations(self) -> dict[str, Mapping[str, Any]]:
        return {o["name"]: o for o in self.details.get("observations", []) if o.get("ok") is False}

    def signature(self) -> tuple:
        """The outcome and what characterises it (for a raise, its kind and the op that raised)."""
        if self.wrong:
            kinds = sorted({o["kind"] for o in self.wrong_observations().values()})
            return ("wrong", *kinds)
        if self.outcome == "raises":
            exception = self.details.get("exception", {})
            return ("raises", exception.get("kind", ""), exception.get("op", ""))
        if self.outcome == "crash":
            return ("crash", self.details.get("signal") or "")
        return (self.outcome,)


@dataclass(frozen=True)
class Verdict:
    """The outcomes of one program on every framework, and what they mean."""

    cells: Mapping[str, Cell]
    kind: str
    reason: str = ""

    @property
    def signature(self) -> tuple:
        """What shrinking keeps: the kind, and per framework the outcome and what characterises it."""
        return (self.kind,) + tuple((name, *self.cells[name].signature()) for name in sorted(self.cells))

    def keeps(self, target: "Verdict") -> bool:
        """Whether this verdict is the same finding as *target*: the same kind and the same signature on
        the cells the finding is about (:meth:`about`).  The other cells may do anything: a framework that
        could not run *target* (``unsupported``), or one whose raise is beside the point of another's wrong
        result, never keeps a step in a shrunk program only to keep doing so."""
        if self.kind != target.kind or set(self.cells) != set(target.cells):
            return False
        return all(self.cells[name].signature() == target.cells[name].signature() for name in target.about())

    def about(self) -> list[str]:
        """The cells a finding is about: those wrong, crashed or hung; else (frameworks that disagree on
        raising) every cell that ran."""
        broken = [name for name, cell in self.cells.items() if cell.wrong or cell.outcome in ("crash", "timeout")]
        return sorted(broken or [name for name, cell in self.cells.items() if cell.outcome != "unsupported"])

    def outcomes(self) -> dict[str, str]:
        return {name: cell.outcome for name, cell in sorted(self.cells.items())}


def judge(case: Case, cells: Mapping[str, Cell]) -> Verdict:
    """What the outcomes of *case* on each framework mean (see the module's docstring)."""
    errors = [name for name, cell in cells.items() if cell.outcome == "error"]
    if errors:
        message = cells[errors[0]].details.get("message", "")
        return Verdict(cells, ERROR, f"{errors[0]}: {message}")
    wrong = sorted(name for name, cell in cells.items() if cell.wrong)
    if len(frameworks(cells)) > 1 and len(wrong) == len(cells):
        disagreement = _disagreement(case, [cells[name] for name in wrong])
        if disagreement is None:
            return Verdict(cells, REFERENCE, "every framework gives the same result, which the reference does not")
        return Verdict(cells, FINDING, f"wrong in {', '.join(wrong)} ({disagreement})")
    if wrong and _no_gradient_where_the_reference_has_one(cells, wrong):
        return Verdict(cells, REFERENCE, f"{', '.join(wrong)} give(s) no gradient where the reference has one, "
                                         f"and no framework that ran gives one")
    if wrong:
        return Verdict(cells, FINDING, f"wrong in {', '.join(wrong)}")
    broken = sorted(name for name, cell in cells.items() if cell.outcome in ("crash", "timeout"))
    if broken:
        return Verdict(cells, FINDING, ", ".join(f"{name} {cells[name].outcome}" for name in broken))
    raising = sorted(name for name, cell in cells.items() if cell.outcome == "raises")
    silent = sorted(name for name, cell in cells.items() if cell.outcome in _SILENT)
    if raising and silent:
        return Verdict(cells, FINDING, f"{', '.join(raising)} raise(s), {', '.join(silent)} compute(s) silently")
    return Verdict(cells, NOTHING)


def frameworks(cells: Mapping[str, Cell]) -> set[str]:
    """The frameworks of the cells (a compiled cell ``torch:compile`` is torch's): one framework's modes agreeing
    with each other corroborate nothing against the reference."""
    return {name.split(MODE_SEPARATOR)[0] for name in cells}


def _no_gradient_where_the_reference_has_one(cells: Mapping[str, Cell], wrong: list[str]) -> bool:
    """Every wrong observation is a gradient the framework does not give (None), and every other framework
    that ran raised in backward without an autograd safety check (the graph has nothing to give)."""
    for name in wrong:
        observations = cells[name].wrong_observations().values()
        if not observations or any(o.get("kind") != "grad" or o.get("value") is not None for o in observations):
            return False
    for name, cell in cells.items():
        if name in wrong or cell.outcome == "unsupported":
            continue
        exception = cell.details.get("exception", {})
        if cell.outcome != "raises" or exception.get("phase") != "backward" or exception.get("kind") == "autograd":
            return False
    return True


def _disagreement(case: Case, cells: list[Cell]) -> str | None:
    """None when the frameworks agree with each other on every observation some of them got wrong;
    else what differs."""
    first, *others = cells
    wrong = first.wrong_observations()
    for other in others:
        if set(other.wrong_observations()) != set(wrong):
            return "they are wrong in different observations"
        theirs = {o["name"]: o for o in other.details.get("observations", [])}
        for name, mine in wrong.items():
            if name not in theirs:
                return f"{name} is missing from one"
            verdict = compare(theirs[name], mine.get("value"), case.tolerance)
            if not verdict.get("ok"):
                return f"they differ in {name}"
    return None

