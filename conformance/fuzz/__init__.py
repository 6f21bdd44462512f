"""Differential fuzzing: programs drawn from the op table, run through every framework and the reference.

``conformance fuzz`` (command.py) draws programs (generate.py), runs them in the suite's workers and judges
them as the suite does (run.py), names what a program's outcomes mean (verdict.py), shrinks each finding
with hypothesis (shrink.py) and writes the new ones as cases (write.py).
"""

from pathlib import Path

__all__ = ["BATCH", "DEFAULT_TIMEOUT", "FOUND_FOLDER"]

#: Where new findings are written as cases.
FOUND_FOLDER = Path("cases") / "found"
#: Programs per batch (how the work is spread; the programs and verdicts do not depend on it).
BATCH = 32
#: The longest one program may run in a framework before its worker is killed (a hang is a finding).
DEFAULT_TIMEOUT = 20.0
