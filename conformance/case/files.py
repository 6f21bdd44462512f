"""Finding case files: a module of its own, light to import (the command line counts files before it
starts the workers, and before it imports the case model and its NumPy).

A folder is walked once, whatever links lead back into it: a symbolic link to a folder already being
walked (``a/up -> ..``) is not followed again, so links cannot make the walk endless or exponential.
Anything that is not a regular file (a FIFO named ``x.yaml``, a device) is still found, so that reading
it is refused with its reason instead of being skipped in silence.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

__all__ = ["CASE_SUFFIXES", "find_case_files", "walked_folders"]

CASE_SUFFIXES = (".yaml", ".yml")


def find_case_files(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` entry under *paths*, sorted, so runs are reproducible."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(_case_files(path))
        else:
            found.append(path)
    return sorted(dict.fromkeys(found))


def _case_files(root: Path) -> Iterator[Path]:
    for folder, entries in walked_folders(root):
        for entry in entries:
            if entry.name.endswith(CASE_SUFFIXES) and not _is_dir(entry):
                yield Path(entry.path)


def walked_folders(root: Path) -> Iterator[tuple[Path, list[os.DirEntry]]]:
    """Each folder under *root* (itself included) with its entries, each real folder once: a link to a
    folder already seen on this walk is not entered again."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = folder.stat()
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        yield folder, entries
        stack.extend(Path(e.path) for e in reversed(entries) if _is_dir(e))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows a link: a linked folder is walked (once)
    except OSError:
        return False
