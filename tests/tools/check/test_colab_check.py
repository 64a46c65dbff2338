"""Tests for tools/check/colab_check.py: a notebook runs alone, offline, with no path into the repo.

The kernel here is the book's own Python (the Colab-like venv takes minutes to build; `make
colab-check` builds it); what is tested is the isolation around it.
"""

import sys
from pathlib import Path

import nbformat
import pytest

from tools.check.colab_check import network_isolation, run_alone

PYTHON = Path(sys.executable)


def notebook(tmp_path: Path, *sources: str) -> Path:
    path = tmp_path / "probe.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_self_contained_notebook_passes(tmp_path):
    ok, seconds, tail = run_alone(notebook(tmp_path, "import helpers", "print(1 + 1)"), PYTHON,
                                  timeout=120)
    assert ok, tail
    assert seconds > 0


def test_the_notebook_is_alone_in_its_folder(tmp_path):
    source = "import os; assert os.listdir('.') == ['probe.ipynb'], os.listdir('.')"
    ok, _, tail = run_alone(notebook(tmp_path, source), PYTHON, timeout=120)
    assert ok, tail


@pytest.mark.parametrize("source", [
    "open('../notebooks/00_setup.ipynb').read()",  # a repository file, by a relative path
    "open('README.md').read()",
    "import tools.build.chapter_format",  # a package only the repository checkout has
])
def test_a_notebook_that_needs_the_repository_fails(tmp_path, source):
    ok, _, tail = run_alone(notebook(tmp_path, source), PYTHON, timeout=120)
    assert not ok
    assert "Error" in tail


@pytest.mark.skipif(network_isolation() is None, reason="cutting the network needs root")
def test_the_network_is_cut(tmp_path):
    source = ("import socket\n"
              "try:\n"
              "    socket.create_connection(('pypi.org', 443), timeout=5)\n"
              "except OSError as e:\n"
              "    raise SystemExit(f'offline: {e}')\n")
    ok, _, tail = run_alone(notebook(tmp_path, source), PYTHON, timeout=120)
    assert not ok and "offline" in tail, tail


def test_the_colab_block_is_found_and_every_chapter_has_the_same():
    """make colab-check runs each chapter's own Colab block; the chapters share one."""
    from tools.check.colab_check import REPO_REQUIREMENT_RE, install_block

    chapters = sorted((Path(__file__).parents[3] / "notebooks").glob("*.ipynb"))
    blocks = {install_block(path) for path in chapters}
    assert len(blocks) == 1
    (block,) = blocks
    assert block.startswith("from importlib.metadata import version")
    assert REPO_REQUIREMENT_RE.search(block) and "torch=={version('torch')}" in block
    assert "%pip install -q {keep} " in block


def test_a_moved_torch_is_reported():
    from tools.check.colab_check import moved

    before = {"torch": "2.9.0+cu126", "torchvision": "0.24.0+cu126"}
    assert moved(before, dict(before)) == []
    assert moved(before, {**before, "torch": "2.14.1"}) == [
        "torch moved from 2.9.0+cu126 to 2.14.1"]
    assert moved(before, {**before, "torchvision": None}) == [
        "torchvision moved from 0.24.0+cu126 to None"]
