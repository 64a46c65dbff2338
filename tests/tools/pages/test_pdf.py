"""tools/pages/pdf.py refuses a Chinese PDF printed without a usable CJK font (no Chromium needed).

A machine with Noto CJK but no WenQuanYi printed Chinese text that extracts as Kangxi radicals
(⼀ for 一) and named no CJK font: :func:`tools.pages.pdf.check_cjk` reads the PDF back and fails,
naming the fix. Tested on the rule itself and on tiny PDFs written here with pypdf.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

from tools.pages import pdf

GOOD_TEXT = "第一章 自动求导：一个人的大模型"
# the same with the Kangxi radicals ⼀ ⼈ ⼤ (U+2F00, U+2F08, U+2F24) for 一 人 大
BAD_TEXT = "第⼀章 自动求导：⼀个⼈的⼤模型"


def test_chinese_text_with_a_cjk_font_passes():
    assert pdf.cjk_problems(GOOD_TEXT * 50, ["AAAAAA+WenQuanYiMicroHei", "DejaVuSans"]) == []
    assert pdf.cjk_problems(GOOD_TEXT * 50, ["BBBBBB+NotoSansCJKsc-Regular"]) == []


def test_radicals_for_ideographs_fail_even_with_a_cjk_font_named():
    problems = pdf.cjk_problems(BAD_TEXT * 50, ["BBBBBB+NotoSansCJKsc-Regular"])
    assert len(problems) == 1 and "Kangxi radicals" in problems[0], problems


def test_no_cjk_font_fails():
    problems = pdf.cjk_problems(GOOD_TEXT, ["DejaVuSans", "DejaVuSansMono"])
    assert len(problems) == 1 and "no CJK font" in problems[0], problems


def test_no_chinese_text_fails():
    assert any("no Chinese characters" in p
               for p in pdf.cjk_problems("Chapter 1", ["WenQuanYiMicroHei"]))


def tiny_pdf(path: Path, text: str, font_name: str) -> Path:
    """A one-page PDF showing ``text`` in a Type0 font named ``font_name``, whose ToUnicode map
    gives each glyph the character of ``text`` (as Chromium's PDFs do)."""
    chars = list(dict.fromkeys(text))
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def /CMapType 2 def\n"
            "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
            f"{len(chars)} beginbfchar\n"
            + "".join(f"<{i + 1:04X}> <{ord(c):04X}>\n" for i, c in enumerate(chars))
            + "endbfchar endcmap CMapName currentdict /CMap defineresource pop end end\n")
    writer = PdfWriter()  # streams must be indirect objects: pypdf's _add_object
    page = writer.add_blank_page(width=595, height=842)
    to_unicode = DecodedStreamObject()
    to_unicode.set_data(cmap.encode("ascii"))
    descendant = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/CIDFontType2"),
        NameObject("/BaseFont"): NameObject(f"/{font_name}"),
        NameObject("/CIDSystemInfo"): DictionaryObject({
            NameObject("/Registry"): TextStringObject("Adobe"),
            NameObject("/Ordering"): TextStringObject("Identity"),
            NameObject("/Supplement"): NumberObject(0)}),
    })
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type0"),
        NameObject("/BaseFont"): NameObject(f"/{font_name}"),
        NameObject("/Encoding"): NameObject("/Identity-H"),
        NameObject("/DescendantFonts"): ArrayObject([writer._add_object(descendant)]),
        NameObject("/ToUnicode"): writer._add_object(to_unicode),
    })
    page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
        {NameObject("/F1"): writer._add_object(font)})})
    glyphs = "".join(f"{chars.index(c) + 1:04X}" for c in text)
    content = DecodedStreamObject()
    content.set_data(f"BT /F1 12 Tf 72 720 Td <{glyphs}> Tj ET".encode("ascii"))
    page[NameObject("/Contents")] = writer._add_object(content)
    with path.open("wb") as sink:
        writer.write(sink)
    return path


def test_a_pdf_printed_with_wenquanyi_passes(tmp_path):
    path = tiny_pdf(tmp_path / "good.pdf", GOOD_TEXT, "AAAAAA+WenQuanYiMicroHei")
    names, text = pdf.pdf_fonts_and_text(PdfReader(path))
    assert "AAAAAA+WenQuanYiMicroHei" in names and "一个人的大模型" in text
    pdf.check_cjk(path)


def test_a_pdf_printed_without_a_cjk_font_is_refused_naming_the_fix(tmp_path):
    path = tiny_pdf(tmp_path / "bad.pdf", BAD_TEXT, "CCCCCC+DejaVuSans")
    with pytest.raises(pdf.CJKFontError, match="fonts-wqy-microhei") as refused:
        pdf.check_cjk(path)
    assert "Kangxi radicals" in str(refused.value) and "no CJK font" in str(refused.value)
