"""The programs a results file's cells ran, kept beside it: ``torch-2.13.0-cpu.jsonl`` has
``torch-2.13.0-cpu.programs.json``.

The reports show each framework's code (the porting guide, the site), and the report env does not
install the frameworks: the program text comes from the run that produced the results, as the adapter
of that framework version spelled it.  Each entry is one case in one column: the whole reproducer
(``source``, what ``conformance show`` prints) and the user's ``code`` alone (the steps, without the
reproducer's imports, helpers, step marks and prints).  A converter's programs (PaConvert) are its
conversions of another framework's program, one process per case: they are not kept (``conformance show``
prints them).

A run gets each cell's program from the worker that ran the cell, with its result, and appends it to a
spool beside the programs file (``NAME.programs.json.spool``) as the cell ends, so that the run holds none
of them in memory; at its end (:func:`keep_spooled`) the spooled programs of the cells it recorded join those
kept, and the spool goes.  A run stopped before its end leaves its spool to the run that resumes it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Mapping

__all__ = ["NO_PROGRAM", "ProgramSpool", "ProgramText", "keep_spooled", "load_programs", "newest_programs",
           "programs_path", "prune_programs", "start_spool", "write_programs"]

SUFFIX = ".programs.json"
#: The outcomes of a cell that ran no program of its framework: none is kept for them.
NO_PROGRAM = ("skipped", "error")


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


_FIELDS = ("framework", "version", "device", "mode", "case", "code", "source")


def _entry(data: Any) -> ProgramText | None:
    """A kept program, or None for anything else (a column or case that is no name of this package)."""
    from conformance.records.record import names_problem

    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in _FIELDS):
        return None
    names = {key: data[key] for key in ("framework", "device", "mode", "case")}
    return None if names_problem(names, data["version"]) else ProgramText(data)


def _read(path: Path) -> list[ProgramText]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("programs") if isinstance(data, dict) else None
    return [entry for entry in map(_entry, entries if isinstance(entries, list) else ()) if entry is not None]


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
        current = bool(digest) and entry.get("case_digest") == digest  # one of no known case is not current
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


def _line(entry: Mapping[str, Any]) -> str:
    return json.dumps(dict(entry), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _write(path: Path, entries: Mapping[ProgramKey, ProgramText]) -> None:
    """One entry a line, sorted, so that a rerun's file differs only where a program did."""
    from conformance.outputs import write_file

    lines = [_line(entries[key]) for key in sorted(entries)]
    write_file(path, '{"programs": [\n' + ",\n".join(lines) + "\n]}\n")


# -- the spool: a run's programs as its cells end -----------------------------------------------------

def spool_path(results: Path | str) -> Path:
    path = programs_path(results)
    return path.with_name(path.name + ".spool")


def start_spool(results: Path | str, resume: bool) -> None:
    """Before a run's first cell: a run that starts afresh drops a spool an interrupted one left (a resumed
    run keeps it: its cells are the resumed run's).  Anything but a regular file there is refused
    (OutputError): appending to a FIFO would hang the run, and nothing the run did not make is removed."""
    from conformance.outputs import OutputError

    path = spool_path(results)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(path, exc) from None
    if not stat.S_ISREG(mode):
        raise OutputError(path, "it is not a regular file, and a run keeps its programs there")
    if not resume:
        try:
            path.unlink()
        except OSError as exc:
            raise OutputError(path, exc) from None


class ProgramSpool:
    """Where one process of a run appends the program of each cell it ran (:func:`spool_path`); *shared*:
    other processes of the run append too (pytest-xdist workers)."""

    def __init__(self, results: Path | str, shared: bool) -> None:
        from conformance.outputs import AppendFile

        self._file = AppendFile(spool_path(results), shared)

    def add(self, entry: Mapping[str, Any]) -> None:
        """Append one program (a :class:`ProgramText`'s fields).  Raises OSError."""
        self._file.write((_line(entry) + "\n").encode("utf-8"))

    def close(self) -> None:
        self._file.close()


#: Where an entry's line is: (the open file, its offset there).
_Place = tuple[BinaryIO, int]


def _lines(handle: BinaryIO) -> Iterator[tuple[int, bytes, ProgramText | None]]:
    """Each line of *handle*: its offset, its text (without the newline and a separating comma), and the
    entry it holds, else None."""
    offset = 0
    for raw in handle:
        text = raw.rstrip(b"\n").rstrip(b",")
        try:
            entry = _entry(json.loads(text)) if text.startswith(b"{") else None
        except ValueError:
            entry = None
        yield offset, text, entry
        offset += len(raw)


def _placed(path: Path, handle: BinaryIO) -> dict[ProgramKey, _Place | ProgramText]:
    """Where each entry of the programs file *path* is: its line in *handle*, for a file of one entry a line
    as :func:`_write` writes it; the entry itself for one written some other way (read whole)."""
    places: dict[ProgramKey, _Place | ProgramText] = {}
    first = last = b""
    strays = 0  # lines after the first that hold no entry: the closing line alone, in such a file
    for number, (offset, text, entry) in enumerate(_lines(handle)):
        first = text if number == 0 else first
        last = text
        if number > 0:
            if entry is None:
                strays += 1
            else:
                places[entry.key] = (handle, offset)
    if first.strip() == b'{"programs": [' and last.strip() == b"]}" and strays == 1:
        return places
    return {entry.key: entry for entry in _read(path)}


def keep_spooled(results: Path | str, wanted: Iterable[ProgramKey], *, fresh: bool = False) -> tuple[int, int]:
    """Keep the spooled programs of the cells in *wanted* beside *results*, with those already kept, and
    remove the spool.  The spool holds this run's programs (and those of the interrupted run it resumes,
    which its own follow): the latest of a cell is the one its record was judged with.  *fresh*: the run
    began its results file afresh, so the programs file holds this run's programs alone, as the results file
    holds its records alone (the one before is kept beside it as ``NAME.previous``).  Written as it is read,
    one entry at a time: memory holds where each entry is, never the programs.  Returns (how many of
    *wanted* have a program kept, how many have none).  Raises OutputError."""
    from conformance.outputs import OutputError, keep_previous, replace_file

    path, spool = programs_path(results), spool_path(results)
    wanted = set(wanted)
    places: dict[ProgramKey, _Place | ProgramText] = {}
    handles: list[BinaryIO] = []
    spooled = False
    try:
        if fresh and path.is_file():
            keep_previous(path)
        elif path.is_file():
            handles.append(open(path, "rb"))
            places = _placed(path, handles[-1])
        if spool.is_file():
            handles.append(open(spool, "rb"))
            for offset, _, entry in _lines(handles[-1]):
                if entry is not None and entry.key in wanted:
                    places[entry.key] = (handles[-1], offset)
                    spooled = True
        if spooled or (fresh and path.is_file()):
            replace_file(path, _pieces(places))
    except OSError as exc:
        raise OutputError(getattr(exc, "filename", None) or spool, exc) from None
    finally:
        for handle in handles:
            handle.close()
    try:
        spool.unlink(missing_ok=True)
    except OSError as exc:
        raise OutputError(spool, exc) from None
    kept = len(wanted & places.keys())
    return kept, len(wanted) - kept


def _at(place: _Place) -> ProgramText:
    handle, offset = place
    handle.seek(offset)
    return ProgramText(json.loads(handle.readline().rstrip(b"\n").rstrip(b",")))


def _pieces(places: Mapping[ProgramKey, _Place | ProgramText]) -> Iterator[str]:
    yield '{"programs": [\n'
    for number, key in enumerate(sorted(places)):
        place = places[key]
        yield ("" if number == 0 else ",\n") + _line(place if isinstance(place, ProgramText) else _at(place))
    yield "\n]}\n"
