"""The catalogue as the scanner knows it: each case's cells, programs, cause and remedy (the shipped data),
and which of the rules' sightings each case is.

A case is found by reading its own programs with the rules: the sightings of a hazard's program, less those
its remedies' programs have too (what the safe spelling keeps is not what goes wrong), are that case's keys.
A sighting in the user's code stands for the case whose key shares every facet the rule calls decisive, and
most of the others.  Remedies are not keys: a safe spelling never stands for anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from conformance.scan.analyse import read_source
from conformance.scan.rules import Sighting, by_code
from conformance.scan.vocabulary import Vocabulary

__all__ = ["Catalogue", "CaseInfo", "Match", "CatalogueError"]

#: What each cell letter (``scan/build.py``) means to a reader, and the behaviour it belongs to: two cells
#: of one class behave alike for a user.
CELL_WORDS = {"B": "raises at backward", "R": "raises", "W": "gives a wrong result", "V": "gives a wrong result "
              "with a warning", "w": "warns", "C": "computes it right", "A": "shares memory", "P": "copies",
              "U": "has no such API", "T": "hangs", "X": "crashes", "E": "could not be judged", "S": "was not run",
              ".": "was not run"}
CELL_CLASS = {"B": "raises", "R": "raises", "W": "wrong", "V": "wrong", "w": "warns", "C": "right", "A": "shares",
              "P": "copies", "U": "missing", "T": "hangs", "X": "crashes"}
#: Cells that say something is wrong for the code's own user.
TROUBLE = frozenset("BRWVwTX")


class CatalogueError(Exception):
    """The shipped data cannot be read."""


@dataclass(frozen=True)
class CaseInfo:
    id: str
    title: str
    topic: str
    role: str  # hazard | remedy | observation
    cells: Mapping[str, str]
    programs: Mapping[str, str]
    cause: str = ""
    remedy: tuple[str, ...] = ()
    no_remedy: str = ""
    converted: Mapping[str, Any] | None = None
    #: why no static rule can find it (the case file's ``not_scanned:``)
    not_scanned: str = ""


@dataclass(frozen=True)
class Match:
    """The case a sighting stands for, and how closely: ``exact`` when every facet agrees."""

    case: str
    exact: bool
    also: tuple[str, ...] = ()


@dataclass
class _Key:
    facets: tuple[tuple[str, str], ...]
    case: str
    weight: int  # how many keys the case has: one is its unambiguous pattern


@dataclass
class Catalogue:
    data: Mapping[str, Any]
    _index: dict[str, dict[str, list[_Key]]] = field(default_factory=dict)
    _readings: dict[tuple[str, str], Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str | None = None) -> "Catalogue":
        from conformance.scan.build import DATA_FILE

        source = Path(path) if path is not None else DATA_FILE
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CatalogueError(f"cannot read the scanner's data {source}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("cases"), dict):
            raise CatalogueError(f"{source} is not the scanner's data (format 1)")
        return cls(data)

    @cached_property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary(self.data)

    @cached_property
    def cases(self) -> dict[str, CaseInfo]:
        found = {}
        for case_id, entry in self.data["cases"].items():
            found[case_id] = CaseInfo(case_id, entry.get("title", ""), entry.get("topic", ""), entry.get("role", ""),
                                      dict(entry.get("cells") or {}), dict(entry.get("programs") or {}),
                                      entry.get("cause", ""), tuple(entry.get("remedy") or ()),
                                      entry.get("no_remedy", ""), entry.get("converted"),
                                      entry.get("not_scanned", ""))
        return found

    @property
    def frameworks(self) -> Mapping[str, Any]:
        return self.data.get("frameworks", {})

    def versions(self, framework: str) -> list[str]:
        return list(self.frameworks.get(framework, {}).get("versions", ()))

    def converter(self) -> str | None:
        return next((fw for fw, info in self.frameworks.items() if info.get("converter")), None)

    # -- which case a sighting is ---------------------------------------------------------------------

    def sightings_of(self, case_id: str, framework: str) -> list[Sighting]:
        """What the rules see in a case's own program."""
        return self._reading(case_id, framework).sightings

    def _reading(self, case_id: str, framework: str) -> Any:
        key = (case_id, framework)
        if key not in self._readings:
            program = self.cases[case_id].programs.get(framework, "")
            self._readings[key] = read_source(program, case_id, self.vocabulary, framework)
        return self._readings[key]

    def index(self, framework: str) -> dict[str, list[_Key]]:
        if framework not in self._index:
            keys: dict[str, list[_Key]] = {}
            for case in self.cases.values():
                if case.role == "remedy" or framework not in case.programs:
                    continue
                safe = {(s.code, s.facets) for remedy in case.remedy if remedy in self.cases
                        for s in self.sightings_of(remedy, framework)}
                own = list(dict.fromkeys((s.code, s.facets) for s in self.sightings_of(case.id, framework)
                                         if (s.code, s.facets) not in safe))
                for code, facets in own:
                    keys.setdefault(code, []).append(_Key(facets, case.id, len(own)))
            self._index[framework] = keys
        return self._index[framework]

    def match(self, framework: str, sighting: Sighting, calls: frozenset[str] = frozenset()) -> Match | None:
        """The case *sighting* stands for, or None when no case shares its decisive facets; *calls*: what the
        code around it calls, to choose among cases that match it equally."""
        rule = by_code()[sighting.code]
        mine = dict(sighting.facets)
        best: list[tuple[tuple, _Key]] = []
        for key in self.index(framework).get(sighting.code, ()):
            theirs = dict(key.facets)
            if any(theirs.get(name) != mine.get(name) for name in rule.decisive):
                continue
            agreement = tuple(theirs.get(name) == value for name, value in sighting.facets)
            if key.weight > 1 and not all(agreement):
                continue  # a program with several sightings is only matched exactly: which one is its case is unclear
            score = (sum(agreement), agreement, -key.weight)
            best.append((score, key))
        if not best:
            return None
        best.sort(key=lambda item: (item[0], self._likeness(item[1].case, framework, calls),
                                    _rank(self.cases[item[1].case])), reverse=True)
        top_score, top = best[0]
        exact = all(top_score[1]) and len(dict(top.facets)) == len(mine)
        also = tuple(dict.fromkeys(k.case for s, k in best[1:] if s[:2] == top_score[:2] and k.case != top.case))
        return Match(top.case, exact, also)

    def rules_of(self, case_id: str) -> list[str]:
        """The codes of the rules whose sightings stand for *case_id* (in either framework's code)."""
        return sorted({code for framework in self.languages() for code, keys in self.index(framework).items()
                       if any(key.case == case_id for key in keys)})

    def languages(self) -> list[str]:
        """The frameworks whose programs the data holds (not a converter's)."""
        return sorted(fw for fw, info in self.frameworks.items() if not info.get("converter"))

    def _likeness(self, case_id: str, framework: str, calls: frozenset[str]) -> float:
        """How much of what the case's program calls the code calls too (Jaccard)."""
        theirs = self._reading(case_id, framework).forms
        union = theirs | calls
        return len(theirs & calls) / len(union) if union else 0.0

    # -- what a case does ------------------------------------------------------------------------------

    def cell(self, case_id: str, framework: str, version: str, mode: str) -> str:
        row = self.cases[case_id].cells.get(f"{framework}/{mode}", "")
        versions = self.versions(framework)
        if version not in versions or len(row) != len(versions):
            return "."
        return row[versions.index(version)]

    def behaviour(self, case_id: str, framework: str, mode: str) -> str:
        """``torch 2.0.1–2.15.0 raises at backward``: the framework's cells in *mode*, by runs of versions."""
        row = self.cases[case_id].cells.get(f"{framework}/{mode}", "")
        versions = self.versions(framework)
        if not row or len(row) != len(versions):
            return f"{framework}: no cells{'' if mode == 'eager' else ' in ' + mode}"
        runs: list[tuple[str, str, str]] = []
        for version, letter in zip(versions, row):
            if letter in "S.":
                continue
            if runs and runs[-1][2] == letter:
                runs[-1] = (runs[-1][0], version, letter)
            else:
                runs.append((version, version, letter))
        parts = [(first if first == last else f"{first}–{last}") + " " + CELL_WORDS.get(letter, letter)
                 for first, last, letter in runs]
        label = framework if mode == "eager" else f"{framework} ({mode})"
        return f"{label} {', '.join(parts)}" if parts else f"{label}: not run"

    def conversion(self, case_id: str) -> str | None:
        converted = self.cases[case_id].converted
        if not converted:
            return None
        verdict = converted.get("verdict")
        words = {"keeps": "keeps the meaning", "changes": "changes the meaning", "breaks": "breaks the program"}
        text = words.get(verdict, str(verdict))
        if verdict == "changes" and converted.get("silent"):
            text += ", silently"
        return f"PaConvert {text}"

    def remedy_lines(self, case_id: str, framework: str, limit: int = 3) -> tuple[str, list[str]] | None:
        """The remedy of *case_id* and its lines that the case's program does not have, in *framework*; where
        the remedy has the same lines in another order (a view taken after the write, not before), its lines
        from the first that moved."""
        case = self.cases[case_id]
        hazard = case.programs.get(framework, "")
        for remedy in case.remedy:
            safe = self.cases.get(remedy)
            program = safe.programs.get(framework) if safe else None
            if not program:
                continue
            theirs = [_shape(line) for line in _user_lines(hazard)]
            mine = _user_lines(program)
            known = set(theirs)
            added = [line.strip() for line in mine if _shape(line) not in known]
            if added:
                return remedy, added[:limit]
            moved = next((i for i, line in enumerate(mine) if i >= len(theirs) or _shape(line) != theirs[i]), None)
            if moved is not None:
                return remedy, [line.strip() for line in mine[moved:moved + limit]]
        return None


def _rank(case: CaseInfo) -> tuple[int, str]:
    """Among equally close cases: a hazard before an observation; then by id (for the same order every run)."""
    return (case.role == "hazard", "".join(chr(0x10FFFF - ord(c)) for c in case.id))


def _user_lines(program: str) -> list[str]:
    return [line for line in program.splitlines()
            if line.strip() and not line.startswith(("import ", "from ", "DEVICE", "print(", "paddle.set_device"))
            and "print(" not in line]


def _shape(line: str) -> str:
    """A line with its numbers and literals masked: a safe spelling's values may differ from the hazard's."""
    return _LITERAL.sub("_", line.strip())


_LITERAL = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?|'[^']*'|\"[^\"]*\"|\[[\d\s.,\[\]()+j-]*\]")
