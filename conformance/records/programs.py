"""The programs a results file's cells ran, kept beside it: ``torch-2.13.0-cpu.jsonl`` has
``torch-2.13.0-cpu.programs.json``.

The reports show each framework's code (the porting guide, the site), and the report env does not
install the frameworks: the program text comes from the run that produced the results, as the adapter
of that framework version spelled it.  Each entry is one case in one column: the whole reproducer
(``source``, what ``conformance show`` prints) and the user's ``code`` alone (the steps, without the
reproducer's imports, helpers, step marks and prints).  A converter's programs (PaConvert) are its
conversions of another framework's program, one process per case: they are not kept (``conformance show``
prints them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = ["ProgramText", "load_programs", "newest_programs", "programs_path", "prune_programs", "write_programs"]

SUFFIX = ".programs.json"


def programs_path(results: Path | str) -> Path:
    """The programs file kept beside *results*."""
    results = Path(results)
    stem = results.name[:-len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(stem + SUFFIX)


#: (framework, version, device, mode, case id) -> the entry
ProgramKey = tuple[str, str, str, str, str]


class ProgramText(dict):
    """One kept program: ``framework``, ``version``, ``device``, ``mode``, ``case``, ``case_digest``,
    ``code``, ``source`` and ``unsupported`` (why the framework has no spelling for a step, else None)."""

    @property
    def key(self) -> ProgramKey:
        return (self["framework"], self["version"], self["device"], self["mode"], self["case"])


def _read(path: Path) -> list[ProgramText]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("programs") if isinstance(data, dict) else None
    keys = ("framework", "version", "device", "mode", "case", "code", "source")
    return [ProgramText(e) for e in entries or () if isinstance(e, dict) and all(isinstance(e.get(k), str) for k in keys)]


def load_programs(results_files: Iterable[Path | str]) -> dict[ProgramKey, ProgramText]:
    """Every program kept beside *results_files* (a later file wins an entry two files share)."""
    found: dict[ProgramKey, ProgramText] = {}
    for results in results_files:
        for entry in _read(programs_path(results)):
            found[entry.key] = entry
    return found


def newest_programs(kept: Mapping[ProgramKey, ProgramText], digests: Mapping[str, str]) -> dict[tuple[str, str],
                                                                                           ProgramText]:
    """(framework, case id) -> the kept program of the framework's newest version that kept one for the case:
    one spelled for the case as it is now (its digest in *digests*) before one spelled before it changed, then
    eager before a compiled mode, CPU before GPU."""
    from conformance.records.record import EAGER, split_build, version_key

    chosen: dict[tuple[str, str], tuple[tuple[object, ...], ProgramText]] = {}
    for (framework, version, device, mode, case_id), entry in kept.items():
        digest = digests.get(case_id, "")
        current = not entry.get("case_digest") or not digest or entry.get("case_digest") == digest
        rank = (current, mode == EAGER, device == "cpu", version_key(split_build(version)[0]), device, mode)
        if (framework, case_id) not in chosen or rank > chosen[framework, case_id][0]:
            chosen[framework, case_id] = (rank, entry)
    return {key: entry for key, (_, entry) in sorted(chosen.items())}


def write_programs(results: Path | str, entries: Iterable[Mapping[str, Any]]) -> Path:
    """Keep *entries* beside *results*, with those already kept for other cells or columns: one entry a
    line, sorted, so that a rerun's file differs only where a program did.  Raises OutputError."""
    path = programs_path(results)
    merged = {e.key: e for e in _read(path)}
    for entry in entries:
        text = ProgramText(entry)
        merged[text.key] = text
    _write(path, merged)
    return path


def prune_programs(results: Path | str, known_case_ids: Iterable[str]) -> int:
    """Remove the programs of cases not in *known_case_ids* from the file kept beside *results* (a case
    renamed or removed); return how many went.  Raises OutputError."""
    path = programs_path(results)
    entries = {e.key: e for e in _read(path)}
    known = set(known_case_ids)
    kept = {key: entry for key, entry in entries.items() if entry["case"] in known}
    if len(kept) != len(entries):
        _write(path, kept)
    return len(entries) - len(kept)


def _write(path: Path, entries: Mapping[ProgramKey, ProgramText]) -> None:
    """One entry a line, sorted, so that a rerun's file differs only where a program did."""
    from conformance.outputs import write_file

    lines = [json.dumps(dict(entries[key]), sort_keys=True, ensure_ascii=False) for key in sorted(entries)]
    write_file(path, '{"programs": [\n' + ",\n".join(lines) + "\n]}\n")
