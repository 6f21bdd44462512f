"""The start of a conformance run: the baselines checked, both outputs checked and the results file taken
and started (emptied, or kept and trimmed to whole records with --resume), and the cells a resumed run
keeps from it.

``pytest_configure`` (``conformance/plugin.py``) calls these before any case is collected; the items
(items.py) append to the results file opened here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conformance.adapter import adapter_classes, installed, source_version
from conformance.outputs import ResultsLock, check_outputs, keep_previous
from conformance.records.baseline import UPDATE_OPTION, Baselines
from conformance.records.programs import ProgramSpool, start_spool
from conformance.records.record import split_build
from conformance.records.results import ResultsError, ResultsFile, read_records
from conformance.session.state import (LOCK, PREVIOUS, PROGRAM_SPOOL, RESULTS_FILE, Cell, baseline_folder, cell,
                                       results_path, summary_path)
from conformance.settings import OptionError


def check_baselines(config: pytest.Config) -> None:
    """A baseline folder asked for must exist (else the gate would be off without a word), and every
    baseline file in the folder in use must read, before any cell runs; --update-baselines rewrites
    unreadable ones (keeping their bytes beside them) and creates the folder."""
    directory, asked = baseline_folder(config)
    if config.getoption("conformance_no_baselines"):
        return
    updating = config.getoption("conformance_update_baselines")
    if asked and not directory.is_dir() and not updating:
        raise OptionError(f"no baseline folder {directory}; give an existing one, or {UPDATE_OPTION} to "
                          f"create it, or --no-baselines to judge every cell on its own")
    if directory.is_dir() and not updating:
        Baselines(directory).check_files()


def size(path: Path) -> int:
    """Where this run's records will begin in its results file (started, or trimmed to whole records)."""
    try:
        return 0 if str(path) == os.devnull else path.stat().st_size
    except OSError:
        return 0


_KEEPS = pytest.StashKey[bool]()  # see keeps_records


def keeps_records(config: pytest.Config) -> bool:
    """Whether the run keeps each cell's slim record in memory: only when its results go to /dev/null,
    from where the end of the run cannot read them back."""
    if _KEEPS not in config.stash:
        config.stash[_KEEPS] = str(results_path(config)) == os.devnull
    return config.stash[_KEEPS]


def start_outputs(config: pytest.Config) -> None:
    """Check both outputs (outputs.py), take the results file for this run, then start it: emptied, or
    kept and trimmed to whole records with --resume.  The summary is left as it is until the end."""
    results, summary = results_path(config), summary_path(config)
    check_outputs(results, summary)
    lock = ResultsLock(results)
    lock.acquire()  # before the file is emptied: a second run on it is refused, not let loose on it
    config.stash[LOCK] = lock
    if str(results) == os.devnull:
        return
    start_spool(results, resume=config.getoption("conformance_resume"))
    if config.getoption("conformance_resume"):
        _drop_torn_tail(results)
    else:
        kept = keep_previous(results)  # an earlier run's records are never emptied away without a copy
        if kept is not None:
            config.stash[PREVIOUS] = [f"the previous run's results: {kept}"]
        with open(results, "r+b") as handle:  # records are appended as cells finish
            handle.truncate(0)


def keep_untouched(config: pytest.Config) -> None:
    """A run that ran no cell (every device it was asked for is absent, --collect-only, a -k that matches
    nothing) leaves the results file as it found it: the empty one it began is removed, and a previous one
    it set aside comes back.  A resumed run keeps the file it found, unless that holds no record (a
    device absent here: no empty file of that column is left behind)."""
    results = results_path(config)
    if str(results) == os.devnull:
        return
    if config.getoption("conformance_resume"):
        try:
            if results.is_file() and results.stat().st_size == 0:
                results.unlink()
        except OSError:
            pass
        return
    try:
        if results.is_file() and results.stat().st_size == 0:
            results.unlink()
            aside = results.with_name(results.name + ".previous")
            if config.stash.get(PREVIOUS, None) and aside.is_file():
                os.replace(aside, results)
                config.stash[PREVIOUS] = []
    except OSError:  # what cannot be tidied stays as it is: nothing is lost either way
        pass


def _drop_torn_tail(path: Path) -> None:
    """Cut a record that an interrupted write left without its newline, so appends start clean."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def finished_cells(path: Path, chosen: list[str]) -> dict[Cell, dict[str, Any]]:
    """The cells a results file already holds (the latest record of each), for --resume.  Every line
    must be a record (a foreign line is refused, naming it), and the records of a framework this run
    runs must be of the version installed here: a resumed run never mixes two versions in one column."""
    kept: dict[Cell, dict[str, Any]] = {}
    if not path.exists() or str(path) == os.devnull:
        return kept
    try:
        records = list(read_records([path], torn_ok=True))
    except ResultsError as exc:
        raise OptionError(f"cannot resume from {exc}") from None
    versions = {name: installed(name)[1] for name in chosen}
    sources = {name: source_version(name) for name in chosen}  # a converter's column: the torch that wrote it
    for record in records:
        framework, version = record["framework"], split_build(record["framework_version"])[0]
        if framework in versions and versions[framework] not in (None, version):
            raise OptionError(f"cannot resume from {path}: it holds records of {framework} {version}, and this "
                              f"environment has {framework} {versions[framework]}; give this run its own --results")
        written_by = split_build(str((record.get("run_info") or {}).get("source_version") or ""))[0]
        if sources.get(framework) and written_by and written_by != sources[framework]:
            raise OptionError(f"cannot resume from {path}: its {framework} records are of programs written by "
                              f"{adapter_classes()[framework].source} {written_by}, and this environment has "
                              f"{sources[framework]}; give this run its own --results")
        kept[cell(record)] = record
    return kept


def results_file(config: pytest.Config) -> ResultsFile:
    """This process's results file, opened once for the run."""
    if RESULTS_FILE not in config.stash:
        config.stash[RESULTS_FILE] = ResultsFile(results_path(config), shared=hasattr(config, "workerinput"))
    return config.stash[RESULTS_FILE]


def program_spool(config: pytest.Config) -> ProgramSpool:
    """Where this process appends the program of each cell it runs, opened once for the run."""
    if PROGRAM_SPOOL not in config.stash:
        config.stash[PROGRAM_SPOOL] = ProgramSpool(results_path(config), shared=hasattr(config, "workerinput"))
    return config.stash[PROGRAM_SPOOL]
