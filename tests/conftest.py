"""Shared fixtures: which frameworks are installed (found without importing them)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance.adapter import adapter_classes, is_installed

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "cases" / "seed"
#: The installed frameworks (a converter's column, PaConvert's, is not one: CONVERTERS).
INSTALLED = [name for name, cls in adapter_classes().items() if is_installed(cls) and not cls.converter]
CONVERTERS = [name for name, cls in adapter_classes().items() if is_installed(cls) and cls.converter]


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tests keep programs that ``conformance show`` renders in a folder of their own, never the user's."""
    import os

    os.environ["CONFORMANCE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["CONFORMANCE_KEY_FILE"] = str(tmp_path_factory.mktemp("key") / "cache-key")


def framework_params() -> list:
    """One param per registered framework, skipped with a reason when it is not installed.  A converter's
    column (PaConvert's: what a tool makes of the torch program) is not a framework: whatever its converted
    program does is a finding, so the frameworks' contract tests do not apply to it (tests/test_paconvert.py)."""
    return [pytest.param(name, marks=pytest.mark.skipif(name not in INSTALLED,
                                                        reason=f"{name} is not installed"))
            for name, cls in adapter_classes().items() if not cls.converter]


@pytest.fixture
def write_case(tmp_path: Path):
    """Write a case file under tmp_path/cases/ and return its path."""

    def write(text: str, name: str | None = None) -> Path:
        directory = tmp_path / "cases" / "t"
        directory.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text)
        if name is None:
            name = text.split("id:", 1)[1].split()[0] + ".yaml"
        path = directory / name
        path.write_text(text)
        return path

    return write


@pytest.fixture
def full_filesystem(tmp_path: Path):
    """A real 256 KiB tmpfs, mounted for the test (root only; skipped where mounting is not allowed)."""
    import subprocess

    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(directory: Path, leave: int = 0) -> None:
    """Fill the filesystem of *directory*, leaving about *leave* bytes free."""
    import os

    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            try:
                while os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize > leave + size:
                    os.write(fd, b"\0" * size)
                if not leave:
                    while os.write(fd, b"\0" * size):
                        pass
            except OSError:
                continue
    finally:
        os.close(fd)
