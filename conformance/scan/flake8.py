"""The scanner as a flake8 plugin: ``flake8 --select=IC`` runs the same rules as ``conformance scan``.

The question is an audit unless the options say otherwise: ``--conformance-from torch==2.4.1`` and
``--conformance-to paddle==3.3.1`` (or in a ``[flake8]`` section: ``conformance-from``, ``conformance-to``).
flake8 handles ``# noqa`` itself.
"""

from __future__ import annotations

import ast
from typing import Any, ClassVar, Iterator

__all__ = ["Plugin"]


class Plugin:
    name = "inplace-conformance"
    version = "0.1.0"
    _source: ClassVar[str | None] = None
    _target: ClassVar[str | None] = None
    _scanner: ClassVar[Any] = None

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, manager: Any) -> None:
        manager.add_option("--conformance-from", default=None, parse_from_config=True,
                           help="what the code is written for (torch==2.4.1) [each file's framework, newest]")
        manager.add_option("--conformance-to", default=None, parse_from_config=True,
                           help="a port (another framework) or an upgrade (the same) [an audit]")

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls._source = getattr(options, "conformance_from", None)
        cls._target = getattr(options, "conformance_to", None)
        cls._scanner = None

    @classmethod
    def scanner(cls) -> Any:
        if cls._scanner is None:
            from conformance.scan.catalogue import Catalogue
            from conformance.scan.question import parse_side
            from conformance.scan.scanner import Scanner

            catalogue = Catalogue.load()
            cls._scanner = Scanner(catalogue,
                                   source=parse_side(cls._source, catalogue, "--conformance-from") if cls._source else None,
                                   target=parse_side(cls._target, catalogue, "--conformance-to") if cls._target else None)
        return cls._scanner

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        result = self.scanner().scan_text("".join(self.lines), self.filename)
        for finding in result.findings:
            case = finding.case if finding.exact else f"like {finding.case}"
            message = f"{finding.code} {finding.says} ({case}): {'; '.join(finding.behaviour)}"
            yield finding.line, finding.column - 1, message, type(self)
