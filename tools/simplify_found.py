#!/usr/bin/env python3
"""Simplify the committed found cases again with today's shrinker, on the installed frameworks.

Each case under ``cases/found/`` (or the files named) is run as the fuzzer ran it
(eager, plus the modes its ``source`` names), and its program is simplified
(``conformance/fuzz/simplify.py``) while it stays the same finding; then it observes what its
writes touched, as ``conformance fuzz`` does.  A case whose
program got simpler is rewritten under its new id (the old file removed), its
description saying what was tried; one that no longer reproduces is reported and
left alone.  Exit status: 0, 1 when a case did not reproduce, 2 for a path that is no case file.

    .tox/tests/bin/python tools/simplify_found.py [CASE.yaml ...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.case.load import load_case, load_cases  # noqa: E402
from conformance.fuzz.cause import Families  # noqa: E402
from conformance.fuzz.generate import Program, walk  # noqa: E402
from conformance.fuzz.observe import observing_finding  # noqa: E402
from conformance.fuzz.run import Runner  # noqa: E402
from conformance.fuzz.simplify import simplify  # noqa: E402
from conformance.fuzz.write import PROVENANCE, write_case  # noqa: E402

SOURCE = re.compile(r"--seed (?P<seed>\d+) --budget (?P<budget>\d+)(?P<modes>(?: --mode \S+)*), program (?P<number>\d+)")


def main(paths: list[str]) -> int:
    folder = ROOT / "cases" / "found"
    files = [Path(p) for p in paths] or sorted(folder.glob("*.yaml"))
    for path in files:  # bad input: one line, before any work
        if path.suffix != ".yaml" or not path.is_file():
            print(f"error: not a case file: {path}", file=sys.stderr)
            return 2
    hand_written, _ = load_cases([ROOT / "cases"])
    families = Families(case for case in hand_written if not case.source.startswith(PROVENANCE))
    failed = 0
    for path in files:
        case = load_case(path)
        found = SOURCE.search(case.source)
        if found is None:
            print(f"{path.name}: its source names no fuzz run; left alone")
            continue
        modes = tuple(found["modes"].split(" --mode ")[1:])
        steps = tuple(case.raw["steps"])
        dtype = "float64" if any(step.get("dtype") == "float64" for step in walk(steps)) else "float32"
        program = Program(steps, dtype)
        count = [0]
        with Runner(["torch", "paddle"], "cpu", 120, modes=("eager", *modes)) as runner:
            def evaluate(candidate: Program) -> object:
                count[0] += 1
                return runner.run([candidate.case(f"simplify_{count[0]}")])[0]

            target = evaluate(program)
            if target.kind != "finding":
                print(f"{path.name}: no longer a finding ({target.kind or 'nothing'}: {target.outcomes()}); left alone")
                failed += 1
                continue
            simpler, verdict, tried = simplify(program, target, target, evaluate)
            simpler, verdict = observing_finding(simpler, verdict, evaluate)  # as the fuzzer does
            cause = families.cause(simpler.ops(), verdict)
            path.unlink()
            written = write_case(folder, simpler, verdict, seed=int(found["seed"]), budget=int(found["budget"]),
                                 number=int(found["number"]), versions=runner.versions, cause=cause, modes=modes,
                                 tried=tried)
            again = runner.run([written])[0]
        print(f"{path.name} -> {Path(written.path).name}: {program.size()} -> {simpler.size()} steps "
              f"({count[0]} runs; {'reproduces' if again.signature == verdict.signature else 'DOES NOT reproduce'}); "
              f"{'; '.join(tried.taken) or 'nothing taken'}")
        failed += again.signature != verdict.signature
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
