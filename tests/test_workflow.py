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


def _workflow() -> dict:
    import yaml

    return yaml.safe_load((ROOT / ".github" / "workflows" / "matrix.yml").read_text(encoding="utf-8"))


def test_the_report_job_publishes_the_site_it_builds_to_github_pages() -> None:
    jobs = _workflow()["jobs"]
    steps = jobs["report"]["steps"]
    built = next(i for i, step in enumerate(steps) if str(step.get("run", "")).startswith("tox -e report"))
    [upload] = [i for i, step in enumerate(steps)
                if str(step.get("uses", "")).startswith("actions/upload-pages-artifact@")]
    assert built < upload and steps[upload]["with"]["path"] == "reports/site"
    assert "conformance site" in (ROOT / "tox.ini").read_text(encoding="utf-8").split("[testenv:report]")[1]
    [deploy] = [name for name, job in jobs.items()
                if any(str(step.get("uses", "")).startswith("actions/deploy-pages@") for step in job["steps"])]
    job = jobs[deploy]
    assert job["needs"] == "report"
    assert job["permissions"] == {"pages": "write", "id-token": "write"}
    assert job["environment"]["name"] == "github-pages"


def test_each_column_job_uploads_its_programs_beside_its_results() -> None:
    [upload] = [step for step in _workflow()["jobs"]["matrix"]["steps"]
                if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    paths = upload["with"]["path"].split()
    assert paths == ["reports/results/*.jsonl", "reports/results/*.programs.json"]
