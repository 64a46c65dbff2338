"""book/_ext/cache_records.py: a page is read again when its jupyter-cache record changes,
though its source did not (the Chinese pages, and a chapter nbmake executed again)."""

from pathlib import Path
from types import SimpleNamespace

import nbformat
from cache_records import _outdated
from jupyter_cache import get_cache
from myst_nb.core.read import read_myst_markdown_notebook

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
# A chapter

```{code-cell} ipython3
print(1)
```
"""


def fixture(tmp_path: Path):
    (tmp_path / "chapter.md").write_text(PAGE, encoding="utf-8")
    (tmp_path / "prose.md").write_text("# Prose only\n", encoding="utf-8")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    app = SimpleNamespace(config=SimpleNamespace(nb_execution_cache_path=str(cache_dir)),
                          outdir=str(tmp_path / "out"))
    env = SimpleNamespace(found_docs={"chapter", "prose"},
                          doc2path=lambda name: str(tmp_path / f"{name}.md"))

    def execute() -> None:  # what make nbmake (tools/build/cache_executed.py) stores
        notebook = read_myst_markdown_notebook(PAGE)
        notebook.cells[-1].outputs = [nbformat.v4.new_output("stream", text="1\n")]
        path = tmp_path / "executed.ipynb"
        nbformat.write(notebook, path)
        get_cache(str(cache_dir)).cache_notebook_file(str(path), check_validity=False,
                                                      overwrite=True)

    return app, env, execute


def outdated(app, env, changed=frozenset()) -> list[str]:
    return _outdated(app, env, set(), set(changed), set())


def test_a_page_is_read_again_when_its_record_changes(tmp_path):
    app, env, execute = fixture(tmp_path)
    assert outdated(app, env) == []  # the first build reads every page anyway
    assert outdated(app, env) == []  # nothing changed
    execute()
    assert outdated(app, env) == ["chapter"]  # a record appeared: the outputs are new
    assert outdated(app, env) == []
    execute()  # the same code executed again (a new record)
    assert outdated(app, env) == ["chapter"]
    assert outdated(app, env) == []  # and the prose page never is


def test_no_cache_folder_marks_nothing(tmp_path):
    app, env, _ = fixture(tmp_path)
    app.config.nb_execution_cache_path = str(tmp_path / "absent")
    assert outdated(app, env) == [] and outdated(app, env) == []
