"""The executed notebooks reach the build's cache, or the step fails
(tools/build/cache_executed.py)."""

import json

import nbformat
import pytest

from tests.tools.mini_chapter import MINI
from tools.build.cache_executed import cache_executed, cell_seconds, cell_time_record, would_execute
from tools.build.chapter_format import ipynb_from_myst


@pytest.fixture
def book(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "executed").mkdir()
    chapter = tmp_path / "book" / "99_mini.md"
    chapter.write_text(MINI, encoding="utf-8")
    notebook = nbformat.reads(ipynb_from_myst(MINI), as_version=4)
    for index, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
        cell.outputs = [nbformat.v4.new_output("stream", text=f"out {index}\n")]
        cell.execution_count = index + 1
        cell.metadata["execution"] = {  # nbclient's timing entry
            "iopub.execute_input": "2026-11-30T00:00:00.000000Z",
            "shell.execute_reply": f"2026-11-30T00:00:0{index}.500000Z",
            "iopub.status.idle": "2026-11-30T00:00:09Z"}
    nbformat.write(notebook, tmp_path / "executed" / "99_mini.ipynb")
    return tmp_path, chapter


def test_an_executed_chapter_is_found_as_the_build_reads_it(book):
    root, chapter = book
    lines = cache_executed(root / "executed", root / "cache", [chapter])
    assert lines == ["cached 99_mini (record 1)"]
    stored = nbformat.read(root / "executed" / "99_mini.ipynb", as_version=4)
    assert all("execution" not in c.metadata for c in stored.cells)  # the timing is dropped


def test_the_widgets_saved_state_is_dropped(book):
    """The site shows explorers' static views: no page should load the widget manager."""
    root, chapter = book
    path = root / "executed" / "99_mini.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nbformat.write(notebook, path)
    cache_executed(root / "executed", root / "cache", [chapter])
    assert "widgets" not in nbformat.read(path, as_version=4).metadata


def test_a_chapter_whose_code_changed_since_the_run_is_an_error(book):
    root, chapter = book
    chapter.write_text(MINI.replace("width = 16", "width = 17"), encoding="utf-8")
    with pytest.raises(RuntimeError, match="would not find the executed notebook"):
        cache_executed(root / "executed", root / "cache", [chapter])


def test_a_missing_executed_notebook_is_an_error(book):
    root, chapter = book
    (root / "executed" / "99_mini.ipynb").unlink()
    with pytest.raises(FileNotFoundError, match="no executed notebook"):
        cache_executed(root / "executed", root / "cache", [chapter])


def test_the_slowest_cells_are_recorded_before_the_timings_are_dropped(book):
    root, chapter = book
    before = nbformat.read(root / "executed" / "99_mini.ipynb", as_version=4)
    count = sum(cell.cell_type == "code" for cell in before.cells)
    record = cell_time_record(before, keep=2)
    assert [row["cell"] for row in record["slowest"]] == [count - 1, count - 2]
    assert record["slowest"][0]["seconds"] == count - 1 + 0.5
    assert record["cells_seconds"] == sum(i + 0.5 for i in range(count))
    times = root / "times.json"
    cache_executed(root / "executed", root / "cache", [chapter], cell_times=times)
    recorded = json.loads(times.read_text(encoding="utf-8"))["99_mini"]
    assert recorded["slowest"][0]["cell"] == count - 1
    assert recorded["cells_seconds"] == record["cells_seconds"]
    code = [cell for cell in before.cells if cell.cell_type == "code"]
    del code[-1].metadata["execution"]["shell.execute_reply"]  # an interrupted cell: skipped
    assert count - 1 not in [row["cell"] for row in cell_seconds(before)]


def test_would_execute_names_the_chapters_the_cache_does_not_cover(book):
    root, chapter = book
    assert would_execute(root / "cache", [chapter]) == ["99_mini"]  # no cache yet
    cache_executed(root / "executed", root / "cache", [chapter])
    assert would_execute(root / "cache", [chapter]) == []
    chapter.write_text(chapter.read_text(encoding="utf-8").replace(
        "```{code-cell} ipython3\n", "```{code-cell} ipython3\nx_changed = 1\n", 1),
        encoding="utf-8")
    assert would_execute(root / "cache", [chapter]) == ["99_mini"]
