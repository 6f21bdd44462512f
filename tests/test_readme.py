"""The README as a newcomer reads it: short, its numbers written from the catalogue and the committed results
(never stale), and every page it and the docs link to there."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.report.readme import (COST_BEGIN, COST_END, COST_FILE, current_block, current_cost,
                                       quick_start_commands, tox_dependencies, with_block)

from .conftest import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (outside code blocks)."""
    found, fence = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fence = fence != line.startswith("```")
        if not fence and (m := re.match(r"#{1,6} (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return found


def test_the_readme_s_numbers_are_what_the_catalogue_and_the_committed_results_give() -> None:
    text = README.read_text(encoding="utf-8")
    assert with_block(text, current_block(ROOT)) == text, (
        "README.md's numbers are stale: run `python -m conformance.report.readme README.md` (tox -e report)")


def test_the_readme_is_short_and_finds_every_page_of_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    written = text.split("<!-- the numbers below")[0] + text.split("<!-- end of the written numbers -->")[1]
    written = written.split(COST_BEGIN)[0] + written.split(COST_END)[1]
    assert len(written.splitlines()) <= 200, "the README is for a newcomer: move the rest into docs/"
    linked = {target.split("#")[0] for target in _LINK.findall(text)}
    assert not [page.name for page in PAGES[1:] if f"docs/{page.name}" not in linked]


def test_every_link_between_the_readme_and_the_docs_leads_somewhere() -> None:
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_set_up_cost_the_readme_states_is_the_one_measured_for_these_commands_and_environments() -> None:
    """The quick start's disk and minutes come from benchmarks/setup_cost.py's runs of the two commands on a
    fresh clone, from PyPI (torch's CUDA build, what a new machine gets) and from a local CPU wheel; a change
    to the commands or to the environments' dependencies makes the measurement stale."""
    import json

    text = README.read_text(encoding="utf-8")
    assert with_block(text, current_cost(ROOT), COST_BEGIN, COST_END) == text, (
        "README.md's set-up cost is stale: run `python -m conformance.report.readme README.md` (tox -e report)")
    measured = json.loads((ROOT / COST_FILE).read_text(encoding="utf-8"))["measured"]
    assert {m["torch_from"] for m in measured} >= {"PyPI"}, "what a fresh machine pays (torch from PyPI) is measured"
    commands = quick_start_commands(text)
    assert [env for env, _ in commands] == ["matrix", "tests"]
    deps = tox_dependencies((ROOT / "tox.ini").read_text(encoding="utf-8"))
    for found in measured:
        assert [(c["env"], c["command"]) for c in found["commands"]] == commands, (
            f"{found['torch_from']}: measured other commands; run benchmarks/setup_cost.py again")
        assert found["deps"] == deps, (f"{found['torch_from']}: measured with other dependencies than tox.ini's; run "
                                       "benchmarks/setup_cost.py again")
        assert all(c["seconds"] > 0 and c["env_bytes"] > 0 and c["ran_seconds"] for c in found["commands"])
        assert found["commands"][0]["status"] == 0, f"{found['torch_from']}: the main job failed when measured"
    pypi = next(m for m in measured if m["torch_from"] == "PyPI")
    assert all(c["torch_build"].startswith("cu") for c in pypi["commands"]), "PyPI's torch 2.13.0 is a CUDA build"
    assert "of disk and" in current_cost(ROOT) and "Not measured yet" not in current_cost(ROOT)


def test_the_readme_s_gpu_figures_are_the_committed_gpu_run_s_and_its_bound_the_command_s() -> None:
    """Seed 004's figures as the GPU machine measured them (its committed log), and the GPU command's "at most 8
    minutes" as the sum of its phases' default bounds (tools/gpu_column.sh)."""
    text = README.read_text(encoding="utf-8")
    log = (ROOT / "reports" / "gpu" / "torch-2.11.0-h200-log.txt").read_text(encoding="utf-8")
    measured = re.search(r"F\.relu\(x\)\s+allocated\s+([\d,]+) bytes \(\s*([\d.]+) MiB\)", log)
    assert measured, "the committed GPU log holds seed 004's measurement"
    assert f"allocated {measured.group(1)} bytes ({measured.group(2)} MiB)" in text
    assert re.search(r"F\.relu_\(x\)\s+allocated\s+0 bytes", log) and "`F.relu_` none" in text
    script = (ROOT / "tools" / "gpu_column.sh").read_text(encoding="utf-8")
    bounds = [int(b) for b in re.findall(r'"\$\{(?:EAGER|COMPILED|CONFIRM)_SECONDS:-(\d+)\}"', script)]
    stated = int(re.search(r"at most (\d+) minutes", text).group(1))
    assert len(bounds) == 3 and sum(bounds) + 30 <= stated * 60, (bounds, stated)  # 30 s to install and check
