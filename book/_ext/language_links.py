"""A link at the top of every page to the same page in the book's other language.

The English book is built from the repository's root (pages ``book/NN_topic``) into
``_build/html``, the Chinese one from ``book/zh/`` (pages ``NN_topic``) into
``_build/html/zh`` (tools/build/zh/edition.py). A page gets the link only where its counterpart
exists, i.e. where ``<language_link_other_source>/<page name>.md`` is a file. Settings:

- ``language_link_label``: the link's text (``中文`` on English pages, ``English`` on Chinese);
- ``language_link_hreflang``: the other language's tag (``zh-CN``, ``en``);
- ``language_link_other_source``: the other edition's source folder, relative to this
  book's source folder (or absolute);
- ``language_link_other_url``: the other edition's pages, relative to this site's root.

Without a label (the default) the extension adds nothing. A page whose counterpart appears
or goes since the last build is rebuilt, though its own source did not change.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx


def counterpart_href(pagename: str, other_url: str) -> str:
    """The relative URL, from page ``pagename``, of the same page in the other edition."""
    return "../" * pagename.count("/") + f"{other_url}{Path(pagename).name}.html"


def link_html(href: str, label: str, hreflang: str) -> str:
    lang = html.escape(hreflang, quote=True)
    return (f'<p class="language-link"><a class="reference external" href="{html.escape(href)}"'
            f' hreflang="{lang}" lang="{lang}">{html.escape(label)}</a></p>\n')


def _has_counterpart(app: Sphinx, pagename: str) -> bool:
    other = Path(app.srcdir) / app.config.language_link_other_source
    return bool(app.config.language_link_label) and (
        other / f"{Path(pagename).name}.md").is_file()


def _outdated(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """The pages whose counterpart appeared or went since the last build."""
    now = {docname for docname in env.found_docs if _has_counterpart(app, docname)}
    before = getattr(env, "language_link_pages", None)
    env.language_link_pages = now
    return [] if before is None else sorted((now ^ before) & env.found_docs)


def _add_link(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
              doctree: Any) -> None:
    config = app.config
    if doctree is None or "body" not in context or not _has_counterpart(app, pagename):
        return
    href = counterpart_href(pagename, config.language_link_other_url)
    context["body"] = link_html(href, config.language_link_label,
                                config.language_link_hreflang) + context["body"]
    context["metatags"] = context.get("metatags", "") + (
        f'<link rel="alternate" hreflang="{html.escape(config.language_link_hreflang)}" '
        f'href="{html.escape(href)}" />\n')


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("language_link_label", "", "html")
    app.add_config_value("language_link_hreflang", "", "html")
    app.add_config_value("language_link_other_source", "", "html")
    app.add_config_value("language_link_other_url", "", "html")
    app.connect("env-get-outdated", _outdated)
    app.connect("html-page-context", _add_link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
