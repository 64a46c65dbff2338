"""Each figure's text alternative, in the page's language, from its code cell's metadata.

A code cell that draws a figure states the figure's finding in myst-nb's image options, the
one home of both editions' texts (the Chinese page's code cells are copies of the English
ones, so it renders from the same execution and the same metadata), on one option line (the
chapter tools read a cell's ``:key:`` lines as options, not code):

```
:mystnb: {"image": {"alt": "Rounding error grows as h shrinks ...", "alt_zh": "步长越小 ..."}}
```

myst-nb applies ``alt`` itself. This extension gives every image output of the cell the text
under the key ``figure_alt_key`` (``alt`` in the English book; tools/build/zh/edition.py sets
``alt_zh`` for the Chinese one), and warns (so the ``-W`` build fails) about an image output
whose cell has no such text: myst-nb would otherwise use the image's file name. The text is
written, not computed: say the finding qualitatively, with no number the run measured
(book/README.md, "Numbers in prose").
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def cell_alt(cell_metadata: dict, key: str) -> str | None:
    """The figure text under ``key`` in a cell's ``mystnb: image:`` options (None if absent
    or blank)."""
    image = (cell_metadata.get("mystnb") or {}).get("image") or {}
    text = image.get(key) if isinstance(image, dict) else None
    return text.strip() if isinstance(text, str) and text.strip() else None


def set_figure_alts(app: Sphinx, doctree: nodes.document) -> None:
    key = app.config.figure_alt_key
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        images = list(cell.findall(nodes.image))
        if not images:
            continue
        text = cell_alt(cell.get("cell_metadata") or {}, key)
        if text is None:
            logger.warning(f"a code cell draws a figure but its metadata has no "
                           f"`mystnb: image: {key}:` (the figure's finding, in words)",
                           location=cell, type="figure_alt", subtype="missing")
            continue
        for image in images:
            image["alt"] = text


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("figure_alt_key", "alt", "env", types=[str])
    app.connect("doctree-read", set_figure_alts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
