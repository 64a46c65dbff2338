"""The Chinese edition's sources, ``book/zh/`` (中文版), kept in step with ``book/``.

- ``book/zh/NN_topic.md`` translates ``book/NN_topic.md``: the same Jupytext MyST notebook,
  markdown cells in Chinese, code cells identical to the English ones byte for byte (tags
  included), so jupyter-cache gives it the English run's outputs. ``sync`` (run by
  ``make sync``) copies the English code cells in, cell by cell and in order, and writes
  ``notebooks/zh/NN_topic.ipynb``. ``book/zh/intro.md`` translates ``book/intro.md``.
- Each page's front matter records ``translation:``, hashes of the English markdown it
  translates (the whole, and each section); ``stamp`` writes it once a translation is up to
  date, and ``check`` names every stale page and the sections whose English text changed.
- ``check`` also compares the structure with the English page (headings, exercise labels,
  claim IDs), wants a Chinese character in every markdown cell that is more than maths, a
  link or the end of a directive, and refuses a line break inside Chinese text (a browser
  shows it as a space; ``unwrap`` joins such lines).
- ``build`` writes the Chinese book's ``_config.yml`` and ``_toc.yml`` (made from the English
  ones, so every shared setting has one home) into ``_build/zh/`` and builds the book into
  ``_build/html/zh/``, from the same jupyter-cache: it should execute nothing.

Only the pages present in ``book/zh/`` are handled: the edition grows chapter by chapter.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tools.build import chapter_format, glossary
from tools.build.chapter_format import (
    CJK_RE,
    CLAIM_ID_RE,
    FRONT_MATTER_RE,
    ROOT,
    SOLUTION_RE,
    code_cells,
    exercise_labels,
    headings,
    ipynb_from_myst,
    markdown_cells,
)
from tools.build.generated import Generated

BOOK = chapter_format.BOOK
NOTEBOOKS = chapter_format.NOTEBOOKS
ZH = chapter_format.ZH
INTRO = "intro.md"
RECORD = "translation"  # the front-matter key of the staleness record
# Chinese punctuation, with the curly quotes, dash and ellipsis Chinese text uses
CJK_PUNCT_RE = re.compile(r"[\u3000-\u303f\uff00-\uffef\u2018\u2019\u201c\u201d\u2014\u2026]")
# lines that start a block of their own (a list item, heading, table row, fence, directive...)
BLOCK_RE = re.compile(r"^\s*([-*+]\s|\d+[.)]\s|#|\||:{3,}|`{3,}|~{3,}|>|:[\w-]+:|\$\$|\+\+\+|---$)")
BEFORE_FIRST_HEADING = "(before the first heading)"

# What the Chinese book says differently from the English _config.yml / _toc.yml; every other
# setting is the English one (zh_config, zh_toc).
TITLE = "PyTorch 实战：一本可执行的书"
APPENDICES = "Appendices"  # the English toc's caption of the part the appendices are in
CAPTIONS = {"Chapters": "章节", APPENDICES: "附录"}
APPENDIX_GLOB = "appendix_*.md"
# made by tools/pages/claims_appendix.py and tools/build/glossary.py
GENERATED = ("appendix_claims", "appendix_glossary")
SEARCH_WORDS = "search_words.txt"  # jieba's user dictionary, in _build/zh/


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


# ------------------------------------------------------------------------------- checks
def code_problems(zh_text: str, en_text: str, name: str) -> list[str]:
    """Code cells and notebook header must be the English chapter's, byte for byte."""
    try:
        zh_cells, en_cells = code_cells(zh_text), code_cells(en_text)
    except ValueError as err:
        return [f"{name}: {err}"]
    if len(zh_cells) != len(en_cells):
        return [f"{name}: {len(zh_cells)} code cells, the English chapter has {len(en_cells)}"]
    found = []
    differ = [str(i) for i, (z, e) in enumerate(zip(zh_cells, en_cells, strict=True), 1)
              if z != e]
    if differ:
        found.append(f"{name}: code cell(s) {', '.join(differ)} differ from the English "
                     "chapter's; run `make sync`")
    if split_front_matter(zh_text)[1] != split_front_matter(en_text)[1]:
        found.append(f"{name}: front matter (jupytext header, kernelspec) differs from the "
                     "English chapter's; run `make sync`")
    return found


def structure_problems(zh_text: str, en_text: str, name: str) -> list[str]:
    """Same headings (count and levels), exercise and solution labels, and claim IDs."""
    found = []
    zh_levels = [level for cell in markdown_cells(zh_text) for level, _, _ in headings(cell)]
    en_levels = [level for cell in markdown_cells(en_text) for level, _, _ in headings(cell)]
    if zh_levels != en_levels:
        found.append(f"{name}: {len(zh_levels)} headings, levels {zh_levels}; the English "
                     f"page has {len(en_levels)}, levels {en_levels}")
    for what, labels in (("exercise", exercise_labels),
                         ("solution", lambda t: [m["label"] for m in SOLUTION_RE.finditer(t)])):
        if labels(zh_text) != labels(en_text):
            found.append(f"{name}: {what} labels {labels(zh_text)}, the English page has "
                         f"{labels(en_text)}")
    zh_ids = sorted(set(CLAIM_ID_RE.findall("\n".join(markdown_cells(zh_text)))))
    en_ids = sorted(set(CLAIM_ID_RE.findall("\n".join(markdown_cells(en_text)))))
    if zh_ids != en_ids:
        found.append(f"{name}: the text names claims {zh_ids}, the English text {en_ids}")
    return found


def needs_translation(cell: str) -> bool:
    """Whether a markdown cell has words to translate (not only maths, links, directive ends)."""
    rest = re.sub(r"\$\$.*?\$\$", "", cell, flags=re.S)
    rest = re.sub(r"\$[^$\n]+\$", "", rest)
    rest = re.sub(r"!?\[[^\]]*\]\([^)]*\)", "", rest)
    rest = re.sub(r"<!--.*?-->", "", rest, flags=re.S)
    rest = re.sub(r"^(:{3,}.*|:[\w-]+:.*|\+\+\+.*)$", "", rest, flags=re.M)
    return bool(re.search(r"[A-Za-z]", rest))


def cjk_problems(zh_text: str, name: str) -> list[str]:
    found = []
    for index, cell in enumerate(markdown_cells(zh_text), 1):
        if not CJK_RE.search(cell) and needs_translation(cell):
            first = cell.strip().split("\n")[0][:60]
            found.append(f"{name}: markdown cell {index} has no Chinese: {first!r}")
    return found


def _chinese_breaks(text: str) -> list[int]:
    """Indexes of the lines after which a paragraph's Chinese text is broken onto the next
    line: browsers show such a break as a space (fine in English, wrong in Chinese)."""
    lines, found, fence = text.split("\n"), [], None
    body_start = FRONT_MATTER_RE.match(text).group(0).count("\n") if FRONT_MATTER_RE.match(
        text) else 0
    for index in range(body_start, len(lines) - 1):
        line, after = lines[index], lines[index + 1]
        opening = re.match(r"^\s*(`{3,}|~{3,})", line)
        if opening:
            fence = None if fence and opening[1].startswith(fence) else (fence or opening[1])
            continue
        if fence or not line.strip() or not after.strip() or BLOCK_RE.match(after) or \
                re.match(r"^\s*(#|\||:{3,}|:[\w-]+:)", line):
            continue
        end, start = line.rstrip()[-1], after.lstrip()[0]
        if CJK_RE.match(end) or CJK_PUNCT_RE.match(end) or CJK_RE.match(start) or \
                CJK_PUNCT_RE.match(start):
            found.append(index)
    return found


def unwrap(text: str) -> str:
    """``text`` with every Chinese line break of ``_chinese_breaks`` joined (with a space
    only between a Chinese character and a Latin one)."""
    lines = text.split("\n")
    for index in reversed(_chinese_breaks(text)):
        line, after = lines[index].rstrip(), lines[index + 1].lstrip()
        mixed = bool(CJK_RE.match(line[-1])) != bool(CJK_RE.match(after[0]))
        punct = CJK_PUNCT_RE.match(line[-1]) or CJK_PUNCT_RE.match(after[0])
        lines[index:index + 2] = [line + (" " if mixed and not punct else "") + after]
    return "\n".join(lines)


def line_break_problems(zh_text: str, name: str, page: Path) -> list[str]:
    breaks = _chinese_breaks(zh_text)
    if not breaks:
        return []
    shown = ", ".join(str(i + 1) for i in breaks[:5]) + (", ..." if len(breaks) > 5 else "")
    return [f"{name}: {len(breaks)} line(s) ({shown}) break Chinese text, which a browser "
            f"shows as a space; write each paragraph on one line (`python -m "
            f"tools.build.zh_edition unwrap {page.stem}` joins them)"]


def stale_problems(zh_text: str, en_text: str, name: str, page: Path) -> list[str]:
    record = split_front_matter(zh_text)[0]
    stamp = f"run `python -m tools.build.zh_edition stamp {page.stem}`"
    if not record:
        return [f"{name}: no `{RECORD}:` record in its front matter; once it translates the "
                f"English page, {stamp}"]
    if record.get("markdown_sha256") == digest(en_text)["markdown_sha256"]:
        return []
    return [f"{name} is stale: the English text changed since it was translated, in "
            f"{', '.join(changed_sections(record, en_text))}; translate the change, then {stamp}"]


def sync_problems(book: Path = BOOK, notebooks: Path = NOTEBOOKS) -> list[str]:
    """What ``make sync`` would change: code cells, header, ``notebooks/zh/`` (for the sync
    check of tools/build/sync_notebooks.py)."""
    found = []
    for page in pages(book):
        name, english = _rel(page, book), english_for(page, book)
        if not english.exists():
            found.append(f"{name}: no English page {_rel(english, book)}")
            continue
        zh_text = page.read_text(encoding="utf-8")
        found += code_problems(zh_text, english.read_text(encoding="utf-8"), name)
        if not is_chapter(page):
            continue
        target = notebook_for(page, notebooks)
        if not target.exists():
            found.append(f"{ZH}/{target.name}: missing")
        elif target.read_text(encoding="utf-8") != notebook_text(zh_text, page.stem):
            found.append(f"{ZH}/{target.name}: stale or has outputs (differs from {name})")
    expected = {notebook_for(p, notebooks).name for p in pages(book) if is_chapter(p)}
    found += [f"{ZH}/{p.name}: no chapter in {ZH}/" for p in (notebooks / ZH).glob("*.ipynb")
              if p.name not in expected]
    return found


def problems(book: Path = BOOK, notebooks: Path = NOTEBOOKS) -> list[str]:
    """Everything wrong with the Chinese edition (empty when it is in step with book/)."""
    found = sync_problems(book, notebooks)
    for page in pages(book):
        english = english_for(page, book)
        if not english.exists():
            continue
        name = _rel(page, book)
        zh_text, en_text = page.read_text(encoding="utf-8"), english.read_text(encoding="utf-8")
        found += structure_problems(zh_text, en_text, name)
        found += cjk_problems(zh_text, name)
        found += line_break_problems(zh_text, name, page)
        found += stale_problems(zh_text, en_text, name, page)
        found += link_problems(zh_text, name, page, book)
    return found


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


def link_problems(zh_text: str, name: str, page: Path, book: Path = BOOK) -> list[str]:
    localized, problems = localize_links(zh_text, page, book)
    found = [f"{name}: {problem}" for problem in problems]
    if localized != zh_text:
        found.append(f"{name}: links to English section anchors; `make sync` puts the Chinese "
                     "ones in")
    return found


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


def sync(book: Path = BOOK, notebooks: Path = NOTEBOOKS,
         generated: Generated | None = None) -> None:
    """Copy the English code cells into each Chinese chapter; write ``notebooks/zh/``.

    A Chinese page whose code cells were edited by hand, or a notebook saved with work in it,
    is kept and reported (tools/build/generated.py), never overwritten."""
    own = generated is None
    generated = generated or Generated("make sync", manifest=book.parent / ".generated.json",
                                       root=book.parent)
    mismatched: list[str] = []
    for page in pages(book):
        english, name = english_for(page, book), _rel(page, book)
        if not english.exists():
            print(f"note: {name} has no English page {_rel(english, book)}")
            continue
        text = page.read_text(encoding="utf-8")
        try:
            new = with_english_code(text, english.read_text(encoding="utf-8"), name)
        except CodeCellsMismatch as err:  # the other pages still get synced
            mismatched.append(str(err))
            continue
        new, _ = localize_links(new, page, book)  # `check` reports what it cannot localize
        outcome = generated.write(page, new, part=own_code)
        if outcome == "wrote":
            print(f"wrote {name} (code cells from {_rel(english, book)})")
        elif outcome == "kept":
            new = text
        if is_chapter(page):
            target = notebook_for(page, notebooks)
            if generated.write(target, notebook_text(new, page.stem)) == "wrote":
                print(f"wrote {_rel(target, notebooks)}")
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


# ------------------------------------------------------------------------------ the build
def zh_config(root: Path = ROOT) -> dict:
    """The Chinese book's Jupyter Book config: the English one, with the paths made absolute
    (the Chinese book's source folder is book/zh/) and the few settings that differ."""
    config = copy.deepcopy(yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")))
    config["title"] = TITLE
    config["exclude_patterns"] = [".*", "**/.*"]
    config["execute"]["cache"] = str(root / config["execute"]["cache"])  # the English records
    config["repository"]["path_to_book"] = f"book/{ZH}"
    sphinx = config["sphinx"]
    sphinx["local_extensions"] = {k: str(root / v) for k, v in
                                  sphinx["local_extensions"].items()}
    settings = sphinx["config"]
    settings["html_static_path"] = [str(root / p) for p in settings["html_static_path"]]
    settings.update({
        "language": "zh_CN",
        "html_search_language": "zh",  # needs jieba (requirements.txt)
        # myst-nb's fold labels have no translation (the chapters fold inputs only: hide-input)
        "nb_code_prompt_show": "显示代码",
        "nb_code_prompt_hide": "隐藏代码",
        "colab_notebook_dir": f"notebooks/{ZH}",
        "colab_repository_root": str(root),
        "language_link_label": "English",
        "language_link_hreflang": "en",
        "language_link_other_source": str(root / "book"),
        "language_link_other_url": "../book/",
        # each figure's text alternative in Chinese (book/_ext/figure_alt.py)
        "figure_alt_key": "alt_zh",
        # the glossary's terms as jieba words, so that 梯度裁剪 is one search term (build())
        "html_search_options": {"dict": str(root / "_build" / ZH / SEARCH_WORDS)},
    })
    return config


def appendices(book: Path = BOOK) -> list[Path]:
    """The Chinese appendices: the generated ones (the claims ledger and the glossary, written
    by ``make appendix``, so not committed) and the translated ones (``book/zh/appendix_*.md``)."""
    found = {p.stem for p in (book / ZH).glob(APPENDIX_GLOB)} | set(GENERATED)
    return [book / ZH / f"{stem}.md" for stem in sorted(found)]


def zh_toc(root: Path = ROOT) -> dict:
    """The English table of contents, restricted to the pages translated so far; the
    appendices only the Chinese edition has (the glossary) close the last part."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    translated = {p.stem for p in pages(root / "book") + appendices(root / "book")}
    in_english = {Path(c["file"]).name for part in toc.get("parts", []) for c in part["chapters"]}
    parts = []
    for part in toc.get("parts", []):
        chapters = [{"file": Path(c["file"]).name} for c in part["chapters"]
                    if Path(c["file"]).name in translated]
        if part["caption"] == APPENDICES:
            chapters += [{"file": p.stem} for p in appendices(root / "book")
                         if p.stem not in in_english]
        if chapters:
            parts.append({"caption": CAPTIONS.get(part["caption"], part["caption"]),
                          "chapters": chapters})
    return {"format": toc["format"], "root": Path(toc["root"]).name, "parts": parts}


def build(root: Path = ROOT) -> int:
    """Build the Chinese book into _build/html/zh/ (jupyter-book -W); return its status."""
    work = root / "_build" / ZH
    work.mkdir(parents=True, exist_ok=True)
    words = glossary.search_terms(glossary.load(root / "book" / ZH / "glossary.yml",
                                                root / "book"))
    (work / SEARCH_WORDS).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    for name, data in (("_config.yml", zh_config(root)), ("_toc.yml", zh_toc(root))):
        (work / name).write_text(
            "# generated by `python -m tools.build.zh_edition build` from the English file\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    # no --all: a page whose English run changed is re-read by book/_ext/cache_records.py
    command = [str(jupyter_book if jupyter_book.exists() else "jupyter-book"), "build", "-W",
               "--keep-going", str(root / "book" / ZH),
               "--config", str(work / "_config.yml"), "--toc", str(work / "_toc.yml"),
               "--path-output", str(work)]
    sys.stdout.flush()
    status = subprocess.call(command, cwd=root)
    if status == 0:
        site = root / "_build" / "html" / ZH
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(work / "_build" / "html", site)
        print(f"The Chinese book is at file://{site}/index.html")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("sync", help="copy the English code cells in; write notebooks/zh/")
    sub.add_parser("check", help="report every problem (exit 1 if any), change nothing")
    stamp_parser = sub.add_parser("stamp", help="record that a page translates the English "
                                                "text as it is now")
    stamp_parser.add_argument("page", nargs="+", help="e.g. 00_setup or intro")
    unwrap_parser = sub.add_parser("unwrap", help="join the lines that break Chinese text")
    unwrap_parser.add_argument("page", nargs="+", help="e.g. 00_setup or intro")
    sub.add_parser("build", help="build the Chinese book into _build/html/zh/")
    args = parser.parse_args()
    if args.command == "sync":
        try:
            sync()
        except CodeCellsMismatch as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    elif args.command == "check":
        found = problems()
        for problem in found:
            print(problem)
        return 1 if found else 0
    elif args.command == "stamp":
        for name in args.page:
            stamp(page_named(name))
    elif args.command == "unwrap":
        for name in args.page:
            page = page_named(name)
            page.write_text(unwrap(page.read_text(encoding="utf-8")), encoding="utf-8")
    elif args.command == "build":
        return build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
