"""`make sync` skips a page only while its inputs and its outputs are what the last sync left
(tools/build/sync_memo.py): each way a skip could hide a change is shown to convert again."""

import json
import shutil

import pytest

from tools.build import sync_notebooks
from tools.build.chapter_format import BOOK
from tools.build.sync_memo import SyncMemo, conversion_inputs
from tools.build.zh import edition as zh_edition
from tools.build.zh import sources as zh_sources


@pytest.fixture
def files(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("converted", encoding="utf-8")
    return tmp_path / "memo.json", out


def test_a_recorded_conversion_is_found_again_after_saving(files):
    memo_path, out = files
    memo = SyncMemo(memo_path, common="v1")
    assert not memo.unchanged(["page", "text"], [out])
    memo.record(["page", "text"], [out])
    memo.save()
    again = SyncMemo(memo_path, common="v1")
    assert again.unchanged(["page", "text"], [out])


@pytest.mark.parametrize("change", ["input", "output edited", "output gone", "other outputs",
                                    "tools changed", "memo damaged"])
def test_any_change_means_converting_again(files, change):
    memo_path, out = files
    memo = SyncMemo(memo_path, common="v1")
    memo.record(["page", "text"], [out])
    memo.save()
    inputs, outputs, common = ["page", "text"], [out], "v1"
    if change == "input":
        inputs = ["page", "text, edited"]
    elif change == "output edited":
        out.write_text("converted, then edited by hand", encoding="utf-8")
    elif change == "output gone":
        out.unlink()
    elif change == "other outputs":
        outputs = [out, out.with_name("notebook.ipynb")]
    elif change == "tools changed":
        common = "v2"
    else:
        memo_path.write_text('{"common": "v1", "pages": {', encoding="utf-8")
    assert not SyncMemo(memo_path, common=common).unchanged(inputs, outputs)


def test_saving_drops_records_whose_outputs_changed(files):
    memo_path, out = files
    memo = SyncMemo(memo_path, common="v1")
    memo.record(["old text"], [out])
    out.write_text("converted from new text", encoding="utf-8")
    memo.record(["new text"], [out])
    memo.save()
    assert len(json.loads(memo_path.read_text(encoding="utf-8"))["pages"]) == 1


@pytest.mark.parametrize("changed", ["tools/build/zh/sources.py", "_config.yml",
                                     "notebooks/book-run.json", "src/helpers/exercises.py"])
def test_what_every_conversion_reads_is_in_the_common_digest(tmp_path, changed):
    for name in ("tools/build/zh/sources.py", "_config.yml", "notebooks/book-run.json",
                 "src/helpers/exercises.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"{name}\n", encoding="utf-8")
    before = conversion_inputs(tmp_path)
    (tmp_path / changed).write_text("edited\n", encoding="utf-8")
    assert conversion_inputs(tmp_path) != before


def test_linked_pages_are_read_from_both_texts():
    assert zh_sources.linked_pages("see [x](05_debugging.md#a) and [y](#b)",
                                   "[z](02_data.md#c)") == ["02_data.md", "05_debugging.md"]


@pytest.fixture
def book(tmp_path, monkeypatch):
    """An English chapter and its Chinese page (chapter 00), synced once with a memo."""
    book, notebooks = tmp_path / "book", tmp_path / "notebooks"
    (book / "zh").mkdir(parents=True)
    (notebooks / "zh").mkdir(parents=True)
    shutil.copy(BOOK / "00_setup.md", book / "00_demo.md")
    shutil.copy(BOOK / "zh" / "00_setup.md", book / "zh" / "00_demo.md")
    monkeypatch.setattr(sync_notebooks, "BOOK", book)
    monkeypatch.setattr(sync_notebooks, "NOTEBOOKS", notebooks)
    memo = tmp_path / "memo.json"
    sync_notebooks.sync(memo=SyncMemo(memo, common="v1"))
    assert zh_edition.problems(book, notebooks) == []
    return book, notebooks, memo


def resync(memo, replace=()):
    return sync_notebooks.sync(replace, memo=SyncMemo(memo, common="v1"))


def test_an_unchanged_book_is_not_converted_again(book, monkeypatch):
    _, _, memo = book

    def refuse(*args, **kwargs):
        raise AssertionError("converted a page whose inputs had not changed")

    monkeypatch.setattr(sync_notebooks, "notebook_text", refuse)
    monkeypatch.setattr(zh_sources, "with_english_code", refuse)
    assert resync(memo).written == []


def test_an_english_code_edit_reaches_both_notebooks_and_the_chinese_page(book):
    book_dir, notebooks, memo = book
    en = book_dir / "00_demo.md"
    en.write_text(en.read_text(encoding="utf-8").replace("set_seed(42)", "set_seed(43)", 1),
                  encoding="utf-8")
    resync(memo)
    for path in (notebooks / "00_demo.ipynb", notebooks / "zh" / "00_demo.ipynb",
                 book_dir / "zh" / "00_demo.md"):
        assert "set_seed(43)" in path.read_text(encoding="utf-8"), path
    assert zh_edition.problems(book_dir, notebooks) == []


def test_a_deleted_notebook_is_written_again(book):
    _, notebooks, memo = book
    (notebooks / "zh" / "00_demo.ipynb").unlink()
    resync(memo)
    assert (notebooks / "zh" / "00_demo.ipynb").exists()


def test_a_notebook_with_a_learners_work_is_reported_at_every_sync(book, capsys):
    _, notebooks, memo = book
    saved = notebooks / "00_demo.ipynb"
    saved.write_text(saved.read_text(encoding="utf-8").replace("set_seed(42)", "set_seed(7)"),
                     encoding="utf-8")
    for _ in range(2):
        resync(memo)
        assert "kept notebooks/00_demo.ipynb: changed by hand" in capsys.readouterr().out
    assert "set_seed(7)" in saved.read_text(encoding="utf-8")
