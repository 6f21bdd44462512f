"""Defaults and checks shared by the pytest plugin and the command line (importing neither).

Both front ends read the same options through these functions, so a value means the same thing
(and is refused with the same one-line message) whichever way a run is started.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = ["DEVICES", "DEFAULT_RESULTS", "DEFAULT_SUMMARY", "DEFAULT_BASELINES", "INTERRUPTED", "BAD_INPUT",
           "OptionError", "seconds", "check_frameworks", "results_file", "baseline_dir",
           "CELLS_PER_PROCESS", "parallel_processes"]

DEVICES = ("cpu", "gpu")
DEFAULT_RESULTS = "reports/results/latest.jsonl"
DEFAULT_SUMMARY = "reports/summary.md"
DEFAULT_BASELINES = "reports/baselines"

#: ``conformance run`` exit statuses of its own; the others are pytest's (0 ok, 1 a baseline change or a
#: harness error, 3 internal error, 5 no cell ran).
BAD_INPUT = 2  # bad case files (the other cases still ran) or a usage error
INTERRUPTED = 130  # stopped by SIGINT or SIGTERM; the summary says so


class OptionError(ValueError):
    """An option value that cannot work; the message is one line naming the value."""


#: The shortest time limit a cell may have: a worker's round trip and the program's own start take some
#: hundredths of a second, so a shorter limit would record a program that only ran as a hang.
MIN_TIMEOUT = 0.5


def seconds(option: str, raw: str | float) -> float:
    """A timeout: a positive, finite number of seconds (``-1``, ``0``, ``nan``, ``inf`` are refused), of at
    least :data:`MIN_TIMEOUT` (``1e-9`` would call every program a hang: a fault of the setting, never a
    finding)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise OptionError(f"{option}: not a positive, finite number of seconds: {str(raw)!r}")
    if value < MIN_TIMEOUT:
        raise OptionError(f"{option}: {str(raw)!r} seconds is shorter than any program takes to run; give at "
                          f"least {MIN_TIMEOUT:g}")
    return value


def timeout_argument(raw: str) -> float:
    """``--timeout`` as an argparse type (``run``, ``fuzz``): bad input is refused before any work."""
    import argparse

    try:
        return seconds("--timeout", raw)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--timeout: ")) from None


EAGER = "eager"
#: Every compiled mode of each framework (``docs/modes.md``).
COMPILED = "compiled"


def modes_for(chosen: Iterable[str], framework_modes: Iterable[str]) -> list[str]:
    """The modes a framework runs: ``eager``, its own compiled modes named, or all of them for ``compiled``."""
    available = list(framework_modes)
    out: list[str] = []
    for mode in chosen:
        wanted = available if mode == COMPILED else [mode] if mode == EAGER or mode in available else []
        out += [m for m in wanted if m not in out]
    return out


def check_modes(chosen: Iterable[str], adapters: Mapping[str, Any]) -> list[str]:
    """The chosen modes, each one eager, ``compiled`` or some adapter's; else a one-line error."""
    known = {EAGER, COMPILED} | {m for cls in adapters.values() for m in getattr(cls, "modes", {})}
    chosen = list(dict.fromkeys(chosen))
    for mode in chosen:
        if mode not in known:
            raise OptionError(f"unknown mode {mode!r}; choose from {', '.join(sorted(known))}")
    return chosen


def check_framework_modes(frameworks: Iterable[str], modes: Iterable[str], adapters: Mapping[str, Any]) -> None:
    """A framework named for a run with none of the run's modes would run no cell: one line instead."""
    modes = list(modes) or [EAGER]
    for name in frameworks:
        own = list(getattr(adapters.get(name), "modes", {}))
        if not modes_for(modes, own):
            raise OptionError(f"{name} has no mode {' or '.join(map(repr, modes))} (its modes: "
                              f"{', '.join([EAGER, *own])}), so it would run no cell")


def check_frameworks(chosen: Iterable[str], known: Iterable[str]) -> list[str]:
    """The chosen frameworks, each one with an adapter; else an error listing the adapters there are."""
    known = sorted(known)
    chosen = list(dict.fromkeys(chosen))
    for name in chosen:
        if name not in known:
            raise OptionError(f"unknown framework {name!r}; installed adapters: {', '.join(known) or 'none'}")
    return chosen


def results_file(option: str | None) -> str:
    """The results file: ``--results``, else ``CONFORMANCE_RESULTS``, else the default."""
    return option or os.environ.get("CONFORMANCE_RESULTS") or DEFAULT_RESULTS


def baseline_dir(option: str | None, root: Path) -> tuple[Path, bool]:
    """The baseline folder (``--baselines``, else ``CONFORMANCE_BASELINES``, else the default) and
    whether it was asked for; the default is used only when it exists."""
    raw = option or os.environ.get("CONFORMANCE_BASELINES")
    return root / (raw or DEFAULT_BASELINES), bool(raw)


#: Cells below which one more pytest-xdist process cannot win back its start-up (a pytest start, and an
#: import of every framework and of the reference, seconds each), measured by benchmarks/floor.py.
CELLS_PER_PROCESS = 500


def parallel_processes(cells: int, frameworks: int, cores: int | None = None) -> tuple[int, str]:
    """The number of pytest-xdist processes for ``-n auto`` (1: run serially) and why.

    One process already runs every framework's worker and the reference service at the same time as
    it judges (a pipeline of ``frameworks + 1`` busy processes), so another process pays only where
    cores are left over for a whole second pipeline and there are enough cells to win back its
    start-up."""
    cores = cores or os.cpu_count() or 1
    per_pipeline = frameworks + 1
    by_cores = cores // per_pipeline
    by_cells = cells // CELLS_PER_PROCESS
    chosen = max(1, min(by_cores, by_cells))
    facts = f"{cores} cores, {frameworks} framework(s), {cells} cells"
    if chosen > 1:
        return chosen, f"{chosen} processes ({facts}: a pipeline of {per_pipeline} processes each)"
    if by_cores < 2:
        why = (f"one process already keeps {min(per_pipeline, cores)} of the {cores} cores busy (a worker per "
               f"framework and the reference run while it judges); another would import every framework again")
    else:
        why = f"fewer than {2 * CELLS_PER_PROCESS} cells cannot win back another process's start-up"
    return 1, f"serial ({facts}: {why})"
