"""The intro's chapter map lists every chapter and every claim it checks, in both editions
(tools/pages/chapter_map.py)."""

import re

from tools.build.chapter_format import BOOK, ZH, chapters
from tools.pages import chapter_map
from tools.pages.claims_appendix import load_ledger


def test_consecutive_ids_make_ranges_of_three_or_more():
    assert chapter_map.id_ranges(["C03", "C01", "C02", "C05", "C100"]) == \
        [("C01", "C03"), ("C05", "C05"), ("C100", "C100")]
    assert chapter_map.claims_cell(["C01", "C02", "C03", "C05", "C06", "C09"]) == \
        "C01–C03, C05, C06, C09"
    assert chapter_map.claims_cell([]) == ""


def listed(text: str) -> set[str]:
    """Every claim ID a rendered map names, its ranges expanded."""
    found = set()
    for first, last in re.findall(r"C(\d+)(?:–C(\d+))?", text):
        found |= {f"C{n:02d}" for n in range(int(first), int(last or first) + 1)}
    return found


def test_both_editions_list_every_chapter_and_every_claim_of_the_ledger():
    ledger = set(load_ledger())
    for book, lang in [(BOOK, "en"), (BOOK / ZH, "zh")]:
        text = chapter_map.render(book, lang)
        for page in chapters(book):
            assert f"]({page.name}) |" in text, f"{lang}: {page.stem} missing"
        assert listed(text) == ledger, f"{lang}: {sorted(listed(text) ^ ledger)}"
    assert chapter_map.unmapped() == []


def test_a_claim_no_chapter_checks_is_reported(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "00_demo.md").write_text('# 00 · Demo\n\n```{code-cell} ipython3\nwith claim("C01", '
                                     '"x"):\n    pass\n```\n', encoding="utf-8")
    (book / "01_none.md").write_text("# 01 · No claims\n", encoding="utf-8")
    text = chapter_map.render(book)
    assert "| [00 · Demo](00_demo.md) | C01 |" in text
    assert "| [01 · No claims](01_none.md) | — |" in text
    assert "C02" in chapter_map.unmapped(book)


def test_the_intros_include_the_generated_map():
    for intro in [BOOK / "intro.md", BOOK / ZH / "intro.md"]:
        text = intro.read_text(encoding="utf-8")
        assert f"```{{include}} {chapter_map.FOLDER}/{chapter_map.NAME}\n```" in text, intro
        assert not re.search(r"^\| (00|C\d)", text, re.M), f"{intro}: a hand-written map"
