"""The reading measure counts what a reader meets on the page (tools/check/readability.py)."""

import subprocess
import sys

import pytest

from tools.build.chapter_format import BOOK, ROOT, chapters
from tools.check import readability

CHAPTER = '''---
jupytext:
  text_representation:
    format_name: myst
---

# 99 · A chapter

One two three four five, C05 and C113 here.

```{code-cell} ipython3
:tags: [hide-input]

import os
x = 1
```

:::{admonition} Deep dive
:class: dropdown

Ten words that only a curious reader opens and reads here.
:::

```{code-cell} ipython3
y = 2 * x
print(y)


def verdict_c05(value: int) -> None:
    """Checks."""
    assert value == 2, value


glue("c05_y", y)
with claim("C05", "two"):
    verdict_c05(y)
```

The value is {glue:text}`c05_y:.0f` and $y = 2x$.

:::{exercise}
:label: ex99-1
Do it.
:::

:::{solution-start} ex99-1
:class: dropdown
:::
Many words of a solution that the page folds away from readers.

```{code-cell} ipython3
# @title Solution to ex99-1
answer = 1
```

:::{solution-end}
:::

```{code-cell} ipython3
with check_exercise("ex99-1"):
    assert answer == 1
```
'''


@pytest.fixture
def reading(tmp_path):
    page = tmp_path / "99_demo.md"
    page.write_text(CHAPTER, encoding="utf-8")
    return readability.measure(page)


def test_only_the_reading_path_counts(reading):
    # the title 3 ("99", "A", "chapter"), the prose 9, the glued sentence 6 (a glued number
    # and a formula are one word each), the exercise 2 (its label line is no prose); not the
    # dropdown, not the solution
    assert reading.words == 3 + 9 + 6 + 2
    assert reading.ids == 2


def test_folded_cells_and_solutions_are_not_visible_code(reading):
    visible = 8 + 2  # the second cell's non-blank lines, and the check cell
    assert reading.code == visible == reading.code_cell_lines


def test_verifying_lines_are_found_by_the_parser(reading):
    # verdict_c05 (3 lines), glue (1), with claim (2), with check_exercise (2)
    assert reading.verify_lines == 3 + 1 + 2 + 2
    assert readability.verify_lines("x = compute()\nprint(x)\n") == set()
    assert readability.verify_lines("%timeit f()\n") == set()  # magics: not parsed


def test_a_chinese_page_counts_characters_as_words():
    assert readability.prose_words("一二三四五六七八九十一二三四五六七 and torch") == 10 + 2


def test_a_link_counts_its_text_not_its_address():
    assert readability.prose_words("See [the canonical step](03_training.md#the-canonical-"
                                   "training-step) now.") == 5
    assert readability.prose_words("见[规范步骤](03_training.md#规范的训练步骤一步写全)") == \
        readability.prose_words("见[规范步骤]")


def test_budgets(reading):
    assert reading.over() == ["80% of visible code only verifies > 12%"]
    long = readability.Reading("x", 5001, 100, 13, 100, 4)
    assert len(long.over()) == 3
    assert readability.Reading("x", 5000, 100, 12, 100, 3).over() == []


def test_the_table_lists_every_chapter_of_both_editions():
    result = subprocess.run([sys.executable, "-m", "tools.check.readability"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    for page in chapters(BOOK):
        assert f"| {page.stem} |" in result.stdout and f"| zh/{page.stem} |" in result.stdout
    assert result.returncode == (1 if "over budget:" in result.stdout else 0)


def test_the_stated_reading_time_is_read_and_checked_against_the_measure(tmp_path):
    assert readability.stated_minutes("*Reading time about 45 min. Runs in about 9 s.*") == 45
    assert readability.stated_minutes("*阅读约 50 分钟。在双核 CPU 上运行约 15 秒。*") == 50
    assert readability.stated_minutes("*Runs in about 9 s on a 2-core CPU.*") is None
    page = tmp_path / "99_demo.md"
    measured = readability.Reading("99_demo", 2000, 100, 0, 100, 0)  # 10 + 5 = 15 minutes
    for stated, problem in [(15, None), (20, None), (10, None), (25, "update the header"),
                            (5, "update the header"), (None, "no reading time")]:
        page.write_text("# 99\n\n" + (f"*Reading time about {stated} min. Runs in about 5 s.*\n"
                                      if stated else "*Runs in about 5 s.*\n"), encoding="utf-8")
        found = readability.reading_time_problem(page, measured)
        assert (found is None) if problem is None else (problem in found), (stated, found)


# The pages that issue 43's reading pass has not yet brought within the budgets. Each must
# still be over one (a page that meets them all leaves the set: the set cannot go stale);
# every other page must meet them all and state its reading time.
NOT_YET = set()
PAGES = chapters(BOOK) + chapters(BOOK / "zh")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: readability.measure(p).chapter)
def test_every_chapter_meets_the_reading_budgets_and_states_its_reading_time(page):
    reading = readability.measure(page)
    problems = reading.over() + [p for p in [readability.reading_time_problem(page, reading)]
                                 if p]
    if reading.chapter in NOT_YET:
        assert problems, f"{reading.chapter} meets every budget now: take it off NOT_YET"
    else:
        assert not problems, "; ".join(problems)
