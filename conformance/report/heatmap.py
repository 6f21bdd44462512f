"""Optional PNG heatmaps of the matrix, for slides and quick scanning: an overview (topics x columns) and one
per topic (cases x columns), each small enough to read.

matplotlib is an optional extra (``pip install inplace-conformance[plot]``), so
everything here degrades to "not drawn" with the reason instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from conformance.records.outcomes import ORDER
from conformance.records.record import EAGER, Column, Record
from conformance.records.results import latest_by_cell
from conformance.outputs import OutputError, prepare

__all__ = ["COLOURS", "write_heatmap", "write_overview"]

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


def _pyplot() -> tuple[object, object] | str:
    """matplotlib's pyplot and its colormap class, or why they cannot be had."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        return "matplotlib is not installed (pip install 'inplace-conformance[plot]'), so no heatmap was drawn."
    return plt, ListedColormap


def _save(fig: object, plt: object, path: Path | str) -> None:
    try:
        prepare(path)
        fig.savefig(path, dpi=100, bbox_inches="tight", format="png", metadata={"Software": None})
        _to_palette(path)
    except OSError as exc:
        raise OutputError(path, exc) from None
    finally:
        plt.close(fig)


def _to_palette(path: Path | str) -> None:
    """The picture in at most 64 colours (a grid of a few outcome colours and its labels' antialiasing): a
    third of the bytes of matplotlib's RGBA, which every committed page and the GPU transfer carry."""
    try:
        from PIL import Image

        method, dither = Image.Quantize.MEDIANCUT, Image.Dither.NONE
    except (ImportError, AttributeError):  # matplotlib's own dependency (Pillow 9.1 and later name these):
        return                             # without it the picture stays as drawn
    with Image.open(path) as drawn:
        reduced = drawn.convert("RGB").quantize(colors=64, method=method, dither=dither)
    reduced.save(path, format="PNG", optimize=True)


def write_heatmap(records: Iterable[Record], path: Path | str, *, cases: Iterable[str] | None = None,
                  title: str = "outcome per case and column") -> str | None:
    """Draw the cases (all, or *cases*) against the eager columns to *path*; return None when written, else
    why it was not.  The compiled modes are in the report's tables: a picture of every mode of every
    version would be too wide to read.

    A path that cannot be written is an :class:`OutputError`, not a note: the user asked for that file.
    """
    found = _pyplot()
    if isinstance(found, str):
        return found
    plt, ListedColormap = found
    from matplotlib.patches import Patch
    import numpy as np

    wanted = None if cases is None else set(cases)
    cells = {key: r for key, r in latest_by_cell(records).items() if r.mode == EAGER
             and (wanted is None or r.case in wanted)}
    columns = sorted({r.column for r in cells.values() if r.outcome != "skipped"})
    rows = sorted({(r.topic or "", r.case) for r in cells.values()})
    if not columns or not rows:
        return "no cell ran, so no heatmap was drawn."
    known = [kind for outcome in ORDER for kind in ((WARNS_WRONG, outcome) if outcome == "warns" else (outcome,))]
    outcomes = known + sorted({_kind(r) for r in cells.values()} - set(known))
    grid = np.full((len(rows), len(columns)), np.nan)
    for i, (_, case) in enumerate(rows):
        for j, column in enumerate(columns):
            record = cells.get((case, column))
            if record is not None:
                grid[i, j] = outcomes.index(_kind(record))
    cmap = ListedColormap([COLOURS.get(o, "#000000") for o in outcomes]).with_extremes(bad="white")
    fig, ax = plt.subplots(figsize=(3.0 + 0.55 * len(columns), 1.6 + 0.3 * len(rows)))
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(outcomes) - 0.5, aspect="auto")
    ax.set_xticks(range(len(columns)), [_short(c) for c in columns], rotation=45, ha="right")
    one_topic = len({topic for topic, _ in rows}) == 1
    ax.set_yticks(range(len(rows)), [case if one_topic or not topic else f"{topic}/{case}" for topic, case in rows])
    ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(rows)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    present = [outcomes[int(i)] for i in sorted(set(grid[~np.isnan(grid)].tolist()))]
    ax.legend(handles=[Patch(color=COLOURS.get(o, "#000000"), label=o) for o in present],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title)
    _save(fig, plt, path)
    return None


def write_overview(records: Iterable[Record], path: Path | str) -> str | None:
    """Draw, for each topic (a row) and eager column, how many of its cases are wrong and how many raise:
    the whole catalogue at a glance, one row per topic (each topic's page has its cases' heatmap)."""
    found = _pyplot()
    if isinstance(found, str):
        return found
    plt, _ = found
    import numpy as np

    cells = [r for r in latest_by_cell(records).values() if r.mode == EAGER and r.outcome != "skipped"]
    columns = sorted({r.column for r in cells})
    topics = sorted({r.topic or "" for r in cells})
    if not columns or not topics:
        return "no cell ran, so no heatmap was drawn."
    wrong = np.zeros((len(topics), len(columns)))
    raises = np.zeros_like(wrong)
    total = np.zeros_like(wrong)
    for record in cells:
        i, j = topics.index(record.topic or ""), columns.index(record.column)
        total[i, j] += 1
        wrong[i, j] += record.wrong or record.outcome in ("crash", "timeout")
        raises[i, j] += record.outcome == "raises"
    share = np.divide(wrong, total, out=np.zeros_like(wrong), where=total > 0)
    fig, ax = plt.subplots(figsize=(3.0 + 0.9 * len(columns), 1.8 + 0.55 * len(topics)))
    image = ax.imshow(share, cmap="Reds", vmin=0.0, vmax=max(0.5, float(share.max())), aspect="auto")
    for i in range(len(topics)):
        for j in range(len(columns)):
            if total[i, j]:
                ax.text(j, i, f"{int(wrong[i, j])} wrong\n{int(raises[i, j])} raise", ha="center", va="center",
                        fontsize=7, color="white" if share[i, j] > 0.35 else "black")
    ax.set_xticks(range(len(columns)), [_short(c) for c in columns], rotation=45, ha="right")
    ax.set_yticks(range(len(topics)), [t or "no topic" for t in topics])
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02, label="share of the topic's cases wrong")
    ax.set_title("per topic and eager column: cases wrong (silently, beside a warning, crashed, hung) and cases "
                 "that raise")
    _save(fig, plt, path)
    return None


def _short(column: Column) -> str:
    """A column's label without torch's CPU-build suffix (``torch 2.13.0+cpu cpu`` -> ``torch 2.13.0 cpu``); a
    label that names more (PaConvert's ``3.3.1+paddle3.3.1``) is kept whole."""
    return f"{column.framework} {column.version.removesuffix('+cpu')} {column.device}"
