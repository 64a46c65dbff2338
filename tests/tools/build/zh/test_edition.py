"""The Chinese edition (book/zh/) stays in step with the English one: the same code, byte for
byte; the same structure; Chinese in every markdown cell; a translation that is not stale.

Each check is shown to fail in a sandbox copy, as tests/tools/build/test_sync_notebooks.py does for
notebooks/.
"""

import importlib.util
import json
import re
import shutil
import sys

import pytest
import yaml

from tools.build import sync_notebooks
from tools.build.chapter_format import BOOK, ROOT
from tools.build.generated import Generated
from tools.build.zh import edition as zh_edition

CODE_CELL = "```{code-cell} ipython3\n"


def pairs():
    """(page, name, its text, the English page's text) for each Chinese page."""
    for page in zh_edition.pages():
        yield (page, f"book/zh/{page.name}", page.read_text(encoding="utf-8"),
               (BOOK / page.name).read_text(encoding="utf-8"))


def test_the_chinese_code_is_the_english_code():
    assert zh_edition.pages(), "book/zh/ has no pages"
    assert zh_edition.sync_problems() == [], "run `make sync` (never edit code in book/zh/)"


def test_the_chinese_pages_have_the_english_structure_in_chinese():
    found = []
    for page, name, zh_text, en_text in pairs():
        found += zh_edition.structure_problems(zh_text, en_text, name)
        found += zh_edition.cjk_problems(zh_text, name)
        found += zh_edition.line_break_problems(zh_text, name, page)
    assert found == []


def test_no_translation_is_stale():
    """A stale page: translate the English sections named, then stamp it (the message says
    how). The English change and its translation land together."""
    found = []
    for page, name, zh_text, en_text in pairs():
        found += zh_edition.stale_problems(zh_text, en_text, name, page)
    assert found == []


def test_all_checks_together_are_what_tools_zh_edition_check_reports():
    assert zh_edition.problems() == []


def test_every_chinese_chapter_has_an_english_one_and_a_notebook():
    for page in zh_edition.pages():
        assert (BOOK / page.name).exists(), page
        if zh_edition.is_chapter(page):
            assert zh_edition.notebook_for(page).exists(), page


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """book/00_demo.md + book/zh/00_demo.md (chapter 00 in both languages) and the intro."""
    book, notebooks = tmp_path / "book", tmp_path / "notebooks"
    (book / "zh").mkdir(parents=True)
    notebooks.mkdir()
    shutil.copy(BOOK / "00_setup.md", book / "00_demo.md")
    shutil.copy(BOOK / "zh" / "00_setup.md", book / "zh" / "00_demo.md")
    shutil.copy(BOOK / "intro.md", book / "intro.md")
    shutil.copy(BOOK / "zh" / "intro.md", book / "zh" / "intro.md")
    zh_edition.sync(book, notebooks)
    assert zh_edition.problems(book, notebooks) == []
    return book, notebooks


def edit(path, old, new, count=1):
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, count), encoding="utf-8")


# ---------------------------------------------------------------------------- code identity
def test_edited_code_in_the_chinese_chapter_is_found_kept_and_replaced_on_request(
        sandbox, capsys):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    before = zh.read_text(encoding="utf-8")
    edit(zh, "set_seed(42)\nfirst = draw()", "set_seed(7)\nfirst = draw()")
    edited = zh.read_text(encoding="utf-8")
    found = zh_edition.problems(book, notebooks)
    assert any(re.search(r"book/zh/00_demo.md: code cell\(s\) \d+ differ", p) for p in found)
    zh_edition.sync(book, notebooks)  # a hand edit of a code cell is not lost without a word
    assert zh.read_text(encoding="utf-8") == edited
    assert "kept book/zh/00_demo.md: changed by hand" in capsys.readouterr().out
    generated = Generated("make sync", manifest=book.parent / ".generated.json",
                          root=book.parent, replace=[zh])
    zh_edition.sync(book, notebooks, generated)
    assert zh.read_text(encoding="utf-8") == before
    assert zh_edition.problems(book, notebooks) == []


def test_prose_edits_keep_flowing_and_empty_placeholder_cells_are_filled(sandbox):
    book, notebooks = sandbox
    zh, en = book / "zh" / "00_demo.md", book / "00_demo.md"
    edit(zh, "\n\n", "\n\n译者的一段话。\n\n", count=1)  # a translator's prose edit
    edit(en, "set_seed(42)\nfirst = draw()", "set_seed(43)\nfirst = draw()")
    zh_edition.sync(book, notebooks)  # code from English, the prose edit stays
    text = zh.read_text(encoding="utf-8")
    assert "set_seed(43)" in text and "译者的一段话。" in text
    # a new English cell: the translator adds an empty one, and sync fills it
    en.write_text(en.read_text(encoding="utf-8") + "\n```{code-cell} ipython3\nprint('new')\n```\n",
                  encoding="utf-8")
    with pytest.raises(zh_edition.CodeCellsMismatch, match="leave it empty"):
        zh_edition.sync(book, notebooks)
    zh.write_text(zh.read_text(encoding="utf-8") + "\n```{code-cell} ipython3\n\n```\n",
                  encoding="utf-8")
    zh_edition.sync(book, notebooks)
    assert "print('new')" in zh.read_text(encoding="utf-8")
    assert zh_edition.sync_problems(book, notebooks) == []


def test_a_different_tag_is_a_different_cell(sandbox):
    book, notebooks = sandbox
    edit(book / "zh" / "00_demo.md", ":tags: [hide-input]\n", "")
    assert "book/zh/00_demo.md: code cell(s) 1 differ from the English chapter's; run " \
           "`make sync`" in zh_edition.problems(book, notebooks)


def test_english_code_changes_reach_the_chinese_chapter_and_its_notebook(sandbox):
    book, notebooks = sandbox
    edit(book / "00_demo.md", "set_seed(42)\nfirst = draw()", "set_seed(43)\nfirst = draw()")
    found = zh_edition.problems(book, notebooks)
    assert any("code cell(s)" in p for p in found), found
    assert not any("stale:" in p or "is stale" in p for p in found), "code is not translated"
    zh_edition.sync(book, notebooks)
    assert "set_seed(43)" in (book / "zh" / "00_demo.md").read_text(encoding="utf-8")
    assert "set_seed(43)" in (notebooks / "zh" / "00_demo.ipynb").read_text(encoding="utf-8")
    assert zh_edition.problems(book, notebooks) == []


def test_a_missing_code_cell_is_refused_with_a_clear_message(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    text = zh.read_text(encoding="utf-8")
    start = text.rindex(CODE_CELL)
    end = text.index("```\n", start + len(CODE_CELL)) + 4
    zh.write_text(text[:start] + text[end:], encoding="utf-8")
    cut = zh.read_text(encoding="utf-8")
    n = text.count(CODE_CELL)
    with pytest.raises(zh_edition.CodeCellsMismatch,
                       match=rf"has {n - 1} code cells and the English chapter {n}"):
        zh_edition.sync(book, notebooks)
    assert zh.read_text(encoding="utf-8") == cut, "a refused sync changes nothing"
    assert f"book/zh/00_demo.md: {n - 1} code cells, the English chapter has {n}" in \
        zh_edition.problems(book, notebooks)


def test_kernelspec_must_be_the_english_one(sandbox):
    book, notebooks = sandbox
    edit(book / "zh" / "00_demo.md", "display_name: Python 3", "display_name: Python 3 (zh)")
    assert any("front matter (jupytext header, kernelspec) differs" in p
               for p in zh_edition.problems(book, notebooks))


# ------------------------------------------------------------------------------ notebooks/zh
def test_notebooks_zh_missing_stale_outputs_orphan(sandbox):
    book, notebooks = sandbox
    path = notebooks / "zh" / "00_demo.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}]
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    assert zh_edition.problems(book, notebooks) == [
        "zh/00_demo.ipynb: stale or has outputs (differs from book/zh/00_demo.md)"]
    shutil.copy(path, notebooks / "zh" / "99_gone.ipynb")
    path.unlink()
    assert zh_edition.problems(book, notebooks) == [
        "zh/00_demo.ipynb: missing", "zh/99_gone.ipynb: no chapter in zh/"]


def test_the_notebook_has_the_colab_install_line_and_no_translation_record(sandbox):
    _, notebooks = sandbox
    nb = json.loads((notebooks / "zh" / "00_demo.ipynb").read_text(encoding="utf-8"))
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert sync_notebooks.install_line() in "".join(setup["source"])
    assert "translation" not in nb["metadata"]
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_make_sync_check_covers_the_chinese_edition(sandbox, monkeypatch):
    book, notebooks = sandbox
    monkeypatch.setattr(sync_notebooks, "BOOK", book)
    monkeypatch.setattr(sync_notebooks, "NOTEBOOKS", notebooks)
    sync_notebooks.sync()
    assert sync_notebooks.problems() == []
    (notebooks / "zh" / "00_demo.ipynb").unlink()
    assert sync_notebooks.problems() == ["zh/00_demo.ipynb: missing"]
    sync_notebooks.sync()
    assert sync_notebooks.problems() == []


# ------------------------------------------------------------------------------- structure
def test_a_missing_heading_is_found(sandbox):
    book, notebooks = sandbox
    edit(book / "zh" / "00_demo.md", "### 安装你想要的 wheel 包\n\n", "")
    counts = [m.groups() for p in zh_edition.problems(book, notebooks) if (m := re.match(
        r"book/zh/00_demo.md: (\d+) headings, .* the English page has (\d+)", p))]
    assert len(counts) == 1 and int(counts[0][1]) == int(counts[0][0]) + 1, counts


def test_exercise_labels_and_claim_ids_must_match(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    edit(zh, ":label: ex00-2\n", ":label: ex00-9\n")
    edit(book / "00_demo.md", "an error points at the line that caused it.",
         "an error points at the line that caused it (C39).")  # the English prose names one
    found = zh_edition.problems(book, notebooks)
    assert "book/zh/00_demo.md: exercise labels ['ex00-1', 'ex00-9', 'ex00-3'], the English " \
           "page has ['ex00-1', 'ex00-2', 'ex00-3']" in found
    assert "book/zh/00_demo.md: the text names claims [], the English text ['C39']" in found


def test_an_untranslated_cell_is_found(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    text = zh.read_text(encoding="utf-8")
    start = text.index("NumPy 数组默认是 float64")
    end = text.index("\n", text.index("dtype=torch.float32)`。", start))
    zh.write_text(text[:start] + "NumPy arrays are float64 by default, PyTorch tensors float32."
                  + text[end:], encoding="utf-8")
    found = zh_edition.problems(book, notebooks)
    assert [p for p in found if "has no Chinese" in p] == [
        "book/zh/00_demo.md: markdown cell 15 has no Chinese: 'NumPy arrays are float64 by "
        "default, PyTorch tensors float32'"]


@pytest.mark.parametrize("cell, needs", [
    (":::{solution-end}\n:::", False),
    ("$$\\nabla_w L = 2x(wx - y)$$", False),
    ("[ex00-1](#ex00-1)", False),
    ("+++ {\"tags\": []}\n$a + b$", False),
    ("`h` has 16 features.", True),
    (":::{exercise}\n:label: ex00-1\n\nWrite a class.\n:::", True),
])
def test_what_needs_translating(cell, needs):
    assert zh_edition.needs_translation(cell) is needs


# ------------------------------------------------------------------------------- staleness
def test_a_changed_english_section_makes_the_translation_stale(sandbox):
    book, notebooks = sandbox
    edit(book / "00_demo.md", "Seeding only\ntorch leaves the other two running on.",
         "Seeding only\ntorch leaves the other two generators running on.")
    edit(book / "intro.md", "## How to read it\n\n", "## How to read it\n\nSlowly.\n\n")
    found = zh_edition.problems(book, notebooks)
    assert found == [
        'book/zh/intro.md is stale: the English text changed since it was translated, in '
        '"## How to read it" (changed); translate the change, then run '
        '`python -m tools.build.zh.edition stamp intro`',
        'book/zh/00_demo.md is stale: the English text changed since it was translated, in '
        '"## Seeding: a first look" (changed); translate the change, then run '
        '`python -m tools.build.zh.edition stamp 00_demo`']
    for page in zh_edition.pages(book):
        zh_edition.stamp(page, book)
    assert zh_edition.problems(book, notebooks) == []
    assert zh_edition.sync_problems(book, notebooks) == [], "stamping leaves notebooks as they are"


def test_new_and_removed_english_sections_are_named(sandbox):
    book, notebooks = sandbox
    edit(book / "00_demo.md", "## Seeding: a first look", "## Seeds: a first look")
    stale = [p for p in zh_edition.problems(book, notebooks) if "is stale" in p]
    assert stale == [
        'book/zh/00_demo.md is stale: the English text changed since it was translated, in '
        '"## Seeds: a first look" (new in English), "## Seeding: a first look" (gone from '
        'English); translate the change, then run `python -m tools.build.zh.edition stamp 00_demo`']


def test_a_page_without_a_record_is_named(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "intro.md"
    zh.write_text(zh_edition.split_front_matter(zh.read_text(encoding="utf-8"))[2],
                  encoding="utf-8")
    assert zh_edition.problems(book, notebooks) == [
        "book/zh/intro.md: no `translation:` record in its front matter; once it translates "
        "the English page, run `python -m tools.build.zh.edition stamp intro`"]


def test_the_record_hashes_the_markdown_only():
    english = (BOOK / "00_setup.md").read_text(encoding="utf-8")
    recoded = english.replace("print(last_verified(device))", "print('ok')", 1)
    assert recoded != english
    assert zh_edition.digest(recoded) == zh_edition.digest(english)
    titles = [entry.split(" ", 1)[1] for entry in zh_edition.digest(english)["sections"]]
    assert titles[:2] == ["# 00 · Setting up: eager PyTorch, wheels, devices",
                          "## Eager execution: the graph is built while your code runs"]


# --------------------------------------------------------------------- the Chinese book's build
def test_the_chinese_config_is_the_english_one_but_for_its_own_settings():
    english = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    chinese = zh_edition.zh_config()
    own = {"title", "exclude_patterns", "execute", "repository", "sphinx"}
    assert {k: v for k, v in chinese.items() if k not in own} == \
        {k: v for k, v in english.items() if k not in own}
    assert chinese["execute"] == {**english["execute"],
                                  "cache": str(ROOT / english["execute"]["cache"])}
    assert chinese["repository"] == {**english["repository"], "path_to_book": "book/zh"}
    sphinx_en, sphinx_zh = english["sphinx"], chinese["sphinx"]
    assert sphinx_zh["extra_extensions"] == sphinx_en["extra_extensions"]
    assert set(sphinx_zh["local_extensions"]) == set(sphinx_en["local_extensions"])
    differ = {k for k in sphinx_en["config"] if sphinx_zh["config"][k] != sphinx_en["config"][k]}
    assert differ == {"html_static_path", "language_link_label", "language_link_hreflang",
                      "language_link_other_source", "language_link_other_url"}
    assert [p.replace(str(ROOT) + "/", "") for p in sphinx_zh["config"]["html_static_path"]] \
        == sphinx_en["config"]["html_static_path"]
    assert sphinx_zh["config"]["language"] == "zh_CN"
    assert sphinx_zh["config"]["html_search_language"] == "zh"
    assert importlib.util.find_spec("jieba"), "Sphinx's Chinese search needs jieba"


def test_the_chinese_toc_lists_the_translated_pages_in_the_english_order():
    toc = zh_edition.zh_toc()
    english = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    assert toc["root"] == "intro" and toc["format"] == english["format"]
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    order = [c["file"].removeprefix("book/") for part in english["parts"]
             for c in part["chapters"]]
    only_chinese = [p.stem for p in zh_edition.appendices() if p.stem not in order]
    assert files == [f for f in order if (BOOK / "zh" / f"{f}.md").exists()] + only_chinese
    assert "00_setup" in files and "appendix_glossary" in only_chinese
    assert toc["parts"][-1]["caption"] == "附录" and files[-1] == "appendix_glossary"


def test_language_link_and_colab_urls():
    sys.path.insert(0, str(BOOK / "_ext"))
    try:
        from colab_notebooks import colab_url_for
        from language_links import counterpart_href
    finally:
        sys.path.remove(str(BOOK / "_ext"))
    assert counterpart_href("book/00_setup", "zh/") == "../zh/00_setup.html"
    assert counterpart_href("00_setup", "../book/") == "../book/00_setup.html"
    url = "https://colab.research.google.com/github/o/r/blob/main/book/zh/00_setup.md"
    assert colab_url_for(url, "00_setup", "notebooks/zh") == (
        "https://colab.research.google.com/github/o/r/blob/main/notebooks/zh/00_setup.ipynb")


# ------------------------------------------------------------------------------ line breaks
def test_a_line_break_inside_chinese_text_is_found_and_unwrap_joins_it(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    before = zh.read_text(encoding="utf-8")
    edit(zh, "检查单元格，告诉你的答案是否可行。", "检查单元格，\n告诉你的答案是否可行。")
    line = zh.read_text(encoding="utf-8").split("\n").index("告诉你的答案是否可行。在学生版中，"
                                                          "答案被删去，检查单元格会一直显示 "
                                                          "`not yet`，直到你的答案通过。")
    assert [p for p in zh_edition.problems(book, notebooks) if "ipynb" not in p] == [
        f"book/zh/00_demo.md: 1 line(s) ({line}) break Chinese text, which a browser shows as "
        "a space; write each paragraph on one line (`python -m tools.build.zh.edition unwrap "
        "00_demo` joins them)"]
    assert zh_edition.unwrap(zh.read_text(encoding="utf-8")) == before


@pytest.mark.parametrize("text, joined", [
    ("用 `x`\n调用它。", "用 `x` 调用它。"),
    ("调用\n`f(x)`，然后", "调用 `f(x)`，然后"),
    ("第一句。\n第二句", "第一句。第二句"),
    ("English\nwraps here", "English\nwraps here"),
    ("表格：\n\n| a | b |\n| 中 | 文 |", "表格：\n\n| a | b |\n| 中 | 文 |"),
    ("列表：\n- 一\n- 二", "列表：\n- 一\n- 二"),
    ("```python\n# 中\nx = 1\n```", "```python\n# 中\nx = 1\n```"),
])
def test_unwrap(text, joined):
    assert zh_edition.unwrap(text) == joined


# ------------------------------------------------------------------------------- links
def test_links_to_english_sections_get_the_chinese_anchors_and_the_rest_is_reported(sandbox):
    book, notebooks = sandbox
    zh = book / "zh" / "00_demo.md"
    en_anchor = "eager-execution-the-graph-is-built-while-your-code-runs"
    zh.write_text(zh.read_text(encoding="utf-8") + (
        f"\n见[甲](00_demo.md#{en_anchor})和[乙](#device-agnostic-code)。\n"), encoding="utf-8")
    assert "book/zh/00_demo.md: links to English section anchors; `make sync` puts the Chinese " \
           "ones in" in zh_edition.problems(book, notebooks)
    zh_edition.sync(book, notebooks)
    text = zh.read_text(encoding="utf-8")
    headings = zh_edition._anchors(text)
    english = zh_edition._anchors((book / "00_demo.md").read_text(encoding="utf-8"))
    assert f"(00_demo.md#{headings[english.index(en_anchor)]})" in text
    assert f"(#{headings[english.index('device-agnostic-code')]})" in text
    assert en_anchor not in text and zh_edition.problems(book, notebooks) == []
    zh.write_text(text + "\n另见[丙](05_debugging.md#x)和[丁](00_demo.md#nowhere)。\n",
                  encoding="utf-8")
    found = zh_edition.problems(book, notebooks)
    assert "book/zh/00_demo.md: links to 05_debugging.md#x, which has no Chinese edition yet" \
        in found
    assert "book/zh/00_demo.md: links to 00_demo.md#nowhere, a section neither edition has" \
        in found
