"""Baselines: the recorded outcome of every cell for one framework version and device.

A baseline turns a known outcome into an expected one: with a baseline
present, a cell passes when its outcome matches (even a known silent-wrong) and
fails, explaining old vs new, when it changed.  One JSON file per column:
``<dir>/<framework>-<version>-<device>.json`` (``-<mode>`` appended for a mode
other than eager).

Updating merges: a run over a subset of cases must not erase what the others
recorded; a file is written aside and renamed over the old one, so a full disk
leaves the old file whole.  Entries go away only through :meth:`Baselines.prune`, which says
what it removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.outcomes import MACHINE_VALUE_OUTCOMES
from conformance.outputs import write_file
from conformance.records.explain import explain
from conformance.records.record import EAGER, Column, Record, as_record, cell_problem
from conformance.records.results import latest_by_cell

__all__ = ["BaselineError", "Baselines", "summarize", "entries_match"]


def summarize(record: Record | Mapping[str, Any]) -> dict[str, Any]:
    """What a baseline keeps of a cell: the outcome and the facts that identify it."""
    record = as_record(record)
    entry: dict[str, Any] = {"outcome": record.outcome}
    if record.details.get("nondeterministic"):  # its values differ from run to run: never a change to gate on
        entry["nondeterministic"] = True
    if record.details.get("varies_by_machine"):  # its value depends on the machine's kernels (the case says why)
        entry["varies_by_machine"] = True
    exc = record.exception
    if exc:
        entry["exception"] = exc.type
        entry["phase"] = exc.phase
        if exc.kind:
            entry["kind"] = exc.kind
    return entry


def entries_match(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Equal, except that a raise kind missing on either side (written before kinds existed) matches any; a
    cell whose values differ between two runs in one column (``nondeterministic``) matches whatever it was; a
    cell whose value depends on the machine (``varies_by_machine``) matches a silent outcome with the other."""
    if old.get("nondeterministic") or new.get("nondeterministic"):
        return True
    if ((old.get("varies_by_machine") or new.get("varies_by_machine"))
            and {old.get("outcome"), new.get("outcome")} <= MACHINE_VALUE_OUTCOMES):
        return True
    if "kind" not in old or "kind" not in new:
        old = {k: v for k, v in old.items() if k != "kind"}
        new = {k: v for k, v in new.items() if k != "kind"}
    return dict(old) == dict(new)


#: The option that records baselines, as each front spells it (``conformance run``, ``pytest --conformance``).
UPDATE_OPTION = "--update-baselines (under pytest: --conformance-update-baselines)"


class BaselineError(Exception):
    """A baseline file that cannot be read as one: which file, and what is wrong with it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"baseline file {path} cannot be read: {problem}; mend it, or rerun with "
                         f"{UPDATE_OPTION}, which rewrites it and keeps its bytes beside it")
        self.path, self.problem = path, problem


def _load_json(path: Path, foreign_ok: bool = False) -> dict[str, Any] | None:
    """A baseline file's content, None when there is none; :class:`BaselineError` when it is not one.
    *foreign_ok*: None for a JSON object that is no baseline at all (neither 'cells' nor 'framework'), a
    file of something else kept in the folder; a damaged baseline is still an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(path, str(getattr(exc, "strerror", None) or exc)) from None
    try:
        content = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(path, f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if isinstance(content, dict) and not {"cells", "framework"} & set(content) and not foreign_ok:
        raise BaselineError(path, "not a baseline (a JSON object with a 'cells' object)")
    if isinstance(content, dict) and not {"cells", "framework"} & set(content):
        return None  # a JSON file of something else beside the baselines: not ours to judge
    if not isinstance(content, dict) or not isinstance(content.get("cells"), dict):
        raise BaselineError(path, "not a baseline (a JSON object with a 'cells' object)")
    bad = next((case for case, entry in content["cells"].items()
                if not isinstance(entry, dict) or not isinstance(entry.get("outcome"), str)), None)
    if bad is not None:
        raise BaselineError(path, f"the entry of {bad!r} has no outcome")
    problem = baseline_problem(content)
    if problem:
        raise BaselineError(path, problem)
    return content


def baseline_problem(content: Mapping[str, Any]) -> str | None:
    """What makes a baseline's column or an entry no column or outcome of this package, else None."""
    framework, device = content.get("framework", "unknown"), content.get("device", "cpu")
    for case, entry in (content.get("cells") or {}).items():
        problem = cell_problem(entry.get("outcome") if isinstance(entry, Mapping) else None,
                               {"framework": framework, "device": device, "mode": content.get("mode") or EAGER,
                                "case": case}, content.get("version", "unknown"))
        if problem:
            return f"the entry of {case!r}: {problem}"
    return None


class Baselines:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._cache: dict[str, dict[str, Any] | None] = {}

    def file(self, framework: str | Column, version: str | None = None, device: str | None = None) -> Path:
        """The baseline file of a column (or of framework, version, device in eager mode)."""
        column = framework if isinstance(framework, Column) else Column(framework, str(version), str(device))
        mode = f"-{column.mode}" if column.mode != EAGER else ""
        return self.directory / f"{column.framework}-{column.version}-{column.device}{mode}.json"

    def load(self, framework: str | Column, version: str | None = None,
             device: str | None = None) -> dict[str, Any] | None:
        path = self.file(framework, version, device)
        key = str(path)
        if key not in self._cache:
            self._cache[key] = _load_json(path)
        return self._cache[key]

    def check(self, record: Record | Mapping[str, Any]) -> str | None:
        """None when the cell matches its baseline or has none; else an old-vs-new message."""
        record = as_record(record)
        baseline = self.load(record.column)
        if baseline is None:
            return None
        path = self.file(record.column)
        old = baseline["cells"].get(record.case)
        new = summarize(record)
        if old is None:
            return (f"{record.case}: not in baseline {path}; new outcome {new['outcome']}. "
                    f"Run with {UPDATE_OPTION} to record it.")
        if not entries_match(old, new):
            return (f"{record.case} on {record.column.where} changed against baseline {path}:\n"
                    f"  old: {json.dumps(old, sort_keys=True)}\n  new: {json.dumps(new, sort_keys=True)}\n"
                    + explain(record))
        return None

    def _write(self, column: Column, cells: Mapping[str, Any]) -> Path:
        path = self.file(column)
        content: dict[str, Any] = {"framework": column.framework, "version": column.version,
                                   "device": column.device, "cells": dict(sorted(cells.items()))}
        if column.mode != EAGER:
            content["mode"] = column.mode
        write_file(path, json.dumps(content, indent=2, sort_keys=True) + "\n")  # aside, then renamed over it
        self._cache.pop(str(path), None)
        return path

    def check_files(self) -> None:
        """Read every baseline file in the folder: :class:`BaselineError` for the first that is not one."""
        for path in sorted(self.directory.glob("*.json")):
            _load_json(path, foreign_ok=True)

    def changes(self, records: Iterable[Record | Mapping[str, Any]]) -> list[str]:
        """What :meth:`update` would write, one line per baseline file: how many entries it adds and which
        it changes (old -> new outcome), or that the file already holds every cell."""
        columns: dict[Column, dict[str, Any]] = {}
        for (case, column), record in latest_by_cell(records).items():
            columns.setdefault(column, {})[case] = summarize(record)
        lines = []
        for column, cells in sorted(columns.items()):
            try:
                old = dict((self.load(column) or {}).get("cells", {}))
            except BaselineError:
                old = {}
            added = sorted(set(cells) - set(old))
            changed = sorted(c for c in cells if c in old and not entries_match(old[c], cells[c]))
            path = self.file(column)
            if not added and not changed:
                lines.append(f"baseline {path}: unchanged ({len(cells)} cell(s) as recorded)")
                continue
            said = [f"{len(added)} new" if added else "", f"{len(changed)} changed" if changed else ""]
            shown = ", ".join(f"{c}: {old[c].get('outcome')} -> {cells[c].get('outcome')}" for c in changed[:5])
            lines.append(f"baseline {path}: {', '.join(filter(None, said))}"
                         + (f" ({shown}{', ...' if len(changed) > 5 else ''})" if changed else ""))
        return lines

    def update(self, records: Iterable[Record | Mapping[str, Any]]) -> list[Path]:
        """Record the outcome of every cell in *records*, keeping the entries of cases that did not run.
        An unreadable baseline file is rewritten with this run's cells; its bytes are kept beside it
        (``NAME.json.unreadable``), never lost."""
        columns: dict[Column, dict[str, Any]] = {}
        for (case, column), record in latest_by_cell(records).items():
            columns.setdefault(column, {})[case] = summarize(record)
        written = []
        self.directory.mkdir(parents=True, exist_ok=True)
        for column, cells in sorted(columns.items()):
            self._cache.pop(str(self.file(column)), None)
            try:
                kept = dict((self.load(column) or {}).get("cells", {}))
            except BaselineError:
                path = self.file(column)
                path.replace(_free_name(path.with_name(path.name + ".unreadable")))
                kept = {}
            written.append(self._write(column, {**kept, **cells}))
        return written

    def prune(self, known_case_ids: Iterable[str]) -> list[tuple[Path, str]]:
        """Remove the entries of cases not in *known_case_ids* from every baseline file; say what went."""
        known = set(known_case_ids)
        removed: list[tuple[Path, str]] = []
        for path in sorted(self.directory.glob("*.json")):
            content = _load_json(path, foreign_ok=True)
            if content is None:
                continue
            gone = sorted(set(content["cells"]) - known)
            if not gone:
                continue
            content["cells"] = {case: entry for case, entry in content["cells"].items() if case in known}
            write_file(path, json.dumps(content, indent=2, sort_keys=True) + "\n")  # never half written
            self._cache.pop(str(path), None)
            removed += [(path, case) for case in gone]
        return removed

    def stale(self, records: Iterable[Record | Mapping[str, Any]]) -> list[str]:
        """Baseline entries, in the columns these records ran, that match no case that ran."""
        ran: dict[Column, set[str]] = {}
        for record in records:
            record = as_record(record)
            ran.setdefault(record.column, set()).add(record.case)
        stale = []
        for column, cases in sorted(ran.items()):
            baseline = self.load(column)
            for case in sorted(set(baseline["cells"]) - cases if baseline else ()):
                stale.append(f"{self.file(column)}: {case}")
        return stale


def _free_name(path: Path) -> Path:
    """*path*, or *path* with a number added, whichever does not exist yet."""
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{number}")
    return candidate
