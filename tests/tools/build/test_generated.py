"""tools/build/generated.py: no generator overwrites a file someone edited (make sync, make
student)."""

import json
import os
import shutil
import subprocess

import nbformat
import pytest

from tools.build import sync_notebooks as sync
from tools.build.generated import Generated
from tools.teach import student_edition


def test_a_new_file_is_written_and_an_unchanged_one_is_not_touched(tmp_path):
    target = tmp_path / "out" / "a.txt"
    generated = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert generated.write(target, "one") == "wrote"
    os.utime(target, (1, 1))
    assert generated.write(target, "one") == "unchanged"
    assert target.stat().st_mtime == 1  # Sphinx and make see nothing new
    generated.save()
    assert json.loads((tmp_path / "m.json").read_text()) == {
        "out/a.txt": __import__("hashlib").sha256(b"one").hexdigest()}


def test_what_the_generator_wrote_is_replaced_and_a_hand_edit_is_kept(tmp_path, capsys):
    target = tmp_path / "a.txt"
    first = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    first.write(target, "version 1")
    first.save()
    second = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert second.write(target, "version 2") == "wrote"  # the book changed, nobody edited
    second.save()
    target.write_text("version 2 + my notes")
    third = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert third.write(target, "version 3") == "kept"
    assert target.read_text() == "version 2 + my notes" and third.kept == [target]
    out = capsys.readouterr().out
    assert "kept a.txt: changed by hand since make demo wrote it" in out
    assert "make demo REPLACE=a.txt" in out  # the command that discards it on purpose
    third.save()  # a kept file's record stays: the edit is still recognised next time
    again = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert again.write(target, "version 3") == "kept"
    forced = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path,
                       replace=[target])
    assert forced.write(target, "version 3") == "wrote" and target.read_text() == "version 3"


def test_without_a_manifest_a_file_is_replaced_only_if_git_has_it(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    clean, edited = tmp_path / "clean.txt", tmp_path / "edited.txt"
    clean.write_text("as committed")
    edited.write_text("as committed")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    edited.write_text("as committed, then my work")
    untracked = tmp_path / "untracked.txt"
    untracked.write_text("someone's")
    generated = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert generated.write(clean, "new") == "wrote"  # a fresh clone: git keeps the old text
    assert generated.write(edited, "new") == "kept"
    assert generated.write(untracked, "new") == "kept"


def test_a_damaged_manifest_is_started_afresh_and_a_folder_is_refused(tmp_path, capsys):
    (tmp_path / "m.json").write_text("{not json")
    generated = Generated("make demo", manifest=tmp_path / "m.json", root=tmp_path)
    assert "unreadable" in capsys.readouterr().out
    assert generated.write(tmp_path / "new.txt", "x") == "wrote"
    (tmp_path / "dir.txt").mkdir()
    with pytest.raises(IsADirectoryError, match="is a folder"):
        generated.write(tmp_path / "dir.txt", "x")


def test_two_generators_saving_one_manifest_keep_both_records(tmp_path):
    one = Generated("make sync", manifest=tmp_path / "m.json", root=tmp_path)
    two = Generated("make student", manifest=tmp_path / "m.json", root=tmp_path)
    one.write(tmp_path / "a", "a")
    two.write(tmp_path / "b", "b")
    one.save()
    two.save()
    assert sorted(json.loads((tmp_path / "m.json").read_text())) == ["a", "b"]


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """book/ with chapter 01, notebooks/ made by make sync, student/ by make student."""
    book, notebooks = tmp_path / "book", tmp_path / "notebooks"
    book.mkdir()
    shutil.copy(sync.BOOK / "01_autograd.md", book / "01_autograd.md")
    monkeypatch.setattr(sync, "BOOK", book)
    monkeypatch.setattr(sync, "NOTEBOOKS", notebooks)
    sync.sync()
    student_edition.write_student_edition(tmp_path / "student", book)
    return tmp_path


def save_work(path):
    """What a learner does in Jupyter: add a cell, save."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("my_notes = 'mine'"))
    nbformat.write(notebook, path)
    return path.read_text()


def test_the_learners_saved_notebook_survives_make_sync_and_make_student(sandbox, capsys):
    saved = save_work(sandbox / "notebooks" / "01_autograd.ipynb")
    saved_student = save_work(sandbox / "student" / "01_autograd.ipynb")
    chapter = sandbox / "book" / "01_autograd.md"
    chapter.write_text(chapter.read_text() + "\nA new paragraph.\n")  # the book changes
    capsys.readouterr()
    generated = sync.sync()
    written = student_edition.write_student_edition(sandbox / "student", sandbox / "book")
    assert (sandbox / "notebooks" / "01_autograd.ipynb").read_text() == saved
    assert (sandbox / "student" / "01_autograd.ipynb").read_text() == saved_student
    assert generated.kept == [sandbox / "notebooks" / "01_autograd.ipynb"] and written == []
    out = capsys.readouterr().out
    assert "kept notebooks/01_autograd.ipynb" in out and "make sync REPLACE=" in out
    assert "kept student/01_autograd.ipynb" in out and "make student REPLACE=" in out
    assert any("stale" in p for p in sync.problems())  # the check still says it differs
    sync.sync(replace=[sandbox / "notebooks" / "01_autograd.ipynb"])
    assert "A new paragraph." in (sandbox / "notebooks" / "01_autograd.ipynb").read_text()
