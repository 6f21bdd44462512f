"""The data the scanner ships (``conformance/scan/catalogue.json``), built from the committed results.

``conformance scan-data`` (run by ``tox -e report``, checked for staleness like the reports) writes it from:

* the catalogue's hand-written cases: title, topic, cause, remedies, and whether each is a hazard, a remedy
  or an observation of behaviour;
* the programs kept beside the committed results: each case's eager program in torch and in paddle, as
  their users write them (the scanner reads them to learn which of its sightings each case is);
* the committed results: each case's cell on every CPU column (framework, version, mode), one letter each,
  and what PaConvert did to its program;
* the op registry, the adapters and the reference: spellings and memory effects (``scan/derive.py``).

Nothing in it is written by hand, so a scanner installed from a wheel says what the matrix says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from conformance.scan.derive import module_facts, op_facts, spellings

__all__ = ["DATA_FILE", "CELL_CODES", "build_data", "program_text", "write_data"]

#: Where the package keeps its data.
DATA_FILE = Path(__file__).with_name("catalogue.json")

#: One letter per cell.  ``B``: raises at backward, ``R``: raises elsewhere (at the op), ``W``: a wrong
#: result (silent), ``V``: a wrong result beside a warning, ``w``: warns, result right, ``C``: right,
#: ``A``: shares memory, ``P``: copies memory, ``U``: no such API, ``E``: the harness could not run it,
#: ``S``: not run, ``T``: hung, ``X``: the process died, ``.``: no record.
CELL_CODES = {"silent-correct": "C", "silent-wrong": "W", "aliases": "A", "copies": "P", "unsupported": "U",
              "error": "E", "skipped": "S", "timeout": "T", "crash": "X"}

#: Lines of a reproducer that are the harness's, not the user's: comments, its helpers.
_HELPER = re.compile(r"^def _(values|address)\(")


def cell_code(record: Any) -> str:
    """One record's letter (``CELL_CODES``)."""
    if record.outcome == "raises":
        exception = record.exception
        return "B" if exception is not None and exception.phase == "backward" else "R"
    if record.outcome == "warns":
        return "V" if record.correct is False else "w"
    return CELL_CODES.get(record.outcome, "E")


def program_text(source: str) -> str:
    """A kept reproducer as the scanner reads it: the user's code and its reads of values (prints), without
    the comments, the harness's helper functions, and its checks of where memory lies (``_address``: a read
    of an address, not of values, which no user's program depends on)."""
    out: list[str] = []
    skipping = False
    for line in source.splitlines():
        if _HELPER.match(line):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        skipping = False
        if line.strip().startswith("#") or not line.strip() or "_address(" in line:
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def build_data(cases: Sequence[Any], records: Iterable[Any], programs: Mapping[Any, Mapping[str, Any]],
               adapters: Mapping[str, type]) -> dict[str, Any]:
    """The shipped data from the catalogue's *cases*, the committed *records*, the kept *programs* and the
    *adapters* (their classes: what each framework saves otherwise than the registry says)."""
    from conformance.ops import OPS
    from conformance.ops.modules import ACTIVATIONS, MODULE_KINDS
    from conformance.records.record import split_build, version_key
    from conformance.report.conversions import conversions, converter_frameworks

    records = list(records)
    written = [c for c in cases if not c.generated]
    known = {c.id for c in written}
    remedies = {r for c in written for r in c.remedy}
    converters = converter_frameworks(records)
    languages = sorted(name for name, cls in adapters.items() if not getattr(cls, "converter", None))
    framework_saves = {name: dict(getattr(adapters[name], "saves", {})) for name in languages}
    no_backward = {name: frozenset(getattr(adapters[name], "no_backward", ())) for name in languages}

    cells: dict[str, dict[str, dict[str, str]]] = {}
    versions: dict[str, set[str]] = {}
    modes: dict[str, set[str]] = {}
    for record in records:
        if record.device != "cpu" or record.case not in known:
            continue
        version = split_build(record.framework_version)[0]
        versions.setdefault(record.framework, set()).add(version)
        modes.setdefault(record.framework, set()).add(record.mode)
        cells.setdefault(record.case, {}).setdefault(f"{record.framework}/{record.mode}", {})[version] = \
            cell_code(record)
    ordered = {fw: sorted(v, key=version_key) for fw, v in sorted(versions.items())}
    verdicts = conversions(records)

    kept: dict[tuple[str, str], str] = {}
    for entry in programs.values():
        if entry.get("mode") == "eager" and entry.get("device") == "cpu" and not entry.get("unsupported") \
                and entry["case"] in known:
            key = (entry["framework"], entry["case"])
            if key not in kept or version_key(entry["version"]) > version_key(kept[key][0]):
                kept[key] = (entry["version"], program_text(entry["source"]))

    case_data: dict[str, Any] = {}
    for case in sorted(written, key=lambda c: c.id):
        role = "remedy" if case.id in remedies else "hazard" if case.cause else "observation"
        row = {f"{fw_mode}": "".join(by_version.get(v, ".") for v in ordered[fw_mode.split("/")[0]])
               for fw_mode, by_version in sorted(cells.get(case.id, {}).items())}
        entry: dict[str, Any] = {"title": case.title, "topic": case.topic, "role": role, "cells": row,
                                 "programs": {fw: kept[(fw, case.id)][1] for fw in languages if (fw, case.id) in kept}}
        if case.cause:
            entry["cause"] = case.cause
        if case.remedy:
            entry["remedy"] = list(case.remedy)
        if case.no_remedy:
            entry["no_remedy"] = case.no_remedy
        if case.not_scanned:
            entry["not_scanned"] = case.not_scanned
        verdict = verdicts.get(case.id)
        if verdict is not None:
            entry["converted"] = {"verdict": verdict.verdict, "silent": verdict.silent, "told": verdict.told}
        case_data[case.id] = entry

    steps_of = {c.id: c.steps_by_number for c in written}
    return {
        "format": 1,
        "frameworks": {fw: {"versions": ordered[fw], "modes": sorted(modes[fw], key=lambda m: (m != "eager", m)),
                            "converter": fw in converters}
                       for fw in ordered},
        "spellings": spellings(programs.values(), steps_of),
        "ops": op_facts(cases, OPS, framework_saves, no_backward),
        "modules": module_facts(MODULE_KINDS, ACTIVATIONS, framework_saves),
        "cases": case_data,
    }


def write_data(data: Mapping[str, Any], path: Path | str = DATA_FILE) -> Path:
    """Write *data* with one case per line (a diff shows which cases changed), atomically."""
    from conformance.outputs import write_file

    cases = data.get("cases", {})
    head = {k: v for k, v in data.items() if k != "cases"}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True, ensure_ascii=False)},")
    lines.append('"cases": {')
    items = sorted(cases.items())
    for index, (case_id, entry) in enumerate(items):
        comma = "," if index < len(items) - 1 else ""
        lines.append(f"{json.dumps(case_id)}: {json.dumps(entry, sort_keys=True, ensure_ascii=False)}{comma}")
    lines.append("}}")
    write_file(path, "\n".join(lines) + "\n")
    return Path(path)
