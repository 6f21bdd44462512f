"""The files the commands write: checked before the work, owned while it runs, never deleted.

Every output a user names (a run's results and summary, a report, its heatmap, a diff) is checked
before any work starts, so a path that cannot be written ends the command with ``error: cannot write
PATH: REASON`` and nothing half written.  For a run in particular:

* The results file and the summary must each be a regular file or not exist yet (``/dev/null`` is
  accepted as "keep nothing"); they must not be the same file.  A path that is a FIFO, a device or a
  folder is refused before any cell runs: nothing at a path the run did not create is ever removed.
* A run holds an exclusive lock on its results file from before it empties it to its end, so a
  second run on the same file is refused at once, with the reason, instead of emptying the file
  under the first one.
* The summary is written once, at the end, by replacing the file whole (a new file renamed over it),
  so a run stopped while writing it leaves the old summary or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterable

from conformance.settings import OptionError

__all__ = ["AppendFile", "OutputError", "ResultsLock", "check_outputs", "check_writable", "prepare", "replace_file",
           "write_file"]


class OutputError(OptionError):
    """A file that cannot be written: which path, and why in a few words (a one-line usage error)."""

    def __init__(self, path: Path | str, reason: OSError | str) -> None:
        if isinstance(reason, OSError):
            reason = reason.strerror or str(reason)
        super().__init__(f"cannot write {path}: {reason}")
        self.path, self.reason = str(path), str(reason)


def prepare(path: Path | str) -> Path:
    """Create the parent folders of *path*; refuse a path that is a folder."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(path, "Is a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(path, exc) from None
    return path


def check_writable(path: Path | str, *, keep: bool = False) -> None:
    """Fail now, with the reason, if *path* cannot be written (tried, not guessed: root ignores modes).
    The file is created to try it and, unless *keep*, removed again when it did not exist before: a
    check never leaves an output that looks like a result, and never removes one it did not create."""
    path = prepare(path)
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
        if not existed and not keep:
            path.unlink()
    except OSError as exc:
        raise OutputError(path, exc) from None


def _kind(path: Path) -> str | None:
    """What is at *path* when it is not a regular file (None: a regular file, or nothing)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError(path, exc) from None
    if stat.S_ISREG(mode):
        return None
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_outputs(results: Path, summary: Path) -> None:
    """Refuse, in one line, outputs that a run would destroy or that would destroy each other."""
    for option, path in (("--results", results), ("--summary", summary)):
        if str(path) == os.devnull:
            continue
        kind = _kind(path)
        if kind is not None:
            raise OutputError(path, f"it is {kind}, not a regular file ({option} names the file to write)")
    if str(results) != os.devnull and _same(results, summary):
        raise OptionError(f"--summary and --results name the same file ({results}): the summary would replace "
                          f"the records")
    check_writable(results, keep=True)
    check_writable(summary)


def keep_previous(path: Path | str) -> Path | None:
    """Before a run replaces *path* (its results or summary), the previous content is kept beside it as
    ``NAME.previous`` (the one before that goes); None when there was nothing to keep.  A copy that cannot
    be made is an :class:`OutputError`: the run stops before anything is lost."""
    path = Path(path)
    if _kind(path) is not None or not path.is_file() or path.stat().st_size == 0:
        return None
    aside = path.with_name(path.name + ".previous")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{aside.name}.", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputError(aside, exc) from None
    try:
        shutil.copyfile(path, temporary)
        os.replace(temporary, aside)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(aside, exc) from None
    return aside


class ResultsLock:
    """An exclusive lock on a results file for the length of a run (``flock``: released by the kernel
    whatever ends the process).  pytest-xdist workers append under record locks of their own
    (:class:`conformance.records.results.ResultsFile`), which this lock does not block."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        if str(self.path) == os.devnull:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OptionError(f"another conformance run is writing {self.path}; wait for it to end, or give "
                              f"this run its own --results") from None
        except OSError as exc:  # a file system without locks: the run goes on unguarded
            os.close(fd)
            if exc.errno not in (getattr(os, "ENOLCK", 37), getattr(os, "EOPNOTSUPP", 95)):
                raise
            return
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class AppendFile:
    """A file held open for appending through a run, each piece going to disk in one write as it comes,
    never a part of one: a write cut short by a full disk is taken back.  *shared*: other processes append
    to the same file (pytest-xdist workers), so each write also takes the file's record lock (``lockf``;
    the run's own lock on a results file, :class:`ResultsLock`, is another kind).  Raises OSError."""

    def __init__(self, path: Path | str, shared: bool = True) -> None:
        self.path = Path(path)
        self.shared = shared
        self._fd: int | None = None

    def write(self, data: bytes) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                               0o666)
        if self.shared:
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
        try:
            end = os.lseek(self._fd, 0, os.SEEK_END)
            view = memoryview(data)
            try:
                while view:  # a write to a regular file takes it all; a short one is finished, never lost
                    view = view[os.write(self._fd, view):]
            except OSError:  # a full disk: the part written goes, so that the file holds whole pieces
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, end)
                raise
        finally:
            if self.shared:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_file(path: Path | str, text: str) -> None:
    """Write *text* as the whole content of *path*: a regular file is replaced in one rename (never half
    written); anything else accepted as an output (``/dev/null``) is written in place."""
    replace_file(path, [text])


def replace_file(path: Path | str, pieces: Iterable[str]) -> None:
    """:func:`write_file` of the text *pieces* make, written as they come (a large file is never held whole)."""
    path = prepare(path)
    try:
        if _kind(path) is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.writelines(pieces)
            return
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise OutputError(path, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(pieces)
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(path, exc) from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
