"""The scanner measured on the catalogue's own programs: does it find each hazard in the programs that show
it, and does it keep quiet on each safe spelling?

* **Recall**: a hazard's program (torch's, paddle's: the kept programs) is *found* when one of its
  sightings stands for that case.  A hazard whose case file says why no static rule can see it
  (``not_scanned:``) is counted apart, and still counts as found once a rule finds it.
* **Precision**: a remedy's program is *flagged* when one of its sightings stands for a case that some
  question about eager code would report: one that misbehaves on some eager column, or behaves otherwise on
  two.  Eager, because that is where a remedy is verified safe (``report/remedies.py``): a safe spelling
  may itself fail to compile, which a scan of compiled code rightly reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.scan.catalogue import CELL_CLASS, TROUBLE, Catalogue

__all__ = ["Measurement", "measure"]


@dataclass
class Measurement:
    framework: str
    found: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    #: hazards whose case says why no static rule can find them, with the reason
    unseeable: dict[str, str] = field(default_factory=dict)
    remedies: list[str] = field(default_factory=list)
    flagged: dict[str, list[str]] = field(default_factory=dict)

    @property
    def recall(self) -> float:
        """Found, of every hazard with a program in this framework (the ones no rule can see included)."""
        total = len(self.found) + len(self.missed) + len(self.unseeable)
        return len(self.found) / total if total else 1.0


def answers_some_question(catalogue: Catalogue, case: str) -> bool:
    """Whether some audit, port or upgrade of eager code would report a sighting of *case*: it misbehaves on
    an eager column, or two eager columns behave otherwise."""
    classes: set[str] = set()
    for column, row in catalogue.cases[case].cells.items():
        framework, mode = column.split("/", 1)
        if mode != "eager" or catalogue.frameworks.get(framework, {}).get("converter"):
            continue
        if any(letter in TROUBLE for letter in row):
            return True
        classes.update(CELL_CLASS[letter] for letter in row if letter in CELL_CLASS)
    return len(classes) > 1


def measure(catalogue: Catalogue, framework: str) -> Measurement:
    measured = Measurement(framework)
    for case in sorted(catalogue.cases.values(), key=lambda c: c.id):
        if framework not in case.programs:
            continue
        sightings = catalogue.sightings_of(case.id, framework)
        matches = [m for m in (catalogue.match(framework, s) for s in sightings) if m is not None]
        if case.role == "hazard":
            hit = any(m.case == case.id or case.id in m.also for m in matches)
            if case.not_scanned and not hit:
                measured.unseeable[case.id] = case.not_scanned
            else:
                (measured.found if hit else measured.missed).append(case.id)
        elif case.role == "remedy":
            measured.remedies.append(case.id)
            loud = sorted({m.case for m in matches if answers_some_question(catalogue, m.case)})
            if loud:
                measured.flagged[case.id] = loud
    return measured
