"""book/_ext/static_refresh.py: an edited static file reaches the built site even when Sphinx
writes no page; identical files and Sphinx's own templates are left alone."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from static_refresh import changed_static_files  # noqa: E402


def test_only_missing_or_changed_files_are_copied(tmp_path):
    source, built = tmp_path / "_static", tmp_path / "html" / "_static"
    (source / "sub").mkdir(parents=True)
    built.mkdir(parents=True)
    (source / "book.css").write_text("a { color: red; }")
    (source / "a11y.js").write_text("same")
    (source / "sub" / "new.js").write_text("x")
    (source / "page.css_t").write_text("{{ template }}")
    (built / "book.css").write_text("a { color: blue; }")  # the stale copy
    (built / "a11y.js").write_text("same")
    pairs = changed_static_files([source, tmp_path / "absent"], built)
    assert pairs == [(source / "book.css", built / "book.css"),
                     (source / "sub" / "new.js", built / "sub" / "new.js")]
    assert changed_static_files([source], tmp_path / "nothing-built")[0][0] == source / "a11y.js"
