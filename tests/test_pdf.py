"""The PDFs ``make pdf`` writes (tools/pdf.py), both editions: every chapter title and claim ID
in the text, an outline entry per chapter, page numbers, embedded fonts (a CJK one in the
Chinese PDF), and no line of text beyond the printable area.

Run by ``make html-test`` after ``make pdf``; skipped with the reason where Chromium is absent
or the PDFs were not made. The layout check opens each page in Chromium as ``tools/pdf.py``
prints it (its print CSS, print media, the printable width) and looks for text that ends
past the right margin; the PDF check looks at where each run of text starts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import claims_appendix, pdf
from tools.chapter_format import chapters

if not Path(pdf.CHROMIUM).is_file():
    pytest.skip(f"PDF test skipped: no Chromium at {pdf.CHROMIUM} (`apt-get install "
                "chromium`)", allow_module_level=True)
EDITIONS = [pdf.Edition("en"), pdf.Edition("zh")]
if not all((pdf.OUT / e.file).is_file() for e in EDITIONS):
    pytest.skip("PDF test skipped: run `make pdf` first (make test does)",
                allow_module_level=True)

from pypdf import PdfReader  # noqa: E402

MM = 72 / 25.4  # PDF points per millimetre


@pytest.fixture(scope="module", params=EDITIONS, ids=lambda e: e.lang)
def book(request):
    reader = PdfReader(pdf.OUT / request.param.file)
    text = "\n".join(page.extract_text() or "" for page in reader.pages)
    return request.param, reader, text


def chapter_titles(lang: str) -> list[str]:
    """Each chapter's title as its built page shows it (the article's h1)."""
    from bs4 import BeautifulSoup

    base = pdf.HTML / "zh" if lang == "zh" else pdf.HTML / "book"
    titles = []
    for chapter in chapters():
        soup = BeautifulSoup((base / f"{chapter.stem}.html").read_text(encoding="utf-8"),
                             "html.parser")
        heading = soup.select_one("article.bd-article h1")
        for link in heading.select("a.headerlink"):
            link.decompose()
        titles.append(heading.get_text().strip())
    return titles


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_sizes_and_page_counts_are_reported(book):
    edition, reader, _ = book
    path = pdf.OUT / edition.file
    print(f"{edition.file}: {len(reader.pages)} pages, {path.stat().st_size / 2**20:.1f} MiB")
    assert len(reader.pages) > 40


def test_every_chapter_title_and_claim_id_is_in_the_text(book):
    edition, _, text = book
    flat = squash(text)
    missing = [t for t in chapter_titles(edition.lang) if squash(t) not in flat]
    assert not missing, f"{edition.file} lacks the chapter titles {missing}"
    ids = sorted(claims_appendix.load_ledger())
    absent = [i for i in ids if i not in text]
    assert not absent, f"{edition.file} lacks the claim IDs {absent}"


def test_the_title_page_names_the_edition_the_run_and_torch(book):
    edition, reader, _ = book
    first = reader.pages[0].extract_text()
    when, torch = pdf.run_facts()
    assert edition.label in first.replace("\n", " ") or squash(edition.label) in squash(first)
    assert when in first and torch in first


def test_the_outline_has_every_chapter_with_its_sections(book):
    edition, reader, _ = book
    top = [item for item in reader.outline if not isinstance(item, list)]
    titles = [squash(item.title) for item in top]
    for title in chapter_titles(edition.lang):
        assert squash(title) in titles, f"no bookmark for {title!r} in {edition.file}"
    nested = [item for item in reader.outline if isinstance(item, list)]
    assert len(nested) >= len(chapters()), "chapters have no section bookmarks"


def test_pages_are_numbered(book):
    edition, reader, _ = book
    total = len(reader.pages)
    for index in (1, total // 2, total - 1):
        assert f"{index + 1} / {total}" in reader.pages[index].extract_text(), index


def fonts_of(reader) -> list[tuple[str, bool]]:
    """(font name, embedded) of every font the pages use."""
    seen = {}
    for page in reader.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for ref in fonts.values():
            font = ref.get_object()
            name = str(font.get("/BaseFont", font.get("/Subtype")))
            if font.get("/Subtype") == "/Type3":  # glyphs drawn in the file itself
                seen[name] = True
                continue
            descendants = font.get("/DescendantFonts")
            target = descendants[0].get_object() if descendants else font
            descriptor = target.get("/FontDescriptor")
            descriptor = descriptor.get_object() if descriptor else {}
            seen[name] = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))
    return sorted(seen.items())


def test_every_font_is_embedded_and_the_chinese_pdf_has_a_cjk_font(book):
    edition, reader, _ = book
    fonts = fonts_of(reader)
    assert fonts and all(embedded for _, embedded in fonts), \
        [name for name, embedded in fonts if not embedded]
    if edition.lang == "zh":
        assert any(re.search(r"WenQuanYi|wqy|Noto.*CJK|Source.*Han", name, re.I)
                   for name, _ in fonts), fonts


def test_no_text_starts_outside_the_page(book):
    edition, reader, _ = book
    outside = []
    for number, page in enumerate(reader.pages):
        width = float(page.mediabox.width)

        def visit(text, cm, tm, font, size, number=number, width=width):
            x = tm[4] * cm[0] + cm[4]
            if text.strip() and not (0 <= x <= width - pdf.MARGIN_MM["right"] * MM):
                outside.append((number + 1, round(x), text[:30]))

        page.extract_text(visitor_text=visit)
    assert not outside, f"{edition.file}: text outside the page: {outside[:5]}"


def test_no_line_runs_past_the_printable_width(book):
    """Measured while printing: each page laid out at the printable width, print CSS on."""
    edition, _, _ = book
    report = pdf.layout_report(pdf.OUT / edition.file)
    assert report.stat().st_mtime >= (pdf.OUT / edition.file).stat().st_mtime - 60
    wide = json.loads(report.read_text(encoding="utf-8"))
    assert not wide, f"text past the printable width ({pdf.PRINTABLE_PX} px): {wide}"


def test_the_width_check_finds_a_line_that_runs_off():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=pdf.CHROMIUM,
                                             args=pdf.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": pdf.PRINTABLE_PX, "height": 800})
        page.set_content("<pre style='white-space: pre'>" + "x" * 300 + "</pre><p>short</p>")
        wide = page.evaluate(pdf.OVERFLOW_JS, pdf.PRINTABLE_PX)
        page.set_content("<p>" + "word " * 300 + "</p>")
        fits = page.evaluate(pdf.OVERFLOW_JS, pdf.PRINTABLE_PX)
        browser.close()
    assert wide == ["x" * 40] and fits == []
