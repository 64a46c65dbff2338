"""notebooks/ must be exactly what `make sync` makes from book/ (no outputs, not stale)."""

import json
import shutil

import pytest

from tools.build import sync_notebooks as sync


def test_repository_is_in_sync():
    assert sync.chapters(), "book/ has no chapters"
    assert sync.problems() == [], "run `make sync` and commit notebooks/"


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    book, notebooks = tmp_path / "book", tmp_path / "notebooks"
    book.mkdir()
    notebooks.mkdir()
    shutil.copy(sync.chapters()[0], book / "00_demo.md")
    monkeypatch.setattr(sync, "BOOK", book)
    monkeypatch.setattr(sync, "NOTEBOOKS", notebooks)
    sync.sync()
    assert sync.problems() == []
    return book, notebooks


def test_missing_notebook_is_found(sandbox):
    _, notebooks = sandbox
    (notebooks / "00_demo.ipynb").unlink()
    assert sync.problems() == ["00_demo.ipynb: missing"]


def test_stale_notebook_is_found(sandbox):
    book, _ = sandbox
    chapter = book / "00_demo.md"
    chapter.write_text(chapter.read_text() + "\n```{code-cell} ipython3\nprint('new')\n```\n")
    assert sync.problems() == ["00_demo.ipynb: stale or has outputs (differs from 00_demo.md)"]


def test_outputs_are_found(sandbox):
    _, notebooks = sandbox
    path = notebooks / "00_demo.ipynb"
    nb = json.loads(path.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}]
    path.write_text(json.dumps(nb, indent=1))
    assert sync.problems() == ["00_demo.ipynb: stale or has outputs (differs from 00_demo.md)"]


def test_orphan_notebook_is_found(sandbox):
    _, notebooks = sandbox
    shutil.copy(notebooks / "00_demo.ipynb", notebooks / "99_gone.ipynb")
    assert sync.problems() == ["99_gone.ipynb: no chapter in book/"]


def test_wrong_install_line_is_found_and_fixed(sandbox):
    book, _ = sandbox
    chapter = book / "00_demo.md"
    text = chapter.read_text()
    chapter.write_text(text.replace(sync.install_line(),
                                    '%pip install -q {keep} "pytorch-book-helpers @ git+https://x/y"'))
    assert "00_demo.md: Colab install line differs from _config.yml" in sync.problems()
    sync.sync()
    assert chapter.read_text() == text and sync.problems() == []


def test_install_line_comes_from_config(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/me/fork/\n  branch: dev\n")
    assert sync.install_line(config) == (
        '%pip install -q {keep} "pytorch-book-helpers @ git+https://github.com/me/fork.git@dev"')
    config.write_text("repository:\n  url: git@github.com:me/fork\n")
    with pytest.raises(ValueError, match="https URL"):
        sync.install_line(config)


def test_the_install_line_pins_the_torch_that_is_there():
    """The chapters' Colab block, run in IPython as Colab runs it, up to pip: `keep` names the
    installed versions and the magic's {keep} expands to them, so pip cannot move torch or
    torchvision. A misspelt name is left unexpanded, which pip refuses as a requirement."""
    from IPython.core.interactiveshell import InteractiveShell

    from tools.check.colab_check import install_block

    block = install_block(sync.NOTEBOOKS / "00_setup.ipynb")
    setup, magic = block.rsplit("\n%pip ", 1)
    magic = "%pip " + magic.strip()
    assert magic == sync.install_line()
    shell = InteractiveShell.instance()
    installed = {"torch": "2.9.0+cu126", "torchvision": "0.24.0+cu126"}
    namespace = {"version": installed.__getitem__}
    exec(setup.replace("from importlib.metadata import version", ""), namespace)
    shell.user_ns.update(namespace)
    assert shell.var_expand(magic).startswith(
        "%pip install -q torch==2.9.0+cu126 torchvision==0.24.0+cu126 "), shell.var_expand(magic)
    assert "{kep}" in shell.var_expand(magic.replace("{keep}", "{kep}"))
