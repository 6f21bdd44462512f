"""Arrays across a process boundary: small ones as JSON lists, large ones as their float64 bytes.

A worker's reply and the reference's are JSON lines.  An observation of a million numbers written
as a JSON list is some 20 MB of text that takes seconds to write and read and a Python float object
per number to hold; as its float64 bytes in base64 it is 11 MB, written and read at memory speed, and
read back as one NumPy array.  Both ends use these two functions, so the form lives here once.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["INLINE_ELEMENTS", "pack", "unpack"]

#: Arrays up to this many elements travel as JSON lists: most observations are a few numbers.
INLINE_ELEMENTS = 4096
_KEY = "float64_base64"


def pack(array: np.ndarray) -> Any:
    """*array* as JSON data: a (nested) list of floats, or its float64 bytes when it is large."""
    array = np.asarray(array, dtype=np.float64)
    if array.size <= INLINE_ELEMENTS:
        return array.tolist()
    return {_KEY: base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii"),
            "shape": list(array.shape)}


def unpack(value: Any) -> Any:
    """What :func:`pack` made, back: a large array as a float64 NumPy array, anything else as it is."""
    if isinstance(value, Mapping) and _KEY in value:
        data = np.frombuffer(base64.b64decode(value[_KEY]), dtype=np.float64)
        return data.reshape(tuple(value["shape"]))
    return value
