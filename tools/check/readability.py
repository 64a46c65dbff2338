"""How much a chapter asks of its reader (``make readability``; issue 43's measure).

Counted as a reader meets the rendered page: only what the page shows unfolded. Solutions,
dropdowns (``:class: dropdown``: "Deep dive", optional asides) and code cells the page folds
(``hide-input``, ``remove-input``, ``remove-cell``) are off the reading path. Per chapter:

- **words**: prose on the reading path (a Chinese page: CJK characters / 1.7 + other words,
  about the same reading effort as an English word; a glued number or a formula is one word);
- **code**: visible code lines (not blank), in code cells and in fenced examples in the prose;
- **verify**: the share of visible code-cell lines that only check: ``verdict_*`` and
  ``probe_*`` functions, ``with claim(...)`` and ``with check_exercise(...)`` blocks,
  ``assert`` statements, ``glue(...)`` and ``remeasure(...)`` calls (found with Python's
  parser, not by text);
- **ids**: claim IDs (C05, C113) in the prose;
- **minutes**: a reading-time estimate, 200 words and 20 code lines a minute; each chapter's
  header states it ("*Reading time about N min.", "*阅读约 N 分钟。"), rounded to 5 minutes
  (:func:`stated_minutes`, :func:`reading_time_problem`).

It exits 1 when a chapter is over a budget (``BUDGETS``: book/README.md and issue 43).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext

from tools.build.chapter_format import BOOK, CJK_RE, CLAIM_ID_RE, SOLUTION_RE, ZH, chapters
from tools.build.jupyter_markdown import DIRECTIVE_RE, FENCED_CODE_RE
from tools.build.questions import parse as parse_question

BUDGETS = {"words": 5000, "verify": 0.12, "ids": 3}
FOLDED_TAGS = {"hide-input", "remove-input", "remove-cell"}
VERIFY_FUNCTIONS = ("verdict_", "probe_")
VERIFY_BLOCKS = {"claim", "check_exercise"}
VERIFY_CALLS = {"glue", "remeasure"}
CJK_PER_WORD = 1.7
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 200, 20
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.'’\-]*")
ROLE_RE = re.compile(r"\{[a-z][\w:-]*\}`[^`]*`")
LINK_TARGET_RE = re.compile(r"\]\([^)\s]*\)")  # a link's address is not read: its text is
MATH_RE = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
STATED_MINUTES_RE = re.compile(r"^\*(?:Reading time about (\d+) min\.|阅读约 (\d+) 分钟。)", re.M)
MINUTES_SLACK = 5  # the header rounds to 5 minutes; an estimate off by more is stale


@dataclass(frozen=True)
class Reading:
    chapter: str
    words: int
    code: int
    verify_lines: int
    code_cell_lines: int
    ids: int

    @property
    def verify(self) -> float:
        return self.verify_lines / self.code_cell_lines if self.code_cell_lines else 0.0

    @property
    def minutes(self) -> int:
        return round(self.words / WORDS_PER_MINUTE + self.code / CODE_LINES_PER_MINUTE)

    def over(self) -> list[str]:
        """The budgets this chapter is over, in words."""
        found = []
        if self.words > BUDGETS["words"]:
            found.append(f"{self.words} words > {BUDGETS['words']}")
        if self.verify > BUDGETS["verify"]:
            found.append(f"{self.verify:.0%} of visible code only verifies > "
                         f"{BUDGETS['verify']:.0%}")
        if self.ids > BUDGETS["ids"]:
            found.append(f"{self.ids} claim IDs in prose > {BUDGETS['ids']}")
        return found


def off_the_path(text: str) -> str:
    """The chapter text without what the page folds: solutions, dropdown directives and the
    explanations of "Check yourself" questions (shown once the reader answers)."""
    text = SOLUTION_RE.sub("", text)
    return DIRECTIVE_RE.sub(_on_the_path, text)


def _on_the_path(match: re.Match) -> str:
    if "dropdown" in match["options"]:
        return ""
    if match["name"] == "quiz":
        q = parse_question(match["arg"], match["options"], match["body"])
        return q.prompt + "\n\n" + "\n".join(q.options) + "\n"
    return match[0]


def prose_words(markdown: str) -> int:
    """Words a reader reads in markdown (fenced code, comments and targets left out)."""
    text = FENCED_CODE_RE.sub("", markdown)
    text = re.sub(r"(?m)^%.*$|^\(\S+\)=\s*$|^:{3,}.*$|^:[\w-]+:.*$", "", text)
    text = LINK_TARGET_RE.sub("]", ROLE_RE.sub(" N ", MATH_RE.sub(" x ", text)))
    cjk = len(CJK_RE.findall(text))
    return round(cjk / CJK_PER_WORD) + len(WORD_RE.findall(CJK_RE.sub(" ", text)))


def fenced_lines(markdown: str) -> int:
    return sum(len([line for line in m[0].splitlines()[1:-1] if line.strip()])
               for m in FENCED_CODE_RE.finditer(markdown))


def verify_lines(source: str) -> set[int]:
    """Line numbers (1-based) of a code cell that only verify (see the module docstring)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: the lines that parse are not checked
        return set()
    lines: set[int] = set()

    def span(node: ast.AST) -> range:
        return range(node.lineno, node.end_lineno + 1)

    def called(node: ast.AST) -> str | None:
        if isinstance(node, ast.Call):
            func = node.func
            return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith(VERIFY_FUNCTIONS):
            lines.update(span(node))
        elif isinstance(node, ast.With) and any(called(item.context_expr) in VERIFY_BLOCKS
                                                for item in node.items):
            lines.update(span(node))
        elif isinstance(node, ast.Assert):
            lines.update(span(node))
        elif isinstance(node, (ast.Expr, ast.Assign)) and called(node.value) in VERIFY_CALLS:
            lines.update(span(node))
    blank = {i for i, line in enumerate(source.splitlines(), 1) if not line.strip()}
    return lines - blank


def measure(page: Path) -> Reading:
    text = off_the_path(page.read_text(encoding="utf-8"))
    words = code = verify = cell_lines = ids = 0
    for cell in jupytext.reads(text, fmt="md:myst").cells:
        if cell.cell_type == "markdown":
            words += prose_words(cell.source)
            code += fenced_lines(cell.source)
            ids += len(CLAIM_ID_RE.findall(FENCED_CODE_RE.sub("", cell.source)))
        elif cell.cell_type == "code" and not FOLDED_TAGS & set(cell.metadata.get("tags", [])):
            visible = [line for line in cell.source.splitlines() if line.strip()]
            code += len(visible)
            cell_lines += len(visible)
            verify += len(verify_lines(cell.source))
    name = f"{ZH}/{page.stem}" if page.parent.name == ZH else page.stem
    return Reading(name, words, code, verify, cell_lines, ids)


def stated_minutes(text: str) -> int | None:
    """The reading time a chapter's header states, or None."""
    match = STATED_MINUTES_RE.search(text)
    return int(match[1] or match[2]) if match else None


def reading_time_problem(page: Path, reading: Reading) -> str | None:
    """What is wrong with the header's reading time (missing, or off the estimate by more than
    ``MINUTES_SLACK``), or None."""
    stated = stated_minutes(page.read_text(encoding="utf-8"))
    if stated is None:
        return f"{reading.chapter}: no reading time in the header ('*Reading time about N min.')"
    if abs(stated - reading.minutes) > MINUTES_SLACK:
        return (f"{reading.chapter}: the header says about {stated} min to read, the page "
                f"measures {reading.minutes}: update the header")
    return None


def table(readings: list[Reading]) -> str:
    rows = ["| chapter | words | visible code lines | only verify | claim IDs | minutes |",
            "|---|---:|---:|---:|---:|---:|"]
    rows += [f"| {r.chapter} | {r.words:,} | {r.code:,} | {r.verify:.0%} | {r.ids} | "
             f"{r.minutes} |" for r in readings]
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path,
                        help="chapters (default: every chapter of both editions)")
    args = parser.parse_args()
    pages = args.pages or chapters(BOOK) + chapters(BOOK / ZH)
    readings = [measure(page) for page in pages]
    print(table(readings))
    over = [(r.chapter, r.over()) for r in readings if r.over()]
    stale = [p for page, r in zip(pages, readings, strict=True)
             if (p := reading_time_problem(page, r))]
    for problem in stale:
        print(f"header: {problem}")
    for chapter, reasons in over:
        print(f"over budget: {chapter}: " + "; ".join(reasons))
    print(f"budgets: {BUDGETS['words']:,} words, {BUDGETS['verify']:.0%} of visible code "
          f"only verifying, {BUDGETS['ids']} claim IDs in prose: {len(over)} of "
          f"{len(readings)} pages over")
    return 1 if over or stale else 0


if __name__ == "__main__":
    sys.exit(main())
