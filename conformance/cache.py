"""The user's cache folder: what this package keeps between runs to spare work it has done before.

Whatever is kept is keyed by the code of this package (and the Python running it), so a kept result
of other code is never used; a folder that cannot be written keeps nothing, and the work is done.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import shutil
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

__all__ = ["CACHE_ENV", "KEY_ENV", "cache_folder", "code_folder", "harness_fingerprint", "forget_other_code",
           "write_atomically", "seal", "unseal", "read_sealed", "write_sealed"]

CACHE_ENV = "CONFORMANCE_CACHE_DIR"
#: Where the key that seals kept entries lives: never in the cache folder, so that what is written there
#: cannot be made to pass for what this package kept.
KEY_ENV = "CONFORMANCE_KEY_FILE"
#: What other code kept is removed once it has not been written to for this long (seconds): a second
#: checkout of another version, used side by side, keeps its own meanwhile.
STALE_AFTER = 7 * 24 * 3600


def cache_folder() -> Path:
    """``$CONFORMANCE_CACHE_DIR``, else ``$XDG_CACHE_HOME/conformance``, else ``~/.cache/conformance``."""
    environ = os.environ
    return _cache_folder(environ.get(CACHE_ENV), environ.get("XDG_CACHE_HOME"), environ.get("HOME"))


@lru_cache(maxsize=16)
def _cache_folder(chosen: str | None, xdg_cache: str | None, home: str | None) -> Path:
    """:func:`cache_folder` for these values of its variables: worked out once (it is asked for each case)."""
    if chosen:
        return Path(chosen)
    base = xdg_cache or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "conformance")


def code_folder(kind: str) -> str:
    """Where this code keeps its entries of *kind* (``cases``, ``references``): a folder named after its
    fingerprint, in the cache's folder of that kind, which is cleared of what other code kept there once
    per process.  A string: pathlib interns every part of every path it parses, for the process's life."""
    return _code_folder(os.fspath(cache_folder()), kind)


@lru_cache(maxsize=16)
def _code_folder(cache: str, kind: str) -> str:
    root = os.path.join(cache, kind)
    forget_other_code(Path(root))
    return os.path.join(root, harness_fingerprint())


def _key_file() -> Path:
    """``$CONFORMANCE_KEY_FILE``, else ``$XDG_CONFIG_HOME/conformance/cache-key``, else under ``~/.config``."""
    environ = os.environ
    return _key_file_for(environ.get(KEY_ENV), environ.get("XDG_CONFIG_HOME"), environ.get("HOME"))


@lru_cache(maxsize=16)
def _key_file_for(chosen: str | None, xdg_config: str | None, home: str | None) -> Path:
    """:func:`_key_file` for these values of its variables: worked out once (it is asked for each entry)."""
    if chosen:
        return Path(chosen)
    base = xdg_config or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base, "conformance", "cache-key")


@lru_cache(maxsize=None)
def _signing_key(path: Path) -> bytes | None:
    """The user's own random key (made once, readable by the user alone); None where it cannot be had:
    then nothing is kept."""
    try:
        return path.read_bytes()[:64] or None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(32))
    except FileExistsError:  # another process made it meanwhile
        pass
    except OSError:
        return None
    try:
        return path.read_bytes()[:64] or None
    except OSError:
        return None


def seal(data: bytes) -> bytes | None:
    """*data* with a MAC under the user's key in front; None when there is no key (keep nothing then)."""
    key = _signing_key(_key_file())
    if key is None:
        return None
    return _mac(key, data) + b"\n" + data


def unseal(blob: bytes) -> bytes | None:
    """What :func:`seal` sealed, or None for anything else: unsealed, tampered with, or another key's."""
    key = _signing_key(_key_file())
    mac, newline, data = blob.partition(b"\n")
    if key is None or not newline:
        return None
    return data if hmac.compare_digest(mac, _mac(key, data)) else None


def _mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of *data* in hex, by the one-shot C function (``hmac.new`` costs several times more)."""
    return hmac.digest(key, data, "sha256").hex().encode("ascii")


def name_part(text: str) -> str:
    """*text* as part of a cache file's name: a framework version such as ``2.13.0+cpu`` keeps its letters,
    digits and ``-._``, every other character an underscore."""
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in text)


def read_sealed(path: str | os.PathLike[str]) -> bytes | None:
    """What :func:`write_sealed` kept at *path*, or None: nothing there, unreadable, or not sealed by this
    user (planted or edited)."""
    try:
        with open(path, "rb") as handle:
            return unseal(handle.read())
    except OSError:
        return None


def write_sealed(path: str | os.PathLike[str], data: bytes) -> bool:
    """Keep *data* at *path*, sealed and written whole (:func:`write_atomically`); False when nothing was
    kept (no key, or a folder that cannot be written)."""
    sealed = seal(data)
    return sealed is not None and write_atomically(path, sealed)


@lru_cache(maxsize=None)
def harness_fingerprint() -> str:
    """A hash of this package's code and the Python running it."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def write_atomically(path: str | os.PathLike[str], data: bytes) -> bool:
    """Write *path* whole or not at all (a reader meanwhile sees the old file or the new); False when the
    folder cannot be written.  (A path may be a plain string: pathlib interns every part of every path it
    parses, for the life of the process, and a cache names one file per entry.)"""
    temporary = None
    try:
        folder = os.path.dirname(os.fspath(path)) or "."
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, prefix=".tmp-") as handle:
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
