"""A reproducer that checks itself: ``conformance show CASE > repro.py; python repro.py`` exits 1 when the
framework's result is wrong, so the file can go into an upstream issue as it is.

The judged prints of the program (``print('grad(x)', _values(x.grad))``) become ``_judged('grad(x)', ...)``,
which prints the same line and keeps the value; a closing block compares each kept value with the NumPy
float64 reference the judge used, with the case's tolerance (widened by float32 rounding where the judge
allowed it), and exits 1 naming the values that differ.  Only observations judged right or wrong are
checked: a memory observation (shared or copied) is a finding, never wrong, and a raise stops the program
with its own traceback.  A value the framework stores in its own layout (paddle's Linear weight, in x out)
is expected in that layout.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from conformance.judge.classify import SPREAD_FACTOR
from conformance.program.literals import literal
from conformance.program.writer import TRANSPOSED_NOTE
from conformance.records.record import Record
from conformance.records.verdict import printed_name

__all__ = ["self_checking"]

_HELPERS = '''\
_SEEN = {}
def _judged(name, value):
    """print(name, value), keeping a copy of the value for the self-check at the end (an array that
    shares a tensor's memory changes with it: a .grad accumulated by a later backward)."""
    print(name, value)
    _SEEN[name] = None if value is None else np.array(value, copy=True)
'''

_CHECK = '''\
# self-check: each judged value against the NumPy float64 reference (rtol, atol of the case), each
# counter or property against what the case states (exactly; None: an element no one wrote; any_of: an
# element one write gave several values in no defined order, right when it holds one of them); exit 1
# when one differs, so that this file shows the fault by its exit status as well as by its output
import sys
_EXPECTED = {{
{entries}
}}
def _close(got, want, rtol, atol):
    return np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True) & (np.isfinite(got) == np.isfinite(want))
def _differs(got, want, rtol, atol):
    if want is None or got is None:  # no gradient: right when both have none (or the framework gives zeros)
        return not (want is None and (got is None or not np.any(np.asarray(got, dtype=np.float64))))
    want = np.array(want, dtype=object)
    flat = want.reshape(-1)
    free = np.array([w is None for w in flat], dtype=bool).reshape(want.shape)  # not judged
    choices = {{i: w["any_of"] for i, w in enumerate(flat) if isinstance(w, dict)}}
    plain = np.array([0.0 if w is None or isinstance(w, dict) else w for w in flat], dtype=np.float64)
    got, want = np.asarray(got, dtype=np.float64), plain.reshape(want.shape)
    if got.size != want.size or np.squeeze(got).shape != np.squeeze(want).shape:
        return True
    got = got.reshape(want.shape)
    close = _close(got, want, rtol, atol).reshape(-1)
    for i, values in choices.items():
        close[i] = any(_close(got.reshape(-1)[i], v, rtol, atol) for v in values)
    return not bool((close.reshape(want.shape) | free).all())
_wrong = [name for name, (want, rtol, atol) in _EXPECTED.items()
          if name in _SEEN and _differs(_SEEN[name], want, rtol, atol)]
if _wrong:
    print('self-check: wrong:', ', '.join(_wrong), file=sys.stderr)
    sys.exit(1)
print('self-check: every judged value is as the reference gives it')
'''


def self_checking(source: str, record: Record) -> str:
    """*source* (a reproducer as ``show`` prints it) with its judged prints kept and the check appended;
    *source* unchanged when the record judged no value right or wrong."""
    # a gradient of None where the reference has one (or the reverse), or a value of another shape, is
    # judged without a tolerance: it is checked too, with none
    judged = {str(o["name"]): o for o in record.observations if "ok" in o and "reference" in o}
    if not judged:
        return source
    lines = source.splitlines()
    transposed: set[str] = set()
    wrapped = False
    for index, line in enumerate(lines):
        name = printed_name(line) if "print(" in line else None
        names = [n for n in judged if n == name or (name is not None and name.endswith("[") and n.startswith(name))]
        if not names:
            continue
        stripped = line.lstrip()
        lines[index] = line[:len(line) - len(stripped)] + "_judged(" + stripped[len("print("):]
        wrapped = True
        if TRANSPOSED_NOTE in line:
            transposed.update(names)
    if not wrapped:
        return source
    at = _after_preamble(lines)
    lines[at:at] = _HELPERS.splitlines()
    entries = "\n".join(filter(None, (_entry(name, judged[name], name in transposed) for name in judged)))
    return "\n".join(lines) + "\n" + _CHECK.format(entries=entries)


def _entry(name: str, observation: dict[str, Any], transposed: bool) -> str | None:
    """One line of the check's table: the reference (in the framework's layout), rtol, and atol widened by
    float32 rounding as the judge widened it (the record keeps the largest spread; every element gets it).
    None for a reference that is no number or list of numbers."""
    reference = observation["reference"]
    if transposed and reference is not None:
        reference = np.asarray(reference, dtype=np.float64).T.tolist()
    atol = float(observation.get("atol") or 0.0) + SPREAD_FACTOR * float(observation.get("float32_spread") or 0.0)
    try:
        return f"    {literal(name)}: ({literal(reference)}, {float(observation.get('rtol') or 0.0)!r}, {atol!r}),"
    except TypeError:
        return None


def _after_preamble(lines: Iterable[str]) -> int:
    """Where the helpers go: after the top-level imports and settings that open every program (its first
    line that neither imports, sets DEVICE, nor is a comment or the framework's device call)."""
    lines = list(lines)
    for index, line in enumerate(lines):
        if line.startswith(("#", "import ", "from ", "DEVICE =", "paddle.set_device(")) or not line.strip():
            continue
        return index
    return len(lines)
