"""tools/teach/chapter_run.py: one kernel runs the book's notebook and the student edition's
exercises (the small chapter of tests/tools/mini_chapter.py, a kernel per run)."""

import nbformat
import pytest

from tests.tools.mini_chapter import MINI
from tools.build.chapter_format import ipynb_from_myst, student_text
from tools.teach.chapter_run import run_chapter, shared_lesson

WRONG = {"ex99-1": ["width = 8"], "ex99-2": ["def double(x):\n    return x"],
         "ex99-3": ['answer = "driver"']}


def editions(text: str = MINI):
    return (nbformat.reads(ipynb_from_myst(text), as_version=4),
            nbformat.reads(ipynb_from_myst(student_text(text)), as_version=4))


def written(tmp_path, text: str = MINI):
    chapter = tmp_path / "99_small.md"
    chapter.write_text(text, encoding="utf-8")
    notebook = tmp_path / "99_small.ipynb"
    nbformat.write(editions(text)[0], notebook)
    return chapter, notebook


def test_the_editions_part_at_the_first_exercise():
    book, student = editions()
    at_book, at_student = shared_lesson(book, student)
    assert book.cells[at_book].source.startswith("# @title Solution to ex99-1")
    assert "ex99-1: not attempted yet" in student.cells[at_student].source
    assert [c.source for c in book.cells[:at_book] if c.cell_type == "code"] == [
        c.source for c in student.cells[:at_student] if c.cell_type == "code"]


def test_a_lesson_cell_that_differs_is_refused():
    book, student = editions()
    lesson = next(c for c in student.cells if c.cell_type == "code")
    lesson.source += "\nx = 1"
    with pytest.raises(ValueError, match="not a stub"):
        shared_lesson(book, student)
    with pytest.raises(ValueError, match="no exercise"):
        shared_lesson(book, editions(MINI.split(":::{exercise}")[0])[0])


def test_one_kernel_runs_the_book_and_grades_the_student_edition(tmp_path):
    run = run_chapter(*written(tmp_path), WRONG, timeout=60)
    assert not run.book_error
    outputs = ["".join(o.get("text", "") for o in c.outputs) for c in run.notebook.cells
               if c.cell_type == "code"]
    # the book's checks ran after the student's tries, on the book's own solutions
    assert [o for o in outputs if "Exercise" in o] == [
        f"Exercise ex99-{n}: passed\n" for n in (1, 2, 3)]
    counts = [c.execution_count for c in run.notebook.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), "numbered as a plain run numbers them"
    assert all("execution" in c.metadata for c in run.notebook.cells if c.cell_type == "code")
    assert run.report.results == {f"ex99-{n}": "not attempted" for n in (1, 2, 3)}
    kinds = {(a.label, a.kind): (a.status, a.verified) for a in run.attempts}
    assert kinds == {**{(f"ex99-{n}", "wrong 1"): ("failed", True) for n in (1, 2, 3)},
                     **{(f"ex99-{n}", "solution"): ("passed", True) for n in (1, 2, 3)}}
    assert len(run.notebook.cells) == len(editions()[0].cells), "only the book's cells are kept"
    assert run.book_seconds > 0 and run.student_seconds > 0


def test_a_book_cell_that_raises_ends_the_run_and_is_named(tmp_path):
    broken = MINI.replace("from helpers import check_exercise",
                          "from helpers import check_exercise\nmissing_name")
    run = run_chapter(*written(tmp_path, broken), WRONG, timeout=60)
    assert "NameError" in run.book_error and "missing_name" in run.book_error
    assert run.attempts == [] and run.report.results == {}


def test_a_cell_past_its_time_limit_ends_the_run_and_says_where(tmp_path):
    slow = MINI.replace("from helpers import check_exercise",
                        "from helpers import check_exercise\nimport time\ntime.sleep(30)")
    run = run_chapter(*written(tmp_path, slow), WRONG, timeout=3)
    assert run.book_error.startswith("in the book's lesson: CellTimeoutError"), run.book_error
    assert run.attempts == []
