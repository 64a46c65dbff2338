"""Grading a whole class (tools/teach/grade_class.py) on a synthetic class of 14 submissions: good,
empty and wrong answers, a hang, a memory hog, a file deleter, a kernel killer, malformed
JSON, another chapter's notebook, an edited and a renamed check cell, stale outputs, and one
that tries the network.

Run by `make test` beside the book build (it executes a kernel per submission)."""

import csv
import re

import nbformat
import pytest

from tests.tools.mini_chapter import HEADER, MINI, exercise, student_with
from tools.build.chapter_format import BOOK, chapters, ipynb_from_myst
from tools.teach import grade_class

OTHER = (HEADER.replace("# 99 ·", "# 98 ·")
         + "```{code-cell} ipython3\nfrom helpers import check_exercise\n```\n\n"
         + exercise(1, "x = 1", '    assert x == 1, "x is 1"', chapter="98"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    book, subs, out = root / "book", root / "submissions", root / "out"
    book.mkdir()
    subs.mkdir()
    (book / "99_mini.md").write_text(MINI, encoding="utf-8")
    (book / "98_other.md").write_text(OTHER, encoding="utf-8")
    solutions = {"ex99-1": "width = 16", "ex99-2": "def double(x):\n    return 2 * x",
                 "ex99-3": 'answer = "wheel"'}
    write = {
        "good": student_with(solutions),
        "stubs": student_with({}),
        "wrong": student_with({**solutions, "ex99-1": "width = 32"}),
        "hang": student_with(solutions, [("ex99-1", "import time\nwhile True:\n"
                                                    "    time.sleep(1)")]),  # waits, no CPU
        "hog": student_with(solutions, [("ex99-1", "hog = bytearray(64 * 2**30)")]),
        "deleter": student_with(solutions, [("ex99-1", "import os\nfor name in os.listdir('.'):\n"
                                                "    os.remove(name)")]),
        "killer": student_with({"ex99-1": "width = 16"}, [
            ("ex99-1", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")]),
        "network": student_with(solutions, [
            ("ex99-1", "import socket\nsocket.create_connection(('pypi.org', 443), timeout=5)")]),
        "other": nbformat.reads(ipynb_from_myst(OTHER), as_version=4),
        "empty": nbformat.v4.new_notebook(),
    }
    edited = student_with(solutions)
    renamed = student_with(solutions)
    stale = student_with({})
    for cell in edited.cells:
        if 'check_exercise("ex99-2")' in cell.source:
            cell.source = 'with check_exercise("ex99-2"):\n    pass  # always passes'
    for cell in renamed.cells:
        cell.source = cell.source.replace('check_exercise("ex99-3")', 'check_exercise("ex99-7")')
    for cell in stale.cells:
        if 'check_exercise("ex99-1")' in cell.source:
            cell.outputs = [nbformat.v4.new_output("stream", text="Exercise ex99-1: passed\n")]
    write.update(edited=edited, renamed=renamed, stale=stale)
    for name, notebook in write.items():
        nbformat.write(notebook, subs / f"{name}.ipynb")
    (subs / "nested").mkdir()
    (subs / "nested" / "malformed.ipynb").write_text("{not json", encoding="utf-8")
    # 45 s a cell: the first cell imports torch (4-8 s idle here), and in CI, beside the
    # student-edition run, it took more than 10 s, so `wrong` was graded "timed out"
    rows = grade_class.grade_class(subs, out, chapter="99", timeout=45, memory_gb=8,
                                   book=book)
    table = {row["file"]: row for row in csv.DictReader((out / "grades.csv").open())}
    return rows, table, (out / "grades-summary.md").read_text()


def test_every_submission_has_a_row(graded):
    rows, table, _ = graded
    assert len(rows) == 14 == len(table)
    assert list(table["good.ipynb"])[:5] == ["file", "chapter", "ex99-1", "ex99-2", "ex99-3"]


def results(table, name):
    return [table[name][label] for label in ("ex99-1", "ex99-2", "ex99-3")]


def test_answers_are_graded(graded):
    _, table, _ = graded
    assert results(table, "good.ipynb") == ["passed"] * 3 and table["good.ipynb"]["passed"] == "3"
    assert results(table, "stubs.ipynb") == ["not attempted"] * 3
    assert results(table, "wrong.ipynb") == ["failed", "passed", "passed"]
    assert results(table, "stale.ipynb") == ["not attempted"] * 3  # outputs re-made, not read
    assert not table["good.ipynb"]["note"] and not table["good.ipynb"]["errors"]


def test_hostile_notebooks_are_reported_and_the_batch_goes_on(graded):
    _, table, _ = graded
    assert table["hang.ipynb"]["note"].startswith("timed out")
    assert table["hang.ipynb"]["hit limit"] == "yes" and table["hang.ipynb"]["limit"] == "45"
    assert table["good.ipynb"]["hit limit"] == "" and float(table["good.ipynb"]["seconds"]) > 0
    assert table["hog.ipynb"]["note"].startswith("memory limit")
    assert "MemoryError" in table["hog.ipynb"]["errors"]
    assert "deleted files in its working directory" in table["deleter.ipynb"]["errors"]
    assert "kernel died" in table["killer.ipynb"]["note"]
    assert table["killer.ipynb"]["ex99-1"] == "passed"  # graded up to the kill


def test_no_network_where_the_machine_allows_it(graded):
    _, table, summary = graded
    if grade_class.network_isolation() is None:
        assert "network NOT isolated" in summary
        pytest.skip("network isolation needs root, unshare and ip on Linux")
    assert "no network (network namespace)" in summary
    assert re.search(r"gaierror|OSError|unreachable", table["network.ipynb"]["errors"]), \
        table["network.ipynb"]["errors"]
    assert results(table, "network.ipynb") == ["passed"] * 3


def test_bad_input_gets_a_clear_row(graded):
    _, table, _ = graded
    assert table["nested/malformed.ipynb"]["note"].startswith("not a notebook: not valid JSON")
    assert table["other.ipynb"]["note"] == "a notebook of chapter 98, not of chapter 99"
    assert table["empty.ipynb"]["note"] == "empty notebook: no code to run"
    assert results(table, "edited.ipynb") == ["passed", "check changed", "passed"]
    assert table["renamed.ipynb"]["ex99-3"] == "missing"


def test_summary_counts_and_hints(graded):
    _, _, summary = graded
    row = next(line for line in summary.splitlines() if line.startswith("| ex99-1 |"))
    assert re.match(r"\| ex99-1 \| \d+ \| 1 \| \d+ \| \d+ \| not yet: the hidden width is 16 \|",
                    row), row
    assert "Isolation:" in summary and "malformed.ipynb`: not a notebook" in summary
    assert re.search(r"\| `hang.ipynb` \| [\d.]+ \| 45 \| \*\*yes\*\* \|", summary), summary
    assert "| verified by the grader |" in summary


def test_unknown_chapter_and_empty_folder_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no chapter '42'"):
        grade_class.grade_class(tmp_path, tmp_path / "out", chapter="42")
    with pytest.raises(ValueError, match="no .ipynb files"):
        grade_class.grade_class(tmp_path, tmp_path / "out")


def test_chapter_is_detected_from_the_check_cells():
    notebook = nbformat.reads(ipynb_from_myst(MINI), as_version=4)
    assert grade_class.detect_chapter(notebook) == "99"
    notebook.cells.append(nbformat.v4.new_code_cell('check_exercise("ex98-1")'))
    assert grade_class.detect_chapter(notebook) is None



def test_check_cells_are_the_chapters(tmp_path):
    (tmp_path / "99_mini.md").write_text(MINI, encoding="utf-8")
    checks = grade_class.check_cells(tmp_path / "99_mini.md")
    assert sorted(checks) == ["ex99-1", "ex99-2", "ex99-3"]
    assert "the hidden width is 16" in checks["ex99-1"]


def _fake_class(tmp_path, monkeypatch, stop_at=None):
    """A class of three graded by a stand-in for grade_submission (no kernels): returns the
    names it graded."""
    (tmp_path / "book").mkdir(exist_ok=True)
    (tmp_path / "book" / "99_mini.md").write_text(MINI, encoding="utf-8")
    subs = tmp_path / "subs"
    subs.mkdir(exist_ok=True)
    for name in ("a", "b", "c"):
        if not (subs / f"{name}.ipynb").exists():
            nbformat.write(student_with({}), subs / f"{name}.ipynb")
    graded = []

    def fake(path, chapter_files, chapter, timeout, memory_gb):
        if path.stem == stop_at:
            raise KeyboardInterrupt  # the batch is interrupted here
        graded.append(path.stem)
        return grade_class.Row(file=str(path), chapter="99", results={"ex99-1": "passed"},
                               seconds=1.5, limit=120, sha256=__import__("hashlib").sha256(
                                   path.read_bytes()).hexdigest())

    monkeypatch.setattr(grade_class, "grade_submission", fake)
    return subs, graded


def test_rows_are_kept_as_graded_and_a_rerun_skips_them(tmp_path, monkeypatch):
    subs, graded = _fake_class(tmp_path, monkeypatch, stop_at="c")
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        grade_class.grade_class(subs, out, chapter="99", book=tmp_path / "book")
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [r["file"] for r in rows] == ["a.ipynb", "b.ipynb"]  # what it graded survives
    subs, graded = _fake_class(tmp_path, monkeypatch)
    grade_class.grade_class(subs, out, chapter="99", book=tmp_path / "book")
    assert graded == ["c"]  # a and b were graded already
    nbformat.write(student_with({"ex99-1": "width = 16"}), subs / "a.ipynb")  # changed
    subs, graded = _fake_class(tmp_path, monkeypatch)
    grade_class.grade_class(subs, out, chapter="99", book=tmp_path / "book")
    assert graded == ["a"]
    subs, graded = _fake_class(tmp_path, monkeypatch)
    grade_class.grade_class(subs, out, chapter="99", book=tmp_path / "book", regrade=True)
    assert graded == ["a", "b", "c"]
    assert len(list(csv.DictReader((out / "grades.csv").open()))) == 3


def test_default_time_limit_follows_the_stated_run_time(tmp_path):
    chapter = tmp_path / "99_x.md"
    chapter.write_text("# 99\n\n*Runs in about 70 s on a 2-core CPU.*\n", encoding="utf-8")
    assert grade_class.default_timeout(chapter) == 70 * grade_class.TIME_FACTOR
    chapter.write_text("# 99\n\n*Runs in about 3 s on a 2-core CPU.*\n", encoding="utf-8")
    assert grade_class.default_timeout(chapter) == grade_class.TIME_FLOOR_S
    chapter.write_text("# 99\n", encoding="utf-8")
    assert grade_class.default_timeout(chapter) == 600


def test_make_grade_uses_the_same_default_limit(tmp_path, monkeypatch):
    """`make grade` without TIMEOUT= takes its chapter's limit from the rule grade-class uses
    (one home: tools.teach.grade.default_timeout), and TIMEOUT= still overrides it."""
    from tools.teach import grade as grade_tool

    assert grade_class.default_timeout is grade_tool.default_timeout
    chapter = next(c for c in chapters(BOOK) if c.name.startswith("03_"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        'with check_exercise("ex03-1"):\n    pass')])
    path = tmp_path / "nb.ipynb"
    nbformat.write(notebook, path)
    seen = []
    monkeypatch.setattr(grade_tool, "execute_graded",
                        lambda nb, workdir, timeout, checks=None: seen.append(timeout))
    grade_tool.grade(path)
    grade_tool.grade(path, timeout=7)
    assert seen == [grade_class.default_timeout(chapter), 7]
    assert seen[0] != 600  # the chapter states its run time
