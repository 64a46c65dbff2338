"""The student edition (make student) and the autograder (make grade)."""

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.tools.mini_chapter import MINI
from tools.build import chapter_format
from tools.build.chapter_format import SOLUTION_RE, STUB_MARKER, chapters
from tools.teach.grade import grade

ROOT = Path(__file__).resolve().parents[3]
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


def notebook_from(text: str, path: Path) -> Path:
    path.write_text(chapter_format.ipynb_from_myst(text), encoding="utf-8")
    return path


def test_grader_on_the_instructor_notebook(tmp_path):
    report = grade(notebook_from(MINI, tmp_path / "99_mini.ipynb"))
    assert report.results == {"ex99-1": "passed", "ex99-2": "passed", "ex99-3": "passed"}
    assert report.ok and not report.other_errors


def test_grader_on_the_student_edition_and_on_wrong_answers(tmp_path):
    student = chapter_format.student_text(MINI)
    report = grade(notebook_from(student, tmp_path / "student.ipynb"))
    assert report.results == dict.fromkeys(["ex99-1", "ex99-2", "ex99-3"], "not attempted")
    assert report.ok and not report.other_errors

    notebook = nbformat.read(tmp_path / "student.ipynb", as_version=4)
    for cell in notebook.cells:
        if cell.source.startswith(f"{STUB_MARKER} ex99-1"):
            cell.source = "width = 32  # wrong"
        if cell.source.startswith(f"{STUB_MARKER} ex99-3"):
            cell.source = 'answer = "wheel"'
    notebook.cells.append(nbformat.v4.new_code_cell("undefined_name  # an error elsewhere"))
    attempt = tmp_path / "attempt.ipynb"
    nbformat.write(notebook, attempt)
    result = subprocess.run([sys.executable, "-m", "tools.teach.grade", str(attempt)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout
    assert re.search(r"ex99-1\s+failed .*the hidden width is 16", result.stdout), result.stdout
    assert re.search(r"ex99-2\s+not attempted", result.stdout)
    assert re.search(r"ex99-3\s+passed", result.stdout)
    assert "total: 1 passed, 1 failed, 1 not attempted (of 3)" in result.stdout
    assert "error outside the exercises: cell" in result.stdout and "NameError" in result.stdout


def test_an_answer_cell_that_raises_is_failed_not_unattempted(tmp_path):
    student = chapter_format.student_text(MINI)
    notebook = nbformat.reads(chapter_format.ipynb_from_myst(student), as_version=4)
    for cell in notebook.cells:
        if cell.source.startswith(f"{STUB_MARKER} ex99-2"):
            cell.source = cell.source.replace(  # the learner keeps the marker comment
                'raise NotImplementedError("ex99-2: not attempted yet")',
                'raise ValueError("oops")')
    nbformat.write(notebook, tmp_path / "a.ipynb")
    report = grade(tmp_path / "a.ipynb")
    assert report.results["ex99-2"] == "failed"
    assert "your cell raised ValueError: oops" in report.details["ex99-2"]


@pytest.mark.parametrize("chapter", chapter_format.chapters(ROOT / "book" / "zh"),
                         ids=lambda p: p.stem)
def test_the_chinese_student_edition_has_the_english_code(chapter, student_dir):
    """The grader reads code cells and the checks' verdicts only: equal code, equal grading."""
    zh = nbformat.read(student_dir / "zh" / f"{chapter.stem}.ipynb", as_version=4)
    en = nbformat.read(student_dir / f"{chapter.stem}.ipynb", as_version=4)
    def code(nb):
        return [c.source for c in nb.cells if c.cell_type == "code"]
    assert code(zh) == code(en) and any(STUB_MARKER in c for c in code(zh))
    prose = "\n".join(c.source for c in zh.cells if c.cell_type == "markdown")
    for label in chapter_format.exercise_labels(chapter.read_text(encoding="utf-8")):
        assert f"**练习 {label}.**" in prose
    assert "translation" not in zh.metadata.get("jupytext", {})
