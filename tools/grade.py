"""Grade a learner's notebook (``make grade NB=path/to/notebook.ipynb``).

Runs the notebook top to bottom in a fresh kernel and reports, per exercise: ``passed`` (its
check printed "passed"), ``failed`` (the check ran and did not pass) or ``not attempted``
(the stub from the student edition still raises ``NotImplementedError``). Errors in cells
that are neither exercise cells nor tagged ``raises-exception`` are listed too. Exit status:
1 if an attempted exercise failed or another cell failed, else 0.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_edition import STUB_MARKER  # noqa: E402

CHECK_RE = re.compile(r'check_exercise\("(ex\d\d-\d+)"\)')


@dataclass
class Report:
    results: dict[str, str] = field(default_factory=dict)  # label -> passed/failed/...
    details: dict[str, str] = field(default_factory=dict)
    other_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return "failed" not in self.results.values() and not self.other_errors


def _error(cell) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output["ename"], output["evalue"].splitlines()[0] if output["evalue"] else ""
    return None


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


def grade(path: Path, timeout: int = 600) -> Report:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    report, stub_label = Report(), None
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        error = _error(cell)
        stub = re.match(rf"{STUB_MARKER} (ex\d\d-\d+)", cell.source)
        check = CHECK_RE.search(cell.source)
        if stub:
            stub_label = stub[1]
            if error and error[0] == "NotImplementedError":
                report.results[stub_label] = "not attempted"
            elif error:
                report.results[stub_label] = "failed"
                report.details[stub_label] = f"your cell raised {error[0]}: {error[1]}"
        elif check:
            label = check[1]
            if report.results.get(label) in ("not attempted", "failed") and stub_label == label:
                continue
            output = _text(cell)
            if f"Exercise {label}: passed" in output and not error:
                report.results[label] = "passed"
            else:
                report.results[label] = "failed"
                reason = re.search(rf"Exercise {label}: (not yet: .*)", output)
                report.details[label] = reason[1] if reason else (
                    f"{error[0]}: {error[1]}" if error else "the check printed nothing")
        elif error and "raises-exception" not in cell.metadata.get("tags", []):
            report.other_errors.append(f"cell {index}: {error[0]}: {error[1]}")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()
    if not args.notebook.is_file():
        parser.error(f"no notebook at {args.notebook}")
    report = grade(args.notebook, args.timeout)
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
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
