"""Checks on the built HTML (run by `make test` after `jupyter-book build`)."""

import base64
import os
import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from tests.book.built_pages import parsed
from tools.build.chapter_format import chapters
from tools.pages.claims_appendix import load_ledger

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
CHAPTERS = chapters()
EMBEDDED = "data:image/png;base64,"

if not (HTML / "index.html").exists():
    if os.environ.get("BOOK_REQUIRE_HTML"):
        raise RuntimeError("_build/html is missing: run `jupyter-book build .` first")
    pytest.skip("book not built", allow_module_level=True)


def page(chapter: Path) -> BeautifulSoup:
    return parsed(HTML / "book" / f"{chapter.stem}.html")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_colab_button_opens_the_generated_notebook(chapter):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].rstrip("/").removeprefix("https://github.com/")
    links = [a["href"] for a in page(chapter).find_all("a", href=True)
             if a["href"].startswith("https://colab.research.google.com/")]
    expected = (f"https://colab.research.google.com/github/{repo}/blob/"
                f"{config['repository']['branch']}/notebooks/{chapter.stem}.ipynb")
    assert links == [expected]
    assert (ROOT / "notebooks" / f"{chapter.stem}.ipynb").exists()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_was_executed_and_its_claims_held(chapter):
    text = page(chapter).get_text()
    claim_ids = sorted(set(re.findall(r'claim\("(C\d{2,3})"', chapter.read_text())))
    assert claim_ids, "a chapter checks at least one claim"
    for claim_id in claim_ids:
        assert re.search(rf"{claim_id}( \[[a-z-]+\])? (held|skipped \()", text), \
            f"{claim_id} output missing"
        assert not re.search(rf"{claim_id}( \[[a-z-]+\])? failed", text)
    assert re.search(r"Exercise ex\d\d-\d+: passed", text)
    assert not re.search(r"Exercise ex\d\d-\d+: not yet", text)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_solutions_folded_and_setup_hidden(chapter):
    soup = page(chapter)
    solutions = soup.select(".solution")
    assert len(solutions) >= 3
    assert all("dropdown" in s["class"] for s in solutions)
    assert soup.select(".tag_hide-input"), "the setup cell's code is folded"
    assert re.search(r"Last verified: \d{4}-\d\d-\d\d \d\d:\d\d UTC on \w+", soup.get_text())


def test_claims_appendix_lists_every_claim_with_a_result():
    soup = BeautifulSoup((HTML / "book" / "appendix_claims.html").read_text(), "html.parser")
    rows = soup.select("table tbody tr")
    ids = [row.find("td").get_text(strip=True) for row in rows]
    assert ids == sorted(load_ledger(), key=lambda i: int(i[1:])) and len(ids) >= 45
    for row in rows:
        cells = [td.get_text(" ", strip=True) for td in row.find_all("td")]
        assert "missing" not in cells[2], cells[:3]
        assert row.find("a", href=True), f"{cells[0]}: no link to its chapter"
        results = cells[3] + " " + cells[4]
        assert re.search(r"\b(held|skipped)\b", results), f"{cells[0]}: no result: {results}"
        assert "failed" not in results, f"{cells[0]}: {results}"


def test_field_guide_links_resolve_to_chapters():
    soup = BeautifulSoup((HTML / "book" / "appendix_field_guide.html").read_text(),
                         "html.parser")
    links = [a["href"] for a in soup.select("table a[href]")]
    assert len(links) >= 30
    for href in links:
        page = href.split("#")[0]
        assert (HTML / "book" / page).exists(), href


# Chapter 00 is about the set-up and has nothing to plot; every other chapter shows at least one
# figure made by its own executed code (issue: pictures where people would rather look than read).
@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if not c.stem.startswith("00")],
                         ids=lambda p: p.stem)
def test_chapter_shows_a_figure_from_its_own_execution(chapter):
    images = [img["src"] for img in page(chapter).select(".cell_output img")]
    assert images, f"{chapter.stem}: no figure among the executed outputs"
    for src in images:
        if src.startswith(EMBEDDED):  # an explorer's states are in the page (helpers.explore)
            data = base64.b64decode(src.removeprefix(EMBEDDED), validate=True)
        else:
            path = (HTML / "book" / src).resolve()
            assert path.suffix == ".png" and path.is_file(), src[:80]
            data = path.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5_000, src[:80]
