"""The Chinese edition's glossary (tools/build/zh/glossary.py): checked entries, links per
edition."""

import pytest

from tools.build.zh import glossary


def write(tmp_path, text):
    path = tmp_path / "glossary.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_glossary_loads_and_names_pages_that_exist():
    entries = glossary.load()
    assert len(entries) >= 40
    assert {"en": "gradient clipping", "zh": "梯度裁剪", "chapter": "03_training"} in entries


@pytest.mark.parametrize("text, message", [
    ("{en: a}", "expected a list"),
    ("- {en: gradient, zh: 梯度}", "exactly the fields"),
    ("- {en: gradient, zh: '', chapter: 01_autograd}", "non-empty string"),
    ("- {en: gradient, zh: gradient, chapter: 01_autograd}", "no Chinese"),
    ("- {en: gradient, zh: 梯度, chapter: 42_nowhere}", "is not one of"),
    ("- {en: gradient, zh: 梯度, chapter: 01_autograd}\n- {en: Gradient, zh: 梯度, chapter: intro}",
     "twice"),
])
def test_bad_entries_are_refused_with_the_reason(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        glossary.load(write(tmp_path, text))


def test_terms_link_to_the_chinese_page_or_else_the_english_one(tmp_path):
    book = tmp_path / "book"
    (book / "zh").mkdir(parents=True)
    (book / "intro.md").write_text("# Intro\n", encoding="utf-8")
    (book / "01_a.md").write_text("# 01 · A\n", encoding="utf-8")
    (book / "02_b.md").write_text("# 02 · B\n", encoding="utf-8")
    (book / "zh" / "01_a.md").write_text("# 01 · 甲\n", encoding="utf-8")
    entries = [{"en": "late", "zh": "晚", "chapter": "02_b"},
               {"en": "early", "zh": "早", "chapter": "01_a"}]
    text = glossary.render(entries, book)
    rows = [line for line in text.splitlines() if line.startswith("| early") or
            line.startswith("| late")]
    assert rows == ["| early | 早 | [01 · 甲](01_a.md) |",
                    '| late | 晚 | <a href="../book/02_b.html">02 · B</a>（英文） |']


def test_search_terms_are_the_whole_chinese_terms():
    entries = [{"en": "a", "zh": "梯度裁剪", "chapter": "03_training"},
               {"en": "b", "zh": "显存溢出（OOM）", "chapter": "07_memory"},
               {"en": "c", "zh": "训练模式 / 评估模式", "chapter": "03_training"},
               {"en": "d", "zh": "wheel 安装包", "chapter": "00_setup"},
               {"en": "e", "zh": "梯度裁剪", "chapter": "03_training"}]
    assert glossary.search_terms(entries) == ["梯度裁剪", "显存溢出", "训练模式", "评估模式",
                                              "安装包"]
