"""The committed matrix is whole and current: every tox env that runs the catalogue has its results
files, each holds exactly the current catalogue (a case edited since is stale), and none holds a fault.
A GPU column, run only where a GPU machine is lent, holds current records only; the cases added since it
ran are named in docs/gpu.md.

A column that is missing, stale or broken fails here, so the report and the upgrade views are never
built from a matrix the catalogue has moved away from.
"""

from __future__ import annotations

import json
import re

import pytest

from conformance.adapter import adapter_classes
from conformance.case.load import load_cases
from conformance.records.record import EAGER, Record
from conformance.records.results import latest_by_cell, load_records

from .committed import BASELINES, DEVICES, RESULTS, ROOT, committed_results, results_file, tox_columns

#: What a committed column may not hold: a fault of the harness or of the machine it ran on.
FAULTS = ("error", "crash", "timeout")
#: Signals a process raises on itself (a bad memory access, a division by zero, an abort): a worker that dies
#: of one died of the framework's own code, a finding; any other death (SIGKILL: the OOM killer, a user) may
#: be the machine's, and a committed column holds none.
OWN_SIGNALS = ("SIGSEGV", "SIGFPE", "SIGABRT", "SIGBUS", "SIGILL")


def test_tox_lists_the_columns_it_runs() -> None:
    columns = tox_columns()
    assert columns["torch213"] == ("torch", "2.13.0", (EAGER,))
    assert columns["paddle331 compiled"] == ("paddle", "3.3.1", tuple(adapter_classes()["paddle"].modes))
    assert columns["torch20"] == ("torch", "2.0.1", (EAGER,)) and "paconvert331 compiled" not in columns
    assert "tests" not in columns and "report" not in columns


#: The columns every machine runs, and the GPU columns committed (a machine with a GPU wrote them; one without
#: writes none: its run says so in one line).
COLUMNS = sorted((env, "cpu") for env in tox_columns())
GPU_COLUMNS = sorted((env, device) for env, (framework, version, modes) in tox_columns().items() for device in DEVICES
                     if device != "cpu" and results_file(framework, version, device, modes).is_file())


@pytest.fixture(scope="module")
def catalogue() -> dict[str, str]:
    cases, errors = load_cases([ROOT / "cases"])
    assert not errors, errors
    return {case.id: case.digest for case in cases}


@pytest.mark.parametrize(("env", "device"), COLUMNS, ids=[f"{e.replace(' ', '-')}-{d}" for e, d in COLUMNS])
def test_every_tox_column_is_committed_whole_and_current(env: str, device: str, catalogue: dict[str, str]) -> None:
    framework, version, modes = tox_columns()[env]
    path = results_file(framework, version, device, modes)
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing: run `tox -e {env.split()[0]}` and commit what it writes"
    _whole_and_current(env, device, path, catalogue)


@pytest.mark.parametrize(("env", "device"), GPU_COLUMNS, ids=[f"{e.replace(' ', '-')}-{d}" for e, d in GPU_COLUMNS])
def test_a_committed_gpu_column_is_current(env: str, device: str, catalogue: dict[str, str]) -> None:
    """A GPU column runs where a GPU machine is lent (docs/gpu.md), so the catalogue can grow between its
    runs: every record it holds must be of a current case, but a case added since it ran may be missing,
    and docs/gpu.md names each such case."""
    framework, version, modes = tox_columns()[env]
    path = results_file(framework, version, device, modes)
    missing = _whole_and_current(env, device, path, catalogue, whole=False)
    said = (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8")
    unsaid = sorted(case for case in missing if f"`{case}`" not in said)
    assert not unsaid, f"{path.relative_to(ROOT)} lacks these cases, and docs/gpu.md does not say so: {unsaid}"


def _whole_and_current(env: str, device: str, path, catalogue: dict[str, str], whole: bool = True) -> set[str]:
    framework, version, modes = tox_columns()[env]
    records: list[Record] = list(latest_by_cell(load_records([path])).values())
    problems = []
    for record in records:  # (a converter's version names its pair: 3.3.1+paddle3.3.1)
        if record.framework != framework or record.framework_version.split("+")[0] != version:
            problems.append(f"{record.case}: a record of {record.framework} {record.framework_version}")
        elif record.device != device or record.mode not in modes:
            problems.append(f"{record.case}: a record of device {record.device}, mode {record.mode}")
        elif record.case not in catalogue:
            problems.append(f"{record.case}: no such case in cases/ any more")
        elif record.case_digest != catalogue[record.case]:
            problems.append(f"{record.case} ({record.mode}): stale, the case has changed since it ran")
        elif record.outcome in FAULTS and not (record.outcome == "crash"
                                               and record.details.get("signal") in OWN_SIGNALS):
            problems.append(f"{record.case} ({record.mode}): {record.outcome}, a fault, not a finding")
    held = {(r.case, r.mode) for r in records}
    missing = {case for case in catalogue for mode in modes if (case, mode) not in held}
    if whole:
        problems += [f"{case} ({mode}): no record" for case in sorted(catalogue) for mode in modes
                     if (case, mode) not in held]
    assert not problems, (f"{path.relative_to(ROOT)} ({len(problems)} problems; rerun `tox -e {env.split()[0]}`):\n"
                          + "\n".join(problems[:40]))
    return missing


def test_every_committed_results_file_belongs_to_a_tox_env() -> None:
    expected = {results_file(framework, version, device, modes).name
                for framework, version, modes in tox_columns().values() for device in DEVICES}
    committed = {path.name for path in RESULTS.glob("*.jsonl")} - {"latest.jsonl"}
    assert not committed - expected, f"results no tox env writes: {sorted(committed - expected)}"


def test_every_cpu_column_has_its_baseline() -> None:
    """A column without a baseline would pass any change of outcome silently."""
    missing = []
    for framework, version, modes in tox_columns().values():
        path = results_file(framework, version, "cpu", modes)
        records = load_records([path]) if path.is_file() else []  # a missing file fails the test above
        for column in {r.column for r in records}:
            mode = "" if column.mode == EAGER else f"-{column.mode}"
            name = f"{column.framework}-{column.version}-{column.device}{mode}.json"
            if not (BASELINES / name).is_file():
                missing.append(name)
    assert not missing, f"no baseline for: {sorted(missing)}"


def test_every_hand_written_hazard_has_a_remedy_verified_on_the_committed_columns() -> None:
    """What `conformance remedies` checks in CI, on the committed catalogue and results."""
    from conformance.report.remedies import check_remedies

    cases, _ = load_cases([ROOT / "cases"])
    records = load_records(committed_results())
    checked = check_remedies(cases, records)
    assert not checked.problems, "\n".join(map(str, checked.problems[:40]))
    assert len(checked.remedied) >= 80


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return set(re.findall(r'<a name="([^"]+)"></a>', text)) | {
        re.sub(r"[^\w\- ]", "", heading.replace("\\_", "_").lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


def test_every_link_of_the_porting_guide_leads_somewhere() -> None:
    """Each entry, table row and remedy of reports/PORTING.md and of its pages (reports/porting/) links to
    an anchor that exists, on its own page or another, or to a page of the compatibility report; and the
    index stays small enough to open quickly."""
    index = ROOT / "reports" / "PORTING.md"
    pages = [index, *sorted((ROOT / "reports" / "porting").glob("*.md"))]
    assert len(pages) > 10 and index.stat().st_size < 100_000
    broken, linked = [], 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            linked += 1
            if not where.is_file() or (anchor and where.suffix == ".md" and anchor not in _anchors(where)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert linked > 300 and not broken, broken[:20]


CONTROLS = sorted((ROOT / "reports" / "controls").glob("*.jsonl"))


@pytest.mark.parametrize("path", CONTROLS, ids=[p.name for p in CONTROLS])
def test_every_control_column_is_whole_and_current(path, catalogue: dict[str, str]) -> None:
    """A control (one version run under another NumPy, tox -e torch23-numpy1) attributes the changes of an
    upgrade step: it must hold the current catalogue, without a fault, under a NumPy its sibling column lacks."""
    records = list(latest_by_cell(load_records([path])).values())
    problems = [f"{r.case}: stale" for r in records if catalogue.get(r.case) != r.case_digest]
    problems += [f"{r.case}: {r.outcome}" for r in records if r.outcome in FAULTS]
    problems += [f"{case}: no record" for case in sorted(set(catalogue) - {r.case for r in records})]
    assert not problems, f"{path.name}: rerun its tox env:\n" + "\n".join(problems[:40])
    sibling = results_file(records[0].framework, records[0].framework_version, "cpu", (EAGER,))
    assert sibling.is_file(), f"{path.name} controls no committed column ({sibling.name})"
    assert {r.numpy for r in load_records([sibling])}.isdisjoint({r.numpy for r in records}), \
        f"{path.name} ran under the NumPy of the column it controls"


@pytest.mark.parametrize("path", committed_results(), ids=lambda p: p.name)
def test_committed_records_name_paths_in_the_repository_not_of_the_machine_that_ran_them(path) -> None:
    for record in load_records([path]):
        for recorded in (record.case_file, record.run_info.get("python_executable")):
            assert recorded is None or not recorded.startswith("/"), (record.case, recorded)


def test_a_column_env_holds_its_own_cells_whatever_the_caller_s_environment_chooses() -> None:
    """tox passes CONFORMANCE_* through (memory limits, the cache folder); the variables that choose which
    cells run and where they are kept must not reach a version env, or CONFORMANCE_MODES=to_static in the
    caller's shell would write to_static records into the committed eager column."""
    import os
    import subprocess

    tox = _tox()
    chooser = {"CONFORMANCE_MODES": "to_static", "CONFORMANCE_FRAMEWORKS": "paddle", "CONFORMANCE_DEVICES": "gpu",
               "CONFORMANCE_RESULTS": "elsewhere.jsonl", "CONFORMANCE_BASELINES": "elsewhere"}
    shown = subprocess.run([tox, "-c", str(ROOT / "tox.ini"), "config", "-e", "torch213,paddle331", "-k", "set_env"],
                           capture_output=True, text=True, timeout=120, env={**os.environ, **chooser})
    assert shown.returncode == 0, shown.stderr
    for name in chooser:
        assert shown.stdout.count(f"{name}=\n") == 2, (name, shown.stdout)


def test_an_eager_env_is_its_version_env_without_the_compiled_columns() -> None:
    """CI runs torch 2.1.2 eager alone (tox -e torch21-eager: its compiled column is half an hour of kernel builds
    where the inductor cache is cold): the same install, constraints and results files as torch21's eager
    commands, and no compiled command, so it can never write another column."""
    import subprocess

    def config(env: str) -> dict[str, str]:
        shown = subprocess.run([_tox(), "-c", str(ROOT / "tox.ini"), "config", "-e", env, "-k", "deps", "set_env",
                                "commands"], capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        keys = dict(re.findall(r"^(\w+) =(.*(?:\n  .*)*)", shown.stdout, re.MULTILINE))
        return {key: re.sub(r"PYTHONHASHSEED=\d+", "", value.replace(env, "ENV")) for key, value in keys.items()}

    eager, whole = config("torch21-eager"), config("torch21")
    assert eager["deps"] == whole["deps"] and "torch==2.1.2" in eager["deps"]
    assert eager["set_env"] == whole["set_env"] and "numpy1.txt" in eager["set_env"]
    commands = [line.strip() for line in whole["commands"].splitlines() if line.strip()]
    assert len(commands) == 4 and sum("--mode compiled" in line for line in commands) == 2
    assert [line.strip() for line in eager["commands"].splitlines() if line.strip()] == \
        [line for line in commands if "--mode compiled" not in line]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"one_at_a_time\.sh [^|]*torch21-eager", ci), "CI runs torch 2.1.2's eager column"


def _tox() -> str:
    """The tox beside this interpreter, on PATH, or the README's .venv's; skips where there is none."""
    import os
    import shutil
    import sys
    from pathlib import Path

    tox = next((str(c) for c in (Path(sys.executable).parent / "tox", shutil.which("tox"), ROOT / ".venv" / "bin" / "tox")
                if c and os.access(c, os.X_OK)), "")
    if not tox:
        pytest.skip("tox is not installed (tox -e tests installs it)")
    return tox


@pytest.mark.parametrize("path", committed_results(), ids=lambda p: p.name)
def test_a_committed_column_holds_one_record_per_cell(path) -> None:
    """A case simplified again under its id leaves its earlier record superseded, never beside the new one
    (tools/prune_results.py drops it): one record per cell, the one the reports read."""
    seen, twice = set(), []
    for record in load_records([path]):
        cell = (record.case, record.framework, record.device, record.mode)
        if cell in seen:
            twice.append(cell)
        seen.add(cell)
    assert not twice, f"{path.name}: cells recorded twice (run tools/prune_results.py): {twice[:5]}"


def test_a_verdict_that_rests_on_one_framework_s_documentation_says_whose() -> None:
    """retain_grad_accumulates and grad_fn_no_grad are silent-wrong on paddle because paddle differs from
    torch's documented behaviour, not because a number is off: the report and the porting guide say so."""
    cases = [case for case in load_cases([ROOT / "cases"])[0] if case.judged_against]
    assert {"retain_grad_accumulates", "grad_fn_no_grad"} <= {case.id for case in cases}
    guide = "".join(page.read_text(encoding="utf-8") for page in (ROOT / "reports" / "porting").glob("*.md"))
    for case in cases:
        page = (ROOT / "reports" / "compatibility" / f"{case.topic}.md").read_text(encoding="utf-8")
        section = page.split(f"### `{case.id}`")[1].split("\n### ")[0]
        assert "judged against: torch's documented behaviour" in section, case.id
        entry = guide.split(f"(`{case.id}`)")[1].split("\n\n<a name=")[0]
        assert "Judged against: torch's documented behaviour" in entry.replace("\\", ""), case.id


@pytest.mark.parametrize("path", committed_results(), ids=lambda p: p.name)
def test_a_committed_record_keeps_its_program_beside_the_results_not_in_its_details(path) -> None:
    """A cell's program goes to the programs file (or nowhere, for a column that keeps none); a second copy in
    the record's details (an unsupported cell's partial program) only made the tracked files larger."""
    held = [record.case for record in load_records([path]) if "kept" in record.details]
    assert not held, f"{path.name}: {held[:5]}"


def test_pruning_tells_columns_apart_by_their_run_lines() -> None:
    """tools/prune_results.py drops a record of an earlier form of a case only where a record of the case as
    it is stands in the same column; the column is in the record's run line, not in the record."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("prune_results", ROOT / "tools" / "prune_results.py")
    prune = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prune)
    column = {"device": "cpu", "mode": "eager"}
    torch_run = {"run": "t", "run_info": {}, "column": {**column, "framework": "torch", "framework_version": "2.13.0"}}
    paddle_run = {"run": "p", "run_info": {}, "column": {**column, "framework": "paddle", "framework_version": "3.3.1"}}
    lines = [json.dumps(x).encode() + b"\n" for x in (
        torch_run, {"case": "c", "case_digest": "old", "run": "t"}, {"case": "c", "case_digest": "new", "run": "t"},
        paddle_run, {"case": "c", "case_digest": "old", "run": "p"}, {"case": "gone", "case_digest": "x", "run": "p"})]
    kept = [json.loads(line) for line in prune._kept(lines, {"c"}, {"c": "new"})]
    assert kept == [torch_run, {"case": "c", "case_digest": "new", "run": "t"}, paddle_run,
                    {"case": "c", "case_digest": "old", "run": "p"}]  # paddle's column has no newer record of c
