"""What a finding is about: its hazard family, the op it hinges on, and one sentence on why it matters.

Findings are grouped by cause, not by their exact outcomes: the same hazard
reached through ``sin_`` or ``cos_``, after a ``reshape`` or a ``transpose``, is
one cause.  The families are the hand-written catalogue's topics
(``cases/<topic>/``), learnt from it: a finding belongs to the topic whose cases
use its ops most distinctively (each op weighted by how few topics use it, as
tf-idf weighs words), and hinges on the op that weighs most there (for a raise,
the op that raised).  A topic every case of which uses an op the fuzzer never draws
(``complex_tensor``) is about that op, so it is no family of a program without it.  A finding
whose ops no hand-written case uses opens a new family; one that only a compiled mode gets
wrong is of the family ``compiled``.

A finding is **known** when a hand-written case of its family uses an op of the
same interface as its pivot (``sin_`` for ``cos_``) and behaves alike (wrong,
raising with the same kind, or the same outcome) on every framework that ran
the finding: it then adds evidence to that case, not a new case.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from conformance.case.model import Case
from conformance.fuzz.verdict import MODE_SEPARATOR, Cell, Verdict
from conformance.ops import OPS

__all__ = ["Cause", "Families", "behaviour_class", "interface", "writes", "COMPILED"]

#: Ops that only make operands, read results or run backward: they say nothing of the hazard.
NEUTRAL = frozenset({"tensor", "array", "full", "observe", "sum", "mean", "backward"})
#: Ops the fuzzer never draws (``Op.fuzz`` gives why): a topic all of whose cases use one is about it.
_NEVER_DRAWN = frozenset(name for name, op in OPS.items() if isinstance(op.fuzz, str))
#: Topics of the catalogue that are not hazard families: the seed articles' own examples (a topic by where
#: its cases come from; each of their hazards also has a topic of its own).
NOT_FAMILIES = frozenset({"seed"})
#: The family of findings only a compiled mode gets wrong (modes are an axis of the matrix, not a topic).
COMPILED = "compiled"
#: Cases added to every topic's count when weighing an op (:meth:`Families.weight`).
SMOOTHING = 5


@dataclass(frozen=True)
class Cause:
    """A finding's hazard family, the op it hinges on, and how the cells it is about behave
    (:meth:`Verdict.about`: those wrong or broken; else every cell that ran)."""

    family: str
    pivot: str
    behaviour: tuple[tuple[str, tuple], ...]
    sentence: str

    @property
    def key(self) -> tuple:
        """What findings of one cause share: the family, the pivot's interface, the behaviour."""
        return self.family, interface(self.pivot), self.behaviour


def writes(op: str) -> bool:
    """Whether *op* writes a tensor it is given: an in-place op (``sin_``, ``setitem``) or an augmented
    assignment, as the op table declares it (no result of its own, or the first argument's name rebound)."""
    spec = OPS.get(op)
    return spec is not None and (spec.rebinds or op.endswith("_") or (spec.out == "none" and not spec.block))


def interface(op: str) -> str:
    """An op as its interface in the op table (argument kinds, output, fields): ``sin_`` and ``cos_`` share
    one, ``add_`` and ``mul_`` another."""
    spec = OPS.get(op)
    if spec is None:
        return op
    return json.dumps([list(spec.args), spec.out, spec.binds, sorted(spec.fields), spec.block])


def behaviour_class(cell: Cell) -> tuple:
    """How a cell behaves, coarsely: wrong, raises (with the kind), or its outcome."""
    if cell.wrong:
        return ("wrong",)
    if cell.outcome == "raises":
        return ("raises", cell.details.get("exception", {}).get("kind", ""))
    return (cell.outcome,)


def _culprits(verdict: Verdict) -> list[str]:
    """The cells a finding blames: those wrong or broken; else those raising where another computes."""
    wrong = [name for name, cell in verdict.cells.items() if cell.wrong or cell.outcome in ("crash", "timeout")]
    if wrong:
        return sorted(wrong)
    return sorted(name for name, cell in verdict.cells.items() if cell.outcome == "raises")


def _entry_ops(cases: Sequence[Case]) -> frozenset[str]:
    """The never-drawn ops of a topic whose every case uses one of them, else none."""
    per_case = [frozenset(case.ops) & _NEVER_DRAWN for case in cases]
    return frozenset().union(*per_case) if per_case and all(per_case) else frozenset()


class Families:
    """The catalogue's topics and the ops their cases use: what a finding's family and pivot are learnt from."""

    def __init__(self, cases: Iterable[Case]) -> None:
        self.cases: dict[str, list[Case]] = {}
        for case in cases:
            if case.topic not in NOT_FAMILIES:
                self.cases.setdefault(case.topic or "", []).append(case)
        self.uses: dict[str, Counter[str]] = {topic: Counter(op for case in cases for op in case.ops)
                                              for topic, cases in self.cases.items()}
        #: per topic whose every case uses an op the fuzzer never draws (``complex_tensor``,
        #: ``view_as_complex``), those ops: the topic is about them, so a program without any of them (any
        #: program the fuzzer drew) is not of it
        self.entry_ops = {topic: _entry_ops(cases) for topic, cases in self.cases.items()}
        topics_using = Counter(op for counter in self.uses.values() for op in counter)
        self.idf = {op: math.log((1 + len(self.uses)) / (1 + count)) + 1e-3 for op, count in topics_using.items()}

    def weight(self, topic: str, op: str) -> float:
        """How much *op* says a program is of *topic*: the share of the topic's cases that use it (smoothed,
        so that one case of a two-case topic is not half of its evidence) times how few topics use it."""
        cases = len(self.cases.get(topic, ()))
        return self.uses.get(topic, Counter())[op] / (cases + SMOOTHING) * self.idf.get(op, 0.0)

    def cause(self, ops: Sequence[str], verdict: Verdict) -> Cause:
        """The cause of a finding whose program uses *ops* (in order)."""
        distinctive = [op for op in dict.fromkeys(ops) if op not in NEUTRAL] or list(dict.fromkeys(ops))
        about = _culprits(verdict)
        behaviour = tuple((name, behaviour_class(verdict.cells[name])) for name in verdict.about())
        raised_at = [verdict.cells[name].details.get("exception", {}).get("op") for name in about
                     if verdict.cells[name].outcome == "raises"]
        # A raise is about the op that raised: its topics decide, the other ops only break ties.
        weighed = [op for op in raised_at if op in distinctive] or distinctive
        used = set(ops)
        # a topic whose cases all make their tensors with an op the fuzzer never draws (complex_tensor) is the
        # family of any program that makes one: that op says more than the ones it shares with other topics
        scores = {topic: (bool(self.entry_ops[topic]), sum(self.weight(topic, op) for op in weighed),
                          sum(self.weight(topic, op) for op in distinctive))
                  for topic in self.uses if not self.entry_ops[topic] or self.entry_ops[topic] & used}
        best = max(sorted(scores), key=lambda topic: scores[topic], default="")
        if _only_compiled(verdict, about):
            family = COMPILED
        elif not best or scores[best][2] <= 0:
            family = f"new: {distinctive[0]}" if distinctive else "new"
        else:
            family = best
        in_family = best if family == COMPILED else family
        # the pivot is the op the hazard is about: the one that raised, else a write (in place, or an
        # augmented assignment) where the program has one, the op the family uses most
        writing = [op for op in distinctive if writes(op)]
        pivot = next((op for op in raised_at if op in distinctive), None) or max(
            writing or distinctive, key=lambda op: (self.weight(in_family, op), -distinctive.index(op)))
        return Cause(family, pivot, behaviour, _sentence(verdict, about, pivot, family))

    def known(self, cause: Cause, behaviours: Mapping[str, Verdict]) -> str | None:
        """The id of a case among *behaviours* (hand-written cases' verdicts by id, see :meth:`candidates`)
        that behaves as the finding does on the cells it is about (``Cause.behaviour``)."""
        for case_id, verdict in behaviours.items():
            theirs = {name: behaviour_class(cell) for name, cell in verdict.cells.items()}
            if cause.behaviour and all(theirs.get(name) == behaviour for name, behaviour in cause.behaviour):
                return case_id
        return None

    def candidates(self, cause: Cause) -> list[Case]:
        """The hand-written cases that could be the cause's known hazard: in its family (for a compiled
        finding, any), using an op of the pivot's interface."""
        pivot = interface(cause.pivot)
        topics = self.cases if cause.family == COMPILED else {cause.family: self.cases.get(cause.family, [])}
        return [case for cases in topics.values() for case in cases
                if any(interface(op) == pivot for op in case.ops)]


def _only_compiled(verdict: Verdict, about: list[str]) -> bool:
    """Whether only compiled cells are wrong or broken, and each one's framework is right in eager."""
    if not about or not all(MODE_SEPARATOR in name for name in about):
        return False
    for name in about:
        eager = verdict.cells.get(name.split(MODE_SEPARATOR)[0])
        if eager is None or eager.wrong or eager.outcome in ("crash", "timeout", "raises"):
            return False
    return True


def _sentence(verdict: Verdict, about: list[str], pivot: str, family: str) -> str:
    """Why the finding matters, in one sentence a porter or a framework developer reads."""
    cells = verdict.cells
    others = [name for name in sorted(cells) if name not in about and cells[name].outcome != "unsupported"]
    right = [name for name in others if cells[name].outcome in ("silent-correct", "copies", "aliases")
             or (cells[name].outcome == "warns" and not cells[name].wrong)]
    refusing = [name for name in others if cells[name].outcome == "raises"]
    who = ", ".join(about)
    first = cells[about[0]] if about else None
    frameworks = {name.split(MODE_SEPARATOR)[0] for name in [*about, *right, *refusing]}
    if first is not None and first.outcome == "raises" and right and len(frameworks) == 1:
        compiled = [name for name in about if MODE_SEPARATOR in name]
        return (f"{who} refuse(s) at `{pivot}` what {', '.join(right)} compute(s) as the reference does: "
                + ("compiling this code turns it into an error." if compiled
                   else "the error goes away when the code is compiled, so a compiled model runs what eager refuses."))
    if first is not None and first.wrong:
        kinds = ", ".join(sorted({o["kind"] for o in first.wrong_observations().values()})) or "result"
        what = f"{who} silently give(s) a wrong {kinds} after `{pivot}`"
        if family == COMPILED and all(MODE_SEPARATOR in name for name in about):
            return (f"{what} in a compiled mode where eager gives the reference's: compiling the same code "
                    f"changes its numbers without a word.")
        if family == COMPILED:  # the eager cell is the wrong one: compiling gives the reference's numbers
            return (f"{what} in eager where a compiled mode gives the reference's: the same code computes "
                    f"other numbers once compiled, without a word (here the compiled ones are right).")
        if refusing:
            return (f"{what} where {', '.join(refusing)} refuse(s) the program: code that relied on the error "
                    f"computes a wrong {kinds} once ported.")
        if right:
            return (f"{what} where {', '.join(right)} give(s) the reference's: the same program computes "
                    f"different numbers after porting, with no error to notice.")
        return f"{what}: no framework that runs it gives the reference's result."
    if first is not None and first.outcome in ("crash", "timeout"):
        return f"{who} {'dies' if first.outcome == 'crash' else 'hangs'} on a program built around `{pivot}`."
    if right:
        return (f"{who} refuse(s) at `{pivot}` a program {', '.join(right)} compute(s) as the reference does: "
                f"code ported from {', '.join(right)} stops with an error there.")
    return f"{who} behave(s) differently from the others at `{pivot}`."
