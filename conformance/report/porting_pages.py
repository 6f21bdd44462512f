"""The porting guide as an index and a page per family and direction.

The whole guide (:func:`conformance.report.porting.render_porting`) is one page of several hundred KB,
slow to open and to search on GitHub.  Split, ``PORTING.md`` keeps its introduction and "Find your code"
(a row per hazard, linked to its entry), and lists the family pages of each direction; each family page
(``porting/torch-to-paddle-augmented.md``) holds its entries, and "What PaConvert does" and "Code with no
hazard" have their own.  Every
link is rewritten to the page that now holds its anchor, and a relative link of a page in the folder gains
its ``../``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["split_guide"]

_ANCHOR = re.compile(r'<a name="([^"]+)"></a>')
#: An entry opens with its title in bold: a full one on its own line, a brief one as a list item.
_ENTRY = re.compile(r"^(?:- )?\*\*", re.M)
_LINK = re.compile(r"\]\(([^)\s]*)\)")
#: The sections of the guide with a page of their own, whole: heading -> (file, the words of its first line).
_OWN_PAGES = {"What PaConvert does": ("paconvert.md", "PaConvert"),
              "Code with no hazard": ("no-hazard.md", "no hazard")}
#: The first line of a family page, before its link up to the index is written in (after relinking).
_UP = "{{up}} · {words}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.replace("\\_", "_").lower()).strip("-")


def _heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.replace("\\_", "_").strip().lower()).replace(" ", "-")


def split_guide(page: str, index_name: str, folder: str) -> tuple[str, dict[str, str]]:
    """The index (written as *index_name*) and the pages of *folder*, by file name, of the guide *page*."""
    generated, _, _ = page.partition("\n")
    index: list[str] = []
    pages: dict[str, list[str]] = {}
    current: list[str] | None = None
    direction = ""
    fence = False
    for line in page.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            direction = _slug(line[3:].replace("→", "to"))
            index.append(line)
            current = None
            own = next((page for heading, page in _OWN_PAGES.items() if line.startswith("## " + heading)), None)
            if own is not None:
                name, words = own
                current = pages[name] = [generated, "", _UP.format(words=words), "", "# " + line[3:], ""]
                index += ["", f"A page of its own: [{line[3:]}]({folder}/{name})."]
            continue
        if not fence and line.startswith("### "):
            topic = line[4:].split(":", 1)[0].replace("\\_", "_").strip()
            name = f"{direction}-{_slug(topic)}.md"
            current = pages[name] = [generated, "", _UP.format(words=_direction_words(line)), "", "# " + line[4:]]
            index.append(f"- [{line[4:]}]({folder}/{name})")
            continue
        (current if current is not None else index).append(line)
    texts = {name: "\n".join(lines).rstrip("\n") + "\n" for name, lines in pages.items()}
    for line_number, line in enumerate(index):  # each family's entry count beside its link
        found = re.match(r"- \[.*\]\(" + re.escape(folder) + r"/([^)]+)\)$", line)
        if found:
            entries = len(_ENTRY.findall(texts[found.group(1)]))
            index[line_number] = f"{line} ({entries} hazard{'s' if entries != 1 else ''})"
    index_text = "\n".join(index).rstrip("\n") + "\n"
    homes = _homes(index_text, texts)
    index_text = _relinked(index_text, None, homes, index_name, folder)
    return index_text, {name: _relinked(text, name, homes, index_name, folder).replace(
        _UP.format(words=""), f"[Porting guide](../{index_name}) · ") for name, text in texts.items()}


def _direction_words(line: str) -> str:
    found = re.search(r"\(([^()]*→[^()]*)\)$", line)
    return found.group(1) if found else "the same on both"


def _homes(index: str, pages: Mapping[str, str]) -> dict[str, str | None]:
    """Each anchor and the page that holds it (None: the index)."""
    homes: dict[str, str | None] = {}
    for name, text in [(None, index), *pages.items()]:
        for anchor in _ANCHOR.findall(text):
            homes.setdefault(anchor, name)
        for heading in re.findall(r"^#{1,6} (.*)$", text, flags=re.M):
            homes.setdefault(_heading_anchor(heading), name)
    return homes


def _relinked(text: str, here: str | None, homes: Mapping[str, str | None], index_name: str, folder: str) -> str:
    """*text*, a page of the folder (*here*) or the index (None), with each link leading where it now must."""
    def link(match: re.Match[str]) -> str:
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or not target:
            return match.group(0)
        if target.startswith("#"):
            anchor = target[1:]
            if anchor not in homes or homes[anchor] == here:
                return match.group(0)
            home = homes[anchor]
            if home is None:
                return f"](../{index_name}#{anchor})"
            return f"]({home}#{anchor})" if here is not None else f"]({folder}/{home}#{anchor})"
        if here is None:
            return match.group(0)
        return f"](../{target[2:] if target.startswith('./') else target})"

    return _LINK.sub(link, text)
