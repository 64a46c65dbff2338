"""The chapter format, written once: where chapters live, the exercise / solution blocks, the
student edition's stub, and MyST markdown -> ``.ipynb`` (book/README.md describes the format).

Every tool (``sync_notebooks``, ``student_edition``, ``grade``, ``claims_appendix``, ``bench``)
and the tests import these names instead of repeating a glob or a regex.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from helpers.exercises import LABEL_PATTERN
from tools.build.book_run import BookRun
from tools.build.jupyter_markdown import Page, exercise_text, to_jupyter

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
NOTEBOOKS = ROOT / "notebooks"
CHAPTER_GLOB = "[0-9][0-9]_*.md"
# The Chinese edition: book/zh/NN_topic.md beside book/NN_topic.md, notebooks in notebooks/zh/
# (tools/build/zh/edition.py checks and syncs it).
ZH = "zh"
# A Chinese (CJK ideograph) character: what a translated cell, term or heading must contain
CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

EXERCISE_RE = re.compile(
    rf":::\{{exercise\}}\n:label: (?P<label>{LABEL_PATTERN})\n(?P<body>.*?)\n:::\n", re.S)
SOLUTION_RE = re.compile(
    rf":::\{{solution-start\}} (?P<label>{LABEL_PATTERN})\n(?P<body>.*?):::\{{solution-end\}}\n"
    r":::\n", re.S)
CHECK_RE = re.compile(rf'check_exercise\("(?P<label>{LABEL_PATTERN})"\)')
STUB_MARKER = "# Your answer to"
STUB_RE = re.compile(rf"^{re.escape(STUB_MARKER)} (?P<label>{LABEL_PATTERN}):")
# A code cell of a MyST notebook, fence to fence, with its options (``:tags:``) and source.
CODE_CELL_RE = re.compile(r"^(?P<fence>`{3,})\{code-cell\}[^\n]*\n.*?^(?P=fence)[ \t]*$",
                          re.M | re.S)
# The YAML front matter at the top of a chapter (jupytext's header and the kernelspec).
FRONT_MATTER_RE = re.compile(r"\A---\n(?P<yaml>.*?\n)---\n", re.S)
CLAIM_ID_RE = re.compile(r"\bC\d{2,3}\b")
CLAIM_CALL_RE = re.compile(r'\bclaim\(\s*"(C\d{2,3})"')  # a claim cell's `claim("C24", ...)`
# The header line of an English chapter: "*Reading time about N min. Runs in about M s on a
# 2-core CPU...*" (book/README.md, "File and cells"); group 1 is M, the run time.
RUN_TIME_RE = re.compile(r"^\*(?:Reading time about \d+ min\. )?Runs in about (\d+) s\b", re.M)


def chapters(book: Path = BOOK) -> list[Path]:
    """The chapters ``book/NN_topic.md``, in order."""
    return sorted(book.glob(CHAPTER_GLOB))


def code_cells(text: str) -> list[str]:
    """The code cells of a chapter's MyST text, each exactly as written (fences included).

    Refuses text where this count disagrees with jupytext's (a fence this rule misreads).
    """
    blocks = [m.group(0) for m in CODE_CELL_RE.finditer(text)]
    parsed = [source for kind, source in _cells(text) if kind == "code"]
    if len(blocks) != len(parsed):
        raise ValueError(f"found {len(blocks)} code-cell fences but jupytext reads "
                         f"{len(parsed)} code cells")
    return blocks


# `make sync` and the Chinese edition's checks ask about each page several times: one parse
@functools.lru_cache(maxsize=64)
def _cells(text: str) -> tuple[tuple[str, str], ...]:
    """(cell type, source) of each cell of MyST notebook text, as jupytext reads it."""
    import jupytext  # here, not at the top: the tools that only read the rules start faster

    return tuple((c.cell_type, c.source) for c in jupytext.reads(text, fmt="md:myst").cells)


def markdown_cells(text: str) -> list[str]:
    """The sources of a chapter's markdown cells, as jupytext reads them (no front matter)."""
    return [source for kind, source in _cells(text) if kind == "markdown"]


def headings(markdown: str) -> list[tuple[int, str, int]]:
    """(level, text, line index) of each heading of markdown text; code blocks do not count."""
    return list(_headings(markdown))


@functools.lru_cache(maxsize=64)  # each Chinese page's links ask for the same chapters' headings
def _headings(markdown: str) -> tuple[tuple[int, str, int], ...]:
    from markdown_it import MarkdownIt

    found = []
    tokens = MarkdownIt("commonmark").parse(markdown)
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open":
            found.append((int(opening.tag[1]), inline.content.strip(), opening.map[0]))
    return tuple(found)


def plain_heading(heading: str) -> str:
    """Heading text as rendered (no inline-code or emphasis markup), which is what MyST slugs."""
    return re.sub(r"[`*]", "", heading).strip()


def heading_anchor(heading: str) -> str:
    """The anchor MyST gives a heading (``myst_heading_anchors`` in _config.yml)."""
    from myst_parser.mdit_to_docutils.base import default_slugify

    return default_slugify(plain_heading(heading))


def notebook_for(chapter: Path, notebooks: Path = NOTEBOOKS) -> Path:
    """Where ``make sync`` writes a chapter's ``.ipynb``."""
    return notebooks / chapter.with_suffix(".ipynb").name


def exercise_labels(text: str) -> list[str]:
    """The exercise labels of a chapter's text, in order."""
    return [m["label"] for m in EXERCISE_RE.finditer(text)]


def solution_code(text: str) -> dict[str, list[str]]:
    """For each exercise label, the sources of the code cells of its (hidden) solution."""
    solutions = {}
    for match in SOLUTION_RE.finditer(text):
        body = re.sub(r"\A:class: \w+\n", "", match["body"])
        solutions[match["label"]] = [source for kind, source in _cells(body) if kind == "code"]
    return solutions


def stub(label: str) -> str:
    """The code cell that takes a solution's place in the student edition."""
    return (
        "```{code-cell} ipython3\n"
        f"{STUB_MARKER} {label}: replace the next line with your code, run it, then run the\n"
        "# check cell below.\n"
        f'raise NotImplementedError("{label}: not attempted yet")\n'
        "```\n"
    )


def student_text(chapter_text: str, language: str = "en") -> str:
    """The MyST source of a chapter with its solutions replaced by stubs."""
    labels = exercise_labels(chapter_text)
    text, count = SOLUTION_RE.subn(lambda m: stub(m["label"]), chapter_text)
    if count != len(labels):
        raise ValueError(f"{len(labels)} exercises but {count} solution blocks")
    return EXERCISE_RE.sub(lambda m: exercise_text(m["label"], m["body"], language), text)


def ipynb_from_myst(text: str, language: str = "en", stem: str | None = None,
                    book_run: BookRun | None = None) -> str:
    """The .ipynb a learner opens, made from MyST notebook text: jupytext's notebook with its
    markdown in Jupyter's own (tools/build/jupyter_markdown.py; ``stem``, the page's name, points
    its links at the site; ``book_run`` gives the glued numbers, by default the recorded run), no
    outputs, no execution counts.

    Cell ids are numbered (nbformat would draw random ones), so the output is reproducible.
    """
    import jupytext

    nb = jupytext.reads(text, fmt="md:myst")
    page = Page(language, stem, BookRun.read() if book_run is None else book_run)
    to_jupyter(nb, page)
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return jupytext.writes(nb, fmt="ipynb")
