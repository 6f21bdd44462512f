"""What stands, in pytest's own structures, for what a run's parent lets go of once a cell ran: pytest
keeps every item, every report and every reported node id to the end of a session, and a run's memory
would grow with its cells (see the plugin's runtest loop and RunState)."""

from __future__ import annotations

from typing import Any

from conformance.recent import Recent

__all__ = ["COUNTED", "RAN", "ProgressCount", "count_progress_only"]


class _Ran:
    """What stands in the session's list of items for an item that ran and was let go (with a node id and
    a location, which the terminal's "times" progress style reads of every item)."""

    nodeid = ""
    location = ("", None, "")

    def __repr__(self) -> str:
        return "<item that ran>"


RAN: Any = _Ran()


class _Counted:
    """What stands in the terminal's lists of reports for a passing cell's report (see RunState)."""

    def __repr__(self) -> str:
        return "<passing cell, counted>"


COUNTED: Any = _Counted()


class ProgressCount:
    """Stands for the terminal's set of the node ids it reported, which it only adds to and counts (its
    progress percentage): it counts each id once, as the set does, knowing only the ids of the cells in
    flight (a cell's reports come together; xdist interleaves those of a few cells), so the terminal
    does not keep every node id of the run."""

    def __init__(self, ids: set) -> None:
        self.count = len(ids)
        self.recent: Recent[Any, None] = Recent(1024)
        for nodeid in ids:
            self.recent[nodeid] = None

    def add(self, nodeid: Any) -> None:
        if nodeid not in self.recent:
            self.count += 1
        self.recent[nodeid] = None

    def __len__(self) -> int:
        return self.count


def count_progress_only(reporter: Any) -> None:
    """Put a :class:`ProgressCount` in the terminal reporter's place of its set of reported node ids, where
    the reporter is the one this was written for (the attribute is pytest's own, not its API: anything
    else is left as it is)."""
    ids = getattr(reporter, "_progress_nodeids_reported", None)
    if type(ids) is set:
        reporter._progress_nodeids_reported = ProgressCount(ids)
