"""The committed matrix, as the tests read it: the results files the tox envs write, and nothing else.

A run leaves its own files in reports/results (``latest.jsonl`` of the main job, any ``--results`` a user
gave): the tests read only the files a tox env of ``env_list`` writes, so what a run left in the tree never
changes what they check.
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance.adapter import adapter_classes
from conformance.records.record import EAGER

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "reports" / "results"
BASELINES = ROOT / "reports" / "baselines"
DEVICES = ("cpu", "gpu")


def _expand(spec: str) -> list[str]:
    """tox's brace expansion: ``compiled-{torch213,paddle331}`` -> two names."""
    match = re.search(r"\{([^{}]*)\}", spec)
    if not match:
        return [spec]
    return [name for part in match.group(1).split(",")
            for name in _expand(spec[:match.start()] + part.strip() + spec[match.end():])]


def tox_columns() -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Every results file set a tox env of ``env_list`` writes: ``torch213`` (eager) and ``torch213 compiled``
    (every compiled mode of the framework, where it has one) -> (framework, version, modes)."""
    text = (ROOT / "tox.ini").read_text()
    listed = re.search(r"^env_list\s*=\s*(.*?)\n(?=\S|\n)", text, re.MULTILINE | re.DOTALL).group(1)
    names = [name for spec in re.split(r",\s*(?![^{]*\})", " ".join(listed.split())) for name in _expand(spec)]
    versions = dict(re.findall(r"^\s*(\w+):\s*VERSION\s*=\s*(\S+)", text, re.MULTILINE))
    columns = {}
    for name in names:
        if name not in versions:
            continue  # tests, report, ...: no column of its own
        framework = re.match(r"[a-z]+", name).group(0)
        columns[name] = (framework, versions[name], (EAGER,))
        modes = tuple(adapter_classes()[framework].modes)
        if modes:
            columns[f"{name} compiled"] = (framework, versions[name], modes)
    return columns


def results_file(framework: str, version: str, device: str, modes: tuple[str, ...]) -> Path:
    return RESULTS / f"{framework}-{version}-{device}{'' if modes == (EAGER,) else '-compiled'}.jsonl"


def committed_results() -> list[Path]:
    """The results files of every tox env that are present, in a stable order."""
    paths = {results_file(framework, version, device, modes)
             for framework, version, modes in tox_columns().values() for device in DEVICES}
    return sorted(path for path in paths if path.is_file())
