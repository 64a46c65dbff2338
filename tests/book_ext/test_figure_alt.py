"""Every figure has a text alternative that states its finding, in its page's language.

The texts live in the figure cell's metadata (``mystnb: image: alt:`` and ``alt_zh:``) and
reach the pages through book/_ext/figure_alt.py. The source is checked always; the built
pages of both editions when they exist (after ``make book``).
"""

import re
from pathlib import Path

import jupytext
import pytest
from bs4 import BeautifulSoup

from tools.build.chapter_format import CJK_RE, chapters
from tools.build.zh import edition as zh_edition

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
CHAPTERS = chapters()
# what a placeholder says: an image's path or file name, or a word that names no finding
PLACEHOLDER_RE = re.compile(r"(\.(png|jpe?g|svg|gif)$|^_images/|^\.\./_images/|"
                            r"^(an? )?(image|figure|plot|graph|chart|picture|图|图片|图像)\.?$)",
                            re.I)
SHORTEST = 30  # characters: shorter than this cannot say what a figure shows and why (EN)
SHORTEST_ZH = 15


def figure_cells(chapter: Path) -> list[dict]:
    """The chapter's code cells that draw a matplotlib figure."""
    nb = jupytext.reads(chapter.read_text(encoding="utf-8"), fmt="md:myst")
    return [c for c in nb.cells if c.cell_type == "code" and "plt.show()" in c.source]


def is_placeholder(alt: str) -> bool:
    return not alt.strip() or bool(PLACEHOLDER_RE.search(alt.strip()))


@pytest.mark.parametrize("alt, placeholder", [
    ("", True), ("../_images/56a3bc20.png", True), ("_images/ab12.png", True),
    ("Figure", True), ("a plot", True), ("图片", True),
    ("Loss falls while accuracy stays flat", False), ("损失下降而准确率不变", False),
])
def test_placeholder_rule(alt, placeholder):
    assert is_placeholder(alt) is placeholder


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_cell_states_its_finding_in_both_languages(chapter):
    for cell in figure_cells(chapter):
        image = cell.metadata.get("mystnb", {}).get("image", {})
        first_line = cell.source.splitlines()[0]
        alt, alt_zh = image.get("alt", ""), image.get("alt_zh", "")
        assert not is_placeholder(alt) and len(alt) >= SHORTEST, \
            f"{chapter.name}, cell `{first_line}`: no `mystnb: image: alt:` that states the finding"
        assert not CJK_RE.search(alt), f"{chapter.name}, cell `{first_line}`: alt is not English"
        assert not is_placeholder(alt_zh) and len(alt_zh) >= SHORTEST_ZH \
            and CJK_RE.search(alt_zh), \
            f"{chapter.name}, cell `{first_line}`: no Chinese `mystnb: image: alt_zh:`"


def page_images(page: Path) -> list[dict]:
    """The <img> tags of a built page's content (not the theme's header buttons, and not an
    explorer's pictures: each state's picture has an empty alt on purpose, its caption beside
    it says what it shows in the page's language, and every state is listed in words:
    helpers/explore.py; tests/helpers/test_explore.py checks that)."""
    html = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return [img.attrs for img in html.select("article img")
            if not img.find_parent(class_="book-explorer")]


EDITIONS = [("en", HTML / "book"), ("zh", HTML / zh_edition.ZH)]


@pytest.mark.parametrize("language, folder", EDITIONS, ids=[e[0] for e in EDITIONS])
def test_every_image_of_a_built_chapter_has_a_real_alt(language, folder):
    if not (folder / "index.html").exists() and not any(folder.glob("0*.html")):
        pytest.skip(f"{folder.relative_to(ROOT)} not built (make book)")
    checked = 0
    for chapter in CHAPTERS:
        page = folder / f"{chapter.stem}.html"
        if not page.exists():
            continue
        images = page_images(page)
        assert len(images) >= len(figure_cells(chapter)), f"{page.name}: a figure is missing"
        for attrs in images:
            alt = attrs.get("alt", "")
            assert not is_placeholder(alt), f"{page.name}: <img src={attrs.get('src')}> alt={alt!r}"
            if language == "zh":
                assert CJK_RE.search(alt), f"{page.name}: alt not in Chinese: {alt!r}"
            else:
                assert not CJK_RE.search(alt), f"{page.name}: alt not in English: {alt!r}"
            checked += 1
    assert checked, f"no chapter image found under {folder}"


def test_the_extension_gives_each_cell_image_the_text_of_the_editions_key():
    import sys
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import figure_alt

    document = new_document("page", get_default_settings(Parser))
    meta = {"mystnb": {"image": {"alt": "Loss falls, accuracy is flat", "alt_zh": "损失下降"}}}
    with_text = nodes.container(nb_element="cell_code", cell_metadata=meta)
    with_text += nodes.image(uri="_images/a.png", alt="_images/a.png")
    without = nodes.container(nb_element="cell_code", cell_metadata={})
    without += nodes.image(uri="_images/b.png", alt="_images/b.png")
    document += [with_text, without]
    for key, expected in (("alt", "Loss falls, accuracy is flat"), ("alt_zh", "损失下降")):
        app = SimpleNamespace(config=SimpleNamespace(figure_alt_key=key))
        figure_alt.set_figure_alts(app, document)
        assert next(with_text.findall(nodes.image))["alt"] == expected
        assert next(without.findall(nodes.image))["alt"] == "_images/b.png"  # warned, unchanged
    assert figure_alt.cell_alt({"mystnb": {"image": {"alt": "  "}}}, "alt") is None
