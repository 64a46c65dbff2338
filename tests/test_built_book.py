"""Checks on the built HTML (run by `make test` after `jupyter-book build`)."""

import os
import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))

if not (HTML / "index.html").exists():
    if os.environ.get("BOOK_REQUIRE_HTML"):
        raise RuntimeError("_build/html is missing: run `jupyter-book build .` first")
    pytest.skip("book not built", allow_module_level=True)


def page(chapter: Path) -> BeautifulSoup:
    return BeautifulSoup((HTML / "book" / f"{chapter.stem}.html").read_text(), "html.parser")


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
    claim_ids = sorted(set(re.findall(r'claim\("(C\d\d)"', chapter.read_text())))
    assert claim_ids, "a chapter checks at least one claim"
    for claim_id in claim_ids:
        assert re.search(rf"{claim_id} (held|skipped \()", text), f"{claim_id} output missing"
        assert f"{claim_id} failed" not in text
    assert re.search(r"Exercise ex\d\d-\d+: passed", text)
    assert not re.search(r"Exercise ex\d\d-\d+: not yet", text)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_solutions_folded_and_setup_hidden(chapter):
    soup = page(chapter)
    solutions = soup.select(".solution")
    assert len(solutions) >= 3
    assert all("dropdown" in s["class"] for s in solutions)
    assert soup.select(".tag_hide-cell"), "the setup cell is folded"
