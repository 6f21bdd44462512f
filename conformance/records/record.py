"""The result record of one cell, typed, and the column it belongs to.

Every consumer (the pytest item, the report, the diff, baselines) reads a
:class:`Record` instead of re-reading dict keys, so the schema lives here once.
The column key and the order of framework versions are also computed here, and
nowhere else.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from conformance.outcomes import OUTCOMES, outcome_label

__all__ = ["Record", "Column", "RaisedException", "RecordError", "RAISE_KINDS", "EAGER", "version_key",
           "as_record", "cell_problem", "names_problem", "slim",
           "split_build"]

#: What a raise is about: an autograd safety check (version counter, leaf, view), an argument or API
#: rejection (TypeError, wrong argument form, missing attribute), or anything else.  Records written
#: before kinds existed carry none: their kind is unknown, never guessed.
RAISE_KINDS = ("autograd", "rejection", "other")

#: The execution mode of a record that names none.
EAGER = "eager"

_DEVICE_ORDER = {"cpu": 0, "gpu": 1}
_REQUIRED_TEXT = ("case", "framework", "framework_version", "device", "outcome")
_OPTIONAL_TEXT = ("case_file", "case_digest", "topic", "title")
_MAPPINGS = ("details", "timings", "run_info")
_FIELDS = frozenset(_REQUIRED_TEXT + _OPTIONAL_TEXT + _MAPPINGS + ("mode",))


class RecordError(ValueError):
    """A value that is not a result record; the message names the field at fault."""


#: A version's local label that names a build of the release rather than another release (PEP 440's
#: ``+cpu``, ``+cu121``, ``+rocm6.2``, ``+xpu``, ``+cpu.cxx11.abi``): the column is the public version,
#: the build is recorded beside it.  A local label of another meaning (``3.3.1+paddle3.3.1``, a converter
#: paired with the framework it converts for) stays part of the version.
_BUILD_LABEL = re.compile(r"(cpu|cu\d+|rocm\d[\w.]*|xpu|hip\d[\w.]*)([._-].*)?", re.IGNORECASE)


def split_build(version: str) -> tuple[str, str | None]:
    """(public version, build) of a framework's version: ``2.13.0+cpu`` -> (``2.13.0``, ``cpu``);
    ``2.13.0`` -> (``2.13.0``, None), the build then being unknown from the version alone."""
    public, plus, local = version.partition("+")
    if plus and public and _BUILD_LABEL.fullmatch(local):
        return public, local
    return version, None


def _natural(text: str) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.findall(r"\d+|\D+", text.lower()))


def version_key(version: str) -> tuple[Any, ...]:
    """PEP 440 order (2.9 < 2.10, 3.0.0rc1 < 3.0.0 < 3.0.0+cpu); a version packaging cannot parse
    comes after every parseable one, in natural order, rather than failing the report."""
    try:
        return (0, Version(version), ())
    except InvalidVersion:
        return (1, Version("0"), _natural(version))


@dataclass(frozen=True)
class Column:
    """One column of the matrix: a framework version on a device, in an execution mode."""

    framework: str
    version: str
    device: str
    mode: str = EAGER

    @property
    def sort_key(self) -> tuple[Any, ...]:
        return (self.framework, version_key(self.version), _DEVICE_ORDER.get(self.device, 9), self.device,
                self.mode != EAGER, self.mode)

    def __lt__(self, other: Column) -> bool:
        return self.sort_key < other.sort_key

    @property
    def label(self) -> str:
        """``torch 2.13.0 cpu``; a mode other than eager is appended (``torch 2.13.0 cpu compiled``)."""
        parts = [self.framework, self.version, self.device] + ([self.mode] if self.mode != EAGER else [])
        return " ".join(parts)

    @property
    def where(self) -> str:
        """``torch 2.13.0 (cpu)``: the form a sentence about one cell uses."""
        inside = self.device + (f", {self.mode}" if self.mode != EAGER else "")
        return f"{self.framework} {self.version} ({inside})"


@dataclass(frozen=True)
class RaisedException:
    """What a ``raises`` cell (or an exception before a wrong value) records about the exception."""

    type: str
    message: str
    kind: str | None = None  # one of RAISE_KINDS; None for records written before kinds existed
    phase: str | None = None
    step: int | None = None
    line: int | None = None
    iteration: int | None = None
    op: str | None = None

    @property
    def first_line(self) -> str:
        """The message's first line; where that is only paddle's tag of an error raised further in
        (``(External)``, then a banner), the tag and the inner error's line."""
        lines = [line.strip() for line in self.message.splitlines() if line.strip()]
        if not lines:
            return ""
        if _WRAPPER_TAG.fullmatch(lines[0]):
            inner = next((line for line in lines[1:] if _INNER_ERROR.match(line)), None)
            if inner is not None:
                return f"{lines[0]} {inner}"
        return lines[0]

    @classmethod
    def from_dict(cls, raw: Any) -> RaisedException | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(type=str(raw.get("type") or "?"), message=str(raw.get("message") or ""),
                   kind=raw.get("kind") if isinstance(raw.get("kind"), str) else None,
                   phase=raw.get("phase"), step=raw.get("step"), line=raw.get("line"),
                   iteration=raw.get("iteration"), op=raw.get("op"))


#: Paddle's tag alone on the first line of an error it wraps (an error raised in a PyLayer's backward), and the
#: line of the error inside.
_WRAPPER_TAG = re.compile(r"\([A-Za-z]+\)")
_INNER_ERROR = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(Error|Exception): ")

#: What a name field of a record may hold, and a framework version (``2.13.0``, ``3.3.1+paddle3.3.1``, and
#: ``not installed`` for a cell of a framework that was not).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_ -]*\Z")


def cell_problem(outcome: Any, names: Mapping[str, Any], version: Any) -> str | None:
    """What makes a record's (or a baseline entry's) outcome, names or version no outcome, name or version of
    this package, else None.  Names and versions reach file names and pages (a column's file, the site's
    version pages): text, never a path or markup."""
    if outcome not in OUTCOMES:
        return f"outcome {outcome!r} is none of {', '.join(OUTCOMES)}"
    return names_problem(names, version)


def names_problem(names: Mapping[str, Any], version: Any) -> str | None:
    """:func:`cell_problem` of the names and the version alone (a kept program's column and case)."""
    for key, value in names.items():
        if not isinstance(value, str) or not _NAME.match(value):
            return f"field {key!r} is {value!r}, not a name (letters, digits, '_', '.', '-')"
    if not isinstance(version, str) or not _VERSION.match(version) or ".." in version:
        return f"framework_version {version!r} is not a version (letters, digits, '.', '+', '_', '-')"
    return None


@dataclass(frozen=True)
class Record:
    """One cell's result, as written to a results file (one JSON line)."""

    case: str
    framework: str
    framework_version: str
    device: str
    outcome: str
    case_file: str | None = None
    case_digest: str | None = None  # the case's digest when it ran (Case.digest); None in older records
    topic: str | None = None
    title: str | None = None
    mode: str = EAGER
    details: Mapping[str, Any] = field(default_factory=dict)
    timings: Mapping[str, Any] = field(default_factory=dict)
    run_info: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know, kept as written

    @classmethod
    def from_dict(cls, raw: Any) -> Record:
        """A record from its JSON form; unknown keys are kept, anything that is not a record is refused."""
        if not isinstance(raw, Mapping):
            raise RecordError(f"not a result record: a JSON {type(raw).__name__}, not an object")
        missing = [key for key in _REQUIRED_TEXT if key not in raw]
        if missing:
            raise RecordError(f"not a result record: missing field(s) {', '.join(missing)}")
        for key in _REQUIRED_TEXT:
            if not isinstance(raw[key], str) or not raw[key]:
                raise RecordError(f"not a result record: field {key!r} is {raw[key]!r}, not a non-empty string")
        for key in _OPTIONAL_TEXT:
            if raw.get(key) is not None and not isinstance(raw[key], str):
                raise RecordError(f"not a result record: field {key!r} is {raw[key]!r}, not a string")
        for key in _MAPPINGS:
            if raw.get(key) is not None and not isinstance(raw[key], Mapping):
                raise RecordError(f"not a result record: field {key!r} is a {type(raw[key]).__name__}, "
                                  "not an object")
        mode = raw.get("mode") or EAGER
        if not isinstance(mode, str):
            raise RecordError(f"not a result record: field 'mode' is {mode!r}, not a string")
        problem = cell_problem(raw["outcome"], {"framework": raw["framework"], "device": raw["device"],
                                                "mode": mode, "case": raw["case"]}, raw["framework_version"])
        if problem:
            raise RecordError(f"not a result record: {problem}")
        # A record written when the build was part of the version (``2.13.0+cpu``) belongs to the column of
        # the public version, its build kept beside it, so it is checked against the same baselines.
        version, build = split_build(raw["framework_version"])
        run_info = dict(raw.get("run_info") or {})
        if build is not None:
            run_info.setdefault("build", build)
        from conformance.records.storage import expand, expand_case_file

        return cls(case=raw["case"], framework=raw["framework"], framework_version=version,
                   device=raw["device"], outcome=raw["outcome"], case_file=expand_case_file(raw),
                   case_digest=raw.get("case_digest"), topic=raw.get("topic"), title=raw.get("title"), mode=mode,
                   details=expand(raw.get("details") or {}), timings=dict(raw.get("timings") or {}),
                   run_info=run_info,
                   extra={k: v for k, v in raw.items() if k not in _FIELDS})

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written to a results file, bounded (large arrays summarised, long text cut) and in
        its stored form (``records/storage.py``: what the record repeats left out, put back on reading)."""
        from conformance.records.bounds import bound_details, bound_strings
        from conformance.records.storage import compact, compact_case_file

        digest = {} if self.case_digest is None else {"case_digest": self.case_digest}  # older records lack it
        case_file = compact_case_file(self.case_file, self.case, self.topic)
        where = {} if case_file is None and self.case_file is not None else {"case_file": case_file}
        # how long the worker took to import its framework is the run's, not the cell's
        timings = {k: v for k, v in self.timings.items() if k != "worker_import_seconds"}
        return {**self.extra, "case": self.case, **where, **digest, "topic": self.topic,
                "title": bound_strings(self.title), "framework": self.framework,
                "framework_version": self.framework_version, "device": self.device, "mode": self.mode,
                "outcome": self.outcome, "details": bound_details(compact(self.details)),
                "timings": timings, "run_info": bound_strings(dict(self.run_info))}

    @property
    def column(self) -> Column:
        return Column(self.framework, self.framework_version, self.device, self.mode)

    @property
    def cell(self) -> tuple[str, Column]:
        """What identifies the cell: a later record with the same key replaces an earlier one."""
        return self.case, self.column

    @property
    def build(self) -> str | None:
        """The framework's build (``cpu``, ``cu128``), beside the version; None where it was not recorded."""
        value = self.run_info.get("build")
        return value if isinstance(value, str) and value else None

    @property
    def numpy(self) -> str | None:
        """The NumPy version the cell ran with (it can change outcomes by itself)."""
        value = self.run_info.get("numpy")
        return value if isinstance(value, str) and value else None

    @property
    def exception(self) -> RaisedException | None:
        return RaisedException.from_dict(self.details.get("exception"))

    @property
    def correct(self) -> bool | None:
        """For ``warns``: whether the result was right despite the warning (None when not judged)."""
        value = self.details.get("correct")
        return value if isinstance(value, bool) else None

    @property
    def wrong(self) -> bool:
        """A wrong result, whether silent or with a warning."""
        return self.outcome == "silent-wrong" or (self.outcome == "warns" and self.correct is False)

    @property
    def outcome_label(self) -> str:
        """The outcome as the reports print it: a warning beside a wrong result is not a harmless one."""
        return outcome_label(self.outcome, self.correct)

    @property
    def max_error(self) -> float | None:
        value = self.details.get("max_error")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def observations(self) -> list[Mapping[str, Any]]:
        return [o for o in self.details.get("observations") or [] if isinstance(o, Mapping)]

    @property
    def wrong_observations(self) -> list[Mapping[str, Any]]:
        return [o for o in self.observations if o.get("ok") is False]

    @property
    def warnings(self) -> list[Mapping[str, Any]]:
        return [w for w in self.details.get("warnings") or [] if isinstance(w, Mapping)]

    @property
    def reason(self) -> str | None:
        return self.details.get("reason") or None

    @property
    def message(self) -> str | None:
        return self.details.get("message") or None

    @property
    def signal(self) -> Any:
        return self.details.get("signal") or None


#: What :func:`slim` keeps of a record's details: enough for a summary, a baseline entry and the counts.
_SLIM_DETAILS = ("reason", "correct", "environment", "nondeterministic", "varies_by_machine")
_SLIM_EXCEPTION = ("type", "kind", "phase")


def slim(value: Record | Mapping[str, Any]) -> Record:
    """What the end of a run keeps of a cell it ran (the summary, the baseline entry, the counts, the
    stale entries): the cell and its outcome, a few hundred bytes, whatever the cell observed."""
    data = value.to_dict() if isinstance(value, Record) else value
    details = data.get("details") or {}
    kept = {key: details[key] for key in _SLIM_DETAILS if key in details}
    exception = details.get("exception")
    if isinstance(exception, Mapping):
        kept["exception"] = {key: exception[key] for key in _SLIM_EXCEPTION if key in exception}
    text = sys.intern
    return Record(case=text(data["case"]), framework=text(data["framework"]),
                  framework_version=text(split_build(data["framework_version"])[0]), device=text(data["device"]),
                  outcome=text(data["outcome"]), topic=data.get("topic") and text(data["topic"]),
                  mode=text(data.get("mode") or EAGER), details=kept)


def as_record(value: Record | Mapping[str, Any]) -> Record:
    """Accept the JSON form where a caller still holds one (the engine builds dicts)."""
    return value if isinstance(value, Record) else Record.from_dict(value)
