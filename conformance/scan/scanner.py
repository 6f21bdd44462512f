"""A scan: files read, sightings matched to the catalogue, and the findings that answer the question."""

from __future__ import annotations

import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from conformance.scan.analyse import FileReading, read_source
from conformance.scan.catalogue import CELL_WORDS, Catalogue
from conformance.scan.question import Question, Side
from conformance.scan.rules import Sighting, by_code

__all__ = ["Finding", "ScanResult", "Scanner", "python_files"]

#: Folders a scan of a tree does not enter: tools' caches and installed packages, not the user's code.
_SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules",
                              "site-packages", ".mypy_cache", ".pytest_cache", ".eggs"})
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """A place in the user's code where a hazard of the catalogue applies, and what it does there."""

    path: str
    line: int
    column: int
    code: str
    title: str
    says: str
    snippet: str
    case: str
    exact: bool
    also: tuple[str, ...]
    framework: str
    mode: str
    question: Question
    cells: tuple[str, str | None]
    behaviour: tuple[str, ...]
    cause: str
    conversion: str | None
    remedy: str | None
    remedy_framework: str
    remedy_lines: tuple[str, ...]

    @property
    def reproduce(self) -> str:
        framework = self.question.target.framework if self.question.kind == "port" else self.framework
        mode = "" if self.mode == "eager" else f" --mode {self.question.target_mode(self.mode) if framework != self.framework else self.mode}"
        return f"conformance show {self.case} --framework {framework}{mode}"

    @property
    def verdict(self) -> str:
        """What changes, in words: the source's cell, and the target's where there is one."""
        source, target = self.cells
        words = f"{self.question.source} {CELL_WORDS.get(source, source)}"
        if target is not None and self.question.target is not None:
            words += f"; {self.question.target} {CELL_WORDS.get(target, target)}"
        return words


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    #: sightings no case of the catalogue shares the decisive facets of: nothing can be said of them
    unmatched: list[tuple[str, Sighting]] = field(default_factory=list)
    #: sightings whose case does not answer the question (it behaves alike, or is not wrong)
    quiet: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)


class Scanner:
    def __init__(self, catalogue: Catalogue, *, source: Side | None = None, target: Side | None = None,
                 select: Sequence[str] = (), ignore: Sequence[str] = ()) -> None:
        self.catalogue = catalogue
        self.source = source
        self.target = target
        self.select = tuple(select)
        self.ignore = tuple(ignore)

    def question_for(self, framework: str) -> Question | str:
        """The question for a file written for *framework*, or why the file is not scanned."""
        if self.source is not None and self.source.framework != framework:
            return f"written for {framework}, not {self.source.framework} (--from)"
        source = self.source or Side(framework, self.catalogue.versions(framework)[-1])
        if self.target is not None and self.target.framework == framework and self.source is None:
            return f"written for {framework} already (give --from {framework}==VERSION for an upgrade)"
        return Question(source, self.target)

    def scan_text(self, text: str, path: str, result: ScanResult | None = None) -> ScanResult:
        result = result if result is not None else ScanResult()
        framework = self.source.framework if self.source is not None else None
        reading = read_source(text, path, self.catalogue.vocabulary, framework)
        result.files += 1
        result.lines += reading.lines
        if reading.error:
            result.errors.append((path, reading.error))
            return result
        if reading.framework is None:
            result.skipped.append((path, "imports neither torch nor paddle"
                                   if framework is None else f"does not import {framework} (--from)"))
            return result
        question = self.question_for(reading.framework)
        if isinstance(question, str):
            result.skipped.append((path, question))
            return result
        lines = text.splitlines()
        for sighting in sorted(self._chosen(reading), key=lambda s: (s.line, s.column, s.code)):
            if not self._selected(sighting.code) or _suppressed(lines, sighting):
                continue
            match = self.catalogue.match(reading.framework, sighting, reading.forms)
            if match is None:
                result.unmatched.append((path, sighting))
                continue
            mode = reading.modes.get(id(sighting)) or "eager"
            if not question.reports(self.catalogue, match.case, mode):
                result.quiet += 1
                continue
            result.findings.append(self._finding(path, lines, sighting, match, reading.framework, mode, question))
        return result

    def _chosen(self, reading: FileReading) -> list[Sighting]:
        """One sighting per place: where rules agree on a node, the one whose case matches best, else the
        first rule in the catalogue's order."""
        order = {rule.code: index for index, rule in enumerate(by_code().values())}
        by_place: dict[tuple[int, int], list[Sighting]] = {}
        for sighting in reading.sightings:
            by_place.setdefault((sighting.line, sighting.column), []).append(sighting)
        chosen = []
        for group in by_place.values():
            def rank(s: Sighting) -> tuple:
                match = self.catalogue.match(reading.framework or "", s, reading.forms)
                return (match is not None and match.exact, match is not None, -order.get(s.code, 99))
            chosen.append(max(group, key=rank))
        return chosen

    def scan_paths(self, paths: Iterable[str]) -> ScanResult:
        result = ScanResult()
        for path in paths:
            if path == "-":
                import sys

                self.scan_text(sys.stdin.read(), "<stdin>", result)
                continue
            for file in python_files(Path(path)):
                try:
                    with tokenize.open(file) as handle:
                        text = handle.read()
                except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
                    result.errors.append((str(file), f"cannot read: {exc}"))
                    continue
                self.scan_text(text, str(file), result)
        return result

    def _selected(self, code: str) -> bool:
        if self.select and not code.startswith(self.select):
            return False
        return not (self.ignore and code.startswith(self.ignore))

    def _finding(self, path: str, lines: list[str], sighting: Sighting, match: object, framework: str, mode: str,
                 question: Question) -> Finding:
        from conformance.scan.catalogue import Match

        assert isinstance(match, Match)
        catalogue = self.catalogue
        case = catalogue.cases[match.case]
        frameworks = [question.source.framework]
        if question.kind == "port" and question.target is not None:
            frameworks.append(question.target.framework)
        behaviour = [catalogue.behaviour(match.case, fw, mode if fw == framework else question.target_mode(mode))
                     for fw in frameworks]
        remedy_framework = question.target.framework if question.kind == "port" and question.target else framework
        remedy = catalogue.remedy_lines(match.case, remedy_framework)
        conversion = catalogue.conversion(match.case) if question.kind == "port" and framework == "torch" \
            and question.target is not None and question.target.framework == "paddle" else None
        snippet = lines[sighting.line - 1].strip() if 0 < sighting.line <= len(lines) else ""
        return Finding(path, sighting.line, sighting.column, sighting.code, by_code()[sighting.code].title,
                       sighting.says, snippet, match.case, match.exact, match.also, framework, mode, question,
                       question.cells(catalogue, match.case, mode), tuple(behaviour), case.cause, conversion,
                       remedy[0] if remedy else None, remedy_framework, tuple(remedy[1]) if remedy else ())


def _suppressed(lines: list[str], sighting: Sighting) -> bool:
    """``# noqa`` on the sighting's line (or the last line of its statement), bare or naming its code."""
    end = getattr(sighting.node, "end_lineno", None) or sighting.line
    for number in {sighting.line, end}:
        if not 0 < number <= len(lines):
            continue
        found = _NOQA.search(lines[number - 1])
        if found is None:
            continue
        codes = found.group("codes")
        if not codes or any(sighting.code.startswith(c.strip().upper()) for c in re.split(r"[,\s]+", codes) if c):
            return True
    return False


def python_files(path: Path) -> Iterator[Path]:
    """*path* itself, or the ``.py`` files under it, in order, without entering caches, virtual environments
    or installed packages, and without following links to folders."""
    if path.is_file():
        yield path
        return
    for root, folders, files in os.walk(path):
        folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS
                            and not (Path(root) / f / "pyvenv.cfg").exists())
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(root) / name
