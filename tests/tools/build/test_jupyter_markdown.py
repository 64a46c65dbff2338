"""The notebooks a learner opens are written in Jupyter's markdown
(tools/build/jupyter_markdown.py): no MyST role or directive left, glued numbers shown as the
book's run's numbers, solutions folded. Checked on every notebook ``make sync``, ``make
student`` and ``make lab`` write, in both languages, and on planted faults."""

import json

import nbformat
import pytest

from tools.build.book_run import BookRun
from tools.build.chapter_format import (
    BOOK,
    ZH,
    chapters,
    ipynb_from_myst,
    notebook_for,
    solution_code,
)
from tools.build.jupyter_markdown import CHECK_TITLE, MARK, MystLeft, myst_left, site_url
from tools.teach import lab
from tools.teach.student_edition import write_student_edition

RUN = BookRun("2026-12-06, cpu (2 threads), torch 2.14.1", {"loss": "0.123456", "n": "42",
                                                           "name": "'cuda'"})


def folded(cell: dict) -> bool:
    return (cell["metadata"].get("jupyter", {}).get("source_hidden") is True
            and cell["metadata"].get("cellView") == "form")


def notebook_problems(text: str, solutions: list[str]) -> list[str]:
    """What a learner's notebook must not have: MyST in a markdown cell, a solution's code
    cell (``solutions``: their sources) or a cell the site folds (``hide-input``, but the
    setup cell) that is not folded for JupyterLab and for Colab, or a setup cell folded."""
    found = []
    cells = json.loads(text)["cells"]
    setup = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            found += [f"cell {index}: MyST {left!r}" for left in myst_left(source)]
        elif source in solutions and not folded(cell):
            found.append(f"cell {index}: solution not folded")
        elif index != setup and "hide-input" in cell["metadata"].get("tags", []) \
                and not folded(cell):
            found.append(f"cell {index}: hide-input cell not folded")
        elif index == setup and folded(cell):
            found.append(f"cell {index}: the setup cell is folded")
    return found


def solutions_of(page) -> list[str]:
    return [s for sources in solution_code(page.read_text(encoding="utf-8")).values()
            for s in sources]


PAGES = chapters(BOOK) + chapters(BOOK / ZH)


def test_every_chapter_has_solutions_to_fold():
    assert all(solutions_of(page) for page in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebooks_make_sync_wrote_are_plain_jupyter(page):
    zh = page.parent.name == ZH
    target = notebook_for(page, BOOK.parent / "notebooks" / (ZH if zh else ""))
    text = target.read_text(encoding="utf-8")
    assert notebook_problems(text, solutions_of(page)) == []
    hidden = sum("hide-input" in c["metadata"].get("tags", []) and not
                 c["source"][0].startswith("import ") for c in json.loads(text)["cells"]
                 if c["cell_type"] == "code")
    assert text.count('"source_hidden": true') == len(solutions_of(page)) + hidden, \
        "every solution code cell and every hide-input cell but the setup cell, only those"


def test_student_and_lab_notebooks_are_plain_jupyter(tmp_path):
    written = write_student_edition(tmp_path / "student")
    assert len(written) == len(PAGES)
    for path in written:
        assert notebook_problems(path.read_text(encoding="utf-8"), []) == [], path
    for lang in ("en", ZH):
        for edition in ("book", "student"):
            folder = lab.workspace_for(lang, edition, tmp_path / "workspace")
            lab.fill_workspace(folder, lab.book_versions(lang, edition))
            for page in chapters(BOOK / ZH if lang == ZH else BOOK):
                copy = folder / page.with_suffix(".ipynb").name
                solutions = solutions_of(page) if edition == "book" else []
                assert notebook_problems(copy.read_text(encoding="utf-8"), solutions) == [], copy


def test_a_planted_glue_role_and_an_unfolded_solution_are_found():
    page = BOOK / "01_autograd.md"
    nb = json.loads((BOOK.parent / "notebooks" / "01_autograd.ipynb").read_text())
    solutions = solutions_of(page)
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    markdown["source"] = ["the loss falls to {glue:text}`c13_last:.3f` here"]
    solution = next(c for c in nb["cells"] if "".join(c["source"]) in solutions)
    del solution["metadata"]["jupyter"]
    found = notebook_problems(json.dumps(nb), solutions)
    assert any("{glue:text}`c13_last:.3f`" in f for f in found), found
    assert any("solution not folded" in f for f in found), found
    assert len(found) == 2, found


def test_a_hide_input_cell_unfolded_or_a_folded_setup_cell_is_found():
    nb = json.loads((BOOK.parent / "notebooks" / "05_debugging.ipynb").read_text())
    figure = next(c for c in nb["cells"][3:] if "hide-input" in c["metadata"].get("tags", []))
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert folded(figure) and not folded(setup)
    figure["metadata"].pop("cellView")
    setup["metadata"].update(cellView="form", jupyter={"source_hidden": True})
    found = notebook_problems(json.dumps(nb), [])
    assert len(found) == 2 and "setup cell is folded" in found[0] \
        and "hide-input cell not folded" in found[1], found


@pytest.mark.parametrize("planted", [
    ":::{note}\ntext\n:::", "{ref}`a-section`", "% a comment", "(a-target)=",
    "```{code-cell} ipython3\nx\n```", ":class: dropdown"])
def test_myst_left_finds_each_construct(planted):
    assert myst_left(f"before\n\n{planted}\n\nafter")


def test_code_is_not_taken_for_myst():
    assert myst_left("use `cuda:{local_rank}`, and `{x}` here\n\n```python\n{a}`b`\n```") == []
    assert myst_left("a role {a}`b` outside code") == ["{a}`b`"]


def convert(body: str, language: str = "en", stem: str | None = "03_training") -> list[dict]:
    text = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "---\n\n# 03 · Title\n\n```{code-cell} ipython3\nsetup = 1\n```\n\n" + body)
    return json.loads(ipynb_from_myst(text, language=language, stem=stem, book_run=RUN))["cells"]


def sources(cells: list[dict]) -> list[str]:
    return ["".join(c["source"]) for c in cells]


def test_glued_numbers_become_the_book_runs_numbers_marked():
    cells = convert("Loss {glue:text}`loss:.3f`, {glue:text}`n` steps, on {glue:text}`name`.\n")
    assert sources(cells)[-1] == f"Loss 0.123{MARK}, 42{MARK} steps, on cuda{MARK}."
    about = sources(cells)[1]
    assert RUN.run in about and MARK in about and site_url() + "03_training.html" in about


def test_a_glued_number_without_a_recorded_value_is_refused():
    with pytest.raises(MystLeft, match="make record-run"):
        convert("Loss {glue:text}`missing:.3f`.\n")


def test_no_glued_number_no_note_about_them():
    about = sources(convert("Plain text.\n"))[1]
    assert MARK not in about and "executable PyTorch book" in about


def test_admonitions_become_details_or_quotes():
    cells = sources(convert(":::{admonition} Why\n:class: dropdown\n\nBecause $x^2$.\n:::\n\n"
                            ":::{note}\nMind this.\n:::\n"))
    assert "<details>\n<summary>Why</summary>\n\nBecause $x^2$.\n\n</details>" in cells[-1]
    assert "> **Note**\n>\n> Mind this." in cells[-1]


@pytest.mark.parametrize("body", [":::{figure} a.png\n:::\n", "See {numref}`fig-a`.\n"])
def test_an_unknown_construct_is_refused_not_leaked(body):
    with pytest.raises(MystLeft, match="add one to tools/build/jupyter_markdown.py"):
        convert(body)


def test_comments_and_targets_go_code_stays():
    code = "```python\ndef f():\n    pass\n\n\nx = '{glue:text}`loss`'\n% not a comment\n```"
    cells = sources(convert(f"% by construction: 0.95\n(my-target)=\n## Head\n\n{code}\n"))
    assert cells[-1] == f"## Head\n\n{code}"


def test_links_point_at_the_site_page_and_section():
    body = "See [chapter 07](07_memory.md#mixed-precision) and [above](#a-section).\n"
    en, zh = sources(convert(body))[-1], sources(convert(body, language=ZH))[-1]
    assert f"]({site_url()}07_memory.html#mixed-precision)" in en
    assert f"]({site_url()}03_training.html#a-section)" in en
    assert f"]({site_url()}zh/07_memory.html#mixed-precision)" in zh


EXERCISE = """## Exercises

:::{exercise}
:label: ex03-1
Write `f`.
:::

:::{solution-start} ex03-1
:class: dropdown
:::

Think of $x$.

```{code-cell} ipython3
# @title Solution to ex03-1
def f():
    return 1
```

:::{solution-end}
:::

```{code-cell} ipython3
with check_exercise("ex03-1"):
    assert f() == 1
```
"""


def test_an_exercise_its_folded_solution_and_its_open_check():
    cells = convert(EXERCISE)
    text = sources(cells)
    assert text[3] == "## Exercises\n\n**Exercise ex03-1.** Write `f`."
    assert text[4].startswith("**Solution to ex03-1**: try the exercise first.")
    assert text[5].startswith("<details>\n<summary>") and "Think of $x$." in text[5]
    solution, check = cells[6], cells[7]
    assert solution["metadata"]["jupyter"] == {"source_hidden": True}
    assert solution["metadata"]["cellView"] == "form"
    assert "jupyter" not in check["metadata"] and "check_exercise" in text[7]
    assert len(cells) == 8  # the solution-end cell is gone
    assert "jupyter" not in cells[2]["metadata"]  # the setup cell is no solution
    zh = sources(convert(EXERCISE, language=ZH))
    assert zh[3].endswith("**练习 ex03-1.** Write `f`.") and "参考答案" in zh[4]


def test_a_solution_cell_without_its_title_is_refused():
    """JupyterLab shows a folded cell's first line: without the title, the answer's."""
    with pytest.raises(MystLeft, match="must start with '# @title Solution to ex03-1'"):
        convert(EXERCISE.replace("# @title Solution to ex03-1\n", ""))


def test_a_solution_without_its_end_is_refused():
    with pytest.raises(MystLeft, match="no solution-end"):
        convert(EXERCISE.split(":::{solution-end}")[0])


def test_the_notebook_still_runs_its_solution(tmp_path):
    nb = nbformat.reads(ipynb_from_myst(
        "# T\n\n```{code-cell} ipython3\nfrom helpers import check_exercise\n```\n\n"
        + EXERCISE, book_run=RUN), as_version=4)
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=60, kernel_name="python3").execute(cwd=str(tmp_path))
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.outputs)
    assert "ex03-1" in outputs and "passed" in outputs, outputs


CHECK = """The lesson.

```{code-cell} ipython3
:tags: [hide-input]

# @title How this is checked
with claim("C01", "one"):
    assert 1 == 1
```
"""


def test_a_check_cell_is_folded_and_must_name_itself():
    """A folded cell without its '# @title' line would show its first code line in
    JupyterLab and an untitled form on Colab: refused."""
    check = convert(CHECK)[-1]
    assert check["metadata"]["jupyter"] == {"source_hidden": True}
    assert check["metadata"]["cellView"] == "form"
    assert "".join(check["source"]).startswith(CHECK_TITLE + "\n")
    with pytest.raises(MystLeft, match="must start with a '# @title' line"):
        convert(CHECK.replace(CHECK_TITLE + "\n", ""))
