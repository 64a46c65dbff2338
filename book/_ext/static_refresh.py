"""The site's own static files (``html_static_path``) reach the built site after every edit.

Sphinx copies them only when it writes a page: when no page is out of date it stops at "no
targets are out of date", so an edit of ``book/_static/book.css`` or ``a11y.js`` alone never
reached ``_build/html/_static/`` in ``make book``'s incremental build (seen 2026-12-04: the
built ``a11y.js`` stayed the old one through three builds). After a successful build, this
copies each file of the static folders whose content differs, with Sphinx's own ``copyfile``
(a no-op for identical files). Files that Sphinx renders as templates (``*_t``) are left to it.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util.osutil import copyfile


def changed_static_files(source_dirs: list[Path], static_out: Path) -> list[tuple[Path, Path]]:
    """(source, destination) of every static file whose built copy is missing or differs."""
    pairs = []
    for folder in source_dirs:
        if not folder.is_dir():
            continue
        for source in sorted(p for p in folder.rglob("*") if p.is_file()):
            if source.name.endswith("_t"):
                continue
            dest = static_out / source.relative_to(folder)
            if not dest.is_file() or dest.read_bytes() != source.read_bytes():
                pairs.append((source, dest))
    return pairs


def refresh_static_files(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    folders = [Path(app.confdir, p) for p in app.config.html_static_path]
    for source, dest in changed_static_files(folders, Path(app.outdir, "_static")):
        dest.parent.mkdir(parents=True, exist_ok=True)
        copyfile(source, dest)


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", refresh_static_files)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
