"""``cases/<id>.html``: one case, as a porter reads it: what it is and why it goes wrong, the code each
framework's user writes, the safe spelling, then the grid of every version with its evidence."""

from __future__ import annotations

from conformance.site.grid import render_grid
from conformance.site.html import badge, esc, legend, page, prose, slug
from conformance.site.model import CaseData, SiteData

__all__ = ["case_file", "render_case"]

#: What the porting guide calls PaConvert's verdicts on a program.
_VERDICTS = {"keeps": "keeps the meaning", "changes": "changes the meaning",
             "breaks": "breaks it: the converted program does not run as the torch program does"}


def case_file(case_id: str) -> str:
    """The page of a case, from the site's top folder."""
    return f"cases/{case_id}.html"


def _today(data: CaseData, site: SiteData) -> str:
    parts = []
    for framework in site.frameworks:
        record = data.newest(framework)
        if record is not None:
            parts.append(f'<li data-framework="{esc(framework)}"><b>{esc(framework)} {esc(record.framework_version)}'
                         f"</b> {badge(record.outcome, record.outcome_label)}</li>")
    if not parts:
        return ""
    return f'<ul class="today" title="the newest version of each framework, cpu, eager">{"".join(parts)}</ul>\n'


def _program(data: CaseData, framework: str) -> str:
    program = data.programs.get(framework)
    show = f"conformance show {data.case.id} --framework {framework}"
    if program is None:
        return (f'<div class="program" data-framework="{esc(framework)}"><h3>{esc(framework)}</h3>'
                f"<p>No program of {esc(framework)} is kept beside these results: "
                f"<code>{esc(show)}</code> prints it, with {esc(framework)} installed.</p></div>")
    notes = [f"as {esc(framework)} {esc(program.version)} spells it ({esc(program.device)}, {esc(program.mode)})"]
    if program.stale:
        notes.append("kept before the case last changed")
    if program.unsupported:
        notes.append(f"unsupported from here on: {esc(program.unsupported)}")
    return (f'<div class="program" data-framework="{esc(framework)}" data-version="{esc(program.version)}">'
            f'<h3>{esc(framework)}</h3><p class="spelled">{"; ".join(notes)}</p>'
            f"<pre><code>{esc(program.code.rstrip())}</code></pre>"
            f'<p class="spelled">The whole reproducer: <code>{esc(show)}</code></p></div>')


def _programs(data: CaseData, site: SiteData) -> str:
    return '<div class="pair">' + "".join(_program(data, f) for f in site.languages) + "</div>\n"


def _converters(data: CaseData, site: SiteData) -> str:
    lines = []
    for framework in sorted(site.converters):
        record = data.newest(framework)
        if record is None:
            continue
        conversion = site.conversions.get(data.case.id)
        verdict = (f": it {esc(_VERDICTS.get(conversion.verdict, conversion.verdict))}"
                   + (" (silently)" if conversion.silent else "") if conversion is not None
                   and conversion.converted.framework == framework else "")
        lines.append(f'<p class="converter" data-framework="{esc(framework)}"><b>{esc(framework)}</b> '
                     f"{esc(record.framework_version)} converts the torch program and runs it on paddle: "
                     f"{badge(record.outcome, record.outcome_label)}{verdict}. "
                     f"<code>conformance show {esc(data.case.id)} --framework {esc(framework)}</code> "
                     f"prints the converted program.</p>")
    return "".join(line + "\n" for line in lines)


def _remedies(data: CaseData, site: SiteData) -> str:
    case = data.case
    by_id = site.by_id
    hazard = site.remedies.hazards.get(case.id)
    parts = []
    for remedy in case.remedy:
        other = by_id.get(remedy)
        if other is None:
            parts.append(f"<h3><code>{esc(remedy)}</code> (no such case in the catalogue)</h3>")
            continue
        where = ""
        if hazard is not None:
            verified = sum(1 for name in hazard.verified.values() if name == remedy)
            where = (f'<p class="verified">verified on {verified} of the {len(hazard.ran)} columns '
                     f"where this case ran</p>")
        parts.append(f'<h3 class="remedy"><a href="{esc(remedy)}.html">{esc(other.case.title)}</a> '
                     f"<code>{esc(remedy)}</code></h3>{where}{_programs(other, site)}")
    if case.no_remedy:
        parts.append(f'<p class="no-remedy">No safe spelling: {prose(case.no_remedy)}</p>')
    remedied = [d for d in site.cases if case.id in d.case.remedy]
    if remedied:
        links = ", ".join(f'<a href="{esc(d.case.id)}.html">{esc(d.case.id)}</a>' for d in remedied)
        parts.append(f'<p class="remedy-of">This case is the safe spelling of {links}.</p>')
    if not parts:
        return ""
    return '<section id="safe"><h2>What to write instead</h2>\n' + "\n".join(parts) + "\n</section>\n"


def _scan(case_id: str, site: SiteData) -> str:
    """The rules of ``conformance scan`` that find this case in a user's code."""
    from conformance.scan.rules import by_code

    codes = site.scan_rules.get(case_id)
    if not codes:
        return ""
    rules = by_code()
    named = "; ".join(f"<code>{esc(code)}</code> ({esc(rules[code].title)})" for code in codes if code in rules)
    return f'<p class="scan">Found in your code by <code>conformance scan</code>: {named}</p>\n'


def render_case(data: CaseData, site: SiteData) -> str:
    case = data.case
    title, _ = site.topics.get(case.topic, (case.topic, ""))
    head = (f'<h1 data-case="{esc(case.id)}">{esc(case.title)}</h1>\n'
            f'<p class="meta"><code>{esc(case.id)}</code> · topic <a href="../index.html#{slug("topic", case.topic)}">'
            f"{esc(case.topic)}</a>: {prose(title)}</p>\n")
    if case.source:
        head += f'<p class="source">Source: {prose(case.source)}</p>\n'
    head += _today(data, site)
    if case.cause:
        head += f'<p class="cause"><b>Why:</b> {prose(case.cause)}</p>\n'
    if case.judged_against:
        head += (f'<p class="judged"><b>Judged against:</b> {prose(case.judged_against)} (silent-wrong here means: '
                 f'differs from it)</p>\n')
    if case.varies_by_machine:
        head += f'<p class="machine"><b>Varies by machine:</b> {prose(case.varies_by_machine)}</p>\n'
    head += _scan(case.id, site)
    if case.description:
        head += f'<p class="description">{prose(case.description)}</p>\n'
    body = (head + '<section id="code"><h2>The code</h2>\n' + _programs(data, site) + _converters(data, site)
            + "</section>\n" + _remedies(data, site)
            + '<section id="grid"><h2>Every version</h2>\n'
            + "<p>A cell per version (columns) and device and mode (rows); each links to its evidence below. "
              "The reproducer prints what the program observes, run with that version installed.</p>\n"
            + legend() + render_grid(data, site) + "</section>\n")
    return page(f"{case.id}: {case.title}", body, "../")
