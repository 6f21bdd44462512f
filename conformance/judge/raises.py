"""What kind of raise an exception is: the hazard the case probes, or something in the way of it.

* ``autograd``: an autograd safety check fired (a version counter, an in-place
  write on a leaf or a view, a freed graph): the framework refusing the hazard.
* ``rejection``: the framework rejected an argument or an API form (a wrong
  type, a missing attribute, a shape): the hazard was never reached.
* ``other``: anything else.

Each adapter lists the messages of its framework's safety checks; the rule
that applies them lives here, once.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["RAISE_KINDS", "raise_kind"]

RAISE_KINDS = ("autograd", "rejection", "other")

#: Exception types that reject an argument or API form, whatever the framework.
_REJECTIONS = ("TypeError", "AttributeError", "NotImplementedError", "IndexError")


def raise_kind(exception_type: str, message: str, autograd_messages: Iterable[str]) -> str:
    """The kind of a raised exception, from its type name and message."""
    for pattern in autograd_messages:
        if re.search(pattern, message, re.IGNORECASE | re.DOTALL):
            return "autograd"
    if exception_type.rsplit(".", 1)[-1] in _REJECTIONS:
        return "rejection"
    if re.search(r"\b(argument|expected .* (type|dtype|shape)|shape mismatch|dtype)\b", message, re.IGNORECASE):
        return "rejection"
    return "other"
