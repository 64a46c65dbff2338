"""A folded cell's label is its ``# @title`` line, translated on the Chinese site
(book/_ext/fold_titles.py; the built pages: tests/book/test_fold_labels.py)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from fold_titles import TITLES_ZH, label, split_title  # noqa: E402


def test_the_title_line_is_split_off_and_only_a_first_line_counts():
    assert split_title("# @title How this is checked\n\ndef f():\n    pass\n") == \
        ("How this is checked", "def f():\n    pass\n")
    assert split_title("x = 1\n# @title How this is checked\n") == \
        (None, "x = 1\n# @title How this is checked\n")
    assert split_title("#@title no space\n")[0] is None


def test_the_label_is_translated_on_a_chinese_page_only():
    assert label("How this is checked", "zh_CN") == TITLES_ZH["How this is checked"] != \
        "How this is checked"
    assert label("How this is checked", None) == label("How this is checked", "en") == \
        "How this is checked"
    assert label("An untranslated title", "zh_CN") == "An untranslated title"
