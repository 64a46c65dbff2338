"""Every chapter's student edition runs top to bottom: each exercise reports "not attempted"
and no other cell fails (run by `make test` as its own step: it executes every chapter)."""

from pathlib import Path

import pytest
import student_edition
from grade import grade

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    student_edition.write_student_edition(out)
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_runs(chapter, student_dir):
    report = grade(student_dir / f"{chapter.stem}.ipynb")
    assert report.results and set(report.results.values()) == {"not attempted"}, report.results
    assert not report.other_errors, report.other_errors
