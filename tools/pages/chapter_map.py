"""The intro's chapter map, generated: every chapter and every claim it checks, both editions.

``book/intro.md`` (and ``book/zh/intro.md``) include ``_generated/chapter_map.md``, which this
module writes from the chapters themselves: a chapter's row links to it with its own title,
and lists the IDs of every ``claim("Cxx", ...)`` the chapter runs, consecutive IDs as a range
("C01–C05", three or more; the claims appendix gives each its statement and results).
Written by the appendix stage (``make appendix``, part of ``make book``) beside the claims
appendix; not committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tools.build.chapter_format import BOOK, ZH, chapters
from tools.pages.claims_appendix import claim_sites, load_ledger, write_if_changed

FOLDER = "_generated"
NAME = "chapter_map.md"
HEADERS = {
    "en": "| Chapter | Claims it checks |\n| --- | --- |",
    "zh": "| 章 | 本章检查的论断 |\n| --- | --- |",
}


def id_ranges(ids: list[str]) -> list[tuple[str, str]]:
    """Claim IDs grouped into runs of consecutive numbers: (first, last) per run."""
    numbers = sorted({int(i[1:]) for i in ids})
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return [(f"C{run[0]:02d}", f"C{run[-1]:02d}") for run in runs]


def claims_cell(ids: list[str]) -> str:
    """The claims of one chapter, as IDs and ranges: "C01–C05, C46"."""
    parts = []
    for first, last in id_ranges(ids):
        if first == last:
            parts.append(first)
        elif int(last[1:]) - int(first[1:]) == 1:
            parts += [first, last]
        else:
            parts.append(f"{first}–{last}")
    return ", ".join(parts)


def chapter_claims(book: Path) -> dict[str, list[str]]:
    """For each chapter stem of ``book``, the claim IDs its cells check."""
    found: dict[str, list[str]] = {page.stem: [] for page in chapters(book)}
    for claim_id, sites in claim_sites(book).items():
        for site in sites:
            if claim_id not in found[site.chapter]:
                found[site.chapter].append(claim_id)
    return found


def render(book: Path, lang: str = "en") -> str:
    """The chapter map of the edition in ``book`` (``book/`` or ``book/zh/``)."""
    rows = [HEADERS[lang]]
    claims = chapter_claims(book)
    for page in chapters(book):
        title = next(line[2:].strip() for line in page.read_text(encoding="utf-8").splitlines()
                     if line.startswith("# "))
        rows.append(f"| [{title}]({page.name}) | {claims_cell(claims[page.stem]) or '—'} |")
    return "\n".join(rows) + "\n"


def unmapped(book: Path = BOOK) -> list[str]:
    """Ledger claims that no chapter of ``book`` checks (the map would leave them out)."""
    mapped = {c for ids in chapter_claims(book).values() for c in ids}
    return sorted(set(load_ledger()) - mapped, key=lambda c: int(c[1:]))


def main() -> int:
    for book, lang in [(BOOK, "en"), (BOOK / ZH, "zh")]:
        if not book.is_dir():
            continue
        (book / FOLDER).mkdir(exist_ok=True)
        write_if_changed(book / FOLDER / NAME, render(book, lang))
    missing = unmapped()
    if missing:
        print(f"no chapter checks {', '.join(missing)}: the chapter map leaves them out")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
