"""Re-read a chapter whose executed outputs changed in the jupyter-cache, though its source
did not (chapter 00's "one execution" rule; tools/build/zh/edition.py, book/README.md).

The book renders each chapter from the jupyter-cache record that ``make nbmake`` (or the
build itself) stored for its code. Sphinx re-reads a page only when its source changed, so
after a new execution of unchanged code, and on every Chinese page (whose code is the
English chapter's, and whose record the English run writes), the site would keep showing
the outputs of the run before. This extension remembers, per page, which record it was
rendered from, and marks the page outdated when the cache now holds another one: so the
Chinese build no longer needs ``--all`` (every page re-read, every time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx


def record_keys(app: Sphinx, env: Any) -> dict[str, str]:
    """For each notebook page: the cache record its code matches now (``""``: none)."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    path = app.config.nb_execution_cache_path or str(Path(app.outdir).parent / ".jupyter_cache")
    if not Path(path).is_dir():
        return {}
    cache = get_cache(path)
    keys = {}
    for docname in sorted(env.found_docs):
        source = Path(env.doc2path(docname))
        if source.suffix != ".md":
            continue
        text = source.read_text(encoding="utf-8")
        if not is_myst_markdown_notebook(text):
            continue
        try:
            record = cache.match_cache_notebook(read_myst_markdown_notebook(text))
        except KeyError:
            keys[docname] = ""
        else:
            keys[docname] = f"{record.pk}@{record.created.isoformat()}"
    return keys


def _outdated(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """The pages whose cache record is not the one they were last rendered from."""
    now = record_keys(app, env)
    before = getattr(env, "book_cache_records", None)
    env.book_cache_records = now
    if before is None:  # first build with this extension: every page is read anyway
        return []
    return sorted(d for d, key in now.items() if before.get(d) != key and d not in added)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-outdated", _outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
