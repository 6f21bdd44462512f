"""Helpers for tests that run ``conformance`` or pytest as a user would, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from .conftest import INSTALLED

FRAMEWORK = INSTALLED[0] if INSTALLED else "torch"

#: A quick cell that is silent-correct on every framework.
QUICK = """\
id: {id}
title: one tracked op
steps:
  - {{op: tensor, out: x, value: [1.0, 2.0]}}
  - {{op: mul, args: [x, x], out: y}}
  - {{observe: value, of: y}}
"""

#: A cell that runs far longer than any test waits for.
LONG = """\
id: {id}
title: a loop far longer than the test
steps:
  - {{op: tensor, out: x, value: [1.0, 2.0]}}
  - op: repeat
    times: 1000000000
    steps:
      - {{op: add, args: [x, x], out: y}}
  - {{observe: value, of: y}}
"""

#: A cell whose expected value is wrong on purpose: silent-wrong on every framework.
WRONG = """\
id: {id}
title: a value that differs from the reference
expected: {{value(y): [2.0003]}}
steps:
  - {{op: tensor, out: x, value: [1.0]}}
  - {{op: add, args: [x, x], out: y}}
  - {{observe: value, of: y}}
"""


def write_case(directory: Path, template: str, case_id: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{case_id}.yaml"
    path.write_text(textwrap.dedent(template.format(id=case_id)))
    return path


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli", *args]


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cli_command(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def run_pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def records_in(path: Path) -> list[dict]:
    """The records of a results file in their JSON form, each with its run's information (the file's run
    lines hold it once per run: records.results)."""
    from conformance.records.results import read_records

    return list(read_records([path]))


def closing_line(output: str) -> str:
    """pytest's last line: ``1 raises, 2 silent-correct in 1.50s``."""
    return [line for line in output.splitlines() if line.strip()][-1]
