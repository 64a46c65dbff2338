"""Hand the notebooks that nbmake executed to the jupyter-cache that ``jupyter-book build``
reads, so the book is rendered from the tested run instead of executing every chapter again
(``make nbmake`` runs it after the notebooks passed).

jupyter-cache matches a notebook by its code cells (source and metadata) and its kernelspec;
nbclient adds an ``execution`` timing entry to each cell's metadata, which is dropped first.
Each chapter is then looked up the way the build will look it up (its MyST source, read by
myst-nb): a chapter that would miss the cache is an error here, not a silent re-execution.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from myst_nb.core.read import read_myst_markdown_notebook

from tools.chapter_format import ROOT, chapters

CACHE = ROOT / "_build" / ".jupyter_cache"  # _config.yml's execute.cache, from the root


def cache_executed(executed: Path, cache_dir: Path = CACHE,
                   book_chapters: list[Path] | None = None) -> list[str]:
    """Cache ``executed/NN_topic.ipynb`` for each chapter; return one line per chapter."""
    cache = get_cache(str(cache_dir))
    lines = []
    for chapter in book_chapters if book_chapters is not None else chapters():
        path = executed / chapter.with_suffix(".ipynb").name
        if not path.is_file():
            raise FileNotFoundError(f"{chapter.name}: no executed notebook at {path}")
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            cell.metadata.pop("execution", None)
        nbformat.write(notebook, path)
        record = cache.cache_notebook_file(str(path), check_validity=False, overwrite=True)
        as_built = read_myst_markdown_notebook(chapter.read_text(encoding="utf-8"))
        try:
            found = cache.match_cache_notebook(as_built)
        except KeyError as err:
            raise RuntimeError(f"{chapter.name}: the build would not find the executed "
                               f"notebook in the cache (code cells or kernelspec differ); "
                               f"run `make sync`") from err
        if found.pk != record.pk:
            raise RuntimeError(f"{chapter.name}: matched cache record {found.pk}, "
                               f"not the one just stored ({record.pk})")
        lines.append(f"cached {chapter.stem} (record {record.pk})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("executed", type=Path, help="folder of executed .ipynb files")
    args = parser.parse_args()
    for line in cache_executed(args.executed):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
