"""Case data reaching generated code: only as literals that mean the same value, or as comments.

``repr`` is not enough: ``repr(float('nan'))`` is ``nan``, a name no program
defines; and text with a line break would end a comment and become code.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["literal", "comment"]

#: Every character Python or an editor may take as the end of a line.
_LINE_BREAKS = re.compile(r"[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def literal(value: Any) -> str:
    """Python source for a number, bool, string, or nested list or string-keyed dict of them, evaluating to
    the same value."""
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "-float('inf')"
        return repr(value)
    raise TypeError(f"no literal for {type(value).__name__} {value!r}")


def comment(text: str) -> str:
    """A one-line comment: line breaks in *text* are folded, so it cannot end early, and characters that
    are not printable (a terminal's escape sequences, bidirectional overrides) are spelled as escapes."""
    folded = _LINE_BREAKS.sub(" ", str(text))
    if folded.isprintable():  # most comments: no character to spell as an escape
        return "# " + folded
    return "# " + "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in folded)
