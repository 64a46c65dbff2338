"""On the built site of both editions, a check cell's fold is labelled with its ``# @title``
line (translated on the Chinese site) and the opened fold does not show that line
(book/_ext/fold_titles.py; run by `make html-test` after the build)."""

import os
import sys
from pathlib import Path

import pytest

from tests.book.built_pages import parsed

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from fold_titles import TITLES_ZH  # noqa: E402

if not (HTML / "index.html").exists():
    if os.environ.get("BOOK_REQUIRE_HTML"):
        raise RuntimeError("_build/html is missing: run `jupyter-book build .` first")
    pytest.skip("book not built", allow_module_level=True)

CHECK = "How this is checked"


@pytest.mark.parametrize("folder, expected", [("book", CHECK), ("zh", TITLES_ZH[CHECK])])
def test_built_pages_label_their_check_folds_and_hide_the_title_line(folder, expected):
    pages = sorted((HTML / folder).glob("0*.html"))  # the Chinese pages: _build/html/zh/
    assert pages, f"no chapter pages under {HTML / folder}"
    labelled = 0
    for page in pages:
        soup = parsed(page)
        for fold in soup.select("details.hide.above-input"):
            assert "@title" not in fold.get_text(), f"{page.name}: a fold shows its title line"
            if fold.select_one("summary p.collapsed").get_text(strip=True) == expected:
                labelled += 1
    assert labelled, f"no fold labelled {expected!r} in {folder}/"
