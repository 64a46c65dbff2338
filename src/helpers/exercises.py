"""Automatic checks for the exercises (the format is described in book/README.md).

Taught in chapter 00 and used in every chapter::

    with check_exercise("ex03-2"):
        assert answer.shape == (4, 3), "the output should have shape (4, 3)"

The check prints one line for the learner and, when ``BOOK_EXERCISES_LOG`` names a file,
appends the same verdict as a JSON line. The autograder reads that line only as the
notebook's claim (its hint, or "not attempted"): code in the notebook could have written it,
so a "passed" is re-checked by the grader, which runs the book's own check code in a process
of its own on the answer taken across as data (tools/teach/trusted_check.py, issue 34).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass

from .records import append_record

EXERCISES_LOG_ENV_VAR = "BOOK_EXERCISES_LOG"
LABEL_PATTERN = r"ex\d{2}-\d+"  # the one home of the label format (tools import it too)
_LABEL_RE = re.compile(LABEL_PATTERN)  # fullmatch: "ex00-1\n" is not a label


@dataclass
class ExerciseResult:
    """One check's verdict: ``status`` is "passed", "failed" or "not attempted"."""

    label: str
    status: str = ""
    message: str = ""

    @property
    def passed(self) -> bool | None:
        return None if not self.status else self.status == "passed"


def _verdict(exc: Exception | None) -> tuple[str, str]:
    if exc is None:
        return "passed", "passed"
    if isinstance(exc, NotImplementedError):
        return "not attempted", "not yet: the answer cell still raises NotImplementedError"
    if isinstance(exc, NameError):
        return "failed", f"not yet: {exc} (define it in your answer cell first)"
    return "failed", f"not yet: {str(exc).strip() or type(exc).__name__}"


def check_exercise(label: str) -> AbstractContextManager[ExerciseResult]:
    """Run an exercise's automatic check: the ``with`` block asserts the learner's answer.

    Prints ``Exercise ex00-1: passed`` or ``not yet: <why>`` and re-raises on failure, so the
    cell fails and a notebook runner sees it.
    """
    if not isinstance(label, str) or not _LABEL_RE.fullmatch(label):
        raise ValueError(f"exercise label must look like 'ex00-1', got {label!r}")
    return _checking(ExerciseResult(label))


@contextmanager
def _checking(result: ExerciseResult) -> Iterator[ExerciseResult]:
    label = result.label
    try:
        yield result
    except Exception as exc:
        result.status, result.message = _verdict(exc)
        raise
    else:
        result.status, result.message = _verdict(None)
    finally:
        if result.status:  # not set for KeyboardInterrupt and friends: no verdict
            print(f"Exercise {label}: {result.message}")
            append_record(EXERCISES_LOG_ENV_VAR, asdict(result))
