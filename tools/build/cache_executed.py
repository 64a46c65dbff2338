"""Hand the notebooks that nbmake executed to the jupyter-cache that ``jupyter-book build``
reads, so the book is rendered from the tested run instead of executing every chapter again
(``make nbmake`` runs it after the notebooks passed).

jupyter-cache matches a notebook by its code cells (source and metadata) and its kernelspec;
nbclient adds an ``execution`` timing entry to each cell's metadata, which is dropped first
(and the widgets' saved state, which the site does not use: see below);
the slowest cells' seconds are kept in ``_build/nbmake-cell-times.json`` before that, so a
chapter that ran far over its stated time names the cell it spent it in (the stated-time test
prints them).
Each chapter is then looked up the way the build will look it up (its MyST source, read by
myst-nb): a chapter that would miss the cache is an error here, not a silent re-execution.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from myst_nb.core.read import read_myst_markdown_notebook

from tools.build.chapter_format import ROOT, chapters
from tools.build.jupyter_markdown import unfold

CACHE = ROOT / "_build" / ".jupyter_cache"  # _config.yml's execute.cache, from the root
CELL_TIMES = ROOT / "_build" / "nbmake-cell-times.json"
SLOWEST = 5  # cells kept per chapter


def cell_seconds(notebook: nbformat.NotebookNode) -> list[dict]:
    """Each timed code cell's seconds, from nbclient's timing metadata: index among the code
    cells, seconds, first source line. Cells without both timestamps are skipped."""
    timed = []
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for index, cell in enumerate(code_cells):
        execution = cell.metadata.get("execution", {})
        start, end = execution.get("iopub.execute_input"), execution.get("shell.execute_reply")
        if not (start and end):
            continue
        seconds = (datetime.fromisoformat(end.replace("Z", "+00:00"))
                   - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
        first_line = next((line for line in cell.source.splitlines() if line.strip()), "")
        timed.append({"cell": index, "seconds": round(seconds, 2), "first_line": first_line[:80]})
    return timed


def cell_time_record(notebook: nbformat.NotebookNode, keep: int = SLOWEST) -> dict:
    """The seconds all cells took together (against nbmake's time for the notebook, the rest
    is the kernel's start and shutdown) and the ``keep`` slowest cells."""
    timed = cell_seconds(notebook)
    return {"cells_seconds": round(sum(row["seconds"] for row in timed), 2),
            "slowest": sorted(timed, key=lambda row: -row["seconds"])[:keep]}


def cache_executed(executed: Path, cache_dir: Path = CACHE,
                   book_chapters: list[Path] | None = None,
                   cell_times: Path | None = None) -> list[str]:
    """Cache ``executed/NN_topic.ipynb`` for each chapter; return one line per chapter.
    The slowest cells of each chapter go to ``cell_times`` (JSON) when it is given."""
    cache = get_cache(str(cache_dir))
    lines = []
    times = {}
    for chapter in book_chapters if book_chapters is not None else chapters():
        path = executed / chapter.with_suffix(".ipynb").name
        if not path.is_file():
            raise FileNotFoundError(f"{chapter.name}: no executed notebook at {path}")
        notebook = nbformat.read(path, as_version=4)
        # The site shows each explorer's static view (text/html, helpers/explore.py), never a
        # widget: without the widgets' saved state no page loads the widget manager, whose
        # fonts it would ask for relative to the page (and fail to find, offline)
        notebook.metadata.pop("widgets", None)
        times[chapter.stem] = cell_time_record(notebook)
        for cell in notebook.cells:
            cell.metadata.pop("execution", None)
            unfold(cell)  # the folded solutions of notebooks/: the build hashes the source's
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
    if cell_times is not None:
        cell_times.parent.mkdir(parents=True, exist_ok=True)
        cell_times.write_text(json.dumps(times, indent=1, ensure_ascii=False), encoding="utf-8")
    return lines


def would_execute(cache_dir: Path = CACHE, book_chapters: list[Path] | None = None) -> list[str]:
    """The chapters a build would execute: those whose code cells no cache record matches
    (the Chinese twins have the same code cells, so the English chapters answer for both)."""
    if not (cache_dir / "global.db").exists():
        return [chapter.stem for chapter in book_chapters or chapters()]
    cache = get_cache(str(cache_dir))
    missing = []
    for chapter in book_chapters if book_chapters is not None else chapters():
        try:
            cache.match_cache_notebook(
                read_myst_markdown_notebook(chapter.read_text(encoding="utf-8")))
        except KeyError:
            missing.append(chapter.stem)
    return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("executed", type=Path, nargs="?", help="folder of executed .ipynb files")
    parser.add_argument("--would-execute", nargs="*", type=Path, metavar="CHAPTER",
                        help="only list which of these chapters (book/NN_topic.md; every chapter "
                             "if none is named) a build would execute; exit 1 if any")
    args = parser.parse_args()
    if args.would_execute is not None:
        missing = would_execute(book_chapters=args.would_execute or None)
        for stem in missing:
            print(f"{stem}: not in the cache, a build would execute it")
        return 1 if missing else 0
    if args.executed is None:
        parser.error("give the folder of executed notebooks (or --would-execute)")
    for line in cache_executed(args.executed, cell_times=CELL_TIMES):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
