"""The site's static files (its stylesheet and its search script), shipped in the package's ``static/``."""

from __future__ import annotations

from importlib import resources

__all__ = ["ASSETS", "asset"]

#: The static files every build copies to the site's top folder.
ASSETS = ("search.js", "site.css")


def asset(name: str) -> str:
    """The text of one static file."""
    return resources.files("conformance.site").joinpath("static", name).read_text(encoding="utf-8")
