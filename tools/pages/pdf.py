"""The book as a PDF, in both languages, printed from the built site (``make pdf``).

Each page of ``_build/html`` (English) and ``_build/html/zh/`` (Chinese), in the table of
contents' order, is printed by the Chromium the browser test uses (Playwright's
``page.pdf``), with the network cut and MathJax finished first; pypdf then puts a title page
and a table of contents in front, merges the pages, keeps Chromium's outline of each page
(chapter -> section bookmarks) and stamps page numbers. No LaTeX.

On purpose: the site's navigation, buttons and "show code" toggles are left out; code blocks
wrap instead of running off the page; a cell whose input the site folds (``hide-input``)
prints its output only, as the site shows it; solutions are printed open under each exercise
in the book PDF, and left out of the student PDF (``--edition student``:
``pytorch-in-practice-student.pdf``). The Chinese PDF embeds a CJK font (WenQuanYi Micro Hei,
Debian's ``fonts-wqy-microhei``; ``.ci/run`` installs it). Chromium prints with whatever font
the machine has, so the Chinese PDF is read back before it is written: without a usable CJK
font (no CJK font among its fonts, or text that extracts as Kangxi radicals, ⼀ for 一, as
seen with Noto CJK alone) ``make pdf`` fails naming the fix and writes no file
(:func:`cjk_problems`).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import date
from html import escape
from pathlib import Path

import yaml

from tools.build.chapter_format import CJK_RE, ROOT

HTML = ROOT / "_build" / "html"
OUT = ROOT / "_build" / "pdf"
CLAIMS = ROOT / "_build" / "claims"
CHROMIUM = os.environ.get("BOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-dev-shm-usage"]
MARGIN_MM = {"top": 16, "bottom": 18, "left": 16, "right": 16}
A4_MM = (210, 297)
NAME = "pytorch-in-practice"

# What the printed page leaves out, and how code fits the page.
PRINT_CSS = """
@media print {
  .bd-header, .bd-header-announcement, .bd-sidebar-primary, .bd-sidebar-secondary,
  .header-article, .prev-next-area, .bd-footer, .bd-footer-content, .footer-article,
  .bd-footer-article, .skip-link, .search-button, .theme-switch-button, .copybtn,
  .toggle-button, .headerlink, #pst-back-to-top, .pst-scrollable-table-container::after,
  details.hide.above-input, .language-link, .pdf-link, #jb-print-docs-body
  { display: none !important; }
  .bd-container, .bd-container__inner, .bd-main, .bd-content, .bd-article-container,
  .bd-page-width { max-width: none !important; width: 100% !important; margin: 0 !important;
  padding: 0 !important; display: block !important; }
  pre, pre code, .highlight pre { white-space: pre-wrap !important; word-break: break-word;
  overflow-wrap: anywhere; overflow: visible !important; }
  .output pre, div.output_area pre { max-height: none !important; }
  img, svg, .widget-box { max-width: 100% !important; height: auto; }
  .pst-scrollable-table-container, .table-wrapper { overflow: visible !important; }
  table { table-layout: auto; width: 100% !important; max-width: 100%; font-size: 8pt; }
  td, th { overflow-wrap: anywhere; word-break: break-word; min-width: 0; }
  .cell_output, .cell_input { overflow: visible !important; }
  h1, h2, h3 { break-after: avoid; }
  figure, .cell_output img { break-inside: avoid; }
  /* the theme keeps a code block whole (break-inside: avoid on div.highlight): a block pushed
     to the next page left its cell's empty frame behind. A listing breaks between lines, as in
     a printed book, with at least four lines on each side of the break. */
  div.highlight, div[class*="highlight-"] { break-inside: auto !important; }
  pre { orphans: 4; widows: 4; }
  a { color: inherit; }
}
"""
OPEN_FOLDED = """
document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
document.querySelectorAll('details:not(.above-input)').forEach(d => d.open = true);
"""
# Text that ends past the right edge of the printable width (run with print CSS and media on,
# the viewport at the printable width): what tests/book/test_pdf.py requires to be empty.
OVERFLOW_JS = """w => {
    const out = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (!node.textContent.trim()) continue;
        const style = getComputedStyle(node.parentElement);
        if (style.display === 'none' || style.visibility === 'hidden') continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const r of range.getClientRects()) {
            if (r.width > 0 && r.right > w + 2) {
                out.push(node.textContent.trim().slice(0, 40)); break; }
        }
        if (out.length > 4) break;
    }
    return out; }"""
PRINTABLE_PX = round((A4_MM[0] - MARGIN_MM["left"] - MARGIN_MM["right"]) * 96 / 25.4)
DROP_SOLUTIONS = "document.querySelectorAll('.solution').forEach(e => e.remove());"

# The Chinese PDF's fonts and text, read back before it is written (cjk_problems)
CJK_FONT_RE = re.compile(r"WenQuanYi|wqy|Noto\w*CJK|Source\w*Han|SimSun|SimHei|PingFang|"
                         r"Hiragino\w*GB|Microsoft\w*YaHei|Droid\w*Fallback", re.I)
# Kangxi radicals and the CJK radicals supplement: Chinese prose never uses them, but text
# printed with a font that maps 一, 人, 大 ... to the radicals' code points extracts as them
RADICAL_RE = re.compile(r"[\u2e80-\u2eff\u2f00-\u2fdf]")
RADICAL_SHARE = 0.002  # of the CJK characters: above this, the font's mapping is wrong
CJK_FIX = ("install WenQuanYi Micro Hei, the font the Chinese PDF is printed with (Debian/Ubuntu:"
           " `apt-get install fonts-wqy-microhei`; `fc-match 'WenQuanYi Micro Hei'` should then"
           " name it), and run `make pdf` again")


class CJKFontError(RuntimeError):
    """The Chinese PDF came out without a usable CJK font (so it was not written)."""


@dataclass(frozen=True)
class Edition:
    lang: str  # "en" or "zh"
    student: bool = False

    @property
    def file(self) -> str:
        return f"{NAME}{'-zh' if self.lang == 'zh' else ''}{'-student' if self.student else ''}.pdf"

    @property
    def label(self) -> str:
        zh = self.lang == "zh"
        base = "中文版" if zh else "English edition"
        if self.student:
            base += "（学生版，无答案）" if zh else " (student edition, no solutions)"
        return base


def page_files(lang: str, html: Path = HTML, root: Path = ROOT) -> list[Path]:
    """The built pages of an edition, in the table of contents' order."""
    if lang == "zh":
        from tools.build.zh import edition as zh_edition

        toc, base = zh_edition.zh_toc(root), html / "zh"
    else:
        toc, base = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")), html
    names = [toc["root"]] + [c["file"] for part in toc.get("parts", [])
                             for c in part["chapters"]]
    files = [base / f"{name}.html" for name in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"not built: {missing[:3]}{' ...' if len(missing) > 3 else ''}"
                                " (run `make book` first)")
    return files


def run_facts(claims: Path = CLAIMS) -> tuple[str, str]:
    """(date, torch version) of the run whose outputs the book shows: the claim records."""
    when, torch = "", ""
    for name in ("nbmake.jsonl", "book.jsonl"):
        path = claims / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("when", "") > when:
                when, torch = record["when"], record.get("torch", "")
        if when:
            break
    return (when[:10] or date.today().isoformat()), (torch or "unknown")


def _front_html(title: str, edition: Edition, when: str, torch: str,
                entries: list[tuple[str, int]]) -> str:
    zh = edition.lang == "zh"
    rows = "".join(f'<li><span class="t">{escape(t)}</span><span class="n">{n}</span></li>'
                   for t, n in entries)
    made = (f"输出来自 {when} 的运行，torch {escape(torch)}" if zh
            else f"Outputs from the run of {when}, torch {escape(torch)}")
    contents = "目录" if zh else "Contents"
    font = "'WenQuanYi Micro Hei', sans-serif" if zh else "sans-serif"
    return f"""<!doctype html><html lang="{'zh-CN' if zh else 'en'}"><head><meta charset="utf-8">
<style>body{{font-family:{font};margin:0}} .title{{height:240mm;display:flex;flex-direction:column;
justify-content:center;text-align:center;break-after:page}} h1{{font-size:26pt;margin:0 0 8mm}}
p{{font-size:13pt;color:#333}} h2{{font-size:18pt}} ol{{list-style:none;padding:0;font-size:11pt}}
li{{display:flex;justify-content:space-between;border-bottom:1px dotted #999;padding:1.5mm 0}}
</style></head><body><div class="title"><h1>{escape(title)}</h1><p>{edition.label}</p>
<p>{made}</p></div><h2>{contents}</h2><ol>{rows}</ol></body></html>"""


def _title_of(page) -> str:
    heading = page.query_selector("article h1")
    return (heading.inner_text() if heading else page.title()).replace("#", "").strip()


def print_edition(browser, edition: Edition, out: Path = OUT, html: Path = HTML,
                  claims: Path = CLAIMS) -> Path:
    """Print one edition to ``out/<file>``; returns its path."""
    from pypdf import PdfReader, PdfWriter

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    title = config.get("title", "PyTorch in Practice")
    if edition.lang == "zh":
        from tools.build.zh import edition as zh_edition

        title = zh_edition.zh_config().get("title", title)
    margin = {k: f"{v}mm" for k, v in MARGIN_MM.items()}
    context = browser.new_context(viewport={"width": 1000, "height": 1400})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file:", "data:", "blob:")) else r.abort())
    page = context.new_page()
    printed: list[tuple[str, bytes]] = []
    overflow: dict[str, list[str]] = {}
    for path in page_files(edition.lang, html):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.evaluate("""async () => { if (window.MathJax && MathJax.startup)
                         { await MathJax.startup.promise; } }""")
        page.add_style_tag(content=PRINT_CSS)
        page.evaluate(OPEN_FOLDED + (DROP_SOLUTIONS if edition.student else ""))
        page.emulate_media(media="print")
        page.set_viewport_size({"width": PRINTABLE_PX, "height": 1400})
        if wide := page.evaluate(OVERFLOW_JS, PRINTABLE_PX):
            overflow[path.name] = wide
        page.set_viewport_size({"width": 1000, "height": 1400})
        printed.append((_title_of(page), page.pdf(
            format="A4", margin=margin, print_background=True, outline=True, tagged=True)))
    when, torch = run_facts(claims)
    # the front matter (title page + contents) first, to know how many pages it takes
    counts = [len(PdfReader(io.BytesIO(data)).pages) for _, data in printed]

    def front(offset: int) -> bytes:
        starts, page_no = [], offset + 1
        for (name, _), count in zip(printed, counts, strict=True):
            starts.append((name, page_no))
            page_no += count
        page.set_content(_front_html(title, edition, when, torch, starts))
        return page.pdf(format="A4", margin=margin, tagged=True)

    front_pdf = front(2)
    front_pages = len(PdfReader(io.BytesIO(front_pdf)).pages)
    if front_pages != 2:
        front_pdf = front(front_pages)
    total = front_pages + sum(counts)
    numbers = _page_numbers(page, total, margin)
    context.close()

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(front_pdf)), import_outline=False)
    for (name, data), _ in zip(printed, counts, strict=True):
        start = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(data)), import_outline=False)
        parent = writer.add_outline_item(title=name, page_number=start)
        _copy_outline(writer, PdfReader(io.BytesIO(data)), start, parent)
    number_pages = PdfReader(io.BytesIO(numbers)).pages
    for index, target in enumerate(writer.pages):
        if index > 0:  # no number on the title page
            target.merge_page(number_pages[index])
    writer.add_metadata({"/Title": f"{title} ({edition.label})", "/Author": config.get(
        "author", ""), "/Subject": f"torch {torch}, {when}"})
    writer.page_mode = "/UseOutlines"
    out.mkdir(parents=True, exist_ok=True)
    target = out / edition.file
    tmp = target.with_suffix(".pdf.tmp")
    with tmp.open("wb") as sink:
        writer.write(sink)
    if edition.lang == "zh":
        try:
            check_cjk(tmp)
        except CJKFontError:
            tmp.unlink()
            raise
    tmp.replace(target)
    layout_report(target).write_text(json.dumps(overflow, ensure_ascii=False, indent=1),
                                     encoding="utf-8")
    publish(target, html)
    return target


def cjk_problems(text: str, font_names: list[str]) -> list[str]:
    """What is wrong with a Chinese PDF whose extracted text is ``text`` and whose pages use
    the fonts ``font_names`` (``/BaseFont`` names): empty when it has a CJK font and its text
    reads as Chinese."""
    problems = []
    if not any(CJK_FONT_RE.search(name) for name in font_names):
        problems.append("no CJK font among its fonts ("
                        + ", ".join(sorted(set(font_names))[:8]) + ")")
    ideographs, radicals = len(CJK_RE.findall(text)), RADICAL_RE.findall(text)
    if not ideographs and not radicals:
        problems.append("its text has no Chinese characters")
    elif len(radicals) > RADICAL_SHARE * (ideographs + len(radicals)):
        problems.append(f"{len(radicals)} of its {ideographs + len(radicals)} CJK characters "
                        f"extract as Kangxi radicals (e.g. {''.join(sorted(set(radicals))[:5])})"
                        ": the font that printed them maps 一, 人, 大 ... to radicals")
    return problems


def pdf_fonts_and_text(reader, most: int = 60) -> tuple[list[str], str]:
    """The font names and the extracted text of up to ``most`` pages spread over ``reader``."""
    step = max(1, len(reader.pages) // most)
    names, texts = [], []
    for page in list(reader.pages)[::step]:
        for ref in page.get("/Resources", {}).get("/Font", {}).values():
            names.append(str(ref.get_object().get("/BaseFont", "")).lstrip("/"))
        texts.append(page.extract_text() or "")
    return names, "\n".join(texts)


def check_cjk(path: Path) -> None:
    """Raise :class:`CJKFontError` (naming the fix) when the Chinese PDF at ``path`` has no
    usable CJK font."""
    from pypdf import PdfReader

    font_names, text = pdf_fonts_and_text(PdfReader(path))
    if problems := cjk_problems(text, font_names):
        raise CJKFontError(f"the Chinese PDF has no usable CJK font: {'; '.join(problems)}. "
                           f"To fix: {CJK_FIX}.")


def layout_report(pdf_path: Path) -> Path:
    """Where :func:`print_edition` records text it found past the printable width."""
    return pdf_path.with_suffix(".layout.json")


def publish(path: Path, html: Path = HTML) -> Path | None:
    """Copy a PDF into the built site (``_build/html/pdf/``), where the intro pages' "PDF"
    link points; ``make book`` calls this too, for PDFs made before a rebuild."""
    if not (html / "index.html").is_file():
        return None
    target = html / "pdf" / path.name
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, target)
    return target


def _copy_outline(writer, reader, start: int, parent) -> None:
    """Chromium's outline of one printed page (its h1 -> h2 ...), under ``parent``; the page's
    own h1 is the parent already, so its children are lifted one level."""

    def walk(items, under) -> None:
        last = None
        for item in items:
            if isinstance(item, list):
                if last is not None:
                    walk(item, last)
                continue
            number = reader.get_destination_page_number(item)
            last = writer.add_outline_item(title=item.title, page_number=start + number,
                                           parent=under)

    outline = reader.outline
    if len(outline) >= 1 and not isinstance(outline[0], list):
        rest = outline[1:]  # [h1, [h2, [h3 ...], ...]]
        walk(rest[0] if rest and isinstance(rest[0], list) else rest, parent)
    else:
        walk(outline, parent)


def _page_numbers(page, total: int, margin: dict) -> bytes:
    """``total`` blank A4 pages whose footers hold their numbers, to lay over the book."""
    page.set_content("<html><body>" + "<div style='break-after:page;height:1px'></div>"
                     * total + "</body></html>")
    footer = ("<div style='font-size:9px;width:100%;text-align:center;color:#444'>"
              "<span class='pageNumber'></span> / <span class='totalPages'></span></div>")
    data = page.pdf(format="A4", margin=margin, display_header_footer=True,
                    header_template="<span></span>", footer_template=footer)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=["en", "zh", "both"], default="both")
    parser.add_argument("--edition", choices=["book", "student"], default="book")
    parser.add_argument("--if-chromium", action="store_true",
                        help="without Chromium, say so and succeed (make test)")
    parser.add_argument("--publish", action="store_true",
                        help="only copy the PDFs already made into the built site")
    args = parser.parse_args(argv)
    if args.publish:
        for path in sorted(OUT.glob("*.pdf")):
            if publish(path):
                print(f"copied {path.name} into {HTML.relative_to(ROOT)}/pdf/")
        return 0
    if not Path(CHROMIUM).is_file():
        print(f"make pdf{' skipped' if args.if_chromium else ''}: no Chromium at {CHROMIUM} "
              "(`apt-get install chromium`, or set BOOK_CHROMIUM)", file=sys.stderr)
        return 0 if args.if_chromium else 2
    if not (HTML / "index.html").is_file():
        print("make pdf: the site is not built: run `make book` first", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    langs = ["en", "zh"] if args.lang == "both" else [args.lang]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for lang in langs:
            start = time.perf_counter()
            try:
                path = print_edition(browser, Edition(lang, args.edition == "student"))
            except (FileNotFoundError, CJKFontError) as err:
                print(f"make pdf: {err}", file=sys.stderr)
                return 2
            from pypdf import PdfReader

            pages = len(PdfReader(path).pages)
            print(f"wrote {path.relative_to(ROOT)}: {pages} pages, "
                  f"{path.stat().st_size / 2**20:.1f} MiB, {time.perf_counter() - start:.0f} s")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
