"""The three questions a scan answers, one engine behind them.

* **audit** (no ``--to``): what raises, is wrong, warns, hangs or crashes on the framework and version the
  code is written for;
* **port** (``--to`` another framework): what behaves otherwise on the target than on the source;
* **upgrade** (``--to`` the same framework, another version): what changed between the two releases.

Each is decided by the cells of the case a sighting stands for, in the mode the code runs in (a write
inside a ``torch.compile``d function is judged by the compiled columns).
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.scan.catalogue import CELL_CLASS, TROUBLE, Catalogue

__all__ = ["Question", "QuestionError", "Side", "parse_side"]

#: A compiled mode and what the other framework's users compile with.
_COUNTERPART = {"compile": "to_static", "to_static": "compile", "to_static_full_graph": "compile"}


class QuestionError(ValueError):
    """A ``--from`` or ``--to`` that names no framework or version of the data (one line)."""


@dataclass(frozen=True)
class Side:
    framework: str
    version: str

    def __str__(self) -> str:
        return f"{self.framework} {self.version}"


def parse_side(text: str, catalogue: Catalogue, option: str) -> Side:
    """``torch==2.4.1``, ``torch==2.4`` (its newest patch in the data) or ``torch`` (its newest version)."""
    framework, _, version = text.partition("==")
    framework = framework.strip()
    languages = [fw for fw, info in catalogue.frameworks.items() if not info.get("converter")]
    if framework not in languages:
        raise QuestionError(f"{option} {text!r}: no framework {framework!r} in the data; choose from "
                            f"{', '.join(sorted(languages))}")
    versions = catalogue.versions(framework)
    if not version:
        return Side(framework, versions[-1])
    if version in versions:
        return Side(framework, version)
    prefixed = [v for v in versions if v.startswith(version + ".")]
    if prefixed:
        return Side(framework, prefixed[-1])
    raise QuestionError(f"{option} {text!r}: no {framework} {version} in the data; its versions: "
                        f"{', '.join(versions)}")


@dataclass(frozen=True)
class Question:
    source: Side
    target: Side | None = None

    @property
    def kind(self) -> str:
        if self.target is None:
            return "audit"
        return "upgrade" if self.target.framework == self.source.framework else "port"

    def describe(self) -> str:
        if self.target is None:
            return f"audit of code written for {self.source}"
        verb = "upgrade" if self.kind == "upgrade" else "port"
        return f"{verb} from {self.source} to {self.target}"

    def target_mode(self, mode: str) -> str:
        if self.target is None or self.kind == "upgrade" or mode == "eager":
            return mode
        return _COUNTERPART.get(mode, mode)

    def cells(self, catalogue: Catalogue, case: str, mode: str) -> tuple[str, str | None]:
        """The case's cell on the source, and on the target (None for an audit)."""
        source = catalogue.cell(case, self.source.framework, self.source.version, mode)
        if self.target is None:
            return source, None
        return source, catalogue.cell(case, self.target.framework, self.target.version, self.target_mode(mode))

    def reports(self, catalogue: Catalogue, case: str, mode: str) -> bool:
        """Whether a sighting of *case* in code running in *mode* answers this question."""
        source, target = self.cells(catalogue, case, mode)
        if target is None:
            return source in TROUBLE
        if source not in CELL_CLASS or target not in CELL_CLASS:
            return False  # a cell that did not run or could not be judged says nothing
        return CELL_CLASS[source] != CELL_CLASS[target]
