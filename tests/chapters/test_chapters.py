"""Every chapter follows the house structure (book/README.md)."""

from pathlib import Path

import jupytext
import pytest
import yaml

from tools.build.chapter_format import RUN_TIME_RE, chapters, exercise_labels

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = chapters()


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] for c in part["chapters"]]


def test_every_chapter_is_in_the_toc():
    listed = set(toc_files())
    assert CHAPTERS
    for chapter in CHAPTERS:
        assert f"book/{chapter.stem}" in listed, f"add book/{chapter.stem} to _toc.yml"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_structure(chapter):
    text = chapter.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="md:myst")
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    setup = code[0]
    assert "hide-input" in setup.metadata.get("tags", []), "the setup cell's code is folded"
    assert 'if "google.colab" in sys.modules' in setup.source
    spin = setup.source.find('os.environ.setdefault("GOMP_SPINCOUNT"')
    assert 0 <= spin < setup.source.find("import torch"), \
        "threads that sleep soon, set before torch is imported (a busy laptop)"
    assert "pick_device()" in setup.source and "set_seed(" in setup.source
    assert "print(last_verified(device))" in setup.source, "the page's last-verified line"
    number = chapter.name[:2]
    labels = exercise_labels(text)
    assert len(labels) >= 3, "at least three exercises"
    for label in labels:
        assert label.startswith(f"ex{number}-"), f"{label} should start with ex{number}-"
        assert f":::{{solution-start}} {label}\n:class: dropdown" in text, f"{label}: solution"
        assert f'check_exercise("{label}")' in text, f"{label}: automatic check"
    assert text.count(":::{solution-start}") == text.count(":::{solution-end}")
    assert "## Summary" in text and "**Where this comes from.**" in text
    assert RUN_TIME_RE.search(text), "state the chapter's CPU run time"
