"""A found program as a case file under cases/found/, unless an existing case already has that program.

Two programs are the same when their steps are, up to the names they bind, the
literal values (only shapes count), and the names of observations; an existing
case "has" a found program when it is the same program once observations are
set aside and it observes at least what the found one observes.

A found program that is not the same as an existing case may still have its
hazard: that is decided by cause (``cause.py``), before a case is written.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import yaml

from conformance.case.load import GENERATED_SOURCE, Case, load_case, load_cases
from conformance.fuzz.cause import Cause
from conformance.fuzz.generate import Program
from conformance.fuzz.simplify import Tried
from conformance.fuzz.verdict import Verdict
from conformance.ops import OPS

__all__ = ["KnownCases", "canonical", "case_text", "write_case", "PROVENANCE"]

#: How a found case states where it comes from (the catalogue's provenance check accepts it).
PROVENANCE = GENERATED_SOURCE
#: Ops that only make operands: left out of a found case's id.
_SOURCES = {"tensor", "array", "full"}


def canonical(steps: Sequence[Mapping[str, Any]]) -> tuple[str, frozenset[tuple]]:
    """The program's shape without names and literal values: (its steps without observations, as
    text; what it observes, as (kind, target) pairs)."""
    names: dict[str, str] = {}
    observed: set[tuple] = set()

    def name(raw: str) -> str:
        base, dot, param = raw.partition(".")
        return names.setdefault(base, f"n{len(names)}") + dot + param

    def walk(items: Sequence[Mapping[str, Any]]) -> list:
        out = []
        for step in items:
            if "observe" in step:
                targets = step["of"] if isinstance(step["of"], list) else [step["of"]]
                observed.add((step["observe"], tuple(name(t) for t in targets), step.get("judge", True)))
                continue
            spec = OPS.get(step["op"])
            item: dict[str, Any] = {"op": step["op"]}
            args = step.get("args", [])
            args = args if isinstance(args, list) else [args]
            item["args"] = [name(a) if isinstance(a, str) else "number" for a in args]
            for key, value in step.items():
                if key in ("op", "args", "out"):
                    continue
                kind = spec.fields[key].type if spec is not None and key in spec.fields else ""
                if kind == "numbers":
                    item[key] = list(np.shape(value))
                elif kind == "observation":
                    continue
                elif kind == "name":
                    item[key] = name(value)
                elif kind == "steps":
                    item[key] = walk(value)
                else:
                    item[key] = value
            outs = step.get("out")
            if outs is not None:
                item["out"] = [name(o) for o in (outs if isinstance(outs, list) else [outs])]
            out.append(item)
        return out

    text = json.dumps(walk(steps), sort_keys=True)
    return text, frozenset(observed)


class KnownCases:
    """The programs of the cases under some folders, to tell a found program that is already there."""

    def __init__(self, paths: Iterable[Path | str]) -> None:
        cases, _ = load_cases([p for p in paths if Path(p).exists()])
        self.cases: list[Case] = list(cases)
        self.by_program: dict[str, list[tuple[str, frozenset]]] = {}
        self.ids = {case.id for case in cases}
        for case in cases:
            self.add(case)

    def add(self, case: Case) -> None:
        program, observed = canonical(case.raw["steps"])
        self.by_program.setdefault(program, []).append((case.id, observed))
        self.ids.add(case.id)

    def has(self, steps: Sequence[Mapping[str, Any]]) -> str | None:
        """The id of a case that has this program, or None."""
        program, observed = canonical(steps)
        for case_id, theirs in self.by_program.get(program, []):
            if observed <= theirs:
                return case_id
        return None


def case_id(program: Program, cause: Cause | None = None) -> str:
    """``found_`` + the hazard family + the program's distinctive ops + a digest of its canonical form."""
    ops = [cause.family] if cause is not None else []
    for op in program.ops():
        if op not in _SOURCES and op not in ops:
            ops.append(op)
    stem = re.sub(r"[^a-z0-9]+", "_", "_".join(ops[:4]).lower()).strip("_") or "program"
    digest = hashlib.sha256(json.dumps([program.dtype, canonical(program.steps)[0]]).encode()).hexdigest()[:6]
    return f"found_{stem}_{digest}"


def _describe(verdict: Verdict, versions: Mapping[str, str]) -> str:
    parts = []
    for name, cell in sorted(verdict.cells.items()):
        what = cell.outcome
        if cell.wrong:
            wrong = ", ".join(sorted(cell.wrong_observations()))
            what += f" ({wrong} differ from the reference)"
        elif cell.outcome == "raises":
            exception = cell.details.get("exception", {})
            what += f" ({exception.get('type', '?')} at {exception.get('op', '?')}, {exception.get('kind', '?')})"
        parts.append(f"{name} {versions.get(name, '')}: {what}".replace("  ", " "))
    return "; ".join(parts)


def case_text(program: Program, verdict: Verdict, *, case_id_: str, seed: int, budget: int, number: int,
              versions: Mapping[str, str], cause: Cause | None = None, modes: Sequence[str] = (),
              tried: Tried | None = None) -> str:
    """The YAML of a found case; *tried*: what simplifying it verified (its description says no more)."""
    outcomes = ", ".join(f"{name} {cell.outcome}" for name, cell in sorted(verdict.cells.items()))
    versions_text = ", ".join(f"{name} {version}" for name, version in sorted(versions.items()))
    mode_flags = "".join(f" --mode {mode}" for mode in modes)
    family = f"[{cause.family}] " if cause is not None else ""
    why = (f"Hazard family: {cause.family}; it hinges on `{cause.pivot}`.  Why it matters: {cause.sentence}  "
           if cause is not None else "")
    head = {
        "id": case_id_,
        "title": f"{family}{outcomes}: {', '.join(dict.fromkeys(program.ops()))}",
        "source": f"{PROVENANCE}: conformance fuzz --seed {seed} --budget {budget}{mode_flags}, program {number}, "
                  f"shrunk by hypothesis; {versions_text}",
        "description": (
            f"{why}A program the differential fuzzer generated and shrank (a {program.dtype} program), observing "
            f"what its writes touched: {verdict.reason}.  "
            f"{tried.sentence() if tried is not None else 'It was not simplified.'}  "
            f"When found: {_describe(verdict, versions)}.  "
            f"The reference (docs/reference.md) judges it; no hand-written case had this hazard."),
    }
    text = yaml.safe_dump(head, sort_keys=False, width=110, allow_unicode=True)
    return text + "steps:\n" + "".join(_step_lines(step, 1) for step in program.steps)


def _step_lines(step: Mapping[str, Any], depth: int) -> str:
    pad = "  " * depth
    ordered = _ordered(step)
    if "steps" not in ordered:
        return f"{pad[:-2]}  - {_flow(ordered)}\n"
    head = {k: v for k, v in ordered.items() if k != "steps"}
    lines = [f"{pad}- " + f"\n{pad}  ".join(f"{k}: {_flow(v)}" for k, v in head.items()) + "\n",
             f"{pad}  steps:\n"]
    lines += [_step_lines(inner, depth + 2) for inner in step["steps"]]
    return "".join(lines)


def _ordered(step: Mapping[str, Any]) -> dict[str, Any]:
    first = ["observe", "of", "name", "op", "args", "out"]
    return {**{k: step[k] for k in first if k in step}, **{k: v for k, v in step.items() if k not in first}}


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip().removesuffix("...").strip()


def _place(folder: Path, path: Path, text: str) -> bool:
    """Write *text* to a hidden file in *folder*, then link it to *path*: False when *path* is taken (it is left
    as it is).  Raises OSError (a full disk) with no file of either name left."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)  # never over a file already there
        return True
    except FileExistsError:
        return False
    finally:
        Path(temporary).unlink(missing_ok=True)


def write_case(folder: Path, program: Program, verdict: Verdict, *, seed: int, budget: int, number: int,
               versions: Mapping[str, str], cause: Cause | None = None, modes: Sequence[str] = (),
               tried: Tried | None = None) -> Case:
    """Write the found case and check it loads back as the same program; return it.  A file already at
    the case's name is never replaced: the case takes the next free name (``_2``, ``_3``...) instead.  The
    file is written whole beside its name first and then given it, so a disk that fills leaves no part of a
    case among the cases (OSError, with nothing left behind)."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = case_id(program, cause)
    for attempt in itertools.count(1):
        name = stem if attempt == 1 else f"{stem}_{attempt}"
        path = folder / f"{name}.yaml"
        text = case_text(program, verdict, case_id_=name, seed=seed, budget=budget, number=number,
                         versions=versions, cause=cause, modes=modes, tried=tried)
        if _place(folder, path, text):
            break
    case = load_case(path)
    if json.dumps(case.raw["steps"], sort_keys=True) != json.dumps(list(program.steps), sort_keys=True):
        raise AssertionError(f"{path} does not read back as the program that was found")
    return case
