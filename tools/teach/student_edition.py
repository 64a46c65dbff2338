"""Write the student edition: notebooks without solutions (``make student``), and run it.

For every chapter ``book/NN_topic.md`` it writes ``student/NN_topic.ipynb`` (and, for the
Chinese edition's ``book/zh/NN_topic.md``, ``student/zh/NN_topic.ipynb``) in which each
exercise's solution (everything from ``solution-start`` to ``solution-end``, prose and code)
is replaced by one code cell that raises ``NotImplementedError`` with a hint, the exercise
text becomes plain markdown, and the check cells stay. Outputs are empty.

:func:`run_student_edition` executes a chapter's student edition once and, right after each
exercise's check, tries answers in the same kernel (wrong ones, then the chapter's own
solution), each followed by the check: this is how the tests prove that every check rejects
wrong answers and accepts the solution with only what a learner's notebook defines. Each try
is graded as ``make grade`` and ``make grade-class`` grade it (``Session.verdict_of`` in
tools/teach/grade.py: the kernel's verdict, then the grader's own run of the book's check).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tools.build import zh_edition
from tools.build.chapter_format import (
    BOOK,
    ROOT,
    ZH,
    chapters,
    ipynb_from_myst,
    solution_code,
    student_text,
)
from tools.build.generated import Generated
from tools.teach.grade import Report, Session, cell_error, execute_graded
from tools.teach.trusted_check import book_checks


def write_student_edition(out_dir: Path, book_dir: Path | None = None,
                          replace: list[Path] = ()) -> list[Path]:
    """``out_dir/NN_topic.ipynb`` for every chapter, and ``out_dir/zh/NN_topic.ipynb`` for every
    chapter of the Chinese edition: the same code cells (check cells and stubs included), so
    the grader, which reads only code and the checks' verdicts, grades either.

    Returns the files written; a file a learner changed since ``make student`` wrote it is
    kept and reported (tools/build/generated.py), unless it is in ``replace``."""
    book_dir = book_dir or BOOK
    out_dir.mkdir(parents=True, exist_ok=True)
    root = out_dir.resolve().parent
    generated = Generated("make student", manifest=root / ".generated.json", root=root,
                          replace=replace)
    pages = [(chapter, out_dir / chapter.with_suffix(".ipynb").name,
              ipynb_from_myst(student_text(chapter.read_text(encoding="utf-8")),
                              stem=chapter.stem))
             for chapter in chapters(book_dir)]
    pages += [(chapter, out_dir / ZH / chapter.with_suffix(".ipynb").name,
               zh_edition.notebook_text(student_text(chapter.read_text(encoding="utf-8"),
                                                     language=ZH), chapter.stem))
              for chapter in chapters(book_dir / ZH)]
    try:
        for _, target, text in pages:
            generated.write(target, text)
    finally:
        generated.save()
    return generated.written


@dataclass
class Attempt:
    """One answer tried at an exercise: ``kind`` is "solution" or "wrong 1", "wrong 2" ..."""

    label: str
    kind: str
    status: str  # the check's verdict: passed / failed / not attempted, or "no verdict"
    message: str
    answer_error: str = ""  # what the answer cell itself raised, if anything
    verified: bool = False  # the verdict is the grader's own run of the book's check


@dataclass
class StudentRun:
    report: Report
    attempts: list[Attempt] = field(default_factory=list)
    seconds: float = 0.0


# Run before and after the answers to one exercise: the answers may define names and draw
# random numbers; the cells after the exercise must see the learner's notebook unchanged.
_SAVE = ("import random as _h_random, numpy as _h_np, torch as _h_torch\n"
         "_h_saved = (dict(globals()), _h_torch.random.get_rng_state(), _h_random.getstate(),"
         " _h_np.random.get_state())")
_RESTORE = ("for _h_name in [n for n in globals() if not n.startswith('_')]:\n"
            "    if _h_name not in _h_saved[0]:\n"
            "        del globals()[_h_name]\n"
            "globals().update({n: v for n, v in _h_saved[0].items() if not n.startswith('_')})\n"
            "_h_torch.random.set_rng_state(_h_saved[1]); _h_random.setstate(_h_saved[2]); "
            "_h_np.random.set_state(_h_saved[3])")


def run_student_edition(chapter: Path, wrong_answers: dict[str, list[str]],
                        workdir: Path, timeout: int = 300) -> StudentRun:
    """Execute ``chapter``'s student edition once, trying answers after each exercise's check.

    ``wrong_answers`` maps a label to code cells that must fail its check; the solution from
    the chapter is tried last and must pass. Names the answers define or rebind, and the
    random generators, are restored before the notebook goes on (objects changed in place
    are not).
    """
    text = chapter.read_text(encoding="utf-8")
    solutions = solution_code(text)
    notebook = nbformat.reads(ipynb_from_myst(student_text(text)), as_version=4)
    attempts: list[Attempt] = []

    def try_answers(session: Session, label: str, check_cell, index: int) -> None:
        runner = session.runner
        runner.run_source(_SAVE, index)
        tries = [(f"wrong {i}", [code]) for i, code in enumerate(wrong_answers.get(label, []), 1)]
        for kind, cells in [*tries, ("solution", solutions.get(label, []))]:
            errors = []
            for source in cells:
                cell, _ = runner.run_source(source, index)
                if (error := cell_error(cell)) is not None:
                    errors.append(f"{error[0]}: {error[1]}")
            checked, verdicts = runner.run_source(check_cell.source, index)
            if not any(v.get("label") == label for v in verdicts):
                attempts.append(Attempt(label, kind, "no verdict", "", "; ".join(errors)))
            else:  # graded as make grade grades it: the kernel's claim, then the book's check
                status, message, verified = session.verdict_of(label, verdicts,
                                                               cell_error(checked))
                attempts.append(Attempt(label, kind, status, message, "; ".join(errors),
                                        verified))
            restore, _ = runner.run_source(_RESTORE, index)  # each try starts afresh
            if (error := cell_error(restore)) is not None:
                raise RuntimeError(f"{label}: restoring the notebook's state failed: {error}")

    start = time.perf_counter()
    report = execute_graded(notebook, workdir, timeout, after_check=try_answers,
                            checks=book_checks(chapter))
    return StudentRun(report, attempts, time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "student")
    parser.add_argument("--replace", type=Path, nargs="*", default=[],
                        help="files to overwrite even though a learner changed them")
    args = parser.parse_args()
    for path in write_student_edition(args.out, replace=args.replace):
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
