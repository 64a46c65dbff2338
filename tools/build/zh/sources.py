"""The Chinese edition's sources (``book/zh/``): which pages are translated, their front matter
and translation record, the English code cells copied in (``sync``) and the record of the
English text a page translates (``stamp``). tools/build/zh/edition.py is the command line and
the Chinese site's build; tools/build/zh/checks.py checks these sources.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import yaml

from tools.build import chapter_format
from tools.build.chapter_format import (
    FRONT_MATTER_RE,
    code_cells,
    headings,
    ipynb_from_myst,
    markdown_cells,
)
from tools.build.generated import Generated
from tools.build.sync_memo import SyncMemo, text_or_none

BOOK = chapter_format.BOOK
NOTEBOOKS = chapter_format.NOTEBOOKS
ZH = chapter_format.ZH
INTRO = "intro.md"
RECORD = "translation"  # the front-matter key of the staleness record
BEFORE_FIRST_HEADING = "(before the first heading)"
APPENDIX_GLOB = "appendix_*.md"
# made by tools/pages/claims_appendix.py and tools/build/zh/glossary.py
GENERATED = ("appendix_claims", "appendix_glossary")


class CodeCellsMismatch(ValueError):
    """The Chinese chapter's code cells cannot be paired one to one with the English ones."""


# ----------------------------------------------------------------------------- the pages
def pages(book: Path = BOOK) -> list[Path]:
    """The translated pages: ``book/zh/intro.md``, the chapters and the translated appendices
    (the field guide; not the generated ones), each where it exists."""
    zh = book / ZH
    intro = [zh / INTRO] if (zh / INTRO).exists() else []
    translated = [p for p in sorted(zh.glob(APPENDIX_GLOB)) if p.stem not in GENERATED]
    return intro + chapter_format.chapters(zh) + translated


def english_for(page: Path, book: Path = BOOK) -> Path:
    return book / page.name


def notebook_for(page: Path, notebooks: Path = NOTEBOOKS) -> Path:
    return chapter_format.notebook_for(page, notebooks / ZH)


def is_chapter(page: Path) -> bool:
    return page.match(chapter_format.CHAPTER_GLOB)


def _rel(path: Path, book: Path) -> str:
    return path.relative_to(book.parent).as_posix()


# ------------------------------------------------------------------ front matter, hashes
def split_front_matter(text: str) -> tuple[dict, str, str]:
    """(the translation record, the rest of the front matter's YAML, the body)."""
    match = FRONT_MATTER_RE.match(text)
    if match is None:
        return {}, "", text
    data = yaml.safe_load(match["yaml"]) or {}
    record = data.pop(RECORD, None) or {}
    rest = yaml.safe_dump(data, sort_keys=False, allow_unicode=True) if data else ""
    return record, rest, text[match.end():]


def _english_header(en_text: str) -> str:
    """The English page's front matter YAML, verbatim (jupytext's header, the kernelspec)."""
    match = FRONT_MATTER_RE.match(en_text)
    return match["yaml"] if match else ""


def compose(en_text: str, body: str, record: dict) -> str:
    """A Chinese page: the English front matter, then the translation record, then ``body``."""
    block = yaml.safe_dump({RECORD: record}, sort_keys=False, allow_unicode=True, width=1000)
    header = _english_header(en_text) + (block if record else "")
    return f"---\n{header}---\n{body}" if header else body


def notebook_text(zh_text: str, stem: str | None = None) -> str:
    """The ``notebooks/zh/`` notebook of a Chinese chapter (``stem``: its name, for links to
    the site): no outputs, and no translation record (so that ``stamp`` leaves the notebook as
    it is)."""
    _, rest, body = split_front_matter(zh_text)
    return ipynb_from_myst(f"---\n{rest}---\n{body}" if rest else body, language=ZH, stem=stem)


def _sha(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) for each section of a page's markdown cells, in order; a heading is
    written as in the source (``## Summary``), its section runs to the next heading."""
    found: list[tuple[str, list[str]]] = [(BEFORE_FIRST_HEADING, [])]
    for cell in markdown_cells(text):
        starts = {line: f"{'#' * level} {title}" for level, title, line in headings(cell)}
        for index, line in enumerate(cell.split("\n")):
            if index in starts:
                found.append((starts[index], []))
            found[-1][1].append(line)
        found[-1][1].append("+++")  # a cell boundary is part of the text
    named: list[tuple[str, str]] = []
    for title, lines in found:
        if title == BEFORE_FIRST_HEADING and not "".join(lines).strip("+\n "):
            continue
        seen = sum(1 for t, _ in named if t == title or t.startswith(f"{title} ("))
        named.append((f"{title} ({seen + 1})" if seen else title, "\n".join(lines)))
    return named


def digest(en_text: str) -> dict:
    """The record a Chinese page keeps of the English markdown it translates."""
    return {
        "markdown_sha256": _sha("\n+++\n".join(markdown_cells(en_text)), 16),
        "sections": [f"{_sha(body, 8)} {title}" for title, body in sections(en_text)],
    }


def changed_sections(record: dict, en_text: str) -> list[str]:
    """The sections whose English text differs from what the record says was translated."""
    old = dict(reversed(entry.split(" ", 1)) for entry in record.get("sections", []))
    new = dict(reversed(entry.split(" ", 1)) for entry in digest(en_text)["sections"])
    changes = [f'"{t}" (changed)' for t in new if t in old and old[t] != new[t]]
    changes += [f'"{t}" (new in English)' for t in new if t not in old]
    changes += [f'"{t}" (gone from English)' for t in old if t not in new]
    return changes or ["no section's text changed: cells were split or joined"]


# ------------------------------------------------------------------------------- links
# A link to a section, [text](05_debugging.md#anchor) or [text](#anchor): the anchor is MyST's
# slug of the heading. A Chinese page's headings are Chinese, so are its anchors; translators
# keep the English link and `make sync` puts the Chinese anchor in (by heading position:
# the structure check keeps the headings of both editions in step).
LINK_RE = re.compile(r"\]\((?P<page>(?:[\w-]+)\.md)?#(?P<anchor>[^)\s]+)\)")


def _anchors(text: str) -> list[str]:
    body = FRONT_MATTER_RE.sub("", text, count=1)  # or its closing --- reads as a heading
    return [chapter_format.heading_anchor(h) for level, h, _ in headings(body) if level <= 3]


def localize_links(zh_text: str, page: Path, book: Path = BOOK) -> tuple[str, list[str]]:
    """``zh_text`` with each English section anchor replaced by the Chinese page's anchor for
    the same heading, and the problems found: a link to a page with no Chinese edition yet, or
    an anchor neither edition has."""
    cache: dict[str, tuple[list[str], list[str]]] = {}
    problems: list[str] = []

    def anchors_of(name: str) -> tuple[list[str], list[str]] | None:
        if name not in cache:
            en, zh = book / name, book / ZH / name
            if not (en.exists() and zh.exists()):
                return None
            zh_source = zh_text if zh == page else zh.read_text(encoding="utf-8")
            cache[name] = (_anchors(en.read_text(encoding="utf-8")), _anchors(zh_source))
        return cache[name]

    def replace(match: re.Match) -> str:
        name, anchor = match["page"] or page.name, match["anchor"]
        found = anchors_of(name)
        if found is None:
            problems.append(f"links to {name}#{anchor}, which has no Chinese edition yet")
            return match[0]
        en_anchors, zh_anchors = found
        if anchor in zh_anchors:
            return match[0]
        if anchor in en_anchors and len(en_anchors) == len(zh_anchors):
            target = zh_anchors[en_anchors.index(anchor)]
            return match[0].replace(f"#{anchor})", f"#{target})")
        problems.append(f"links to {name}#{anchor}, a section neither edition has")
        return match[0]

    return LINK_RE.sub(replace, zh_text), problems


# -------------------------------------------------------------------------------- sync
def with_english_code(zh_text: str, en_text: str, name: str = "the Chinese chapter") -> str:
    """The Chinese page with the English code cells (and front matter header) put in."""
    en_cells = code_cells(en_text)
    zh_matches = list(chapter_format.CODE_CELL_RE.finditer(zh_text))
    code_cells(zh_text)  # the same guard against a misread fence
    if len(zh_matches) != len(en_cells):
        raise CodeCellsMismatch(
            f"{name} has {len(zh_matches)} code cells and the English chapter "
            f"{len(en_cells)}: `make sync` copies them one to one, in order, so it changed "
            f"nothing. Give {name} a code cell wherever the English chapter has one (leave it "
            "empty: `make sync` fills it), then run `make sync` again.")
    pieces, last = [], 0
    for match, english in zip(zh_matches, en_cells, strict=True):
        pieces += [zh_text[last:match.start()], english]
        last = match.end()
    body_with_code = "".join(pieces) + zh_text[last:]
    record, _, body = split_front_matter(body_with_code)
    return compose(en_text, body, record)


def own_code(text: str) -> str:
    """What of a Chinese page a person may have written in its code cells: the non-empty ones
    (an empty cell is a placeholder that ``make sync`` fills; the prose is never replaced)."""
    try:
        cells = chapter_format.code_cells(text)
    except ValueError:
        return text
    def body(cell: str) -> str:
        return "".join(line for line in cell.splitlines()[1:-1]
                       if not re.match(r"^:\w[\w-]*:", line)).strip()

    return "\n".join(cell for cell in cells if body(cell))


def linked_pages(*texts: str) -> list[str]:
    """The pages (``05_debugging.md``) that section links in ``texts`` point at."""
    return sorted({m["page"] for text in texts for m in LINK_RE.finditer(text) if m["page"]})


def _sync_inputs(page: Path, book: Path) -> list[str]:
    """What ``sync`` makes a Chinese page's outputs from: the page, its English page, and both
    editions of each page it links to (their headings give the anchors)."""
    text, en_text = text_or_none(page), text_or_none(english_for(page, book))
    return [_rel(page, book), text, en_text] + [
        f"{linked}\n{text_or_none(book / linked)}\n{text_or_none(book / ZH / linked)}"
        for linked in linked_pages(text, en_text)]


def sync(book: Path = BOOK, notebooks: Path = NOTEBOOKS,
         generated: Generated | None = None, memo: SyncMemo | None = None) -> None:
    """Copy the English code cells into each Chinese chapter; write ``notebooks/zh/``.

    A Chinese page whose code cells were edited by hand, or a notebook saved with work in it,
    is kept and reported (tools/build/generated.py), never overwritten. ``memo``: skip the
    pages whose inputs (:func:`_sync_inputs`) and outputs are as the last sync left them
    (tools/build/sync_memo.py)."""
    own = generated is None
    generated = generated or Generated("make sync", manifest=book.parent / ".generated.json",
                                       root=book.parent)
    mismatched: list[str] = []
    for page in pages(book):
        english, name = english_for(page, book), _rel(page, book)
        if not english.exists():
            print(f"note: {name} has no English page {_rel(english, book)}")
            continue
        text, en_text = page.read_text(encoding="utf-8"), english.read_text(encoding="utf-8")
        outputs = [page] + ([notebook_for(page, notebooks)] if is_chapter(page) else [])
        if memo and memo.unchanged(_sync_inputs(page, book), outputs):
            continue
        try:
            new = with_english_code(text, en_text, name)
        except CodeCellsMismatch as err:  # the other pages still get synced
            mismatched.append(str(err))
            continue
        new, _ = localize_links(new, page, book)  # `check` reports what it cannot localize
        outcomes = [generated.write(page, new, part=own_code)]
        if outcomes[0] == "wrote":
            print(f"wrote {name} (code cells from {_rel(english, book)})")
        elif outcomes[0] == "kept":
            new = text
        if is_chapter(page):
            target = notebook_for(page, notebooks)
            outcomes.append(generated.write(target, notebook_text(new, page.stem)))
            if outcomes[-1] == "wrote":
                print(f"wrote {_rel(target, notebooks)}")
        # not a kept file: it is reported again at every sync. The inputs are read again:
        # the page as written is what the next sync reads
        if memo and "kept" not in outcomes:
            memo.record(_sync_inputs(page, book), outputs)
    expected = {notebook_for(p, notebooks).name for p in pages(book) if is_chapter(p)}
    for orphan in (notebooks / ZH).glob("*.ipynb"):
        if orphan.name not in expected:
            print(f"note: {_rel(orphan, notebooks)} has no chapter; delete it or add the chapter")
    if own:
        generated.save()
    if mismatched:
        raise CodeCellsMismatch("\n".join(mismatched))


def page_named(name: str, book: Path = BOOK) -> Path:
    """``00_setup``, ``00_setup.md`` or ``book/zh/00_setup.md`` -> the Chinese page."""
    page = book / ZH / f"{Path(name).stem}.md"
    if not page.exists():
        raise SystemExit(f"no Chinese page {_rel(page, book)}")
    return page


def stamp(page: Path, book: Path = BOOK) -> None:
    """Record that ``page`` translates the English page as it is now."""
    text, en_text = page.read_text(encoding="utf-8"), english_for(page, book).read_text("utf-8")
    _, _, body = split_front_matter(text)
    page.write_text(compose(en_text, body, digest(en_text)), encoding="utf-8")
    print(f"{_rel(page, book)}: recorded the English text it translates")
