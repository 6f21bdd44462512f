"""``conformance site``: the static site of the matrix, written to one folder.

The inputs are checked before any work (one line and exit 2 on bad input, as every command does); the
pages are written whole, in a stable order and with no date in them, so the same results give
byte-identical files and CI can tell a committed site that is stale; pages an earlier build wrote for
cases or steps that are gone are removed (only pages that carry the site's mark).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from conformance.case.load import CaseError, load_cases
from conformance.outputs import check_writable, write_file
from conformance.records.results import ResultsError, latest_by_cell
from conformance.report.diff import BadInput
from conformance.report.render import load_sources
from conformance.settings import OptionError
from conformance.site.assets import ASSETS, asset
from conformance.site.case_page import case_file, render_case
from conformance.site.html import MARK
from conformance.site.index_page import render_index
from conformance.site.model import gather
from conformance.site.search import INDEX_FILE, render_search_index
from conformance.site.steps import upgrade_steps
from conformance.site.upgrade_pages import render_step, render_steps_index, step_file

__all__ = ["Built", "SiteError", "build_site", "check_inputs", "render_site"]

#: The folders of generated pages, where a build removes the pages of an earlier one that are gone.
_PAGE_FOLDERS = ("cases", "upgrades")


class SiteError(OptionError):
    """Input the site cannot be built from (one line: which file or folder, and why)."""


@dataclass
class Built:
    """What a build wrote."""

    output: Path
    files: list[str]
    cases: int
    steps: int
    removed: list[str] = field(default_factory=list)
    #: Case files that could not be read (the other cases still have their pages).
    errors: list[CaseError] = field(default_factory=list)


def check_inputs(results: Sequence[Path | str], case_folders: Sequence[Path | str], output: Path | str) -> None:
    """Refuse, before any work, what the build would fail on: no or unreadable results, a case folder that
    is not there, an output that is not a folder or cannot be written."""
    if not results:
        raise SiteError("no results files: run `conformance run` first, or name them with --results")
    unreadable = [str(p) for p in results if not Path(p).is_file() or not os.access(p, os.R_OK)]
    if unreadable:
        raise SiteError(f"cannot read results file(s): {', '.join(unreadable)}")
    missing = [str(p) for p in case_folders if not Path(p).exists()]
    if missing:
        raise SiteError(f"no such case folder: {', '.join(missing)}")
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise SiteError(f"cannot write {output}: it is not a folder (--output names the site's folder)")
    check_writable(output / "index.html")


def render_site(results: Sequence[Path | str], case_folders: Sequence[Path | str],
                controls: Sequence[Path | str] = ()) -> tuple[dict[str, str], int, int, list[CaseError]]:
    """Every file of the site (its path in the folder -> its text), the numbers of case and step pages, and the
    case files that could not be read.  Raises :class:`SiteError` for results that cannot be read."""
    try:
        records, sources = load_sources(list(results))
        latest = list(latest_by_cell(records).values())
        cases, errors = load_cases(list(case_folders))
        site = gather(cases, latest, list(results), list(case_folders))
        steps = upgrade_steps(list(results), sources, list(controls))
    except (ResultsError, BadInput) as exc:
        raise SiteError(str(exc)) from None
    files = {name: asset(name) for name in ASSETS}
    files[INDEX_FILE] = render_search_index(site)
    files["index.html"] = render_index(site, steps)
    for data in site.cases:
        files[case_file(data.case.id)] = render_case(data, site)
    titles = {data.case.id: data.case.title for data in site.cases}
    files["upgrades/index.html"] = render_steps_index(steps)
    for step in steps:
        files[step_file(step)] = render_step(step, steps, titles)
    return dict(sorted(files.items())), len(site.cases), len(steps), errors


def _stale(output: Path, written: set[str]) -> list[Path]:
    """Pages of an earlier build that this one did not write: files of the page folders that carry the mark."""
    found = []
    for folder in _PAGE_FOLDERS:
        for path in sorted((output / folder).glob("*.html")):
            if path.relative_to(output).as_posix() in written or not path.is_file() or path.is_symlink():
                continue
            try:
                with open(path, encoding="utf-8") as handle:
                    handle.readline()
                    marked = handle.readline().rstrip("\n") == MARK
            except (OSError, UnicodeDecodeError):
                continue
            if marked:
                found.append(path)
    return found


def build_site(results: Sequence[Path | str], case_folders: Sequence[Path | str], output: Path | str,
               controls: Sequence[Path | str] = ()) -> Built:
    """Check the inputs, render the site and write it to *output*.  Raises :class:`SiteError` or
    :class:`~conformance.outputs.OutputError`."""
    check_inputs(results, case_folders, output)
    files, cases, steps, errors = render_site(results, case_folders, controls)
    output = Path(output)
    for name, text in files.items():
        write_file(output / name, text)
    removed = _stale(output, set(files))
    for path in removed:
        path.unlink()
    return Built(output, list(files), cases, steps, [p.relative_to(output).as_posix() for p in removed], errors)
