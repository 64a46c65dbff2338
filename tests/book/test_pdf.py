"""The PDFs ``make pdf`` writes (tools/pages/pdf.py), both editions: every chapter title and
claim ID in the text, an outline entry per chapter, page numbers, embedded fonts (a CJK one in
the Chinese PDF), and no line of text beyond the printable area.

Run by ``make html-test`` after ``make pdf``; skipped with the reason where Chromium is absent
or the PDFs were not made. The layout check opens each page in Chromium as ``tools/pages/pdf.py``
prints it (its print CSS, print media, the printable width) and looks for text that ends
past the right margin; the PDF check looks at where each run of text starts.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.build.chapter_format import chapters
from tools.pages import claims_appendix, pdf

if not Path(pdf.CHROMIUM).is_file():
    pytest.skip(f"PDF test skipped: no Chromium at {pdf.CHROMIUM} (`apt-get install "
                "chromium`)", allow_module_level=True)
EDITIONS = [pdf.Edition("en"), pdf.Edition("zh")]
if not all((pdf.OUT / e.file).is_file() for e in EDITIONS):
    pytest.skip("PDF test skipped: run `make pdf` first (make test does)",
                allow_module_level=True)

from pypdf import PdfReader  # noqa: E402

MARGIN_MM = pdf.MARGIN_MM

MM = 72 / 25.4  # PDF points per millimetre


@dataclass
class Book:
    """One PDF, read once: its text and where each run of text lies (by PDFium, through
    pypdfium2: seconds for a 500-page book, where pypdf's extraction took a minute), and a
    pypdf reader for the outline, the fonts and single pages."""

    edition: pdf.Edition
    reader: PdfReader
    text: str  # every page's text
    outside: list[tuple[int, str, str]]  # (page, where, text) of runs beyond the margins


def text_outside(path: Path) -> tuple[str, list[tuple[int, str, str]]]:
    """The PDF's text, and each run of text that starts left of the left margin or ends right
    of the right one (1 pt of rounding allowed)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(path)
    texts, outside = [], []
    try:
        for number in range(len(document)):
            page = document[number]
            width = page.get_width()
            low, high = MARGIN_MM["left"] * MM - 1, width - MARGIN_MM["right"] * MM + 1
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            for index in range(textpage.count_rects()):
                left, bottom, right, top = textpage.get_rect(index)
                if not (low <= left and right <= high):
                    run = textpage.get_text_bounded(left, bottom, right, top).strip()
                    if run:
                        outside.append((number + 1, f"{left / MM:.0f}-{right / MM:.0f} mm",
                                        run[:30]))
    finally:
        document.close()
    return "\n".join(texts), outside


def read_book(edition: pdf.Edition) -> Book:
    text, outside = text_outside(pdf.OUT / edition.file)
    return Book(edition, PdfReader(pdf.OUT / edition.file), text, outside)


@pytest.fixture(scope="module", params=EDITIONS, ids=lambda e: e.lang)
def book(request) -> Book:
    return read_book(request.param)


@functools.cache  # parsing ten built pages takes seconds: once per edition
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
    edition, reader = book.edition, book.reader
    path = pdf.OUT / edition.file
    print(f"{edition.file}: {len(reader.pages)} pages, {path.stat().st_size / 2**20:.1f} MiB")
    assert len(reader.pages) > 40


def test_every_chapter_title_and_claim_id_is_in_the_text(book):
    edition, text = book.edition, book.text
    flat = squash(text)
    missing = [t for t in chapter_titles(edition.lang) if squash(t) not in flat]
    assert not missing, f"{edition.file} lacks the chapter titles {missing}"
    ids = sorted(claims_appendix.load_ledger())
    absent = [i for i in ids if i not in text]
    assert not absent, f"{edition.file} lacks the claim IDs {absent}"


def test_the_title_page_names_the_edition_the_run_and_torch(book):
    edition, reader = book.edition, book.reader
    first = reader.pages[0].extract_text()
    when, torch = pdf.run_facts()
    assert edition.label in first.replace("\n", " ") or squash(edition.label) in squash(first)
    assert when in first and torch in first


def test_the_outline_has_every_chapter_with_its_sections(book):
    edition, reader = book.edition, book.reader
    top = [item for item in reader.outline if not isinstance(item, list)]
    titles = [squash(item.title) for item in top]
    for title in chapter_titles(edition.lang):
        assert squash(title) in titles, f"no bookmark for {title!r} in {edition.file}"
    nested = [item for item in reader.outline if isinstance(item, list)]
    assert len(nested) >= len(chapters()), "chapters have no section bookmarks"


def test_pages_are_numbered(book):
    reader = book.reader
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
    edition, reader = book.edition, book.reader
    fonts = fonts_of(reader)
    assert fonts and all(embedded for _, embedded in fonts), \
        [name for name, embedded in fonts if not embedded]
    if edition.lang == "zh":
        # a CJK font, and text that reads as Chinese, not as Kangxi radicals: make pdf's own
        # rule (tools/pages/pdf.py cjk_problems, tested in tests/tools/pages/test_pdf.py), on every
        # page
        problems = pdf.cjk_problems(book.text, [name for name, _ in fonts])
        assert not problems, (problems, fonts)


def test_no_text_outside_the_printable_width(book):
    assert not book.outside, f"{book.edition.file}: text beyond the margins: {book.outside[:5]}"


def one_line_pdf(path: Path, x_pt: float, text: str) -> Path:
    """A one-page A4 PDF with ``text`` in Helvetica starting ``x_pt`` from the left edge."""
    stream = f"BT /F1 11 Tf {x_pt} 700 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_the_margin_check_finds_text_beyond_either_margin(tmp_path):
    left = MARGIN_MM["left"] * MM
    inside = one_line_pdf(tmp_path / "in.pdf", left + 10, "fits")
    assert text_outside(inside) == ("fits", [])
    wide = one_line_pdf(tmp_path / "wide.pdf", left + 10, "runs off " * 16)
    too_left = one_line_pdf(tmp_path / "left.pdf", left / 2, "starts early")
    assert [run for _, _, run in text_outside(wide)[1]] == [("runs off " * 4)[:30]]
    assert [run for _, _, run in text_outside(too_left)[1]] == ["starts early"]


def test_no_line_runs_past_the_printable_width(book):
    """Measured while printing: each page laid out at the printable width, print CSS on."""
    edition = book.edition
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
