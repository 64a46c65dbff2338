"""Numbers typed into a chapter's prose that its run computed
(tests/tools/check/test_prose_numbers.py).

A measured value copied into prose goes stale on a GPU, another BLAS or another torch, and
nothing ties it to the run: such a number is glued instead (``helpers.glue`` and
``{glue:text}`name:.3f```; book/README.md). This finds the candidates: every number in a
markdown cell's text (code spans, maths, roles, links and directives left out) that is written
with a decimal point, or as a percentage or a ratio (``94 %``, ``0.58x``), and that also
appears among the numbers the chapter's executed outputs print. A number that the code itself
writes as a literal (a learning rate of ``0.1``, a bound of ``1e-6``) is an input, true by
construction, and is not reported; so is one that the chapter lists in a MyST comment line
(not rendered), with the reason::

    % by construction: 0.95 0.85 (OneCycleLR's default momentum range)
"""

from __future__ import annotations

import re

import nbformat

from tools.build.chapter_format import markdown_cells

# A decimal number, a number followed by % / x / ×, not part of a word, a version or a path
NUMBER_RE = re.compile(r"(?<![\w.])(\d+\.\d+|\d+(?=\s?(?:%|％|x\b|×)))(?![\w.]*\d)")
# a version such as 2.14.1 in the output is not a measured 2.14
OUTPUT_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\.?\d|\w)")
CODE_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?")
# What a reader does not see as prose: fenced blocks, code spans, maths, roles, link targets,
# directive option lines, HTML comments, glue roles
HIDDEN_RE = re.compile(
    r"^(`{3,}|:{3,}).*?^\1|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]+\$|\]\([^)\n]*\)|^:[\w-]+:.*$"
    r"|<!--.*?-->|^%.*$", re.S | re.M)
# What is not a measured value although it is written like one: a section of the source
# articles ("§2.3", "§3.2–3.4", "第 2.4 节") and a release ("torch 2.9 and 2.10", "Python 3.8",
# "1.9 版"). A run that prints a loss of 2.30 must not make "§2.3" a copied number.
_DOTTED = r"\d+(?:\.\d+)+"
_MORE = rf"(?:\s?(?:[–-]|,|and|or|to|和|或|到|至)\s?{_DOTTED})*"
NOT_MEASURED_RE = re.compile(
    rf"§\s?{_DOTTED}{_MORE}"
    rf"|\b(?:torch|PyTorch|Python|CUDA|cuDNN|NumPy|torchvision|torchao|ONNX|onnx|opset|Triton"
    rf"|[Vv]ersions?)\s+{_DOTTED}{_MORE}"
    rf"|第\s?{_DOTTED}{_MORE}\s?节|{_DOTTED}\s?版")
BY_CONSTRUCTION_RE = re.compile(r"^% by construction: (.*)$", re.M)


def prose_numbers(markdown: str) -> list[str]:
    """The numbers of a markdown cell that a reader sees as measured values, in order."""
    return NUMBER_RE.findall(NOT_MEASURED_RE.sub(" ", HIDDEN_RE.sub(" ", markdown)))


def output_numbers(notebook: nbformat.NotebookNode) -> set[str]:
    """Every number printed in the executed notebook's text outputs (stream and text/plain)."""
    found: set[str] = set()
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = output.get("text", "") or output.get("data", {}).get("text/plain", "")
            found.update(OUTPUT_NUMBER_RE.findall(text if isinstance(text, str)
                                                  else "".join(text)))
    return found


def code_numbers(notebook: nbformat.NotebookNode) -> set[str]:
    """The numeric literals of the notebook's code cells: inputs, true by construction."""
    return {n for cell in notebook.cells if cell.cell_type == "code"
            for n in CODE_NUMBER_RE.findall(cell.source)}


def _canonical(number: str) -> str:
    return number.rstrip("0").rstrip(".") if "." in number else number


def copied_numbers(chapter_text: str, executed: nbformat.NotebookNode) -> list[str]:
    """Prose numbers of ``chapter_text`` (either edition) that the executed run printed."""
    printed = {_canonical(n) for n in output_numbers(executed)}
    inputs = {_canonical(n) for n in code_numbers(executed)}
    inputs |= {_canonical(n) for line in BY_CONSTRUCTION_RE.findall(chapter_text)
               for n in CODE_NUMBER_RE.findall(line)}
    return [n for cell in markdown_cells(chapter_text) for n in prose_numbers(cell)
            if _canonical(n) in printed and _canonical(n) not in inputs]
