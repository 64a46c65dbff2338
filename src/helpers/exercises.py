"""Automatic checks for the exercises (the format is described in book/README.md)."""

from __future__ import annotations

import re
from types import TracebackType

from .records import append_record

EXERCISES_LOG_ENV_VAR = "BOOK_EXERCISES_LOG"
_LABEL_RE = re.compile(r"^ex\d{2}-\d+$")


class ExerciseCheck:
    """Context manager behind :func:`check_exercise`."""

    def __init__(self, label: str) -> None:
        if not isinstance(label, str) or not _LABEL_RE.match(label):
            raise ValueError(f"exercise label must look like 'ex00-1', got {label!r}")
        self.label = label
        self.passed: bool | None = None

    def __enter__(self) -> ExerciseCheck:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is not None and not issubclass(exc_type, Exception):
            return False
        self.passed = exc_type is None
        if self.passed:
            message = "passed"
        elif issubclass(exc_type, NameError):
            message = f"not yet: {exc} (define it in your answer cell first)"
        elif issubclass(exc_type, NotImplementedError):
            message = "not yet: the answer cell still raises NotImplementedError"
        else:
            message = f"not yet: {exc or exc_type.__name__}"
        append_record(EXERCISES_LOG_ENV_VAR, {"label": self.label, "passed": self.passed})
        print(f"Exercise {self.label}: {message}")
        return False  # a failing check fails the cell, so an autograder sees it


def check_exercise(label: str) -> ExerciseCheck:
    """Run an exercise's automatic check: the ``with`` block asserts the learner's answer.

    Prints ``Exercise ex00-1: passed`` or ``not yet: <why>`` and re-raises on failure.
    """
    return ExerciseCheck(label)
