"""``conformance scan`` as its users run it: the three questions, the formats, noqa, bad input, hostile trees,
and a plain install of the package outside this repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .runs import run_cli

HAZARD = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 3)

        def forward(self, inp, feature):
            x = F.relu(self.fc(inp))
            x += feature
            return x
    """)
SAFE = HAZARD.replace("x += feature", "x = x + feature")


def scan(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    if stdin is None:
        return run_cli(cwd, "scan", *args)
    return subprocess.run([sys.executable, "-m", "conformance.cli", "scan", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_an_audit_finds_the_line_and_says_what_happens_and_what_to_write(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    run = scan(tmp_path, "model.py")
    assert run.returncode == 1, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith("model.py:13:9: IC101 x += feature") and "(iadd_after_relu)" in first
    assert "torch 2.0.1–2.15.0 raises at backward" in run.stdout
    assert "write instead (torch): x = x + feature" in run.stdout
    assert "reproduce: conformance show iadd_after_relu --framework torch" in run.stdout


def test_a_port_compares_the_two_frameworks_and_says_what_paconvert_does(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    run = scan(tmp_path, "model.py", "--to", "paddle==3.3.1")
    assert run.returncode == 1
    assert "torch 2.0.1–2.15.0 raises at backward; paddle 2.6.2–3.3.1 computes it right" in run.stdout
    assert "PaConvert changes the meaning" in run.stdout
    assert "write instead (paddle): x = x + feature" in run.stdout
    assert "port from torch" not in run.stderr


TWICE = textwrap.dedent("""\
    import paddle

    x = paddle.to_tensor([0.3, 0.5], stop_gradient=False)
    y = x * 2
    y.tan_()
    y.tan_()
    y.sum().backward()
    """)


def test_a_save_only_the_target_framework_makes_is_found_in_a_port_and_not_in_an_audit(tmp_path: Path) -> None:
    """paddle's in-place tan_ copies its input, torch's saves its result: `y.tan_(); y.tan_()` is right in
    paddle and raises in torch, so a port of this paddle code to torch reports it and an audit does not."""
    (tmp_path / "model.py").write_text(TWICE)
    audit = scan(tmp_path, "model.py")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    port = scan(tmp_path, "model.py", "--to", "torch")
    assert port.returncode == 1, port.stdout + port.stderr
    first = port.stdout.splitlines()[0]
    assert first.startswith("model.py:6:1: IC101 y.tan_()") and "(tan_twice_continuous)" in first, first
    assert "saved it in torch (its output, line 5)" in first
    assert "raises at backward" in port.stdout and "write instead (torch)" in port.stdout


def test_an_in_place_comparison_read_through_an_earlier_view_is_found_in_paddle(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(textwrap.dedent("""\
        import paddle

        x = paddle.to_tensor([1.0, 2.0, 0.0, 3.0])
        y = paddle.to_tensor([2.0, 0.0, 2.0, 2.0])
        v = x[1:]
        x.less_than_(y)
        print(v)
        """))
    run = scan(tmp_path, "model.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("model.py:6:1: IC105 x.less_than_(y)")
    assert "(lt_inplace_seen_by_an_earlier_view)" in run.stdout and "gives a wrong result" in run.stdout
    assert "write instead (paddle)" in run.stdout


def test_the_safe_spelling_gives_nothing_and_exit_0(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(SAFE)
    for question in ((), ("--to", "paddle")):
        run = scan(tmp_path, "model.py", *question)
        assert run.returncode == 0, run.stdout
        assert lines(run.stdout)[-1].startswith("0 finding(s) in 1 file(s)")


def test_an_upgrade_reports_only_what_changed_between_the_releases(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    run = scan(tmp_path, "model.py", "--from", "torch==2.4.1", "--to", "torch==2.15.0")
    assert run.returncode == 0, run.stdout  # it raises on both: nothing changed
    assert "upgrade from torch 2.4.1 to torch 2.15.0" in run.stdout
    (tmp_path / "conv.py").write_text(textwrap.dedent("""\
        import torch
        x = torch.tensor([1.0, 2.0])
        y = x.to('float32')
        y.add_(1.0)
        print(x)
        """))
    skipped = scan(tmp_path, "conv.py", "--to", "torch==2.15.0")
    assert skipped.returncode == 0 and "1 file(s) skipped" in skipped.stdout


def test_standard_input_is_read_as_one_file(tmp_path: Path) -> None:
    run = scan(tmp_path, "-", "--format", "json", stdin=HAZARD)
    data = json.loads(run.stdout)
    assert run.returncode == 1
    assert [(f["path"], f["line"], f["case"]) for f in data["findings"]] == [("<stdin>", 13, "iadd_after_relu")]


def test_noqa_select_and_ignore(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(HAZARD.replace("x += feature", "x += feature  # noqa: IC101"))
    (tmp_path / "b.py").write_text(HAZARD.replace("x += feature", "x += feature  # noqa"))
    (tmp_path / "c.py").write_text(HAZARD.replace("x += feature", "x += feature  # noqa: E501"))
    run = scan(tmp_path, ".", "--format", "json")
    assert [f["path"] for f in json.loads(run.stdout)["findings"]] == ["c.py"]
    assert scan(tmp_path, "c.py", "--select", "IC11").returncode == 0
    assert scan(tmp_path, "c.py", "--ignore", "IC10").returncode == 0
    assert scan(tmp_path, "c.py", "--select", "IC1", "--ignore", "IC109").returncode == 1


@pytest.mark.parametrize("args, says", [
    (("nowhere.py",), "no such path: nowhere.py"),
    (("x.py", "--from", "tensorflow"), "no framework 'tensorflow'"),
    (("x.py", "--to", "paddle==9.9"), "no paddle 9.9 in the data"),
    (("x.py", "--from", "torch==2.13.0", "--to", "torch==2.13"), "the same version"),
    (("x.py", "--select", "E501"), "no rule code starts with 'E501'"),
    (("-", "-"), "standard input) can be given once"),
    (("x.py", "--output", "no/such/dir/report.txt"), "no such folder no/such/dir"),
    (("x.py", "--format", "xml"), "invalid choice"),
    (("x.py", "--data", "x.py"), "cannot read the scanner's data x.py"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    (tmp_path / "x.py").write_text(HAZARD)
    run = scan(tmp_path, *args)
    assert run.returncode == 2, run.stdout + run.stderr
    assert len(lines(run.stderr)) == 1 and says in run.stderr, run.stderr
    assert run.stdout == ""


def test_a_hostile_tree_is_read_without_stopping(tmp_path: Path) -> None:
    tree = tmp_path / "my code"
    (tree / "sub dir").mkdir(parents=True)
    (tree / "sub dir" / "ünï cødé.py").write_text(HAZARD)
    (tree / "broken.py").write_text("def f(:\n")
    (tree / "latin1.py").write_bytes(b"# -*- coding: utf-8 -*-\nx = '\xff'\n")
    (tree / "notes.txt").write_text(HAZARD)
    (tree / "site-packages").mkdir()
    (tree / "site-packages" / "vendored.py").write_text(HAZARD)
    (tree / "venv").mkdir()
    (tree / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tree / "venv" / "lib.py").write_text(HAZARD)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    run = scan(tmp_path, "my code", "--format", "json")
    data = json.loads(run.stdout)
    assert run.returncode == 1
    assert [Path(f["path"]).name for f in data["findings"]] == ["ünï cødé.py"]
    errors = {Path(e["path"]).name: e["error"] for e in data["errors"]}
    assert set(errors) == {"broken.py", "latin1.py"} and "cannot parse" in errors["broken.py"]


def test_markup_in_the_code_is_data_in_every_format(tmp_path: Path) -> None:
    name = 'a,b:c%d.py'
    (tmp_path / name).write_text(HAZARD.replace("x += feature", "x += feature  # </script><b>%0A"))
    github = scan(tmp_path, name, "--format", "github").stdout
    assert github.startswith("::warning file=a%2Cb%3Ac%25d.py,line=13,col=9,title=IC101 iadd_after_relu::")
    assert "\n" not in github.splitlines()[0]
    sarif = json.loads(scan(tmp_path, name, "--format", "sarif").stdout)
    [result] = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and result["ruleId"] == "IC101"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == name
    assert {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]} >= {"IC101", "IC119"}
    text = scan(tmp_path, name).stdout
    assert "# </script><b>%0A" in text  # the line as written: text is not markup


def test_the_report_goes_to_a_file_when_asked(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(HAZARD)
    (tmp_path / "out").mkdir()
    run = scan(tmp_path, "model.py", "--format", "json", "--output", "out/report.json")
    assert run.returncode == 1 and run.stdout == ""
    assert json.loads((tmp_path / "out" / "report.json").read_text())["findings"][0]["code"] == "IC101"


def test_list_rules_names_the_cases_each_rule_stands_for(tmp_path: Path) -> None:
    run = scan(tmp_path, ".", "--list-rules")
    assert run.returncode == 0
    assert "IC101  an in-place write to a tensor an op saved for its backward" in run.stdout
    assert "iadd_after_relu" in run.stdout.split("IC102")[0]


def test_a_plain_install_outside_the_repository_scans_a_folder(tmp_path: Path) -> None:
    """The wheel carries the scanner's data: installed from it, `conformance scan` needs nothing of the tree."""
    root = Path(__file__).resolve().parent.parent
    # Built from a copy: a build in the tree writes build/ and an egg-info there, under the feet of every
    # other test (and process) that imports the project from it at the same time.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, source / name)
    shutil.copytree(root / "conformance", source / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                            str(wheels), str(source)], capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr.strip()[-300:]}")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    [wheel] = wheels.glob("*.whl")
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    user = tmp_path / "user project"
    user.mkdir()
    (user / "model.py").write_text(HAZARD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(venv / "bin" / "conformance"), "scan", ".", "--to", "paddle"], cwd=user, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "(iadd_after_relu)" in run.stdout
    where = subprocess.run([str(python), "-c", "import conformance.scan.build as b; print(b.DATA_FILE)"], cwd=user,
                           env=env, capture_output=True, text=True, timeout=60).stdout.strip()
    assert str(venv) in where and str(root) not in where
