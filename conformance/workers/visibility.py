"""Whether the user running a program sees a warning.

The harness records every warning (``simplefilter("always")``), but a cell ``warns`` only for a warning the
user would see: one that Python's warning filters, as they stand when the program starts (Python's own
defaults, which hide a ``DeprecationWarning`` raised outside ``__main__``, and whatever the frameworks
added when they were imported), let through.  The others are recorded as hidden, with the filter that
hides them, and the cell is judged as if they were not raised.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Sequence

__all__ = ["hidden_by"]


def hidden_by(filters: Sequence[tuple[Any, ...]], category: type[Warning], message: Any, filename: str,
              lineno: int, main_file: str | None) -> str | None:
    """None when *filters* show the warning; else why the user never sees it (the filter that hides it)."""
    text = str(message)
    module = "__main__" if filename == main_file else _module_of(filename)
    for action, pattern, kind, module_pattern, line in filters:
        if (_matches(pattern, text) and issubclass(category, kind) and _matches(module_pattern, module)
                and (line == 0 or line == lineno)):
            if action != "ignore":
                return None
            where = f":{getattr(module_pattern, 'pattern', module_pattern)}" if module_pattern is not None else ""
            return (f"hidden from the user by the warning filter ignore::{kind.__name__}{where} (raised in "
                    f"{module}): Python's filters as the program starts let it through to no one")
    return None if warnings.defaultaction != "ignore" else "hidden by the default action 'ignore'"


def _matches(pattern: Any, text: str) -> bool:
    """As Python's own filter matching does: None matches anything, a plain string (Python's default
    ``__main__``) only itself, a regular expression by ``match``."""
    if pattern is None:
        return True
    if isinstance(pattern, str):
        return pattern == text
    return bool(pattern.match(text))


def _module_of(filename: str) -> str:
    """The name of the module whose code is in *filename* (as ``warnings.warn`` names it), else the file's
    name without ``.py``, as ``warnings.warn_explicit`` does."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return name
    return filename[:-3] if filename.lower().endswith(".py") else filename or "<unknown>"
