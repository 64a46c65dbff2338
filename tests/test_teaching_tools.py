"""The student edition (make student) and the autograder (make grade)."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import chapter_format
from tools.chapter_format import SOLUTION_RE, STUB_MARKER, chapters
from tools.grade import grade

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapters()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_leaks_into_the_student_edition(chapter, student_dir):
    source = chapter.read_text()
    student = nbformat.read(student_dir / f"{chapter.stem}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    blocks = [(m['label'], m['body']) for m in SOLUTION_RE.finditer(source)]
    outside = SOLUTION_RE.sub("", source)  # lesson code may share lines with a solution
    assert len(blocks) >= 3
    for label, body in blocks:
        lines = [ln.strip() for ln in body.splitlines()
                 if len(ln.strip()) > 12 and not ln.startswith(("```", ":class:", ":::"))
                 and ln.strip() not in outside]
        assert lines, f"{label}: the solution has no line of its own to look for"
        leaked = [ln for ln in lines if ln in text]
        assert not leaked, f"{label}: solution lines in the student edition: {leaked[:3]}"
        assert text.count(f"{STUB_MARKER} {label}:") == 1
        assert f'check_exercise("{label}")' in text, f"{label}: its check must stay"
        assert f"**Exercise {label}.**" in text
    assert "solution-start" not in text and "solution-end" not in text
    assert all(not cell.get("outputs") for cell in student.cells if cell.cell_type == "code")


def test_mismatched_solution_blocks_are_refused():
    broken = ":::{exercise}\n:label: ex00-1\nDo it.\n:::\n\nno solution here\n"
    with pytest.raises(ValueError, match="1 exercises but 0 solution blocks"):
        chapter_format.student_text(broken)


def test_grader_on_the_instructor_notebook():
    report = grade(ROOT / "notebooks" / "00_setup.ipynb")
    assert report.results == {"ex00-1": "passed", "ex00-2": "passed", "ex00-3": "passed"}
    assert report.ok and not report.other_errors


def test_grader_on_the_student_edition_and_on_a_wrong_answer(student_dir, tmp_path):
    path = student_dir / "00_setup.ipynb"
    report = grade(path)
    assert set(report.results.values()) == {"not attempted"} and len(report.results) == 3
    assert report.ok and not report.other_errors

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.source.startswith(f"{STUB_MARKER} ex00-1"):
            cell.source = ("class FixedNet(nn.Module):\n    def __init__(self):\n"
                           "        super().__init__()\n        self.body = nn.Linear(8, 16)\n"
                           "        self.head = nn.Linear(16, 5)  # wrong: 5 classes\n\n"
                           "    def forward(self, x):\n        return self.head(self.body(x))\n")
        if cell.source.startswith(f"{STUB_MARKER} ex00-3"):
            cell.source = ('facts_a = dict(cuda_build=None, is_available=False, '
                           'driver_version="550.54")\n'
                           'facts_b = dict(cuda_build="12.6", is_available=False, '
                           'driver_version=None)\na_must_change = "wheel"\n')
    attempt = tmp_path / "attempt.ipynb"
    nbformat.write(notebook, attempt)
    result = subprocess.run([sys.executable, "-m", "tools.grade", str(attempt)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stdout
    assert re.search(r"ex00-1\s+failed .*shape \(4, 3\)", result.stdout), result.stdout
    assert re.search(r"ex00-2\s+not attempted", result.stdout)
    assert re.search(r"ex00-3\s+passed", result.stdout)
    assert "total: 1 passed, 1 failed, 1 not attempted (of 3)" in result.stdout
