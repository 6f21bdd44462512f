"""``upgrades/``: a page per upgrade step (each release against the one before it, and the common jumps),
listing every changed cell ranked as ``conformance diff`` ranks it, each linking to its case's page."""

from __future__ import annotations

from typing import Sequence

from conformance.outcomes import outcome_label
from conformance.report.diff import SEVERITIES, SHORT_NAMES, Change, Comparison, short_counts
from conformance.site.html import badge, esc, page, slug
from conformance.site.steps import Step, comparison_where

__all__ = ["render_step", "render_steps_index", "step_file"]


def step_file(step: Step) -> str:
    """The page of a step, from the site's top folder."""
    return f"upgrades/{step.name}.html"


def _detail(change: Change) -> str:
    old, new = change.old.brief, change.new.brief
    text = f"was {old or '-'}; now {new or '-'}" if old != new else new
    if change.cause:
        text += (" [NumPy and the framework both change it]" if change.cause == "both"
                 else f" [the change is {change.cause}'s]")
    return text


def _change(change: Change, titles: dict[str, str], columns: bool) -> str:
    old, new = change.old, change.new
    column = change.pair[1]
    title = titles.get(change.case)
    link = (f'<a href="../cases/{esc(change.case)}.html">{esc(change.case)}</a>' if title is not None
            else esc(change.case))
    return (f'<tr data-case="{esc(change.case)}" data-old="{esc(old.outcome)}" data-new="{esc(new.outcome)}" '
            f'data-severity="{change.severity}"><td>{link}'
            + (f'<br><small>{esc(title)}</small>' if title else "")
            + "</td>" + (f"<td>{esc(column.device)}, {esc(column.mode)}</td>" if columns else "")
            + "".join(f"<td>{badge(side.outcome, outcome_label(side.outcome, side.correct))}</td>"
                      for side in (old, new))
            + f"<td>{esc(_detail(change))}</td></tr>")


def _comparison(comparison: Comparison, titles: dict[str, str]) -> str:
    where = comparison_where(comparison)
    parts = [f'<h2 id="{slug(where)}">{esc(where)}</h2>\n',
             f"<p>{comparison.compared} cells compared: "
             + ", ".join(f"{n} {esc(name)}" for n, name in zip(short_counts(comparison), SHORT_NAMES.values()))
             + "</p>\n"]
    parts += [f'<p class="note">{esc(note)}</p>\n' for note in comparison.notes]
    if not comparison.changes:
        parts.append("<p>No outcome changed.</p>\n")
    for rank, heading in SEVERITIES.items():
        changes = [c for c in comparison.changes if c.severity == rank]
        if changes:
            columns = len(comparison.pairs) > 1
            rows = "\n".join(_change(c, titles, columns) for c in changes)
            head = "<th>case</th>" + ("<th>device, mode</th>" if columns else "") + \
                "<th>before</th><th>after</th><th>detail</th>"
            parts.append(f"<h3>{rank}. {esc(heading)} ({len(changes)})</h3>\n<table class=\"changes\"><thead><tr>"
                         f"{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table>\n")
    for title, cases in (("only before", comparison.only_old), ("only after", comparison.only_new)):
        if cases:
            parts.append(f"<h3>{title} ({len(cases)})</h3>\n<p>" + ", ".join(esc(case) for case, _ in cases)
                         + "</p>\n")
    return "".join(parts)


def _modes_together(step: Step, titles: dict[str, str]) -> str:
    """Where a step compares several modes: every case any of them changed, one row, a column per mode (its
    change there, or that it kept its outcome), most severe first; the sections below give each mode's detail."""
    modes = [c for c in step.comparisons if len(c.pairs) == 1]
    if len(modes) < 2 or not any(c.changes for c in modes):
        return ""
    changed: dict[str, dict[int, Change]] = {}
    for at, comparison in enumerate(modes):
        for change in comparison.changes:
            changed.setdefault(change.case, {})[at] = change
    order = sorted(changed, key=lambda case: (min(c.severity for c in changed[case].values()), case))
    head = "".join(f"<th>{esc(comparison_where(c))}</th>" for c in modes)
    rows = []
    for case in order:
        title = titles.get(case)
        link = f'<a href="../cases/{esc(case)}.html">{esc(case)}</a>' if title is not None else esc(case)
        cells = []
        for at, comparison in enumerate(modes):
            change = changed[case].get(at)
            if change is None:
                absent = ("only before" if any(c == case for c, _ in comparison.only_old) else
                          "only after" if any(c == case for c, _ in comparison.only_new) else "unchanged")
                cells.append(f"<td>{absent}</td>")
                continue
            cells.append("<td>" + " → ".join(badge(side.outcome, outcome_label(side.outcome, side.correct))
                                             for side in (change.old, change.new)) + "</td>")
        rows.append(f'<tr data-case="{esc(case)}"><td>{link}</td>{"".join(cells)}</tr>')
    return (f"<h2 id=\"every-mode\">Every mode at once ({len(order)} cases)</h2>\n<p>Each case this step changes in "
            "any mode, with what it does in each; the sections below rank each mode's changes and give their "
            "detail.</p>\n"
            f'<table class="changes modes"><thead><tr><th>case</th>{head}</tr></thead>\n<tbody>\n'
            + "\n".join(rows) + "\n</tbody></table>\n")


def render_step(step: Step, steps: Sequence[Step], titles: dict[str, str]) -> str:
    """One step's page; *titles*: case id -> title, for the cases that have a page."""
    line = [s for s in steps if s.framework == step.framework and s.jump == step.jump]
    at = line.index(step)
    around = [f'<a href="{s.name}.html" rel="{rel}">{label}: {esc(s.title)}</a>'
              for s, rel, label in ((line[at - 1] if at else None, "prev", "previous"),
                                    (line[at + 1] if at + 1 < len(line) else None, "next", "next")) if s is not None]
    kind = ("A jump over several releases" if step.jump
            else "Each cell of a release against the same cell of the release before it")
    body = (f'<h1 data-step="{esc(step.name)}">{esc(step.title)}</h1>\n'
            f"<p>{kind}, per device and mode, ranked as <code>conformance diff {esc(step.framework)}=="
            f"{esc(step.old)} {esc(step.framework)}=={esc(step.new)}</code> ranks them (a new silent-wrong first). "
            f'<a href="index.html">All steps</a>' + (" · " + " · ".join(around) if around else "") + "</p>\n"
            + _modes_together(step, titles) + "".join(_comparison(c, titles) for c in step.comparisons))
    return page(f"{step.title}: what changes", body, "../")


def render_steps_index(steps: Sequence[Step]) -> str:
    head = "".join(f"<th>{esc(name)}</th>" for name in SHORT_NAMES.values())
    parts = ["<h1>Upgrades</h1>\n<p>Each release against the one before it, per framework, device and mode, "
             "from the results (what <code>conformance upgrades</code> writes), then the common jumps over "
             "several releases (<code>tox -e diff</code>). The counts are changed cells by kind.</p>\n"]
    for jump in (False, True):
        chosen = [s for s in steps if s.jump == jump]
        if not chosen:
            continue
        rows = []
        for step in chosen:
            for comparison in step.comparisons:
                counts = "".join(f"<td>{n}</td>" for n in short_counts(comparison))
                rows.append(f'<tr><td><a href="{step.name}.html" data-step="{esc(step.name)}">{esc(step.title)}</a>'
                            f"</td><td>{esc(comparison_where(comparison))}</td><td>{comparison.compared}</td>"
                            f"{counts}</tr>")
        parts.append(f"<h2>{'Jumps' if jump else 'Each release'}</h2>\n<table class=\"steps\"><thead><tr>"
                     f"<th>step</th><th>device, mode</th><th>cells compared</th>{head}</tr></thead>\n<tbody>\n"
                     + "\n".join(rows) + "\n</tbody></table>\n")
    return page("Upgrades: each release against the one before it", "".join(parts), "../")
