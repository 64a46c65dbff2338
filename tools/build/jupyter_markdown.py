"""MyST -> Jupyter's own markdown, for the notebooks a learner opens (``make sync``, ``make
student``, ``make lab``, the Colab button): one source (``book/``, MyST), two renderings.

JupyterLab, Notebook 7, VS Code and Colab render CommonMark with maths and a little HTML, not
MyST. :func:`to_jupyter` rewrites a notebook that jupytext read from a chapter so that nothing
MyST is left in its markdown cells (book/README.md, "Two renderings"):

- a glued number (``{glue:text}`name:.3f```) becomes the number from the book's tested run
  (``notebooks/book-run.json``, written by ``make record-run``), marked † and explained once at
  the top: the learner's own run prints its own numbers in the cells;
- an exercise becomes a bold "Exercise exNN-k." paragraph; a solution keeps its cells but is
  folded: its code cells are collapsed (``jupyter.source_hidden`` for JupyterLab and Notebook
  7; VS Code ignores it; ``cellView: form`` for Colab, whose form view shows the cell's first line,
  ``# @title Solution to exNN-k``, as its title) and its prose sits in a ``<details>``
  block, under a line that says it is the solution; Run All still runs it;
- a code cell the site shows folded (tag ``hide-input``: a figure's plotting code, a claim's
  "How this is checked" cell) is folded the same way, its output shown; it must start with a
  ``# @title`` line (the fold's label on the site, its first line in JupyterLab, its title on
  Colab); not the setup cell, which a notebook shows (the learner sees what is installed and
  imported);
- an admonition becomes a ``<details>`` block (``:class: dropdown``) or a block quote;
- a link to a chapter or a section (``07_memory.md#anchor``, ``#anchor``) becomes a link to that
  page and section of the published site, whose address is written once, in ``_config.yml``
  (``html.baseurl``);
- MyST comments (``% ...``) and targets (``(name)=``) are dropped; maths stays.

A construct it does not know raises ``ValueError`` (a new one must get a rule here, not leak
into a learner's notebook). ``tests/tools/build/test_jupyter_markdown.py`` checks every notebook the
commands write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from helpers.exercises import LABEL_PATTERN
from tools.build.book_run import BookRun
from tools.build.questions import Question
from tools.build.questions import parse as parse_question

ROOT = Path(__file__).resolve().parents[2]
MARK = "†"  # after a number from the book's run
# The first line of each code cell of a solution: a folded cell shows its first line in
# JupyterLab (so not the answer's), and Colab's form view shows it as the cell's title.
SOLUTION_TITLE = "# @title Solution to {label}"
CHECK_TITLE = "# @title How this is checked"  # a claim's folded check (book/_ext/fold_titles.py)

# A MyST block construct left in Jupyter markdown (a role is found as _inline reads it)
RAW_BLOCK_RE = re.compile(r"^(:{3,}|`{3,})\{|^:[\w-]+:( |$)|^%( |$)|^\(\S+\)=\s*$", re.M)
# A colon-fenced directive: :::{name} argument, then :option: lines, the body, the closing fence
DIRECTIVE_RE = re.compile(r"^(?P<fence>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<arg>[^\n]*)\n"
                          r"(?P<options>(?::[\w-]+:[^\n]*\n)*)(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
                          re.M | re.S)
SOLUTION_START_RE = re.compile(rf"^:::\{{solution-start\}} (?P<label>{LABEL_PATTERN})\n"
                               r"(?::[\w-]+:[^\n]*\n)*:::[ \t]*(?:\n|\Z)", re.M)
SOLUTION_END_RE = re.compile(r"^:::\{solution-end\}\n:::[ \t]*(?:\n|\Z)", re.M)
FENCED_CODE_RE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^{\n]*\n.*?^(?P=fence)[ \t]*$", re.M | re.S)
CODE_SPAN_RE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
ROLE_NAME_RE = re.compile(r"\{(?P<name>[a-z][\w:-]*)\}$")
LINK_RE = re.compile(r"\]\((?P<page>[\w-]+\.md)?(?:#(?P<anchor>[^)\s]+))?\)")

WORDS = {
    "en": {
        "exercise": "Exercise",
        "solution": ("**Solution to {label}**: try the exercise first. JupyterLab, Notebook 7 "
                     "and Colab keep the solution's code folded until you click it; Run All "
                     "runs it either way."),
        "reasoning": "The reasoning behind the solution to {label}",
        "note": "Note",
        "question": "Check yourself",
        "answer": "The answer",
        "key": "Option {n}.",
        "about": ("> **This notebook** is chapter {stem} of the executable PyTorch book; the "
                  "site shows it with every output and figure: <{page_url}>."),
        "numbers": (" Numbers marked {mark} in the text are from the book's tested run "
                    "({run}); when you run the cells they print your own, which may differ a "
                    "little."),
    },
    "zh": {
        "exercise": "练习",
        "solution": ("**{label} 的参考答案**：先自己做练习。在 JupyterLab、Notebook 7 和 Colab "
                     "中，参考答案的代码一直折叠着，点一下才会展开；Run All 照样会运行它。"),
        "reasoning": "{label} 参考答案的思路",
        "note": "注",
        "question": "自测",
        "answer": "查看答案",
        "key": "第 {n} 项。",
        "about": ("> **本 notebook** 是可执行 PyTorch 书的第 {stem} 章；网站上的版本带有全部输出和"
                  "图：<{page_url}>。"),
        "numbers": ("正文中标有 {mark} 的数字来自本书经过测试的那次运行（{run}）；"
                    "你运行这些单元格时，打印出的是你自己的结果，可能略有不同。"),
    },
}


class MystLeft(ValueError):
    """Chapter text uses a MyST construct this module has no Jupyter rendering for."""


@cache
def site_url(config_path: Path = ROOT / "_config.yml") -> str:
    """The published site's address (``html.baseurl`` in _config.yml), ending in ``/``."""
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    url = (config.get("html") or {}).get("baseurl", "")
    if not url.startswith("https://"):
        raise ValueError(f"_config.yml html.baseurl must be an https URL, got {url!r}")
    return url.rstrip("/") + "/"


@dataclass(frozen=True)
class Page:
    """Where a notebook's links point: its language and its page name (``03_training``)."""

    language: str = "en"
    stem: str | None = None
    book_run: BookRun = field(default_factory=BookRun)

    def url(self, stem: str) -> str:
        return site_url() + ("zh/" if self.language == "zh" else "") + f"{stem}.html"


def exercise_text(label: str, body: str, language: str) -> str:
    """An exercise as plain markdown: a bold lead-in and its task (the student edition too)."""
    return f"**{WORDS[language]['exercise']} {label}.** {body.strip()}\n"


def question_text(q: Question, page: Page) -> str:
    """A "Check yourself" question as plain markdown: the question, its numbered options and
    the answer with its explanation in a ``<details>`` block (the site makes them buttons)."""
    words = WORDS[page.language]
    options = "\n".join(f"{n}. {_inline(o, page)}" for n, o in enumerate(q.options, 1))
    return (f"**{words['question']} ({q.label}).** {_inline(q.prompt, page)}\n\n{options}\n\n"
            f"<details>\n<summary>{words['answer']}</summary>\n\n"
            f"**{words['key'].format(n=q.answer)}** {_text(q.explanation, page)}\n\n</details>\n")


def _directive(match: re.Match, page: Page) -> str:
    name, arg, body = match["name"], match["arg"].strip(), match["body"].strip()
    options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", match["options"], re.M))
    inner = _text(body, page)
    if name == "exercise":
        return exercise_text(options["label"], inner, page.language)
    if name == "quiz":
        return question_text(parse_question(match["arg"], match["options"], match["body"]), page)
    if name in ("admonition", "note", "tip", "important", "warning", "caution", "hint"):
        title = _inline(arg, page) if arg else WORDS[page.language]["note"]
        if "dropdown" in options.get("class", ""):
            return f"<details>\n<summary>{title}</summary>\n\n{inner}\n\n</details>\n"
        quoted = "\n".join(f"> {line}".rstrip() for line in inner.splitlines())
        return f"> **{title}**\n>\n{quoted}\n"
    raise MystLeft(f"no Jupyter rendering for the MyST directive {{{name}}}: add one to "
                   "tools/build/jupyter_markdown.py")


def _role(name: str, content: str, page: Page) -> str:
    if name in ("glue:text", "glue"):
        key, _, fmt = content.rpartition(":") if ":" in content else (content, "", "")
        try:
            return f"{page.book_run.text(key, fmt)}{MARK}"
        except KeyError as err:
            raise MystLeft(err.args[0]) from None
    if name == "math":
        return f"${content}$"
    raise MystLeft(f"no Jupyter rendering for the MyST role {{{name}}}: add one to "
                   "tools/build/jupyter_markdown.py")


def _link(match: re.Match, page: Page) -> str:
    stem = match["page"][:-3] if match["page"] else page.stem
    if stem is None or (match["page"] is None and match["anchor"] is None):
        return match[0]
    anchor = f"#{match['anchor']}" if match["anchor"] else ""
    return f"]({page.url(stem)}{anchor})"


def _inline(text: str, page: Page) -> str:
    """Roles and links of text outside fenced code: a role is ``{name}`` right before a code
    span (as MyST reads it); the code span's text is its content."""
    pieces, last = [], 0
    for span in CODE_SPAN_RE.finditer(text):
        before = text[last:span.start()]
        role = ROLE_NAME_RE.search(before)
        if role:
            pieces.append(LINK_RE.sub(lambda m: _link(m, page), before[:role.start()]))
            pieces.append(_role(role["name"], span[2], page))
        else:
            pieces += [LINK_RE.sub(lambda m: _link(m, page), before), span[0]]
        last = span.end()
    pieces.append(LINK_RE.sub(lambda m: _link(m, page), text[last:]))
    return "".join(pieces)


def _prose(text: str, page: Page) -> str:
    """Markdown outside fenced code: comments and targets dropped, roles and links rendered."""
    lines = [line for line in text.split("\n") if not re.match(r"^%( |$)|^\(\S+\)=\s*$", line)]
    return re.sub(r"\n{3,}", "\n\n", _inline("\n".join(lines), page))


def _text(text: str, page: Page) -> str:
    """Markdown text (no solution markers) in Jupyter's markdown; fenced code stays as it is."""
    text = DIRECTIVE_RE.sub(lambda m: _directive(m, page), text)
    pieces, last = [], 0
    for code in FENCED_CODE_RE.finditer(text):
        pieces += [_prose(text[last:code.start()], page), code[0]]
        last = code.end()
    pieces.append(_prose(text[last:], page))
    return "".join(pieces).strip("\n")


def fold(cell) -> None:
    """Collapse a code cell's source: JupyterLab / Notebook 7, and Colab."""
    cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    cell.metadata["cellView"] = "form"


def unfold(cell) -> None:
    """Undo :func:`fold`: the cell's metadata as the chapter's MyST source has it, which is
    what jupyter-cache hashes (tools/build/cache_executed.py caches executed notebooks so)."""
    cell.metadata.pop("cellView", None)
    hidden = cell.metadata.get("jupyter", {})
    hidden.pop("source_hidden", None)
    if "jupyter" in cell.metadata and not hidden:
        del cell.metadata["jupyter"]


def to_jupyter(nb, page: Page) -> None:
    """Rewrite ``nb`` (an nbformat notebook read from a chapter) in place for Jupyter."""
    import nbformat

    cells, solution = [], None
    first_code = next((c for c in nb.cells if c.cell_type == "code"), None)
    for cell in nb.cells:
        if cell is not first_code and "hide-input" in cell.metadata.get("tags", []):
            if not cell.source.startswith("# @title "):
                raise MystLeft(f"a folded (hide-input) code cell must start with a '# @title' "
                               f"line naming what it holds ('{CHECK_TITLE}'): JupyterLab "
                               f"shows a folded cell's first line, Colab its title, the site "
                               f"its fold label; found {cell.source[:60]!r}")
            fold(cell)  # as the site shows it: the output, the code one click away
        if cell.cell_type != "markdown":
            if solution is not None and cell.cell_type == "code":
                title = SOLUTION_TITLE.format(label=solution)
                if not cell.source.startswith(title + "\n"):
                    raise MystLeft(f"a code cell of the solution to {solution} must start with "
                                   f"{title!r}: a folded cell shows its first line in "
                                   "JupyterLab, and Colab shows it as the cell's title")
                fold(cell)
            cells.append(cell)
            continue
        rest = cell.source
        while rest:
            marker = (SOLUTION_END_RE if solution else SOLUTION_START_RE).search(rest)
            piece, rest = (rest, "") if marker is None else (rest[:marker.start()],
                                                           rest[marker.end():])
            text = _text(piece, page)
            if text and solution:
                summary = WORDS[page.language]["reasoning"].format(label=solution)
                text = f"<details>\n<summary>{summary}</summary>\n\n{text}\n\n</details>"
            if text:
                cells.append(nbformat.v4.new_markdown_cell(text))
            if marker is not None and solution is None:
                solution = marker["label"]
                head = WORDS[page.language]["solution"].format(label=solution)
                cells.append(nbformat.v4.new_markdown_cell(head))
            elif marker is not None:
                solution = None
    if solution is not None:
        raise MystLeft(f"the solution of {solution} has no solution-end")
    glued = any(MARK in c.source for c in cells if c.cell_type == "markdown")
    if page.stem and cells:
        words = WORDS[page.language]
        about = words["about"].format(stem=page.stem[:2], page_url=page.url(page.stem))
        if glued:
            about += words["numbers"].format(mark=MARK, run=page.book_run.run)
        first = 1 if cells[0].cell_type == "markdown" else 0
        cells.insert(first, nbformat.v4.new_markdown_cell(about))
    for cell in cells:
        if cell.cell_type == "markdown" and (left := myst_left(cell.source)):
            raise MystLeft(f"MyST left in a markdown cell: {left[0]!r} in {cell.source[:80]!r}")
    nb.cells = cells


def myst_left(markdown: str) -> list[str]:
    """The MyST roles and directives (fences, options, comments, targets) left in Jupyter
    markdown text: what no notebook a learner opens may contain."""
    markdown = FENCED_CODE_RE.sub("", markdown)  # code shown as code is not MyST
    found = [m[0] for m in RAW_BLOCK_RE.finditer(markdown)]
    last = 0
    for span in CODE_SPAN_RE.finditer(markdown):
        role = ROLE_NAME_RE.search(markdown[last:span.start()])
        if role:
            found.append(role[0] + span[0])
        last = span.end()
    return found
