"""``search-index.js``: what the index page's search box looks through, one line per case.

A reader looks a hazard up by the code they write (``+=``, ``.data``, ``from_numpy``), so each entry
holds the case's id, title, topic and cause and the code each framework's user writes.  It is a script
that sets a global rather than a JSON file, because a page opened from ``file://`` may not ``fetch()``.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.records.outcomes import SYMBOLS
from conformance.site.case_page import case_file
from conformance.site.model import CaseData, SiteData

__all__ = ["INDEX_FILE", "entry", "render_search_index"]

INDEX_FILE = "search-index.js"


def entry(data: CaseData, site: SiteData) -> dict[str, Any]:
    """What the search box knows of one case."""
    case = data.case
    today = []
    for framework in site.frameworks:
        record = data.newest(framework)
        if record is not None:
            today.append([framework, record.framework_version, record.outcome, record.outcome_label,
                          SYMBOLS.get(record.outcome, "?")])
    topic_title = site.topics[case.topic][0].replace("`", "")  # plain text: the script shows it as text
    return {"id": case.id, "title": case.title, "topic": case.topic, "topicTitle": topic_title,
            "cause": case.cause, "generated": case.generated,
            "code": [[f, data.programs[f].code] for f in site.languages if f in data.programs],
            "today": today, "url": case_file(case.id)}


def render_search_index(site: SiteData) -> str:
    lines = [json.dumps(entry(data, site), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
             for data in site.cases]
    return "window.CONFORMANCE_INDEX = [\n" + ",\n".join(lines) + "\n];\n"
