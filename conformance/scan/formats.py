"""How findings are written: ``text`` for a person, ``json`` for a program, ``sarif`` for GitHub code
scanning, ``github`` for workflow annotations."""

from __future__ import annotations

import json
from typing import Any, Callable

from conformance.scan.rules import RULES
from conformance.scan.scanner import Finding, ScanResult

__all__ = ["FORMATS", "render"]


def _case_words(finding: Finding) -> str:
    """The case, and the others the code matches as well (the scanner cannot tell them apart here)."""
    words = finding.case if finding.exact else f"like {finding.case}"
    return words + (f"; or {', '.join(finding.also)}" if finding.also else "")


def text(result: ScanResult, question: str) -> str:
    out: list[str] = []
    for f in result.findings:
        out.append(f"{f.path}:{f.line}:{f.column}: {f.code} {f.snippet} — {f.says} ({_case_words(f)})")
        facts = "; ".join(f.behaviour)
        if f.conversion:
            facts += f"; {f.conversion}"
        out.append(f"    {facts}")
        if f.cause:
            out.append(f"    why: {f.cause}")
        fix = ""
        if f.remedy_lines:
            fix = f"write instead ({f.remedy_framework}): {'; '.join(f.remedy_lines)}      "
        out.append(f"    {fix}reproduce: {f.reproduce}")
    out.append(_summary(result, question))
    return "\n".join(out) + "\n"


def _summary(result: ScanResult, question: str) -> str:
    parts = [f"{len(result.findings)} finding(s) in {result.files} file(s) ({result.lines} lines), {question}"]
    if result.quiet:
        parts.append(f"{result.quiet} more place(s) match a case that does not answer this question")
    if result.unmatched:
        parts.append(f"{len(result.unmatched)} place(s) match a rule but no case closely enough to say what "
                     f"happens (--format json lists them)")
    if result.skipped:
        parts.append(f"{len(result.skipped)} file(s) skipped")
    if result.errors:
        parts.append(f"{len(result.errors)} file(s) could not be read: "
                     + "; ".join(f"{p}: {m}" for p, m in result.errors[:3]))
    return "; ".join(parts)


def _finding_data(f: Finding) -> dict[str, Any]:
    return {"path": f.path, "line": f.line, "column": f.column, "code": f.code, "rule": f.title, "message": f.says,
            "code_line": f.snippet, "case": f.case, "exact": f.exact, "also": list(f.also), "framework": f.framework,
            "mode": f.mode, "question": f.question.kind, "from": str(f.question.source),
            "to": str(f.question.target) if f.question.target else None,
            "cells": {"from": f.cells[0], "to": f.cells[1]}, "behaviour": list(f.behaviour), "cause": f.cause,
            "paconvert": f.conversion, "remedy": f.remedy, "remedy_framework": f.remedy_framework,
            "write_instead": list(f.remedy_lines), "reproduce": f.reproduce}


def as_json(result: ScanResult, question: str) -> str:
    data = {"question": question, "files": result.files, "lines": result.lines,
            "findings": [_finding_data(f) for f in result.findings],
            "unmatched": [{"path": p, "line": s.line, "column": s.column, "code": s.code, "message": s.says,
                           "facets": dict(s.facets)} for p, s in result.unmatched],
            "quiet": result.quiet,
            "skipped": [{"path": p, "why": why} for p, why in result.skipped],
            "errors": [{"path": p, "error": m} for p, m in result.errors]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def sarif(result: ScanResult, question: str) -> str:
    """SARIF 2.1.0, as GitHub code scanning reads it: one rule per code, one result per finding."""
    rules = [{"id": r.code, "name": type(r).__name__, "shortDescription": {"text": r.title}} for r in RULES]
    results = []
    for f in result.findings:
        message = f"{f.says} ({_case_words(f)}). {'; '.join(f.behaviour)}."
        if f.cause:
            message += f" Why: {f.cause}."
        if f.remedy_lines:
            message += f" Write instead ({f.remedy_framework}): {'; '.join(f.remedy_lines)}."
        results.append({
            "ruleId": f.code, "level": "warning", "message": {"text": message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path.replace("\\", "/")},
                                                "region": {"startLine": f.line, "startColumn": f.column}}}],
            "properties": {"case": f.case, "question": question},
        })
    log = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "conformance scan", "rules": rules}},
                     "results": results}]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github(result: ScanResult, question: str) -> str:
    """GitHub Actions workflow commands: one ``::warning`` annotation per finding."""
    out = []
    for f in result.findings:
        message = f"{f.says} ({_case_words(f)}). {'; '.join(f.behaviour)}."
        if f.remedy_lines:
            message += f" Write instead ({f.remedy_framework}): {'; '.join(f.remedy_lines)}"
        out.append(f"::warning file={_escape_property(f.path)},line={f.line},col={f.column},"
                   f"title={_escape_property(f.code + ' ' + f.case)}::{_escape_data(message)}")
    out.append(_summary(result, question))
    return "\n".join(out) + "\n"


FORMATS: dict[str, Callable[[ScanResult, str], str]] = {"text": text, "json": as_json, "sarif": sarif,
                                                         "github": github}


def render(result: ScanResult, question: str, form: str) -> str:
    return FORMATS[form](result, question)
