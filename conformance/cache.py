"""The user's cache folder: what this package keeps between runs to spare work it has done before.

Whatever is kept is keyed by the code of this package (and the Python running it), so a kept result
of other code is never used; a folder that cannot be written keeps nothing, and the work is done.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_folder", "harness_fingerprint", "forget_other_code", "write_atomically"]

CACHE_ENV = "CONFORMANCE_CACHE_DIR"
#: What other code kept is removed once it has not been written to for this long (seconds): a second
#: checkout of another version, used side by side, keeps its own meanwhile.
STALE_AFTER = 7 * 24 * 3600


def cache_folder() -> Path:
    """``$CONFORMANCE_CACHE_DIR``, else ``$XDG_CACHE_HOME/conformance``, else ``~/.cache/conformance``."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "conformance")


@lru_cache(maxsize=None)
def harness_fingerprint() -> str:
    """A hash of this package's code and the Python running it."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def write_atomically(path: Path, data: bytes) -> bool:
    """Write *path* whole or not at all (a reader meanwhile sees the old file or the new); False when the
    folder cannot be written."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, prefix=".tmp-") as handle:
            temporary = handle.name
            handle.write(data)
        os.replace(temporary, path)
        return True
    except OSError:
        if temporary is not None:  # a full disk: the part written goes too
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return False


@lru_cache(maxsize=None)
def forget_other_code(folder: Path) -> None:
    """Remove what other versions of this package kept in *folder* (the entries whose names do not hold
    this code's fingerprint) and have not written to for STALE_AFTER: the cache does not grow with every
    version of the code.  Once per folder and process."""
    fingerprint, now = harness_fingerprint(), time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if fingerprint in entry.name or now - entry.stat(follow_symlinks=False).st_mtime < STALE_AFTER:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
