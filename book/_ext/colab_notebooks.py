"""Point each chapter's "Colab" launch button at its generated notebook.

sphinx-book-theme builds the Colab link from the page's source path, which for this book is
a MyST markdown file (``book/00_setup.md``) that Colab cannot open. The chapters' runnable
copies live in ``notebooks/`` (``make sync`` writes them), so the link is rewritten to
``.../blob/<branch>/notebooks/00_setup.ipynb``. A chapter without its notebook is a warning,
which ``jupyter-book build -W`` turns into an error.

Two settings serve the Chinese edition (tools/build/zh/edition.py sets them for its build):
``colab_notebook_dir``, the notebooks' folder in the repository (``notebooks/zh``), and
``colab_repository_root``, where the repository's root is (default: the source folder).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
NOTEBOOK_DIR = "notebooks"
_BLOB_RE = re.compile(r"^(?P<prefix>.+?/blob/[^/]+/).+$")


def colab_url_for(theme_url: str, pagename: str, notebook_dir: str = NOTEBOOK_DIR) -> str:
    """Replace the path after ``/blob/<branch>/`` in a Colab URL by the page's notebook."""
    match = _BLOB_RE.match(theme_url)
    if match is None:
        raise ValueError(f"unexpected Colab URL from the theme: {theme_url!r}")
    return f"{match['prefix']}{notebook_dir}/{Path(pagename).name}.ipynb"


def _rewrite_colab_button(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") != "Colab":
                continue
            folder = app.config.colab_notebook_dir
            root = Path(app.srcdir) / (app.config.colab_repository_root or ".")
            notebook = root / folder / f"{Path(pagename).name}.ipynb"
            if not notebook.exists():
                LOGGER.warning(
                    f"{pagename}: no {folder}/{notebook.name} for the Colab button; "
                    "run `make sync`"
                )
                continue
            button["url"] = colab_url_for(button["url"], pagename, folder)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("colab_notebook_dir", NOTEBOOK_DIR, "html")
    app.add_config_value("colab_repository_root", "", "html")
    # the theme adds its launch buttons at priority 501; rewrite after it
    app.connect("html-page-context", _rewrite_colab_button, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
