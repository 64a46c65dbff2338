"""No number that a chapter's run computed is typed into its prose, in either edition
(tools/check/prose_numbers.py): it is glued (helpers.glue, {glue:text}) or said qualitatively.

Reads the notebooks `make nbmake` executed (.executed/); `make html-test` runs it after that
(BOOK_REQUIRE_HTML=1 makes a missing run an error instead of a skip).
"""

import os

import nbformat
import pytest

from tools.build.chapter_format import BOOK, ROOT, ZH, chapters
from tools.check.prose_numbers import copied_numbers, prose_numbers

EXECUTED = ROOT / ".executed"


def executed(stem: str):
    path = EXECUTED / f"{stem}.ipynb"
    if not path.exists():
        if os.environ.get("BOOK_REQUIRE_HTML"):
            pytest.fail(f"{path} is missing: run make nbmake first")
        pytest.skip(f"{path.name} not executed here (make nbmake writes .executed/)")
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("edition", ["en", "zh"])
@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_prose_quotes_no_number_the_run_printed(chapter, edition):
    source = chapter if edition == "en" else BOOK / ZH / chapter.name
    if not source.exists():
        pytest.skip(f"no {edition} edition of {chapter.stem}")
    copied = copied_numbers(source.read_text(encoding="utf-8"), executed(chapter.stem))
    assert not copied, (
        f"{source.relative_to(ROOT)} types numbers its run printed: {copied}. Glue them "
        "(helpers.glue + {glue:text}`name:.3f`), say it qualitatively, or, for a value true "
        "by construction, list it in a '% by construction: ... (why)' comment line")


def executed_notebook(printed: str, code: str = "x = 1"):
    cell = nbformat.v4.new_code_cell(code)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [cell]
    return notebook


CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
---

# A chapter

The loss only drifts (2.328 -> 2.300), 94.85 % of the time, at 0.58x the speed.
"""


def test_a_measured_number_in_prose_is_found_and_a_glued_one_is_not():
    run = executed_notebook("loss 2.3280 -> 2.300, accuracy 94.85%, ratio 0.58\\n")
    assert copied_numbers(CHAPTER, run) == ["2.328", "2.300", "94.85", "0.58"]
    glued = CHAPTER.replace("2.328", "{glue:text}`first:.3f`")
    assert copied_numbers(glued, run) == ["2.300", "94.85", "0.58"]


def test_inputs_and_numbers_by_construction_are_not_reported():
    run = executed_notebook("lr 0.100, momentum 0.850 .. 0.950, ratio 0.58",
                            code="opt = SGD(lr=0.1)")
    text = ("With lr 0.1 the momentum moves between 0.95 and 0.85, at 0.58x.\n\n"
            "% by construction: 0.95 0.85 (OneCycleLR's defaults)\n")
    assert copied_numbers(CHAPTER.split("# A")[0] + text, run) == ["0.58"]


def test_a_version_the_run_printed_is_not_a_measured_number():
    run = executed_notebook("torch 2.14.1, python 3.11.7; loss 2.328.\n")
    text = CHAPTER.split("# A")[0] + "Checked on torch 2.9–2.14; the loss was 2.328.\n"
    assert copied_numbers(text, run) == ["2.328"]


def test_code_maths_links_and_versions_are_not_prose():
    cell = ("`0.601` in code, $0.601$ in maths, [a link](x/0.601.html), torch 2.14.1, "
            "a1.5 word, {glue:text}`v:.2f`, and 3.5 here\n```python\ny = 0.601\n```\n")
    assert prose_numbers(cell) == ["3.5"]


def test_sections_and_releases_are_not_measured_numbers():
    cell = ("Seed A §2.3 and §3.2–3.4; since PyTorch 1.9, on torch 2.9 and 2.10, Python 3.8, "
            "从 torch 2.13 起, 第 2.4 节, 第 4.1–4.2 节, 从 1.9 版开始; "
            "the loss fell to 2.3 and 94 % held.")
    assert prose_numbers(cell) == ["2.3", "94"]
    run = executed_notebook("loss 2.30, 3.40, 1.90, 2.13\n")
    text = CHAPTER.split("# A")[0] + cell + "\n"
    assert copied_numbers(text, run) == ["2.3"]
