"""A cross-framework conformance matrix for in-place and aliasing semantics.

The public API is small: load cases, run a cell, read results.  Everything
else is reached through the ``conformance`` command and the pytest plugin.

The names are imported when first used: a worker or the reference service imports
only the modules it runs, not the whole package, at every start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "Adapter",
    "Case",
    "CaseError",
    "Engine",
    "ReferenceFailure",
    "Unsupported",
    "load_case",
    "load_cases",
    "read_records",
    "run_reference",
]

_HOMES = {
    "Adapter": "conformance.adapter",
    "Unsupported": "conformance.adapter",
    "Case": "conformance.case.load",
    "CaseError": "conformance.case.load",
    "load_case": "conformance.case.load",
    "load_cases": "conformance.case.load",
    "Engine": "conformance.engine",
    "ReferenceFailure": "conformance.judge.reference",
    "run_reference": "conformance.judge.reference",
    "read_records": "conformance.records.results",
}

if TYPE_CHECKING:
    from conformance.adapter import Adapter, Unsupported
    from conformance.case.load import Case, CaseError, load_case, load_cases
    from conformance.engine import Engine
    from conformance.judge.reference import ReferenceFailure, run_reference
    from conformance.records.results import read_records


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
