"""Finding case files: a module of its own, light to import (the command line counts files before it
starts the workers, and before it imports the case model and its NumPy)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

__all__ = ["find_case_files"]


def find_case_files(paths: Iterable[Path | str]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file under *paths*, sorted, so runs are reproducible."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        else:
            found.append(path)
    return sorted(dict.fromkeys(found))
