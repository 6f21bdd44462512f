"""A cross-framework conformance matrix for in-place and aliasing semantics.

The public API is small: load cases, run a cell, read results.  Everything
else is reached through the ``conformance`` command and the pytest plugin.
"""

from .adapter import Adapter, Unsupported
from .case import Case, CaseError, load_case, load_cases
from .engine import Engine
from .reference import ReferenceFailure, run_reference
from .results import read_records

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
