"""Cases: framework-neutral programs of steps, read and checked from YAML files."""

from conformance.case.load import (Case, CaseError, Step, Tolerance, case_from_message, find_case_files,
                                   load_case, load_cases)

__all__ = ["Case", "CaseError", "Step", "Tolerance", "case_from_message", "find_case_files", "load_case",
           "load_cases"]
