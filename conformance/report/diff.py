"""Cell-by-cell comparison of two results or baseline files, ranked by how much it matters.

Net counts hide what a reader needs before an upgrade (same framework, two
versions) or a port (torch vs paddle): which case now gives a wrong gradient.
So every changed cell is listed, most dangerous first, with the evidence.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from conformance.outcomes import MACHINE_VALUE_OUTCOMES, outcome_label
from conformance.records.explain import explain, raised_brief
from conformance.records.record import EAGER, Column, Record
from conformance.records.results import ResultsError, latest_by_cell, load_records
from conformance.report.markdown import code, table, text

__all__ = ["BadInput", "Cell", "Side", "Change", "Comparison", "SEVERITIES", "load_side", "pair_columns",
           "severity", "compare", "render_text", "render_markdown", "markdown_sections", "short_counts", "exit_status",
           "SHORT_NAMES"]

WRONG, CRASH, BEHAVIOUR, MEMORY, NEW_API, MESSAGE, NOT_COMPARABLE, NONDETERMINISTIC, MACHINE = 1, 2, 3, 4, 5, 6, 7, 8, 9
#: Severity -> heading, most dangerous first.  1 and 2 make the exit status 1.
SEVERITIES = {
    WRONG: "became wrong (silent-wrong, or warns with a wrong result) for a spelling that existed before",
    CRASH: "newly crash or timeout",
    BEHAVIOUR: "behaviour changed (raises <-> silent, an API or mode gone, a different kind of raise, "
               "and other outcome changes)",
    MEMORY: "memory semantics changed (aliases <-> copies)",
    NEW_API: "new API (unsupported before: the spelling, or the mode, arrived in this release)",
    MESSAGE: "same outcome and raise kind, different exception type, message or phase",
    NOT_COMPARABLE: "not comparable (skipped or harness error on one side)",
    NONDETERMINISTIC: "not the same from run to run (a second run of the cell in one column gave other values): "
                      "recorded, never counted as a change",
    MACHINE: "another machine's value (a case whose value varies by machine, silent-correct on one CPU and "
             "silent-wrong on another, compared across CPUs or with a baseline): recorded, never counted as a change",
}
SHORT_NAMES = {WRONG: "became wrong", CRASH: "newly crash/timeout", BEHAVIOUR: "behaviour changed",
               MEMORY: "aliases/copies", NEW_API: "new API", MESSAGE: "message-only",
               NOT_COMPARABLE: "not comparable", NONDETERMINISTIC: "not the same from run to run",
               MACHINE: "another machine's value"}
_SEVERE = (WRONG, CRASH)


class BadInput(Exception):
    """A file that cannot be compared: missing, unreadable, or in neither format."""


@dataclass(frozen=True)
class Cell:
    """What a diff compares of one cell; baselines carry no message or correctness flag.

    *kind* is the raise kind (autograd safety check, rejection, other); None
    where the record or baseline predates kinds, and then it matches any kind.
    """

    outcome: str
    exception: str | None = None
    message: str | None = None
    phase: str | None = None
    correct: bool | None = None
    brief: str = ""
    kind: str | None = None
    #: a second run of the cell in its column gave other values (``Engine._once_more``)
    nondeterministic: bool = False
    #: the case says its value depends on the machine's kernels (``varies_by_machine:``)
    varies_by_machine: bool = False

    @property
    def wrong(self) -> bool:
        return self.outcome == "silent-wrong" or (self.outcome == "warns" and self.correct is False)


@dataclass
class Side:
    path: str
    kind: str  # "results" or "baseline"
    columns: dict[Column, dict[str, Cell]]
    #: What each column ran with besides the framework (results only; a baseline records neither):
    #: the NumPy versions and the builds (cpu, cu128) of its records.
    numpy: dict[Column, set[str]] = field(default_factory=dict)
    builds: dict[Column, set[str]] = field(default_factory=dict)
    #: The CPUs its records ran on (results only): a value that varies by machine compares on one CPU only.
    cpus: dict[Column, set[str]] = field(default_factory=dict)

    def only(self, columns: Iterable[Column], path: str | None = None) -> Side:
        """The same side with only *columns* (what each ran with kept)."""
        kept = list(columns)
        return Side(path or self.path, self.kind, {c: self.columns[c] for c in kept},
                    {c: self.numpy[c] for c in kept if c in self.numpy},
                    {c: self.builds[c] for c in kept if c in self.builds},
                    {c: self.cpus[c] for c in kept if c in self.cpus})

    @classmethod
    def merged(cls, sides: Sequence[Side]) -> Side:
        """One side of the columns of several (each column from one of them)."""
        merged = cls(", ".join(dict.fromkeys(side.path for side in sides)), sides[0].kind if sides else "results", {})
        for side in sides:
            merged.columns.update(side.columns)
            merged.numpy.update(side.numpy)
            merged.builds.update(side.builds)
            merged.cpus.update(side.cpus)
        return merged


def _cell_from_record(record: Record) -> Cell:
    exc = record.exception
    return Cell(record.outcome, exc.type if exc else None, (exc.first_line or None) if exc else None,
                exc.phase if exc else None, record.correct, explain(record, "brief"), exc.kind if exc else None,
                bool(record.details.get("nondeterministic")), bool(record.details.get("varies_by_machine")))


def _cell_from_baseline(entry: Mapping[str, Any]) -> Cell:
    kind = entry.get("kind")
    brief = raised_brief(entry["exception"], entry.get("phase"), kind) if entry.get("exception") else ""
    return Cell(entry["outcome"], entry.get("exception"), None, entry.get("phase"), None, brief, kind,
                entry.get("nondeterministic") is True, entry.get("varies_by_machine") is True)


def _baseline_side(path: Path, whole: Mapping[str, Any]) -> Side:
    from conformance.records.baseline import baseline_problem

    problem = baseline_problem(whole) if isinstance(whole.get("cells"), Mapping) else "its 'cells' is no object"
    if problem:
        raise BadInput(f"{path}: not a baseline of this package: {problem}")
    try:
        column = Column(str(whole["framework"]), str(whole["version"]), str(whole["device"]),
                        str(whole.get("mode") or "eager"))
        cells = {case: _cell_from_baseline(entry) for case, entry in whole["cells"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"{path}: neither a results file nor a baseline (missing field {exc})") from None
    return Side(str(path), "baseline", {column: cells})


def load_side(path: Path | str) -> Side:
    """A results (.jsonl) or baseline (.json) file; format by content, so names do not matter.

    A results file is read strictly: a line that is not a record is bad input
    naming the file and line, a torn last line included.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        whole = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = None
    if isinstance(whole, dict) and "cells" in whole:
        return _baseline_side(path, whole)
    try:
        records = load_records([path])
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    side = Side(str(path), "results", {})
    for (case, column), record in latest_by_cell(records).items():
        side.columns.setdefault(column, {})[case] = _cell_from_record(record)
        side.numpy.setdefault(column, set()).update([record.numpy] if record.numpy else [])
        side.builds.setdefault(column, set()).update([record.build] if record.build else [])
        cpu = record.run_info.get("cpu")
        side.cpus.setdefault(column, set()).update([cpu] if isinstance(cpu, str) and cpu else [])
    if not side.columns:
        raise BadInput(f"{path}: no results records in this file")
    return side


def pair_columns(old: Side, new: Side) -> tuple[list[tuple[Column, Column]], list[Column], list[Column]]:
    """Columns to compare, by device: same framework and version first, then same framework
    (an upgrade), then whatever single column is left on each side (a port).
    Returns the pairs and the columns of each side left without a partner."""
    left_old = sorted(old.columns)
    left_new = sorted(new.columns)
    if len(left_old) == 1 and len(left_new) == 1:
        return [(left_old[0], left_new[0])], [], []
    pairs = []

    def same_axis(a: Column, b: Column) -> bool:
        return (a.device, a.mode) == (b.device, b.mode)

    for rule in (lambda a, b: a == b, lambda a, b: a.framework == b.framework and same_axis(a, b)):
        _pair_by(rule, left_old, left_new, pairs)
    _pair_modes(left_old, left_new, pairs)
    _pair_by(same_axis, left_old, left_new, pairs)
    return sorted(pairs, key=lambda p: p[1]), left_old, left_new


def _pair_by(rule: Any, left_old: list[Column], left_new: list[Column], pairs: list[tuple[Column, Column]]) -> None:
    """Pair each column with the one column the rule matches, when neither has a rival."""
    for candidate in list(left_old):
        matches = [c for c in left_new if rule(candidate, c)]
        rivals = [c for c in left_old if matches and rule(c, matches[0])]
        if len(matches) == 1 and len(rivals) == 1:
            pairs.append((candidate, matches[0]))
            left_old.remove(candidate)
            left_new.remove(matches[0])


def _pair_modes(left_old: list[Column], left_new: list[Column], pairs: list[tuple[Column, Column]]) -> None:
    """The eager -> compiled view: an eager column against each compiled mode of the same build."""
    used = set()
    for new in list(left_new):
        eager = [old for old in left_old if old.mode == EAGER != new.mode
                 and (old.framework, old.version, old.device) == (new.framework, new.version, new.device)]
        if len(eager) == 1:
            pairs.append((eager[0], new))
            left_new.remove(new)
            used.add(eager[0])
    for old in used:
        left_old.remove(old)


def split_modes(side: Side) -> tuple[Side, Side]:
    """One results file as two sides: its eager columns, and its compiled ones."""
    eager = {c: cells for c, cells in side.columns.items() if c.mode == EAGER}
    compiled = {c: cells for c, cells in side.columns.items() if c.mode != EAGER}
    if not eager or not compiled:
        raise BadInput(f"{side.path}: the eager -> compiled view needs eager and compiled columns; "
                       f"it has {_columns(side)}")
    return Side(side.path, side.kind, eager), Side(side.path, side.kind, compiled)


def severity(old: Cell, new: Cell, one_machine: bool = False) -> int | None:
    """How much a change matters (1 = most); None when nothing a reader cares about changed.  A spelling
    that did not exist before (unsupported) is new API whatever it does now: it cannot have become wrong.
    *one_machine*: both columns ran on the same CPU, so a value that varies by machine compares as any other."""
    if old.outcome == "unsupported" and new.outcome not in ("unsupported", "skipped", "error"):
        return NEW_API
    if (not one_machine and (old.varies_by_machine or new.varies_by_machine) and old.outcome != new.outcome
            and {old.outcome, new.outcome} <= MACHINE_VALUE_OUTCOMES):
        return MACHINE
    if (old.nondeterministic or new.nondeterministic) and (old.outcome, old.correct) != (new.outcome, new.correct):
        return NONDETERMINISTIC
    if new.wrong and not (old.outcome == new.outcome and old.correct in (new.correct, None)):
        return WRONG
    if new.outcome in ("crash", "timeout") and old.outcome != new.outcome:
        return CRASH
    if old.outcome != new.outcome or old.correct != new.correct and None not in (old.correct, new.correct):
        outcomes = {old.outcome, new.outcome}
        if outcomes & {"skipped", "error"}:
            return NOT_COMPARABLE
        if outcomes == {"aliases", "copies"}:
            return MEMORY
        return BEHAVIOUR
    if old.kind and new.kind and old.kind != new.kind:  # e.g. an autograd check became an argument rejection
        return BEHAVIOUR
    if old.exception != new.exception or old.phase != new.phase:
        return MESSAGE
    if old.message and new.message and _stable(old.message) != _stable(new.message):
        return MESSAGE
    return None


def _stable(message: str) -> str:
    """A message without run-specific tokens (addresses, generated_tensor_20), so reruns compare equal."""
    return re.sub(r"(?<=_)\d+\b", "N", re.sub(r"0x[0-9a-fA-F]+", "0x?", message))


@dataclass
class Change:
    severity: int
    case: str
    pair: tuple[Column, Column]
    old: Cell
    new: Cell
    #: Where the two columns ran with different NumPy and a control column tells: "NumPy" (the switch of
    #: NumPy alone gives the change), the framework's name (its own version gives it), or "both".
    cause: str | None = None


@dataclass
class Comparison:
    old: Side
    new: Side
    pairs: list[tuple[Column, Column]]
    unpaired_old: list[Column]
    unpaired_new: list[Column]
    changes: list[Change] = field(default_factory=list)
    only_old: list[tuple[str, tuple[Column, Column]]] = field(default_factory=list)
    only_new: list[tuple[str, tuple[Column, Column]]] = field(default_factory=list)
    compared: int = 0
    #: What the reader must know before reading the changes: the columns ran with different NumPy (which
    #: can change outcomes by itself) or builds, and whether a control column told the causes apart.
    notes: list[str] = field(default_factory=list)


def compare(old: Side, new: Side, control: Side | None = None, named: bool = False) -> Comparison:
    """Every changed cell of the paired columns.  *control*: results of one side's framework version run
    under the other side's NumPy, which tells a change NumPy made from one the framework made; *named*: the
    user named it for this comparison, so one that controls no pair is bad input (an upgrade chain offers
    its controls to every step, and each applies to few)."""
    pairs, unpaired_old, unpaired_new = pair_columns(old, new)
    if not pairs:
        raise BadInput(f"no column of {old.path} ({_columns(old)}) matches a column of {new.path} "
                       f"({_columns(new)}) by device")
    result = Comparison(old, new, pairs, unpaired_old, unpaired_new)
    causes = {pair: _numpy_cause(result, pair, control) for pair in pairs}
    machines = {pair: _one_machine(old, new, pair) for pair in pairs}
    if named and control is not None and not any(causes.values()):
        raise BadInput(_controls_nothing(control, result, pairs))
    for pair in pairs:
        before, after = old.columns[pair[0]], new.columns[pair[1]]
        cause = causes[pair]
        for case in sorted(set(before) | set(after)):
            if case not in after:
                result.only_old.append((case, pair))
            elif case not in before:
                result.only_new.append((case, pair))
            else:
                result.compared += 1
                rank = severity(before[case], after[case], machines[pair])
                if rank is not None:
                    result.changes.append(Change(rank, case, pair, before[case], after[case],
                                                 cause(case) if cause else None))
    result.changes.sort(key=lambda c: (c.severity, c.pair[1].sort_key, not _arrives_dangerous(c), c.case))
    return result


def _one_machine(old: Side, new: Side, pair: tuple[Column, Column]) -> bool:
    """Whether both columns of *pair* ran on one and the same CPU (a baseline records none)."""
    cpus = (old.cpus.get(pair[0]), new.cpus.get(pair[1]))
    return bool(cpus[0]) and cpus[0] == cpus[1] and len(cpus[0] or ()) == 1


def _arrives_dangerous(change: Change) -> bool:
    """A new API that arrives silently wrong (or crashing, or warning beside a wrong result): listed first
    among the new APIs, never alphabetically among dozens of harmless ones."""
    new = change.new
    return change.severity == NEW_API and (new.outcome in ("silent-wrong", "crash", "timeout")
                                           or (new.outcome == "warns" and new.correct is False))


def _one(values: set[str] | None) -> str:
    return ", ".join(sorted(values)) if values else "not recorded"


def _numpy_cause(result: Comparison, pair: tuple[Column, Column], control: Side | None) -> Any:
    """Note what differs between the pair's environments; where NumPy does and *control* holds the
    framework version of one side under the other side's NumPy, the function that tells a change's cause."""
    a, b = pair
    builds = (result.old.builds.get(a), result.new.builds.get(b))
    if all(builds) and builds[0] != builds[1] and a.framework == b.framework:
        result.notes.append(f"{a.label} -> {b.label}: builds differ ({_one(builds[0])} -> {_one(builds[1])}); "
                            f"the column is the release, whichever build ran it")
    numpy = (result.old.numpy.get(a), result.new.numpy.get(b))
    if not all(numpy) or numpy[0] == numpy[1]:
        return None
    lead = (f"{a.label} -> {b.label}: NumPy differs ({_one(numpy[0])} -> {_one(numpy[1])}), and NumPy can "
            f"change outcomes by itself")
    found = _control_column(control, a, b, numpy) if control is not None else None
    if found is None:
        result.notes.append(f"{lead}: a change below may be NumPy's rather than {b.framework}'s, and this "
                            f"comparison cannot tell them apart (give --numpy-control with {a.framework} "
                            f"{a.version} run under NumPy {_one(numpy[1])}, or {b.version} under "
                            f"{_one(numpy[0])}, where that NumPy installs)")
        return None
    column, same_version_as_old = found
    assert control is not None
    cells = control.columns[column]
    result.notes.append(f"{lead}: each change is attributed by the control column {column.label} under NumPy "
                        f"{_one(control.numpy.get(column))} ({control.path})")

    def cause(case: str) -> str | None:
        if case not in cells:
            return None
        before, middle, after = (result.old.columns[a].get(case), cells[case], result.new.columns[b].get(case))
        if before is None or after is None:
            return None
        # control = the old version under the new NumPy: NumPy alone changes what NumPy explains; control =
        # the new version under the old NumPy: there, what it still does like the old one is NumPy's change.
        numpy_step, framework_step = ((before, middle), (middle, after)) if same_version_as_old else \
            ((middle, after), (before, middle))
        numpy_changes = severity(*numpy_step) is not None
        framework_changes = severity(*framework_step) is not None
        if numpy_changes and framework_changes:
            return "both"
        return "NumPy" if numpy_changes else b.framework if framework_changes else None

    return cause


def _controls_nothing(control: Side, result: Comparison, pairs: list[tuple[Column, Column]]) -> str:
    """Why a given control tells no change's cause: said, never silently ignored."""
    wanted = []
    for a, b in pairs:
        numpy = (result.old.numpy.get(a), result.new.numpy.get(b))
        if all(numpy) and numpy[0] != numpy[1]:
            wanted.append(f"{a.framework} {a.version} under NumPy {_one(numpy[1])} or {b.version} under NumPy "
                          f"{_one(numpy[0])}")
    held = ", ".join(f"{c.label} under NumPy {_one(n)}" for c, n in sorted(control.numpy.items())) or "no column"
    need = ("the two sides ran under the same NumPy" if not wanted
            else f"it would need {'; or '.join(sorted(set(wanted)))}")
    return f"--numpy-control {control.path} controls nothing in this comparison: {need}, and it holds {held}"


def _control_column(control: Side, a: Column, b: Column,
                    numpy: tuple[set[str] | None, set[str] | None]) -> tuple[Column, bool] | None:
    """The control's column of *a*'s version under *b*'s NumPy (True) or *b*'s under *a*'s (False)."""
    for column, ran_with in control.numpy.items():
        if (column.framework, column.device, column.mode) != (b.framework, b.device, b.mode):
            continue
        if column.version == a.version and ran_with == numpy[1]:
            return column, True
        if column.version == b.version and ran_with == numpy[0]:
            return column, False
    return None


def exit_status(comparison: Comparison) -> int:
    return 1 if any(c.severity in _SEVERE for c in comparison.changes) else 0


def _columns(side: Side) -> str:
    return ", ".join(c.label for c in sorted(side.columns))


def _view(pair: tuple[Column, Column]) -> str:
    old, new = pair
    if old.mode != new.mode:
        return f"{old.mode} -> {new.mode} view"
    if old.framework != new.framework:
        return "porting view"
    if old.version != new.version:
        return "upgrade view"
    return "same version, another device: the device is the difference" if old.device != new.device else "same version"


def _where(comparison: Comparison, pair: tuple[Column, Column]) -> str:
    """How a line names its column pair: the device when that is unambiguous."""
    axes = [(p[1].device, p[1].mode) for p in comparison.pairs]
    if axes.count((pair[1].device, pair[1].mode)) == 1:
        return pair[1].device + (f" {pair[1].mode}" if pair[1].mode != EAGER else "")
    if pair[0] == pair[1]:
        return pair[0].label
    return f"{pair[0].label} -> {pair[1].label}"


def _label(cell: Cell) -> str:
    return outcome_label(cell.outcome, cell.correct)


#: Words of the shared text kept on each side of a part of a message that changed.
_CONTEXT = 4


def _changed_part(old: str, new: str) -> tuple[str, str]:
    """The parts of two messages that differ, word by word, each with a few shared words around it (the rest
    as "…"): of two 300-character messages that differ in one word, the word is what a reader must see."""
    import difflib

    a, b = old.split(" "), new.split(" ")
    spans = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
             difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if tag != "equal"]

    def shown(words: list[str], side: int) -> str:
        keep = set()
        for span in spans:
            first, last = span[2 * side], span[2 * side + 1]
            keep.update(range(max(0, first - _CONTEXT), min(len(words), last + _CONTEXT)))
        pieces, previous = [], -1
        for index in sorted(keep):
            if index != previous + 1:
                pieces.append("…")
            pieces.append(words[index])
            previous = index
        if previous != len(words) - 1:
            pieces.append("…")
        return " ".join(pieces)

    return shown(a, 0), shown(b, 1)


def _detail(change: Change) -> str:
    cause = f" [the change is {change.cause}'s]" if change.cause and change.cause != "both" else \
        " [NumPy and the framework both change it]" if change.cause else ""
    old, new = change.old.brief, change.new.brief
    same_raise = (change.old.exception, change.old.phase) == (change.new.exception, change.new.phase)
    if (change.severity == MESSAGE and same_raise and change.old.message and change.new.message
            and change.old.message != change.new.message
            and max(len(change.old.message), len(change.new.message)) > 100):  # a short one reads whole
        was, now = _changed_part(change.old.message, change.new.message)
        return f"{change.new.exception} ({change.new.phase}), the message changed: was \"{was}\"; now \"{now}\"" + cause
    if change.severity == MESSAGE or (old and new and old != new):
        return f"was {old or '-'}; now {new or '-'}" + cause
    if old and old != new:
        return f"was {old}" + cause
    return new + cause


def _counts(comparison: Comparison) -> str:
    counted = {s: sum(c.severity == s for c in comparison.changes) for s in SEVERITIES}
    numbers = [f"{n} {SHORT_NAMES[s]}" for s, n in counted.items() if n or s not in (NONDETERMINISTIC, MACHINE)]
    return (f"counts: {comparison.compared} cells compared in {len(comparison.pairs)} column pair(s); "
            + ", ".join(numbers)
            + f"; {len(comparison.only_old)} only in OLD, {len(comparison.only_new)} only in NEW")


def render_text(comparison: Comparison) -> str:
    lines = [f"OLD: {comparison.old.path} ({comparison.old.kind})",
             f"NEW: {comparison.new.path} ({comparison.new.kind})", "compared columns:"]
    lines += [f"  {a.label}  ->  {b.label}  ({_view((a, b))})" for a, b in comparison.pairs]
    lines += [f"  not compared: OLD column {c.label} has no single counterpart in NEW"
              for c in comparison.unpaired_old]
    lines += [f"  not compared: NEW column {c.label} has no single counterpart in OLD"
              for c in comparison.unpaired_new]
    lines += [f"note: {note}" for note in comparison.notes]
    if not comparison.changes:
        lines.append("\nno outcome changed")
    for rank, heading in SEVERITIES.items():
        changes = [c for c in comparison.changes if c.severity == rank]
        if not changes:
            continue
        lines += ["", f"[{rank}] {heading}: {len(changes)}"]
        for change in changes:
            detail = _detail(change)
            lines.append(f"  {change.case} [{_where(comparison, change.pair)}]  "
                         f"{_label(change.old)} -> {_label(change.new)}" + (f"  {detail}" if detail else ""))
    for title, cases in (("only in OLD", comparison.only_old), ("only in NEW", comparison.only_new)):
        if cases:
            lines += ["", f"{title}: {len(cases)}"]
            lines += [f"  {case} [{_where(comparison, pair)}]" for case, pair in cases]
    lines += ["", _counts(comparison)]
    return "\n".join(lines) + "\n"


def short_counts(comparison: Comparison) -> list[str]:
    """The number of changes of each severity, in the order of :data:`SEVERITIES`."""
    return [str(sum(c.severity == rank for c in comparison.changes)) for rank in SEVERITIES]


def render_markdown(comparison: Comparison) -> str:
    lines = ["# Outcome changes", "",
             f"OLD: {code(comparison.old.path)} ({comparison.old.kind}); "
             f"NEW: {code(comparison.new.path)} ({comparison.new.kind})", ""]
    return "\n".join(lines + markdown_sections(comparison, level=2))


def markdown_sections(comparison: Comparison, level: int) -> list[str]:
    """The compared columns, then one table per severity under headings of *level*, then the counts."""
    heading = "#" * level
    lines = table(["OLD column", "NEW column", "view"],
                  [[text(a.label), text(b.label), _view((a, b))] for a, b in comparison.pairs])
    lines += [f"- not compared: OLD column {text(c.label)}" for c in comparison.unpaired_old]
    lines += [f"- not compared: NEW column {text(c.label)}" for c in comparison.unpaired_new]
    lines += (["", *(f"- **Note**: {text(note)}" for note in comparison.notes)] if comparison.notes else [])
    if not comparison.changes:
        lines += ["", "No outcome changed."]
    for rank, name in SEVERITIES.items():
        changes = [c for c in comparison.changes if c.severity == rank]
        if not changes:
            continue
        lines += ["", f"{heading} {rank}. {text(name)} ({len(changes)})", ""]
        lines += table(["case", "columns", "old", "new", "detail"],
                       [[code(c.case), text(_where(comparison, c.pair)), text(_label(c.old)),
                         text(_label(c.new)), text(_detail(c))] for c in changes])
    for title, cases in (("Only in OLD", comparison.only_old), ("Only in NEW", comparison.only_new)):
        if cases:
            lines += ["", f"{heading} {title} ({len(cases)})", ""]
            lines += [f"- {code(case)} ({text(_where(comparison, pair))})" for case, pair in cases]
    lines += ["", text(_counts(comparison)), ""]
    return lines
