"""Every chapter's student edition runs top to bottom, once, and every exercise check rejects
wrong answers and accepts the solution in it (run by `make test` as its own step).

The student edition is executed cell by cell; after each exercise's check (which must say
"not attempted"), the wrong answers of ``tests/chapters/wrong_answers/chNN.py`` and then the
chapter's solution are run in the same kernel, each followed by the check, and each is graded as
``make grade`` grades it (tools/teach/grade.py ``Session.verdict_of``): a wrong answer must fail
with its hint, and the solution must pass the grader's own run of the book's check on the answer
taken across as data (issue 34), except for the exercises in ``SANDBOX_ONLY``.
"""

import importlib.util
import re
from pathlib import Path

import pytest

from tools.build.chapter_format import chapters, exercise_labels
from tools.teach.student_edition import run_student_edition
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


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_student_edition_runs_and_checks_reject_wrong_answers(chapter, tmp_path):
    wrong = wrong_answers(chapter)
    run = run_student_edition(chapter, {k: [c for c, _ in v] for k, v in wrong.items()},
                              tmp_path)
    print(f"{chapter.stem}: student edition and {len(run.attempts)} answers in "
          f"{run.seconds:.1f} s")
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
