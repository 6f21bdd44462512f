"""The static site of the matrix (``conformance site``): a page per case with the code of each framework
and a grid of every version, a page per upgrade step, and an index that finds a case by the code a reader
writes.  HTML, CSS and a little JavaScript, with relative links and nothing fetched: it reads from
``file://`` as from any web folder."""

from conformance.site.build import Built, SiteError, build_site

__all__ = ["Built", "SiteError", "build_site"]
