"""Differential fuzzing: programs drawn from the op table, run through every framework and the reference.

``conformance fuzz`` (command.py) draws programs (generate.py: the strategy; draw.py: one program drawn
while the reference runs it; fuzzable.py: which ops; model.py: a program as data), runs them in the suite's
workers, eagerly and in the compiled modes asked for, and judges them as the suite does (run.py), names
what a program's outcomes mean (verdict.py), shrinks each finding (shrink.py) and makes it observe what its
writes touched (observe.py), groups findings by cause and hazard family (cause.py) and writes one case per
new cause (write.py), unless its shrunk program writes nothing and aliases nothing (scope.py).
"""

from pathlib import Path

__all__ = ["BATCH", "DEFAULT_TIMEOUT", "FOUND_FOLDER", "FINDING", "REFERENCE", "ERROR", "NOTHING", "OUT_OF_SCOPE"]

#: Where new findings are written as cases.
FOUND_FOLDER = Path("cases") / "found"
#: Programs per batch (how the work is spread; the programs and verdicts do not depend on it).
BATCH = 32
#: The longest one program may run in a framework before its worker is killed (a hang is a finding).
DEFAULT_TIMEOUT = 20.0
#: What a program's outcomes mean (verdict.py decides): a framework's finding, a suspected bug of the
#: reference, a fault of the harness, or nothing to report.  Here, so the command line names them
#: without importing the judging code.
FINDING = "finding"
REFERENCE = "suspected-reference-bug"
ERROR = "harness-error"
NOTHING = ""
#: A finding whose shrunk program neither writes into memory nor gives two names one memory (scope.py): a
#: difference of arithmetic, reported apart and never written as a case.
OUT_OF_SCOPE = "out-of-scope"
