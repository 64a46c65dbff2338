"""What ``python -m tools.build.zh.edition check`` reports about the Chinese edition's sources:
code cells and header not the English chapter's, another structure (headings, exercise and
solution labels, claim IDs), a markdown cell without Chinese, a line break inside Chinese text,
a stale translation, links to English section anchors; and what ``make sync`` would change.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.build.chapter_format import (
    CJK_RE,
    CLAIM_ID_RE,
    FRONT_MATTER_RE,
    SOLUTION_RE,
    code_cells,
    exercise_labels,
    headings,
    markdown_cells,
)
from tools.build.zh.sources import (
    BOOK,
    NOTEBOOKS,
    RECORD,
    ZH,
    _rel,
    changed_sections,
    digest,
    english_for,
    is_chapter,
    localize_links,
    notebook_for,
    notebook_text,
    pages,
    split_front_matter,
)

# Chinese punctuation, with the curly quotes, dash and ellipsis Chinese text uses
CJK_PUNCT_RE = re.compile(r"[\u3000-\u303f\uff00-\uffef\u2018\u2019\u201c\u201d\u2014\u2026]")
# lines that start a block of their own (a list item, heading, table row, fence, directive...)
BLOCK_RE = re.compile(r"^\s*([-*+]\s|\d+[.)]\s|#|\||:{3,}|`{3,}|~{3,}|>|:[\w-]+:|\$\$|\+\+\+|---$)")


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
            f"tools.build.zh.edition unwrap {page.stem}` joins them)"]


def stale_problems(zh_text: str, en_text: str, name: str, page: Path) -> list[str]:
    record = split_front_matter(zh_text)[0]
    stamp = f"run `python -m tools.build.zh.edition stamp {page.stem}`"
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


def link_problems(zh_text: str, name: str, page: Path, book: Path = BOOK) -> list[str]:
    localized, problems = localize_links(zh_text, page, book)
    found = [f"{name}: {problem}" for problem in problems]
    if localized != zh_text:
        found.append(f"{name}: links to English section anchors; `make sync` puts the Chinese "
                     "ones in")
    return found
