"""Grade a learner's notebook (``make grade NB=path/to/notebook.ipynb``).

Runs the notebook top to bottom in a fresh kernel and reports, per exercise: ``passed``,
``failed`` (with the check's hint) or ``not attempted`` (the student edition's stub still
raises ``NotImplementedError``). The verdicts are read from the exercise log that
``check_exercise`` writes (``BOOK_EXERCISES_LOG``), not scraped from printed text. Errors in
cells that are neither exercise cells nor tagged ``raises-exception`` are listed too.
Exit status: 1 if an attempted exercise failed or another cell failed, else 0.

:func:`execute_graded` is also the runner of the student-edition test: its ``after_check``
hook runs more cells (answers to try) in the same kernel right after an exercise's check.
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
from tools.chapter_format import CHECK_RE, STUB_RE


@dataclass
class Report:
    results: dict[str, str] = field(default_factory=dict)  # label -> passed/failed/...
    details: dict[str, str] = field(default_factory=dict)
    other_errors: list[str] = field(default_factory=list)

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
        return [json.loads(line) for line in new if line.strip()]

    def run_source(self, source: str, index: int) -> tuple[object, list[dict]]:
        cell = nbformat.v4.new_code_cell(source)
        return cell, self.run(cell, index)


@contextmanager
def _exercise_log():
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


AfterCheck = Callable[[Runner, str, object, int], None]


def execute_graded(notebook, workdir: Path, timeout: int = 600,
                   after_check: AfterCheck | None = None) -> Report:
    """Execute ``notebook`` (in place) cell by cell and grade its exercises."""
    report = Report()
    with _exercise_log() as log:
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                allow_errors=True, record_timing=False,
                                resources={"metadata": {"path": str(workdir)}})
        try:
            with client.setup_kernel():
                _grade_cells(notebook, Runner(client, log), report, after_check)
        except DeadKernelError:
            report.other_errors.append("the kernel died (out of memory, or a cell killed it)")
        except CellTimeoutError:
            report.other_errors.append(f"a cell ran longer than {timeout} s")
    return report


def _grade_cells(notebook, runner: Runner, report: Report,
                 after_check: AfterCheck | None) -> None:
    stub_label = None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
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
                verdict = next((v for v in verdicts if v["label"] == label), None)
                if verdict is None:
                    report.results[label] = "failed"
                    report.details[label] = (f"the check cell raised {error[0]}: "
                                             f"{error[1]}" if error else
                                             "the check reported nothing")
                else:
                    report.results[label] = verdict["status"]
                    if verdict["status"] == "failed":
                        report.details[label] = verdict["message"]
            if after_check is not None:
                after_check(runner, label, cell, index)
        elif error and "raises-exception" not in cell.metadata.get("tags", []):
            report.other_errors.append(f"cell {index}: {error[0]}: {error[1]}")


def grade(path: Path, timeout: int = 600) -> Report:
    """Run the notebook at ``path`` in a fresh kernel (in its folder) and grade it."""
    notebook = nbformat.read(path, as_version=4)
    return execute_graded(notebook, path.parent, timeout)


def print_report(report: Report) -> None:
    print(f"{'exercise':<10} result")
    for label, result in sorted(report.results.items()):
        detail = f"  ({report.details[label]})" if label in report.details else ""
        print(f"{label:<10} {result}{detail}")
    counts = {k: list(report.results.values()).count(k)
              for k in ("passed", "failed", "not attempted")}
    print(f"total: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['not attempted']} not attempted (of {len(report.results)})")
    for line in report.other_errors:
        print(f"error outside the exercises: {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    if not args.notebook.is_file():
        parser.error(f"no notebook at {args.notebook}")
    report = grade(args.notebook, args.timeout)
    if args.json:
        print(json.dumps(asdict(report)))
        return 0 if report.ok else 1
    print_report(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
