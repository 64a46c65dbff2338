"""The built site's pages, each parsed once per test run and shared by the tests of
``tests/book`` (a chapter page is about 1 MB: html.parser took 0.2-0.5 s a parse, and the
tests asked for each page six to eight times). A test reads what it is given and never
changes it; one that must change a page parses its own copy."""

from __future__ import annotations

import functools
from pathlib import Path

from bs4 import BeautifulSoup


@functools.cache
def parsed(path: Path) -> BeautifulSoup:
    """``path`` (a built page) parsed, the same object for every caller: read it only."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
