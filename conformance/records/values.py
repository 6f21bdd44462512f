"""Values as a reader sees them beside code or in a line of evidence: short, and the same everywhere."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ["VALUE_LIMIT", "all_zero", "format_value"]

#: How long a value may be where it is shown beside code or in a verdict line.
VALUE_LIMIT = 160


def format_value(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A value for a reader: numbers to 6 significant digits (a cell is judged to 1e-5 relative, so no digit
    that decides it is lost), nested lists as lists, a summarised array by its shape, range and digest; cut
    at *limit*."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()

    def shown(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return str(v)
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.6g}"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(shown(x) for x in v) + "]"
        if isinstance(v, Mapping) and isinstance(v.get("any_of"), list):  # one of several values written
            return "any of " + "/".join(shown(x) for x in v["any_of"])
        if isinstance(v, Mapping) and "shape" in v:  # a large array, summarised by the worker
            extremes = "".join(f", {key} {v[key]:.4g}" for key in ("min", "max")
                               if isinstance(v.get(key), (int, float)))
            digest = f", {v['digest']}" if v.get("digest") else ""
            return f"array {'x'.join(map(str, v.get('shape') or [])) or '?'} ({v.get('size')} elements{extremes}{digest})"
        return str(v)

    text = shown(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def all_zero(value: Any) -> bool:
    """Whether every number of *value* is 0 (a relative error against it says nothing)."""
    if isinstance(value, (list, tuple)):
        return all(all_zero(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0
