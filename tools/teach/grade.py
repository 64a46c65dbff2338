"""Grade a learner's notebook (``make grade NB=path/to/notebook.ipynb [TIMEOUT=s]``).

Runs the notebook top to bottom in a fresh kernel and reports, per exercise: ``passed``,
``failed`` (with the check's hint) or ``not attempted`` (the student edition's stub still
raises ``NotImplementedError``). Errors in cells that are neither exercise cells nor tagged
``raises-exception`` are listed too. Exit status: 1 if an attempted exercise failed or another
cell failed, else 0.

Whose verdict counts (issue 34): the notebook's own check (in its kernel) gives the learner's
hint, and a "failed" there is final; a "passed" there is only a claim, since the submission's
code could have written it. The grader then runs the *book's* check code itself, in this
process, where no submission code runs, on the answer taken across as data
(tools/teach/trusted_check.py), and that run's verdict is the grade. A check that must watch the
answer's code while it runs has a probe (``def probe_...`` in its cell) that the grader calls in
the kernel for data; an exercise listed in ``SANDBOX_ONLY`` (none now) would keep the kernel's
verdict and be reported as not verified. Each cell's time limit is ``TIMEOUT=`` or, by default,
the one ``make grade-class`` gives a notebook of that chapter (:func:`default_timeout`).

:func:`execute_graded` is the one implementation behind ``make grade`` and ``make grade-class``
(each submission runs ``python -m tools.teach.grade --json`` in its sandbox). The student-edition
check of ``make nbmake`` (tools/teach/chapter_run.py) grades with the same :func:`grade_cells`
and :meth:`Session.verdict_of`, its ``after_check`` hook trying more answers right after each
exercise's check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from helpers.exercises import EXERCISES_LOG_ENV_VAR
from tools.build.chapter_format import BOOK, CHECK_RE, RUN_TIME_RE, STUB_RE, chapters
from tools.teach.trusted_check import SANDBOX_ONLY, BookCheck, Bridge, book_checks, run_book_check

TIME_FACTOR, TIME_FLOOR_S = 8, 120  # default limit: 8x the chapter's stated run time, >= 120 s


def default_timeout(chapter: Path | None) -> int:
    """Seconds a notebook of ``chapter`` may run: TIME_FACTOR x its stated run time, at least
    TIME_FLOOR_S (600 s for a chapter that states none, or no chapter). The one rule behind
    ``make grade`` (a cell's limit) and ``make grade-class`` (a whole notebook's)."""
    stated = RUN_TIME_RE.search(chapter.read_text(encoding="utf-8")) if chapter else None
    return max(TIME_FLOOR_S, TIME_FACTOR * int(stated[1])) if stated else 600


@dataclass
class Report:
    results: dict[str, str] = field(default_factory=dict)  # label -> passed/failed/...
    details: dict[str, str] = field(default_factory=dict)
    other_errors: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # passed in the kernel only

    @property
    def ok(self) -> bool:
        return "failed" not in self.results.values() and not self.other_errors


def cell_error(cell) -> tuple[str, str] | None:
    """(name, first line of the message) of the error a cell raised, if any."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output["ename"], output["evalue"].splitlines()[0] if output["evalue"] else ""
    return None


class Runner:
    """A kernel executing cells one at a time, with the exercise log read after each."""

    def __init__(self, client: NotebookClient, log: Path) -> None:
        self.client, self.log, self._read = client, log, 0

    def run(self, cell, index: int) -> list[dict]:
        """Execute one cell; return the exercise verdicts it logged."""
        self.client.execute_cell(cell, index, store_history=False)
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        new, self._read = lines[self._read:], len(lines)
        verdicts = []
        for line in new:  # the kernel can write anything here: it is only a claim
            try:
                verdict = json.loads(line)
            except ValueError:
                continue
            if type(verdict) is dict:
                verdicts.append(verdict)
        return verdicts

    def run_source(self, source: str, index: int) -> tuple[object, list[dict]]:
        """Execute a cell that is not the notebook's (the notebook's cells stay as they are:
        nbclient stores an executed cell at its index)."""
        cell = nbformat.v4.new_code_cell(source)
        cells = self.client.nb.cells
        kept = cells[index] if -len(cells) <= index < len(cells) else None
        try:
            return cell, self.run(cell, index)
        finally:
            if kept is not None:
                cells[index] = kept

    def run_code(self, source: str, index: int = 0) -> str | None:
        """Execute grader code in the kernel; the error it raised, if any, as text."""
        cell, _ = self.run_source(source, index)
        error = cell_error(cell)
        return f"{error[0]}: {error[1]}" if error else None


@dataclass
class Session:
    """What grading one notebook holds: its kernel, the book's checks, the bridge between."""

    runner: Runner
    checks: dict[str, BookCheck]
    workdir: Path
    bridge: Bridge

    def verdict_of(self, label: str, verdicts: list[dict], error) -> tuple[str, str, bool]:
        """(status, message, verified) of the check of ``label`` that just ran in the kernel.

        ``verdicts`` are what the kernel logged: a "failed" or "not attempted" there is final
        (a submission gains nothing by claiming it); a "passed" is re-checked by the grader
        with the book's code, unless the exercise is ``SANDBOX_ONLY`` or not in the book
        (then verified=False: grade_class always passes the chapter, so the latter is only
        ``make grade`` on a notebook of no chapter of the book).
        """
        verdict = next((v for v in verdicts if type(v) is dict and v.get("label") == label),
                       None)
        if verdict is None:
            return "failed", (f"the check cell raised {error[0]}: {error[1]}" if error else
                              "the check reported nothing"), True
        status, message = str(verdict.get("status")), str(verdict.get("message", ""))
        if status != "passed":
            return (status if status in ("failed", "not attempted") else "failed"), message, True
        if label not in self.checks or label in SANDBOX_ONLY:  # nothing to re-run it by
            return "passed", "", False
        status, message = run_book_check(self.checks[label], self.bridge, self.workdir)
        return status, message, True


@contextmanager
def exercise_log():
    """A fresh file for the exercise verdicts, named to the kernels started inside (through
    ``BOOK_EXERCISES_LOG``); the variable is put back after."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "exercises.jsonl"
        old = os.environ.get(EXERCISES_LOG_ENV_VAR)
        os.environ[EXERCISES_LOG_ENV_VAR] = str(log)  # the kernel inherits it
        try:
            yield log
        finally:
            if old is None:
                os.environ.pop(EXERCISES_LOG_ENV_VAR, None)
            else:
                os.environ[EXERCISES_LOG_ENV_VAR] = old


AfterCheck = Callable[[Session, str, object, int], None]


def execute_graded(notebook, workdir: Path, timeout: int = 600,
                   after_check: AfterCheck | None = None,
                   checks: dict[str, BookCheck] | None = None) -> Report:
    """Execute ``notebook`` (in place) cell by cell and grade its exercises against
    ``checks`` (the book's; by default those of the chapter the notebook's check cells name).
    """
    report = Report()
    if checks is None:
        checks = checks_for(notebook)
    for check in checks.values():  # imported before any submission code runs
        check.preload()
    with exercise_log() as log, tempfile.TemporaryDirectory(prefix="bridge-") as channel:
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                allow_errors=True, record_timing=False,
                                resources={"metadata": {"path": str(workdir)}})
        try:
            with client.setup_kernel():
                runner = Runner(client, log)
                session = Session(runner, checks, workdir,
                                  Bridge(runner.run_code, Path(channel)))
                grade_cells(notebook, session, report, after_check)
        except DeadKernelError:
            report.other_errors.append("the kernel died (out of memory, or a cell killed it)")
        except CellTimeoutError:
            report.other_errors.append(f"a cell ran longer than {timeout} s")
    return report


def chapter_of(notebook, book: Path = BOOK) -> Path | None:
    """The book's chapter that the notebook's check cells name (None if they name no chapter,
    or several)."""
    numbers = {m["label"][2:4] for cell in notebook.cells if cell.cell_type == "code"
               for m in CHECK_RE.finditer(cell.source)}
    found = [c for c in chapters(book) if len(numbers) == 1 and c.name[:2] in numbers]
    return found[0] if found else None


def checks_for(notebook, book: Path = BOOK) -> dict[str, BookCheck]:
    """The book's checks of the chapter that the notebook's check cells name (none if they
    name no chapter, or several)."""
    chapter = chapter_of(notebook, book)
    return book_checks(chapter) if chapter is not None else {}


def grade_cells(notebook, session: Session, report: Report,
                after_check: AfterCheck | None, start: int = 0) -> None:
    """Execute the notebook's code cells from index ``start`` on, grading each exercise's
    check as it runs (and calling ``after_check`` right after it) into ``report``."""
    runner, stub_label = session.runner, None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or index < start:
            continue
        verdicts = runner.run(cell, index)
        error = cell_error(cell)
        stub, check = STUB_RE.match(cell.source), CHECK_RE.search(cell.source)
        if stub:
            stub_label = stub["label"]
            if error and error[0] == "NotImplementedError":
                report.results[stub_label] = "not attempted"
            elif error:
                report.results[stub_label] = "failed"
                report.details[stub_label] = f"your cell raised {error[0]}: {error[1]}"
        elif check:
            label = check["label"]
            decided = stub_label == label and label in report.results  # by the stub
            if not decided:
                status, message, verified = session.verdict_of(label, verdicts, error)
                report.results[label] = status
                if status == "failed":
                    report.details[label] = message
                if not verified:
                    report.unverified.append(label)
            if after_check is not None:
                after_check(session, label, cell, index)
        elif error and "raises-exception" not in cell.metadata.get("tags", []):
            report.other_errors.append(f"cell {index}: {error[0]}: {error[1]}")


def grade(path: Path, timeout: int | None = None, chapter: Path | None = None) -> Report:
    """Run the notebook at ``path`` in a fresh kernel (in its folder) and grade it against
    ``chapter``'s checks (by default, the chapter its check cells name). ``timeout``: seconds
    per cell; None: that chapter's :func:`default_timeout`."""
    notebook = nbformat.read(path, as_version=4)
    checks = book_checks(chapter) if chapter is not None else None
    if timeout is None:
        timeout = default_timeout(chapter if chapter is not None else chapter_of(notebook))
    return execute_graded(notebook, path.parent.resolve(), timeout, checks=checks)


def print_report(report: Report) -> None:
    print(f"{'exercise':<10} result")
    for label, result in sorted(report.results.items()):
        detail = f"  ({report.details[label]})" if label in report.details else ""
        unverified = "  [checked in the notebook only]" if label in report.unverified else ""
        print(f"{label:<10} {result}{detail}{unverified}")
    counts = {k: list(report.results.values()).count(k)
              for k in ("passed", "failed", "not attempted")}
    print(f"total: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['not attempted']} not attempted (of {len(report.results)})")
    for line in report.other_errors:
        print(f"error outside the exercises: {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--timeout", type=int, default=None,
                        help=f"seconds per cell (default: {TIME_FACTOR}x the chapter's stated "
                        f"run time, at least {TIME_FLOOR_S})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--chapter-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--token-from-stdin", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    # grade_class sends a secret on stdin, read before the kernel exists (its stdin is its
    # own pipe), and takes only the report that carries it: a JSON line the submission
    # writes to the inherited stdout, before killing this process, is not a report
    token = sys.stdin.readline().strip() if args.token_from_stdin else None
    if not args.notebook.is_file():
        parser.error(f"no notebook at {args.notebook}")
    # this process runs the book's checks: nothing may be imported from the folder the
    # submission can write to (``python -m`` put the working directory on the path)
    here = {"", str(Path.cwd()), str(Path.cwd().resolve())}
    sys.path[:] = [p for p in sys.path if p not in here]
    report = grade(args.notebook, args.timeout, args.chapter_file)
    if args.json:
        print(json.dumps({**asdict(report), "token": token}), flush=True)
        return 0 if report.ok else 1
    print_report(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
