"""Baselines: the recorded outcome of every cell for one framework version and device.

A baseline turns a known outcome into an expected one: with a baseline
present, a cell passes when its outcome matches (even a known silent-wrong) and
fails, explaining old vs new, when it changed.  One JSON file per column:
``<dir>/<framework>-<version>-<device>.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from conformance.records.results import latest_by_cell

__all__ = ["Baselines", "summarize"]


def summarize(record: dict[str, Any]) -> dict[str, Any]:
    """What a baseline keeps of a cell: the outcome and the facts that identify it."""
    details = record["details"]
    entry: dict[str, Any] = {"outcome": record["outcome"]}
    if "exception" in details:
        exc = details["exception"]
        entry["exception"] = exc["type"]
        entry["phase"] = exc["phase"]
    return entry


class Baselines:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, dict[str, Any] | None] = {}

    def file(self, framework: str, version: str, device: str) -> Path:
        return self.directory / f"{framework}-{version}-{device}.json"

    def load(self, framework: str, version: str, device: str) -> dict[str, Any] | None:
        path = self.file(framework, version, device)
        key = str(path)
        if key not in self._cache:
            self._cache[key] = json.loads(path.read_text()) if path.exists() else None
        return self._cache[key]

    def check(self, record: dict[str, Any]) -> str | None:
        """None when the cell matches its baseline or has none; else an old-vs-new message."""
        baseline = self.load(record["framework"], record["framework_version"], record["device"])
        if baseline is None:
            return None
        path = self.file(record["framework"], record["framework_version"], record["device"])
        old = baseline["cells"].get(record["case"])
        new = summarize(record)
        if old is None:
            return (f"{record['case']}: not in baseline {path}; new outcome {new['outcome']}. "
                    "Run with --update-baselines to record it.")
        if old != new:
            return (f"{record['case']} on {record['framework']} {record['framework_version']} "
                    f"({record['device']}) changed against baseline {path}:\n"
                    f"  old: {json.dumps(old, sort_keys=True)}\n  new: {json.dumps(new, sort_keys=True)}")
        return None

    def update(self, records: Iterable[dict[str, Any]]) -> list[Path]:
        """Rewrite the baseline of every column present in *records*."""
        columns: dict[tuple[str, str, str], dict[str, Any]] = {}
        for (case, framework, version, device), record in sorted(latest_by_cell(records).items()):
            columns.setdefault((framework, version, device), {})[case] = summarize(record)
        written = []
        self.directory.mkdir(parents=True, exist_ok=True)
        for (framework, version, device), cells in columns.items():
            path = self.file(framework, version, device)
            path.write_text(json.dumps({"framework": framework, "version": version, "device": device,
                                        "cells": cells}, indent=2, sort_keys=True) + "\n")
            self._cache.pop(str(path), None)
            written.append(path)
        return written

    def stale(self, records: Iterable[dict[str, Any]]) -> list[str]:
        """Baseline entries, in the columns these records ran, that match no case that ran."""
        ran: dict[tuple[str, str, str], set[str]] = {}
        for record in records:
            ran.setdefault((record["framework"], record["framework_version"], record["device"]),
                           set()).add(record["case"])
        stale = []
        for (framework, version, device), cases in sorted(ran.items()):
            baseline = self.load(framework, version, device)
            for case in sorted(set(baseline["cells"]) - cases if baseline else ()):
                stale.append(f"{self.file(framework, version, device)}: {case}")
        return stale
