"""A cross-framework conformance matrix for in-place and aliasing semantics.

The public API is small: load cases, run a cell, read results.  Everything
else is reached through the ``conformance`` command and the pytest plugin.
"""

from conformance.adapter import Adapter, Unsupported
from conformance.case.load import Case, CaseError, load_case, load_cases
from conformance.engine import Engine
from conformance.judge.reference import ReferenceFailure, run_reference
from conformance.records.results import read_records

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
