"""The Chinese edition's glossary, 术语表: ``book/zh/glossary.yml`` rendered as the appendix
``book/zh/appendix_glossary.md`` (run by ``make sync`` and the book builds).

Each entry is an English term as the book uses it, the Chinese term the translation uses (the
source articles' own word where they have one: it is what readers search for), and the page
that teaches it (``intro`` or a chapter's stem). The translation follows this file; the page
lists the terms by chapter, each linked to the Chinese chapter where it is translated and to
the English one otherwise.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from tools.build.chapter_format import BOOK, CJK_RE, ROOT, ZH, chapters

GLOSSARY = BOOK / ZH / "glossary.yml"
OUTPUT = BOOK / ZH / "appendix_glossary.md"
CJK_WORD_RE = re.compile(rf"{CJK_RE.pattern}+")
H1_RE = re.compile(r"^# (.+)$", re.MULTILINE)
FIELDS = ("en", "zh", "chapter")


def taught_in(book: Path = BOOK) -> list[str]:
    """The pages a term can be taught in, in the book's order: the intro, then the chapters."""
    return ["intro"] + [c.stem for c in chapters(book)]


def load(path: Path = GLOSSARY, book: Path = BOOK) -> list[dict[str, str]]:
    """The glossary's entries, checked: the three fields, a Chinese term with Chinese in it, a
    page that exists, and each English term once."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise ValueError(f"{path.name}: expected a list of entries, got {type(entries).__name__}")
    pages, seen = taught_in(book), set()
    for number, entry in enumerate(entries, 1):
        where = f"{path.name} entry {number}"
        if not isinstance(entry, dict) or sorted(entry) != sorted(FIELDS):
            raise ValueError(f"{where}: expected exactly the fields {FIELDS}, got {entry!r}")
        if not all(isinstance(entry[f], str) and entry[f].strip() for f in FIELDS):
            raise ValueError(f"{where}: every field must be a non-empty string: {entry!r}")
        if not CJK_RE.search(entry["zh"]):
            raise ValueError(f"{where}: the Chinese term {entry['zh']!r} has no Chinese in it")
        if entry["chapter"] not in pages:
            raise ValueError(f"{where}: chapter {entry['chapter']!r} is not one of {pages}")
        if entry["en"].lower() in seen:
            raise ValueError(f"{where}: {entry['en']!r} is in the glossary twice")
        seen.add(entry["en"].lower())
    return entries


def search_terms(entries: list[dict[str, str]]) -> list[str]:
    """The Chinese terms as words for jieba, which Sphinx's Chinese search uses to cut text into
    words: without them 梯度裁剪 is cut into 梯度 and 裁剪 and a search for the whole term finds
    nothing. ``显存溢出（OOM）`` gives 显存溢出; ``训练模式 / 评估模式`` gives both."""
    words: list[str] = []
    for entry in entries:
        for piece in re.split(r"[（）()/、\s]+", entry["zh"]):
            if len(piece) >= 2 and CJK_WORD_RE.fullmatch(piece) and piece not in words:
                words.append(piece)
    return words


def _title(page: Path) -> str:
    match = H1_RE.search(page.read_text(encoding="utf-8"))
    return match[1].strip() if match else page.stem


def page_link(stem: str, book: Path = BOOK) -> str:
    """From the Chinese glossary, a link to the page that teaches a term: the Chinese page when
    it is translated, the English page (an HTML link into the English site) otherwise."""
    zh_page = book / ZH / f"{stem}.md"
    if zh_page.exists():
        return f"[{_title(zh_page)}]({stem}.md)"
    return f'<a href="../book/{stem}.html">{_title(book / f"{stem}.md")}</a>（英文）'


def render(entries: list[dict[str, str]], book: Path = BOOK) -> str:
    order = {stem: i for i, stem in enumerate(taught_in(book))}
    rows = [f"| {e['en']} | {e['zh']} | {page_link(e['chapter'], book)} |"
            for e in sorted(entries, key=lambda e: order[e["chapter"]])]  # stable: file order
    return "\n".join([
        "# 附录 · 术语表",
        "",
        "本书英文版与中文版的术语对照，按讲解它的章节排列。中文术语尽量采用原文（两篇中文源文章）"
        "的说法，这也是读者搜索时用的词；API 名称、代码和输出保持英文。",
        "",
        "| English | 中文 | 在哪一章讲解 |",
        "| --- | --- | --- |",
        *rows,
        "",
    ])


def main() -> int:
    text = render(load())
    if OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text:
        print(f"{OUTPUT.relative_to(ROOT)} is up to date")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
