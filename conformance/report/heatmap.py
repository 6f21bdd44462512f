"""An optional PNG heatmap of the matrix (cases x columns), for slides and quick scanning.

matplotlib is an optional extra (``pip install inplace-conformance[plot]``), so
everything here degrades to "not drawn" with the reason instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from conformance.records.outcomes import ORDER
from conformance.records.record import Record
from conformance.records.results import latest_by_cell
from conformance.outputs import OutputError, prepare

__all__ = ["COLOURS", "write_heatmap"]

#: One colour per outcome; danger in reds, memory semantics in blues, "not a behaviour" in greys.
COLOURS = {
    "silent-wrong": "#d62728", "crash": "#8c1d1d", "timeout": "#9467bd", "warns (wrong result)": "#b35806",
    "warns": "#ffbf00",
    "raises": "#ff7f0e", "silent-correct": "#2ca02c", "aliases": "#1f77b4", "copies": "#9ecae1",
    "unsupported": "#bdbdbd", "error": "#e377c2", "skipped": "#eeeeee",
}


#: A warning beside a wrong result is a finding; a harmless warning is not: they get colours of their own.
WARNS_WRONG = "warns (wrong result)"


def _kind(record: Record) -> str:
    return WARNS_WRONG if record.outcome == "warns" and record.wrong else record.outcome


def write_heatmap(records: Iterable[Record], path: Path | str) -> str | None:
    """Draw the heatmap to *path*; return None when written, else why it was not.

    A path that cannot be written is an :class:`OutputError`, not a note: the user asked for that file.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
        from matplotlib.patches import Patch
    except ImportError:
        return "matplotlib is not installed (pip install 'inplace-conformance[plot]'), so no heatmap was drawn."
    import numpy as np

    cells = latest_by_cell(records)
    columns = sorted({r.column for r in cells.values() if r.outcome != "skipped"})
    cases = sorted({(r.topic or "", r.case) for r in cells.values()})
    if not columns or not cases:
        return "no cell ran, so no heatmap was drawn."
    known = [kind for outcome in ORDER for kind in ((WARNS_WRONG, outcome) if outcome == "warns" else (outcome,))]
    outcomes = known + sorted({_kind(r) for r in cells.values()} - set(known))
    grid = np.full((len(cases), len(columns)), np.nan)
    for i, (_, case) in enumerate(cases):
        for j, column in enumerate(columns):
            record = cells.get((case, column))
            if record is not None:
                grid[i, j] = outcomes.index(_kind(record))
    cmap = ListedColormap([COLOURS.get(o, "#000000") for o in outcomes]).with_extremes(bad="white")
    fig, ax = plt.subplots(figsize=(2.0 + 1.3 * len(columns), 1.5 + 0.32 * len(cases)))
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(outcomes) - 0.5, aspect="auto")
    ax.set_xticks(range(len(columns)), [c.label for c in columns], rotation=30, ha="right")
    ax.set_yticks(range(len(cases)), [f"{topic}/{case}" if topic else case for topic, case in cases])
    ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(cases)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    present = [outcomes[int(i)] for i in sorted(set(grid[~np.isnan(grid)].tolist()))]
    ax.legend(handles=[Patch(color=COLOURS.get(o, "#000000"), label=o) for o in present],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("outcome per case and column")
    try:
        prepare(path)
        fig.savefig(path, dpi=110, bbox_inches="tight", format="png")
    except OSError as exc:
        raise OutputError(path, exc) from None
    finally:
        plt.close(fig)
    return None
