"""Writing the files a user asked for, with a one-line error when that cannot be done.

``report --output``, ``--plot`` and ``diff --markdown`` name files the user
wants; a read-only directory, a parent that cannot be created or a path that
is a directory must end the command with ``error: cannot write PATH: REASON``,
not a traceback, and before any other output is half written.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["OutputError", "prepare", "check_writable", "write_text"]


class OutputError(Exception):
    """A file that cannot be written: which path, and why in a few words."""

    def __init__(self, path: Path | str, reason: OSError | str) -> None:
        if isinstance(reason, OSError):
            reason = reason.strerror or str(reason)
        super().__init__(f"cannot write {path}: {reason}")
        self.path, self.reason = str(path), str(reason)


def prepare(path: Path | str) -> Path:
    """Create the parent directories of *path*; refuse a path that is a directory."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(path, "it is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(path, exc) from None
    return path


def check_writable(path: Path | str) -> None:
    """Fail now, with the reason, if *path* cannot be written (tried, not guessed: root ignores modes)."""
    path = prepare(path)
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
        if not existed:
            path.unlink()
    except OSError as exc:
        raise OutputError(path, exc) from None


def write_text(path: Path | str, content: str) -> None:
    path = prepare(path)
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise OutputError(path, exc) from None
