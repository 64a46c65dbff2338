"""A folded code cell's label is its ``# @title`` line, in the page's language.

A cell the page folds (``hide-input``: a claim's "How this is checked" cell, an exercise's
"Check your answer" cell, a figure's plotting code) starts with one line naming what is folded::

    # @title How this is checked

That line serves every rendering from one place (book/README.md, "Two renderings"): JupyterLab
shows a folded cell's first line, Colab shows it as the title of a cell in form view, and on the
site this extension makes it the fold's label (instead of myst-nb's "Show code cell source"),
translated on the Chinese site (``TITLES_ZH``; the Chinese page's code cells are copies of the
English ones), and takes the line out of the code shown when the fold is opened. A cell
without the line keeps myst-nb's label (the setup cell).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

TITLE_RE = re.compile(r"\A# @title (?P<title>[^\n]+)\n?")
TITLES_ZH = {
    "How this is checked": "如何验证",
    "The code that draws the figure": "绘图代码",
    "Check your answer": "检查你的答案",
}


def split_title(source: str) -> tuple[str | None, str]:
    """The ``# @title`` of a cell's source (None without one) and the source without it."""
    match = TITLE_RE.match(source)
    if match is None:
        return None, source
    return match["title"].strip(), source[match.end():].lstrip("\n")


def label(title: str, language: str | None) -> str:
    """The fold's label on a page in ``language`` (a Chinese page: ``TITLES_ZH``)."""
    if (language or "").startswith("zh"):
        return TITLES_ZH.get(title, title)
    return title


def title_folded_cells(app: Sphinx, doctree: nodes.document) -> None:
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code" or not cell.get("hide_mode"):
            continue
        for block in cell.findall(nodes.literal_block):
            title, rest = split_title(block.astext())
            if title is None:
                break
            block.children = [nodes.Text(rest)]
            block.rawsource = rest
            cell["prompt_show"] = cell["prompt_hide"] = label(title, app.config.language)
            break


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", title_folded_cells)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
