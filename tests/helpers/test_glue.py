"""helpers.glue: measured numbers into the prose through myst-nb (tools/check/prose_numbers.py)."""

import ast
import math

import pytest
import torch

from helpers import glue
from tools.build.chapter_format import BOOK, ZH, chapters, code_cells


def test_returns_the_value_it_glued():
    assert glue("c13_loss", 2.5) == 2.5
    assert glue("c13_steps", 30) == 30 and isinstance(glue("c13_steps", 30), int)
    assert glue("c13_order", "zero_grad first") == "zero_grad first"


@pytest.mark.parametrize("name", ["C13", "has space", "", "x" * 65, 3])
def test_a_bad_name_is_refused(name):
    with pytest.raises(ValueError, match="glue name"):
        glue(name, 1.0)


@pytest.mark.parametrize("value", [torch.tensor(1.0), [1.0], None, True])
def test_a_value_that_prose_cannot_format_is_refused(value):
    with pytest.raises(TypeError, match="number or a string"):
        glue("x", value)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_number_is_refused(value):
    with pytest.raises(ValueError, match="cannot be shown"):
        glue("x", value)


def cells_ending_in_a_bare_glue(text: str) -> list[str]:
    """Code cells whose last statement is ``glue(...)`` alone: the notebook then shows the
    returned value as the cell's output (a stray number on the page). Write ``_ = glue(...)``."""
    found = []
    for cell in code_cells(text):
        source = "\n".join(line for line in cell.splitlines()[1:-1] if not line.startswith(":"))
        try:
            last = ast.parse(source).body[-1:]
        except SyntaxError:  # IPython syntax (%pip): not such a cell
            continue
        if last and isinstance(last[0], ast.Expr) and isinstance(last[0].value, ast.Call) \
                and getattr(last[0].value.func, "id", None) == "glue":
            found.append(ast.get_source_segment(source, last[0]))
    return found


def test_no_chapter_shows_a_glued_value_as_an_output():
    pages = chapters() + [BOOK / ZH / c.name for c in chapters() if (BOOK / ZH / c.name).exists()]
    bare = {p.name if p.parent == BOOK else f"zh/{p.name}": found for p in pages
            if (found := cells_ending_in_a_bare_glue(p.read_text(encoding="utf-8")))}
    assert not bare, f"cells ending in a bare glue(...) show its value: {bare}"


def test_a_bare_glue_at_the_end_of_a_cell_is_found():
    text = ("```{code-cell} ipython3\nx = 1\nglue('a', x)\n```\n\n"
            "```{code-cell} ipython3\n_ = glue('b', 2)\n```\n\n"
            "```{code-cell} ipython3\n%pip install x\n```\n")
    assert cells_ending_in_a_bare_glue(text) == ["glue('a', x)"]
