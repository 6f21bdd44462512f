"""The one exception that says a framework lacks what a step needs: raised by the adapters and the ops
that spell steps, caught by the program writer (``program/translate.py``), so it lives below all of them."""

from __future__ import annotations

__all__ = ["Unsupported"]


class Unsupported(Exception):
    """The installed framework has no API for a step; the reason says what was looked for."""
