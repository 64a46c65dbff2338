"""Every chapter's student edition runs top to bottom: each exercise reports "not attempted"
and no other cell fails (run by `make test` as its own step: it executes every chapter)."""

from pathlib import Path

import pytest
from grade import grade

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_runs(chapter, student_dir):
    report = grade(student_dir / f"{chapter.stem}.ipynb")
    assert report.results and set(report.results.values()) == {"not attempted"}, report.results
    assert not report.other_errors, report.other_errors
