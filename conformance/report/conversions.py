"""What a converter did to each program: its cell beside the cell of the program it converted.

A converter's column (PaConvert's) records, in each cell's run information, that it is one
(``converter``) and which torch wrote the program it converted (``source_version``); its cells are paired
with that torch's cells of the same cases.  The verdict on a program:

* **keeps** the meaning: the same outcome (for a raise, of the same kind; for shared or copied memory, with
  the values it recorded fitting the reference alike);
* **breaks** it: the converted program raises, crashes or hangs where the torch program did not do so;
* **changes** it: anything else.  A change is *silent* when the converted program runs without an error
  and its user would not notice: its result is wrong where torch's was not, it shares memory where
  torch's copies (or the reverse), or it shares or copies alike with other values (a view of another
  shape, say).  The other changes compute the reference result where torch refused
  or was wrong.

Only CPU eager cells are paired, and a pair with a cell that did not run the program (``unsupported``,
``skipped``) or that the harness could not judge (``error``) has no verdict.  Whether the converter told
its user is what it logged: an API it did not convert, or a line it marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from conformance.records.record import EAGER, Record, version_key

__all__ = ["Conversion", "conversions", "converter_frameworks"]

#: The framework whose programs the converter converts.
SOURCE = "torch"
_NO_VERDICT = frozenset({"unsupported", "skipped", "error"})
_STOPS = frozenset({"raises", "crash", "timeout"})
_MEMORY = frozenset({"aliases", "copies"})


def converter_frameworks(records: Iterable[Record]) -> frozenset[str]:
    """The columns that are a converter's, as their records say (``run_info.converter``)."""
    return frozenset(r.framework for r in records if r.run_info.get("converter"))


@dataclass(frozen=True)
class Conversion:
    """What the converter did to one case's program: the converted cell beside the torch cell."""

    torch: Record
    converted: Record
    verdict: str  # keeps | changes | breaks
    told: bool

    @property
    def silent(self) -> bool:
        """A change its user would not notice: a wrong result where torch's was not, or memory shared on one
        side and copied on the other."""
        if self.verdict != "changes":
            return False
        wrong = self.converted.wrong and not self.torch.wrong
        memory = {self.converted.outcome, self.torch.outcome} == _MEMORY
        return wrong or memory or not _values_agree(self.torch, self.converted)

    @property
    def said(self) -> dict:
        """What the converter logged about the program (``details.conversion``)."""
        return dict(self.converted.details.get("conversion") or {})


def conversions(records: Iterable[Record]) -> dict[str, Conversion]:
    """case -> the verdict on its program, from the CPU eager cells of the newest converter version present."""
    records = list(records)
    converters = converter_frameworks(records)
    torch: dict[tuple[str, str], Record] = {}
    converted: dict[str, Record] = {}
    for record in records:
        if record.mode != EAGER or record.device != "cpu":
            continue
        if record.framework in converters:
            kept = converted.get(record.case)
            if kept is None or version_key(record.framework_version) >= version_key(kept.framework_version):
                converted[record.case] = record
        elif record.framework == SOURCE:
            torch[(record.case, record.framework_version.split("+")[0])] = record
    found = {}
    for case, record in converted.items():
        version = str(record.run_info.get("source_version") or "").split("+")[0]
        source = torch.get((case, version))
        if source is None or record.outcome in _NO_VERDICT or source.outcome in _NO_VERDICT:
            continue
        said = record.details.get("conversion") or {}
        told = bool(said.get("not_converted") or said.get("marked_lines"))
        found[case] = Conversion(source, record, _verdict(source, record), told)
    return found


def _verdict(torch: Record, converted: Record) -> str:
    if (torch.outcome_label, _kind(torch)) == (converted.outcome_label, _kind(converted)):
        # the same memory behaviour is not the same program when the values it shares are not the same
        return "keeps" if _values_agree(torch, converted) else "changes"
    # the converted program stops where torch's did not, or stops for another reason (a rejection where torch
    # raised its safety check): it does not run as the torch program did
    return "breaks" if converted.outcome in _STOPS else "changes"


def _values_agree(torch: Record, converted: Record) -> bool:
    """Whether a memory cell's recorded values fit the reference on both sides alike (a cell of values is
    compared by its outcome: silent-correct or silent-wrong)."""
    if converted.outcome not in _MEMORY:
        return True

    def fits(record: Record) -> dict[str, object]:
        return {o.get("name"): o.get("matches_reference") for o in record.observations if "matches_reference" in o}

    return fits(torch) == fits(converted)


def _kind(record: Record) -> str | None:
    return record.exception.kind if record.outcome == "raises" and record.exception else None
