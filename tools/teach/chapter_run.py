"""Each chapter executed once for both editions (``make nbmake``, issue 46).

The student edition's lesson is the book's, cell for cell; only the exercises differ (a stub
where the book has a solution). So one kernel runs, in this order:

1. the book's code cells up to its first exercise: the lesson, whose outputs the site shows
   (:func:`shared_lesson` finds where the two editions part, and refuses a chapter where a
   lesson cell differs);
2. with the notebook's names and random generators saved, the student edition's cells from
   there on, graded as ``make grade`` grades them (tools/teach/grade.py ``grade_cells``), with
   wrong answers and then the solution tried right after each check
   (tools/teach/student_edition.py ``answer_tries``);
3. the saved state put back, then the book's cells from its first exercise on (solutions,
   checks, summary), whose outputs the site shows.

Step 2 cannot see the book's solutions (it runs before them), so it proves what a learner's
run proves: the chapter runs with stubs, every check says "not attempted" to a stub, rejects
each wrong answer and accepts the solution. Step 3 starts from the saved names and random
states; an object the student's cells changed in place would stay changed (no chapter's
exercise changes one: when this run replaced nbmake's, every book cell's text output matched a
plain nbmake run's, timings aside).

The book's cells run as nbmake runs them (nbclient, each cell's time recorded, the kernel in the
notebook's folder, a time limit per cell); a book cell that raises, unless tagged
``raises-exception``, ends the run, as does a cell past its time limit or a dead kernel. The
book's seconds (kernel start, lesson, book exercises) are kept apart from the student edition's.
"""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from tools.build.chapter_format import STUB_RE, ipynb_from_myst, solution_code, student_text
from tools.teach.grade import Report, Runner, Session, cell_error, exercise_log, grade_cells
from tools.teach.student_edition import Attempt, answer_tries, restore_state, save_state
from tools.teach.trusted_check import Bridge, book_checks

BOOK_STATE = "_h_book_state"  # where step 2 keeps the book's names (answer_tries uses its own)


@dataclass
class ChapterRun:
    """One chapter's run: the book's notebook executed, and the student edition's grading."""

    notebook: nbformat.NotebookNode  # the book's, with its outputs
    book_error: str = ""  # the book cell that raised ("" when none did)
    report: Report = field(default_factory=Report)  # the student edition's stubs' verdicts
    attempts: list[Attempt] = field(default_factory=list)
    book_seconds: float = 0.0  # kernel start, the lesson and the book's exercises
    student_seconds: float = 0.0


def shared_lesson(book, student) -> tuple[int, int]:
    """(index in ``book``, index in ``student``) of the first code cell where the two
    editions part: the cells before are the lesson, run once for both. Refuses two editions
    that part before the student's first stub (a lesson cell that differs)."""
    book_code = [i for i, c in enumerate(book.cells) if c.cell_type == "code"]
    student_code = [i for i, c in enumerate(student.cells) if c.cell_type == "code"]
    same = 0
    while (same < min(len(book_code), len(student_code))
           and book.cells[book_code[same]].source == student.cells[student_code[same]].source):
        same += 1
    if same == len(student_code):
        raise ValueError("the student edition has no exercise")
    first_stub = next((n for n, i in enumerate(student_code)
                       if STUB_RE.match(student.cells[i].source)), None)
    if first_stub is None or first_stub != same:
        where = student.cells[student_code[same]].source.splitlines()[:1]
        raise ValueError(f"the editions part at a code cell that is not a stub: {where}")
    return (book_code[same] if same < len(book_code) else len(book.cells)), student_code[same]


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run_book_cells(client: NotebookClient, cells, indices) -> str:
    """Execute the book's cells at ``indices``; the first error (unless the cell is tagged
    ``raises-exception``) as text, with its traceback, else ""."""
    for index in indices:
        cell = cells[index]
        if cell.cell_type != "code":
            continue
        client.execute_cell(cell, index)
        error = cell_error(cell)
        if error and "raises-exception" not in cell.metadata.get("tags", []):
            trace = next(o.get("traceback", []) for o in cell.outputs
                         if o.get("output_type") == "error")
            first = cell.source.splitlines()[:1]
            return (f"cell {index} ({first}) raised {error[0]}: {error[1]}\n"
                    + ANSI.sub("", "\n".join(trace)))
    return ""


def run_chapter(chapter: Path, notebook_path: Path, wrong_answers: dict[str, list[str]],
                timeout: int = 300) -> ChapterRun:
    """Execute ``notebook_path`` (the book's notebook of ``chapter``, outputs written back into
    it) and, in the same kernel, ``chapter``'s student edition's exercises with
    ``wrong_answers`` (label -> code cells that must fail its check) and the solutions."""
    text = chapter.read_text(encoding="utf-8")
    book = nbformat.read(notebook_path, as_version=4)
    for cell in book.cells:  # as nbmake: no stale outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    student = nbformat.reads(ipynb_from_myst(student_text(text)), as_version=4)
    book_end, student_start = shared_lesson(book, student)
    size = len(book.cells)
    together = nbformat.v4.new_notebook(metadata=book.metadata)
    together.cells = book.cells + student.cells[student_start:]  # the book's are the same objects
    run = ChapterRun(book)
    checks = book_checks(chapter)
    for check in checks.values():  # imported before any answer's code runs
        check.preload()
    start = time.perf_counter()
    with exercise_log() as log, tempfile.TemporaryDirectory(prefix="bridge-") as channel:
        client = NotebookClient(together, timeout=timeout, kernel_name="python3",
                                allow_errors=True, record_timing=True,
                                resources={"metadata": {"path": str(notebook_path.parent)}})
        phase = "the book's lesson"
        try:
            with client.setup_kernel():
                run.book_error = _run_book_cells(client, book.cells, range(book_end))
                if not run.book_error:
                    phase, student_start_s = "the student edition", time.perf_counter()
                    runner = Runner(client, log)
                    session = Session(runner, checks, notebook_path.parent,
                                      Bridge(runner.run_code, Path(channel)))
                    if error := runner.run_code(save_state(BOOK_STATE), size):
                        raise RuntimeError(f"saving the book's state failed: {error}")
                    grade_cells(together, session, run.report,
                                answer_tries(wrong_answers, solution_code(text), run.attempts),
                                start=size)
                    if error := runner.run_code(restore_state(BOOK_STATE), size):
                        raise RuntimeError(f"restoring the book's state failed: {error}")
                    run.student_seconds = time.perf_counter() - student_start_s
                    phase = "the book's exercises"
                    run.book_error = _run_book_cells(client, book.cells, range(book_end, size))
        except (CellTimeoutError, DeadKernelError) as err:  # the run ends; say where
            run.book_error = f"in {phase}: {type(err).__name__}: {str(err).splitlines()[0]}"
    run.book_seconds = time.perf_counter() - start - run.student_seconds
    return run

