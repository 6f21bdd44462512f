"""``index.html``: the way in.  A search box finds a case by the code a reader writes; without JavaScript
the page still lists every case, by topic, with each framework's outcome today."""

from __future__ import annotations

import urllib.parse
from typing import Sequence

from conformance.records.outcomes import SYMBOLS
from conformance.site.case_page import case_file
from conformance.site.html import esc, legend, outcome_class, page, prose, slug
from conformance.site.model import CaseData, SiteData
from conformance.site.search import INDEX_FILE
from conformance.site.steps import Step
from conformance.site.upgrade_pages import step_file

__all__ = ["EXAMPLES", "render_index"]

#: Queries the page offers as examples: code that readers search for.
EXAMPLES = ("+=", ".data", "from_numpy", "sin_", "retain_graph", "detach", "clone", "inplace=True")


def _today(data: CaseData, site: SiteData) -> str:
    parts = []
    for framework in site.frameworks:
        record = data.newest(framework)
        if record is not None:
            title = f"{framework} {record.framework_version}: {record.outcome_label}"
            parts.append(f'<span class="o {outcome_class(record.outcome)}" title="{esc(title)}">{esc(framework)} '
                         f'{SYMBOLS.get(record.outcome, "?")}</span>')
    return f' <span class="mini">{" ".join(parts)}</span>' if parts else ""


def _catalogue(site: SiteData) -> str:
    parts = ['<section id="catalogue"><h2>Every case, by topic</h2>\n']
    for topic, (title, intro) in site.topics.items():
        cases = [d for d in site.cases if d.case.topic == topic]
        if not cases:
            continue
        items = "".join(f'<li data-case="{esc(d.case.id)}"><a href="{case_file(d.case.id)}">{esc(d.case.title)}</a> '
                        f"<code>{esc(d.case.id)}</code>{_today(d, site)}</li>\n" for d in cases)
        parts.append(f'<h3 id="{slug("topic", topic)}">{esc(topic)}: {prose(title)} ({len(cases)})</h3>\n'
                     + (f'<p class="intro">{prose(intro)}</p>\n' if intro else "") + f"<ul>\n{items}</ul>\n")
    return "".join(parts) + "</section>\n"


def _upgrades(steps: Sequence[Step]) -> str:
    lines = []
    for framework in sorted({s.framework for s in steps if not s.jump}):
        links = " · ".join(f'<a href="{step_file(s)}" data-step="{esc(s.name)}">{esc(s.old)} → {esc(s.new)}</a> '
                           f"({s.changes})" for s in steps if s.framework == framework and not s.jump)
        lines.append(f"<li><b>{esc(framework)}</b>: {links}</li>")
    jumps = " · ".join(f'<a href="{step_file(s)}" data-step="{esc(s.name)}">{esc(s.title)}</a> ({s.changes})'
                       for s in steps if s.jump)
    if jumps:
        lines.append(f"<li><b>jumps</b>: {jumps}</li>")
    return ('<section id="upgrades"><h2>Upgrading?</h2>\n<p>Each release against the one before it '
            '(the number of changed cells in brackets); <a href="upgrades/index.html">all steps</a>.</p>\n'
            '<ul class="steps">\n' + "\n".join(lines) + "\n</ul>\n</section>\n")


def render_index(site: SiteData, steps: Sequence[Step]) -> str:
    examples = " ".join(f'<a href="index.html?q={urllib.parse.quote(q, safe="")}" data-query="{esc(q)}">'
                        f"<code>{esc(q)}</code></a>" for q in EXAMPLES)
    body = ("<h1>In-place and aliasing semantics: PyTorch and PaddlePaddle</h1>\n"
            f"<p>What each framework does with {len(site.cases)} programs that write tensors in place or share "
            "their memory, over every version in the results: raises, warns, computes silently and correctly, "
            "or silently and wrongly (against a NumPy float64 reference). Look a case up by the code you "
            "write; each page has the code of each framework, the safe spelling, and a cell per version with "
            "the command that reproduces it.</p>\n"
            '<form id="search" action="index.html" method="get" role="search">'
            '<label for="q">Find a case by the code you write</label> '
            '<input id="q" name="q" type="search" autocomplete="off" spellcheck="false" '
            'placeholder="+=, .data, from_numpy, sin_, retain_graph, detach, clone, inplace=True"> '
            '<button type="submit">Search</button></form>\n'
            f'<p class="examples">For example: {examples}</p>\n'
            '<p id="count" aria-live="polite"></p>\n<ol id="results" hidden></ol>\n'
            + _upgrades(steps) + legend() + _catalogue(site))
    return page("In-place conformance: PyTorch and PaddlePaddle", body, "", scripts=(INDEX_FILE, "search.js"))
