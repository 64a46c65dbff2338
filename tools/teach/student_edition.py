"""Write the student edition: notebooks without solutions (``make student``), and run it.

For every chapter ``book/NN_topic.md`` it writes ``student/NN_topic.ipynb`` (and, for the
Chinese edition's ``book/zh/NN_topic.md``, ``student/zh/NN_topic.ipynb``) in which each
exercise's solution (everything from ``solution-start`` to ``solution-end``, prose and code)
is replaced by one code cell that raises ``NotImplementedError`` with a hint, the exercise
text becomes plain markdown, and the check cells stay. Outputs are empty.

:func:`answer_tries` is the hook that, right after each exercise's check in a run of the
student edition, tries answers in the same kernel (wrong ones, then the chapter's own
solution), each followed by the check: this is how ``make nbmake`` proves that every check
rejects wrong answers and accepts the solution with only what a learner's notebook defines
(tools/teach/chapter_run.py runs the student edition in each chapter's own run). Each try is
graded as ``make grade`` and ``make grade-class`` grade it (``Session.verdict_of`` in
tools/teach/grade.py: the kernel's verdict, then the grader's own run of the book's check).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.build.chapter_format import (
    BOOK,
    ROOT,
    ZH,
    chapters,
    ipynb_from_myst,
    student_text,
)
from tools.build.generated import Generated
from tools.build.zh import edition as zh_edition
from tools.teach.grade import AfterCheck, Session, cell_error


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


# Run before and after the answers to one exercise: the answers may define names and draw
# random numbers; the cells after the exercise must see the learner's notebook unchanged.
# (tools/teach/chapter_run.py saves the book's state the same way, under another name.)
def save_state(name: str = "_h_saved") -> str:
    """Kernel code that keeps the notebook's names and random generators' states in ``name``."""
    return ("import random as _h_random, numpy as _h_np, torch as _h_torch\n"
            f"{name} = (dict(globals()), _h_torch.random.get_rng_state(), _h_random.getstate(),"
            " _h_np.random.get_state())")


def restore_state(name: str = "_h_saved") -> str:
    """Kernel code that puts back what :func:`save_state` kept (names an answer defined are
    deleted; objects changed in place stay changed)."""
    return ("for _h_name in [n for n in globals() if not n.startswith('_')]:\n"
            f"    if _h_name not in {name}[0]:\n"
            "        del globals()[_h_name]\n"
            f"globals().update({{n: v for n, v in {name}[0].items() if not n.startswith('_')}})\n"
            f"_h_torch.random.set_rng_state({name}[1]); _h_random.setstate({name}[2]); "
            f"_h_np.random.set_state({name}[3])")


def answer_tries(wrong_answers: dict[str, list[str]], solutions: dict[str, list[str]],
                 attempts: list[Attempt]) -> AfterCheck:
    """The ``after_check`` hook of :func:`tools.teach.grade.grade_cells` that, right after an
    exercise's check, tries its wrong answers and then its solution, each followed by the
    check and graded as ``make grade`` grades it, appending an :class:`Attempt` per try; the
    notebook's names and random generators are restored after each try."""

    def try_answers(session: Session, label: str, check_cell, index: int) -> None:
        runner = session.runner
        runner.run_source(save_state(), index)
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
            restore, _ = runner.run_source(restore_state(), index)  # each try starts afresh
            if (error := cell_error(restore)) is not None:
                raise RuntimeError(f"{label}: restoring the notebook's state failed: {error}")

    return try_answers


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
