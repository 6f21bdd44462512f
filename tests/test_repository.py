"""The repository travels: what git tracks stays small enough to copy to a machine with an accelerator (the
GPU column is run there from a copy of the working tree, 64 MiB in all)."""

from __future__ import annotations

import subprocess

import pytest

from .committed import ROOT

#: The most the tracked files may weigh: 48 MiB, leaving room under the 64 MiB a copy may carry.
LIMIT = 48 * 1024 * 1024


def test_the_tracked_files_stay_under_48_mib() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    sizes = {}
    for name in listed.stdout.decode("utf-8").split("\0"):
        path = ROOT / name
        if name and path.is_file() and not path.is_symlink():
            sizes[name] = path.stat().st_size
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert total < LIMIT, f"the tracked files weigh {total / 2**20:.1f} MiB (largest: {largest})"
