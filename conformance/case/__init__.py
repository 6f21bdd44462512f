"""Cases: framework-neutral programs of steps, read and checked from YAML files.

The names are imported when first used (see the top-level package), so that ``conformance.case.files``
is light to import."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["Case", "CaseError", "Step", "Tolerance", "case_from_message", "find_case_files", "load_case",
           "load_cases"]

if TYPE_CHECKING:
    from conformance.case.files import find_case_files
    from conformance.case.load import Case, CaseError, Step, Tolerance, case_from_message, load_case, load_cases


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'conformance.case' has no attribute {name!r}")
    value = getattr(importlib.import_module("conformance.case.files" if name == "find_case_files"
                                            else "conformance.case.load"), name)
    globals()[name] = value
    return value
