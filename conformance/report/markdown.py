"""Markdown escaping shared by the report and the diff.

Framework messages contain ``|``, ``<lambda>``, ``__init__`` and newlines; left
raw they break GitHub tables, vanish as HTML tags or turn into bold text.
"""

from __future__ import annotations

import re

__all__ = ["text", "cell", "code", "first_line", "shorten", "table"]

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#~])")


def first_line(value: object) -> str:
    """The first non-empty line of a message: messages continue with tracebacks and hints."""
    for line in str(value or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def shorten(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def text(value: object) -> str:
    """Free text shown literally: markdown specials escaped, newlines folded to spaces."""
    flat = " ".join(str(value).split())
    return _SPECIAL.sub(r"\\\1", flat)


def cell(value: object) -> str:
    """Text already in markdown, made safe for one table cell (``|`` escaped, one line)."""
    flat = " ".join(str(value).split())
    return re.sub(r"(?<!\\)\|", r"\\|", flat)


def code(value: object) -> str:
    """An inline code span that survives backticks in the value (and tables, via :func:`cell`)."""
    flat = " ".join(str(value).split())
    fence = "`"
    while fence in flat:
        fence += "`"
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub table; every cell goes through :func:`cell`."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines
