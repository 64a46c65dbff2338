"""Every chapter runs top to bottom, once, for both editions (``make nbmake``; issue 46).

One kernel per chapter (tools/teach/chapter_run.py) runs the book's notebook, whose outputs
the site shows, and the student edition's exercises: after each exercise's check (which must
say "not attempted" to the stub), the wrong answers of ``tests/chapters/wrong_answers/chNN.py``
and then the chapter's solution are run in the same kernel, each followed by the check, and
each is graded as ``make grade`` grades it (tools/teach/grade.py ``Session.verdict_of``): a
wrong answer must fail with its hint, and the solution must pass the grader's own run of the
book's check on the answer taken across as data (issue 34), except for the exercises in
``SANDBOX_ONLY``.

``make nbmake`` sets ``BOOK_EXECUTED`` (the folder of the notebooks it executes in place: the
book renders from them) and ``BOOK_RUN_TIMES`` (a JSON file of each chapter's seconds, the
book's apart from the student edition's: tests/book/test_stated_run_times.py reads it). Without
them the notebooks are executed in a temporary folder and the times are not kept.
"""

import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from tools.build.chapter_format import ROOT, chapters, exercise_labels
from tools.teach.chapter_run import run_chapter
from tools.teach.trusted_check import SANDBOX_ONLY

ANSWERS = Path(__file__).resolve().parent / "wrong_answers"


def wrong_answers(chapter: Path) -> dict[str, list[tuple[str, str]]]:
    path = ANSWERS / f"ch{chapter.name[:2]}.py"
    spec = importlib.util.spec_from_file_location(f"wrong_{chapter.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_every_exercise_has_two_wrong_answers(chapter):
    wrong = wrong_answers(chapter)
    labels = exercise_labels(chapter.read_text(encoding="utf-8"))
    assert sorted(wrong) == sorted(labels), "one entry per exercise of the chapter"
    for label in labels:
        assert len(wrong[label]) >= 2, f"{label}: at least two wrong answers"
        for code, hint in wrong[label]:
            assert code.strip() and hint.strip(), label


def record_seconds(stem: str, book: float, student: float) -> None:
    """Add this chapter's seconds to ``BOOK_RUN_TIMES`` (one JSON object, stem -> seconds)."""
    if not (name := os.environ.get("BOOK_RUN_TIMES")):
        return
    path = Path(name)
    times = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    times[stem] = {"book": round(book, 2), "student": round(student, 2)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n", encoding="utf-8")


@pytest.fixture(scope="module", params=chapters(), ids=lambda p: p.stem)
def chapter_run(request, tmp_path_factory):
    """The chapter's one run (both tests of a chapter read it)."""
    chapter = request.param
    folder = Path(os.environ.get("BOOK_EXECUTED") or tmp_path_factory.mktemp("executed"))
    notebook = folder / f"{chapter.stem}.ipynb"
    if not notebook.exists():
        shutil.copy(ROOT / "notebooks" / notebook.name, notebook)
    wrong = wrong_answers(chapter)
    run = run_chapter(chapter, notebook, {k: [c for c, _ in v] for k, v in wrong.items()})
    nbformat.write(run.notebook, notebook)  # (as nbmake --overwrite: also when a cell failed)
    record_seconds(chapter.stem, run.book_seconds, run.student_seconds)
    print(f"{chapter.stem}: the book in {run.book_seconds:.1f} s; the student edition's "
          f"exercises and {len(run.attempts)} answers in {run.student_seconds:.1f} s")
    return chapter, wrong, run


def test_the_book_runs_top_to_bottom(chapter_run):
    chapter, _, run = chapter_run
    assert not run.book_error, f"{chapter.stem}: {run.book_error}"


def test_the_student_edition_runs_and_checks_reject_wrong_answers(chapter_run):
    chapter, wrong, run = chapter_run
    assert not run.book_error, f"{chapter.stem}: the book's lesson failed, so this did not run"
    report = run.report
    assert report.results and set(report.results.values()) == {"not attempted"}, report.results
    assert not report.other_errors, report.other_errors
    problems = []
    for attempt in run.attempts:
        if attempt.kind == "solution":
            if attempt.status != "passed":
                problems.append(f"{attempt.label} solution: {attempt.status} {attempt.message} "
                                f"{attempt.answer_error}")
            elif not attempt.verified and attempt.label not in SANDBOX_ONLY:
                problems.append(f"{attempt.label} solution: passed, but not by the grader's run")
            continue
        number = int(attempt.kind.split()[1])
        hint = wrong[attempt.label][number - 1][1]
        if attempt.status != "failed" or not re.search(re.escape(hint), attempt.message):
            problems.append(f"{attempt.label} {attempt.kind}: {attempt.status}: "
                            f"{attempt.message!r} (expected the hint {hint!r}) "
                            f"{attempt.answer_error}")
    assert not problems, "\n".join(problems)
    tried = {a.label for a in run.attempts if a.kind == "solution"}
    assert tried == set(report.results), "every exercise's check ran its answers"
