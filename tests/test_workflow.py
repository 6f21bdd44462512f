"""The GitHub workflow runs every tox env that writes a column, each as its own job."""

from __future__ import annotations

import re

from .committed import ROOT, tox_columns


def test_the_workflow_matrix_is_every_column_env_of_tox() -> None:
    text = (ROOT / ".github" / "workflows" / "matrix.yml").read_text(encoding="utf-8")
    listed = re.search(r"^\s*env:\s*\[(.*?)\]", text, re.MULTILINE | re.DOTALL)
    assert listed, "no env list in the workflow's matrix"
    jobs = [name.strip() for name in listed.group(1).split(",") if name.strip()]
    envs = sorted({env.split()[0] for env in tox_columns()})
    assert sorted(jobs) == envs
    assert len(jobs) == len(set(jobs)), "an env listed twice"
