"""Records: one result per cell, baselines of known outcomes, and the outcome vocabulary.

:class:`Record` is the one typed form every consumer reads; :func:`explain` is
the one explanation of a cell; :class:`Column` is the one column key.
"""

from conformance.records.explain import explain
from conformance.records.record import Column, Record, RecordError
from conformance.records.results import ResultsError, append_record, load_records, read_records

__all__ = ["Column", "Record", "RecordError", "ResultsError", "append_record", "explain", "load_records",
           "read_records"]
