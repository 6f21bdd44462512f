"""What a conformance run reads and keeps while it runs: its options as the run reads them (the flag, then
the environment, then the default), the stash keys more than one part of the run shares, and its engine.

Every other part of the run (the hooks in ``conformance/plugin.py``, start.py, items.py, finish.py) reads
these; this module imports none of them.  A stash key that one module alone uses is kept beside its use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.adapter import adapter_classes, is_installed
from conformance.engine import DEFAULT_TIMEOUT, Engine
from conformance.records.baseline import Baselines
from conformance.settings import (DEFAULT_SUMMARY, DEVICES, EAGER, OptionError, baseline_dir, check_frameworks,
                                  check_modes, results_file, seconds)

ACTIVE = pytest.StashKey[bool]()
PREVIOUS = pytest.StashKey[list]()  # where the outputs of the run before this one were kept
ENGINE = pytest.StashKey[Engine]()
SEEN_IDS = pytest.StashKey[dict]()
KEPT = pytest.StashKey[dict]()
_BASELINES = pytest.StashKey["Baselines | None"]()
RESULTS_FILE = pytest.StashKey["ResultsFile"]()
PRODUCED = pytest.StashKey[dict]()  # results on /dev/null: the slim record of each cell, for the summary
LOCK = pytest.StashKey["ResultsLock"]()  # this run's hold on its results file
PROGRAM_SPOOL = pytest.StashKey["ProgramSpool"]()  # where this process appends the programs of its cells
#: (framework, device) -> (the framework's version, why the device cannot run cells): columns with no items
ABSENT = pytest.StashKey[dict]()

Cell = tuple[str, str, str, str]  # case id, framework, device, mode: what --resume and the summary key on


def is_active(config: pytest.Config) -> bool:
    """Whether this run asked for the matrix; otherwise the plugin collects and writes nothing."""
    return bool(config.getoption("conformance") or config.getini("conformance"))


def listed(config: pytest.Config, option: str, env: str) -> list[str] | None:
    values = config.getoption(f"conformance_{option}")
    if values:
        return list(dict.fromkeys(values))
    raw = os.environ.get(env, "").strip()
    return [v.strip() for v in raw.split(",") if v.strip()] or None


def frameworks(config: pytest.Config) -> list[str]:
    classes = adapter_classes()
    chosen = listed(config, "framework", "CONFORMANCE_FRAMEWORKS")
    if chosen:
        return check_frameworks(chosen, classes)
    return [name for name, cls in classes.items() if is_installed(cls)] or list(classes)


def devices(config: pytest.Config) -> list[str]:
    chosen = listed(config, "device", "CONFORMANCE_DEVICES")
    for device in chosen or ():
        if device not in DEVICES:
            raise OptionError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    return chosen or list(DEVICES)


def modes(config: pytest.Config) -> list[str]:
    """The modes asked for (``eager`` by default); ``compiled`` stands for each framework's compiled modes."""
    return check_modes(listed(config, "mode", "CONFORMANCE_MODES") or [EAGER], adapter_classes())


def case_timeout(config: pytest.Config) -> float:
    raw = config.getoption("conformance_case_timeout")
    return DEFAULT_TIMEOUT if raw is None else seconds("--conformance-case-timeout", raw)


def results_path(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir, results_file(config.getoption("conformance_results")))


def keeps_programs(config: pytest.Config) -> bool:
    """Whether the run keeps its cells' programs beside its results file (records/programs.py): not when
    the results go to /dev/null."""
    return str(results_path(config)) != os.devnull


def summary_path(config: pytest.Config) -> Path:
    return Path(config.invocation_params.dir, config.getoption("conformance_summary") or DEFAULT_SUMMARY)


def baseline_folder(config: pytest.Config) -> tuple[Path, bool]:
    """The baseline directory, and whether it was asked for (else it is the default)."""
    return baseline_dir(config.getoption("conformance_baselines"), config.invocation_params.dir)


def baselines(config: pytest.Config) -> Baselines | None:
    """The baselines cells are checked against, or None (ignored, updating, or none present);
    one store per run, so each baseline file is read once."""
    if _BASELINES not in config.stash:
        directory, asked = baseline_folder(config)
        ignored = config.getoption("conformance_no_baselines") or config.getoption("conformance_update_baselines")
        config.stash[_BASELINES] = None if ignored or not (asked or directory.is_dir()) else Baselines(directory)
    return config.stash[_BASELINES]


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def cell(record: Mapping[str, Any]) -> Cell:
    return record["case"], record["framework"], record["device"], record.get("mode", EAGER)


# -- the workers: which process runs cells, and the engine that runs them -----------------------------

def runs_cells(config: pytest.Config) -> bool:
    """Whether this process runs cells itself (not an xdist controller, not --collect-only)."""
    distributing = getattr(config.option, "dist", "no") != "no" and is_controller(config)
    return config.stash.get(ACTIVE, False) and not distributing and not config.option.collectonly


def engine(config: pytest.Config) -> Engine:
    if ENGINE not in config.stash:
        config.stash[ENGINE] = Engine(timeout=case_timeout(config), keeps_programs=keeps_programs(config))
    return config.stash[ENGINE]


def prefetches(config: pytest.Config) -> bool:
    """Whether this process knows the cells it runs as it collects them (not an xdist worker, which is
    handed its items one batch at a time)."""
    return runs_cells(config) and not hasattr(config, "workerinput")
