"""Measure what the README's two commands cost on this machine, as a newcomer runs them: a fresh clone of
this commit, the two commands exactly as the README's quick start writes them, one after the other.

It records, into ``docs/setup-cost.json`` (``--record``; the README's "What it costs" is written from it by
``python -m conformance.report.readme README.md``, and ``tests/test_readme.py`` holds the two together):

* the wall time of each command, and what each spent running (the matrix's own line, ``... in 40.17s``;
  pytest's, ``... passed in 499.9s``), the rest being set-up (downloading and installing), and its exit
  status (a command that stops before that line is not measured);
* the disk each left: the clone with its virtual environment and tox environments, and what pip's
  download cache grew by;
* which torch each environment installed (its build: ``cpu``, or ``cu130`` for PyPI's CUDA build) and the
  tox environments' dependencies (a change to them makes the record stale: the test says so);
* the machine: its cores and the load average before and after.

``--from-pypi`` measures a machine that has no local torch wheel: pip's configuration files and
``PIP_FIND_LINKS`` are set aside, so torch comes from PyPI (its CUDA build, several GB).  Without it, pip
is used as this machine has it configured.  A measurement, run by hand, never a test.

    python benchmarks/setup_cost.py [--from-pypi] [--record docs/setup-cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.report.readme import quick_start_commands, tox_dependencies  # noqa: E402

#: What each command prints when its own work is done: the matrix's closing count, pytest's summary.
_RAN = {"matrix": re.compile(r" in (\d+(?:\.\d+)?)s\b"), "tests": re.compile(r"passed.* in (\d+(?:\.\d+)?)s")}


def _bytes(path: Path) -> int:
    """Disk used under *path* (``du``: blocks, not apparent sizes; links not followed)."""
    if not path.exists():
        return 0
    out = subprocess.run(["du", "-sb", "--", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def _pip_cache(env: dict[str, str]) -> Path | None:
    found = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, env=env)
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def _torch_build(env_folder: Path) -> str | None:
    python = env_folder / "bin" / "python"
    if not python.is_file():
        return None
    found = subprocess.run([str(python), "-c", "import torch; print(torch.version.cuda and 'cu' + "
                            "torch.version.cuda.replace('.', '') or 'cpu')"], capture_output=True, text=True)
    return found.stdout.strip() or None


def measure(from_pypi: bool) -> dict:
    env = dict(os.environ)
    if from_pypi:  # no local wheel, no local index: what a fresh machine's pip sees
        env.pop("PIP_FIND_LINKS", None)
        env.pop("PIP_EXTRA_INDEX_URL", None)
        env["PIP_CONFIG_FILE"] = os.devnull
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    cache = _pip_cache(env)
    cache_before = _bytes(cache) if cache else 0
    load_before = os.getloadavg()
    commands = []
    with tempfile.TemporaryDirectory(prefix="setup-cost-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        for name, command in quick_start_commands((ROOT / "README.md").read_text(encoding="utf-8")):
            print(f"$ {command}", flush=True)
            started = time.monotonic()
            ran = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True)
            seconds = time.monotonic() - started
            output = ran.stdout + ran.stderr
            own = [float(m) for m in _RAN[name].findall(output)]
            if not own:  # it stopped before its own work ended: what it cost is not what a newcomer pays
                print(output[-3000:], file=sys.stderr)
                raise SystemExit(f"error: `{command}` stopped (status {ran.returncode}) before its work was done; "
                                 "nothing recorded")
            if ran.returncode != 0:  # its work ran to the end: the cost stands, the status is recorded beside it
                print(f"warning: `{command}` exited with status {ran.returncode}:\n{output[-1500:]}", file=sys.stderr)
            commands.append({"env": name, "command": command, "seconds": round(seconds, 1), "status": ran.returncode,
                             "ran_seconds": round(own[-1], 1),
                             "env_bytes": _bytes(clone / ".tox" / name),
                             "torch_build": _torch_build(clone / ".tox" / name)})
            print(f"  {seconds:.0f} s ({commands[-1]['ran_seconds']} s running), .tox/{name}: "
                  f"{commands[-1]['env_bytes'] / 1e9:.2f} GB, torch {commands[-1]['torch_build']}", flush=True)
        clone_bytes = _bytes(clone)
    cache_growth = max(0, (_bytes(cache) if cache else 0) - cache_before)
    return {"commit": commit, "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
            "torch_from": "PyPI" if from_pypi else "this machine's pip configuration",
            "load": [round(x, 2) for x in (load_before[0], os.getloadavg()[0])],
            "commands": commands, "clone_bytes": clone_bytes, "pip_cache_growth_bytes": cache_growth,
            "deps": tox_dependencies((ROOT / "tox.ini").read_text(encoding="utf-8"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-pypi", action="store_true", help="set aside pip's local wheels and indexes")
    parser.add_argument("--record", metavar="JSON", help="add (or replace) this measurement in JSON")
    args = parser.parse_args(argv)
    if shutil.which("git") is None or shutil.which("du") is None:
        print("error: needs git and du on PATH", file=sys.stderr)
        return 2
    found = measure(args.from_pypi)
    print(json.dumps(found, indent=1))
    if args.record:
        path = Path(args.record)
        kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"measured": []}
        kept["measured"] = [m for m in kept["measured"] if m.get("torch_from") != found["torch_from"]] + [found]
        path.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
        print(f"recorded: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
