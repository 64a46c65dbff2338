"""Checks on the built Chinese edition, _build/html/zh/ (run by `make test` after the build).

The English pages' side of the language links is checked here too: a link each way.
"""

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from tests.book.built_pages import parsed
from tools.build.zh import edition as zh_edition

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
ZH = HTML / "zh"
PAGES = zh_edition.pages()
CHAPTERS = [p for p in PAGES if zh_edition.is_chapter(p)]

if not (ZH / "index.html").exists():
    if os.environ.get("BOOK_REQUIRE_HTML"):
        raise RuntimeError(
            "_build/html/zh is missing: run `python -m tools.build.zh.edition build`")
    pytest.skip("Chinese book not built", allow_module_level=True)


def soup(path: Path) -> BeautifulSoup:
    return parsed(path.resolve())


def language_links(path: Path) -> list[str]:
    return [a["href"] for a in soup(path).select("p.language-link a[href]")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_the_chinese_page_exists_in_chinese(page):
    html = soup(ZH / f"{page.stem}.html")
    assert html.html["lang"] == "zh-CN"
    assert zh_edition.CJK_RE.search(html.select_one("main h1").get_text())


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_colab_button_opens_the_chinese_notebook(chapter):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repo = config["repository"]["url"].rstrip("/").removeprefix("https://github.com/")
    links = [a["href"] for a in soup(ZH / f"{chapter.stem}.html").find_all("a", href=True)
             if a["href"].startswith("https://colab.research.google.com/")]
    assert links == [f"https://colab.research.google.com/github/{repo}/blob/"
                     f"{config['repository']['branch']}/notebooks/zh/{chapter.stem}.ipynb"]
    assert (ROOT / "notebooks" / "zh" / f"{chapter.stem}.ipynb").exists()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chinese_chapter_shows_the_english_run(chapter):
    """Its outputs come from the English run's cache record: claims held, exercises passed,
    printed in English; exercises and solutions labelled in Chinese (sphinx-exercise)."""
    text = soup(ZH / f"{chapter.stem}.html").get_text()
    for claim_id in sorted(set(re.findall(r'claim\("(C\d{2,3})"', chapter.read_text("utf-8")))):
        assert re.search(rf"{claim_id}( \[[a-z-]+\])? (held|skipped \()", text), claim_id
    assert re.search(r"Exercise ex\d\d-\d+: passed", text)
    assert not re.search(r"C\d{2,3}( \[[a-z-]+\])? failed|Exercise ex\d\d-\d+: not yet", text)
    assert "练习" in text and "解答" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_language_links_resolve_both_ways(page):
    chinese = ZH / f"{page.stem}.html"
    assert language_links(chinese) == [f"../book/{page.stem}.html"]
    english = (chinese.parent / language_links(chinese)[0]).resolve()
    assert english == HTML / "book" / f"{page.stem}.html" and english.exists()
    assert language_links(english) == [f"../zh/{page.stem}.html"], (
        "the English page has no link to its translation: rebuild the English book")
    assert (english.parent / language_links(english)[0]).resolve() == chinese


def test_pages_without_a_counterpart_have_no_language_link():
    """The glossary exists in Chinese only; an English page not translated yet (none, once the
    edition is complete) has no link either."""
    assert language_links(ZH / "appendix_glossary.html") == []
    translated = {p.stem for p in PAGES + zh_edition.appendices()}
    for page in (HTML / "book").glob("*.html"):
        if page.stem not in translated:
            assert language_links(page) == [], page.name


def search_index() -> dict:
    text = (ZH / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def pages_found(index: dict, word: str, where: str = "terms") -> set[str]:
    """The pages Sphinx's search lists for one word (from the text, or the titles)."""
    found = index[where].get(word, [])
    return {index["docnames"][i] for i in (found if isinstance(found, list) else [found])}


def test_chinese_search_finds_chapter_00():
    """Sphinx's Chinese search (jieba) indexes Chinese words, from the text and the titles."""
    index = search_index()
    assert "00_setup" in pages_found(index, "自旋"), "a word of chapter 00's text"
    assert "00_setup" in pages_found(index, "诊断")
    assert "00_setup" in pages_found(index, "驱动", "titleterms"), "a word of one of its headings"


# What a Chinese reader searches for, and the chapter that must come up (issue: 中文版 (1), (2))
SEARCHES = {"梯度": "01_autograd", "梯度裁剪": "03_training", "随机种子": "04_reproducibility",
            "显存": "07_memory", "梯度累积": "07_memory", "断点续训": "08_checkpoints"}


@pytest.mark.parametrize("word, chapter", SEARCHES.items(), ids=list(SEARCHES))
def test_chinese_search_finds_the_chapter_that_teaches_a_term(word, chapter):
    if not (ROOT / "book" / "zh" / f"{chapter}.md").exists():
        pytest.skip(f"{chapter} is not translated yet")
    index = search_index()
    assert chapter in pages_found(index, word) | pages_found(index, word, "titleterms")


@pytest.mark.parametrize("appendix", ["appendix_claims", "appendix_glossary"])
def test_the_chinese_appendices_are_built(appendix):
    html = soup(ZH / f"{appendix}.html")
    assert zh_edition.CJK_RE.search(html.select_one("main h1").get_text())
    assert len(html.select("main table tbody tr")) >= 40


def test_the_chinese_site_opens_on_its_front_page():
    assert 'url=intro.html' in (ZH / "index.html").read_text(encoding="utf-8")
    assert (ZH / "_static" / "book.css").exists(), "the site's own static files are there too"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_local_link_of_a_chinese_page_resolves(page):
    """Links into the English site (pages not translated yet) included."""
    path = ZH / f"{page.stem}.html"
    for a in soup(path).find_all("a", href=True):
        href = a["href"].split("#")[0]
        if href and not re.match(r"^[a-z]+:", href):
            assert (path.parent / href).resolve().exists(), href
