"""The Chinese edition's sources, ``book/zh/`` (中文版), kept in step with ``book/``.

- ``book/zh/NN_topic.md`` translates ``book/NN_topic.md``: the same Jupytext MyST notebook,
  markdown cells in Chinese, code cells identical to the English ones byte for byte (tags
  included), so jupyter-cache gives it the English run's outputs. ``sync`` (run by
  ``make sync``) copies the English code cells in, cell by cell and in order, and writes
  ``notebooks/zh/NN_topic.ipynb``. ``book/zh/intro.md`` translates ``book/intro.md``.
- Each page's front matter records ``translation:``, hashes of the English markdown it
  translates (the whole, and each section); ``stamp`` writes it once a translation is up to
  date, and ``check`` names every stale page and the sections whose English text changed.
- ``check`` also compares the structure with the English page (headings, exercise labels,
  claim IDs), wants a Chinese character in every markdown cell that is more than maths, a
  link or the end of a directive, and refuses a line break inside Chinese text (a browser
  shows it as a space; ``unwrap`` joins such lines).
- ``build`` writes the Chinese book's ``_config.yml`` and ``_toc.yml`` (made from the English
  ones, so every shared setting has one home) into ``_build/zh/`` and builds the book into
  ``_build/html/zh/``, from the same jupyter-cache: it should execute nothing.

Only the pages present in ``book/zh/`` are handled: the edition grows chapter by chapter.
"""

from __future__ import annotations

import argparse
import copy
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tools.build.chapter_format import (  # the names it has always given too
    CJK_RE,
    CLAIM_ID_RE,
    FRONT_MATTER_RE,
    ROOT,
    SOLUTION_RE,
)
from tools.build.zh import glossary

# The sources (pages, translation records, sync, stamp) and their checks have modules of
# their own; every name stays importable from here, the edition's one entry point.
from tools.build.zh.checks import (
    BLOCK_RE,
    CJK_PUNCT_RE,
    cjk_problems,
    code_problems,
    line_break_problems,
    link_problems,
    needs_translation,
    problems,
    stale_problems,
    structure_problems,
    sync_problems,
    unwrap,
)
from tools.build.zh.sources import (
    APPENDIX_GLOB,
    BEFORE_FIRST_HEADING,
    BOOK,
    GENERATED,
    INTRO,
    LINK_RE,
    NOTEBOOKS,
    RECORD,
    ZH,
    CodeCellsMismatch,
    changed_sections,
    compose,
    digest,
    english_for,
    is_chapter,
    localize_links,
    notebook_for,
    notebook_text,
    own_code,
    page_named,
    pages,
    sections,
    split_front_matter,
    stamp,
    sync,
    with_english_code,
)
from tools.build.zh.sources import _anchors as _anchors
from tools.build.zh.sources import _rel as _rel

__all__ = [
    "CJK_RE",
    "CLAIM_ID_RE",
    "FRONT_MATTER_RE",
    "SOLUTION_RE",
    "APPENDICES",
    "appendices",
    "APPENDIX_GLOB",
    "BEFORE_FIRST_HEADING",
    "BLOCK_RE",
    "BOOK",
    "build",
    "CAPTIONS",
    "changed_sections",
    "cjk_problems",
    "CJK_PUNCT_RE",
    "code_problems",
    "CodeCellsMismatch",
    "compose",
    "digest",
    "english_for",
    "GENERATED",
    "INTRO",
    "is_chapter",
    "line_break_problems",
    "link_problems",
    "LINK_RE",
    "localize_links",
    "main",
    "needs_translation",
    "notebook_for",
    "notebook_text",
    "NOTEBOOKS",
    "own_code",
    "page_named",
    "pages",
    "problems",
    "RECORD",
    "SEARCH_WORDS",
    "sections",
    "split_front_matter",
    "stale_problems",
    "stamp",
    "structure_problems",
    "sync",
    "sync_problems",
    "TITLE",
    "unwrap",
    "with_english_code",
    "ZH",
    "zh_config",
    "zh_toc",
]

# What the Chinese book says differently from the English _config.yml / _toc.yml; every other
# setting is the English one (zh_config, zh_toc).
TITLE = "PyTorch 实战：一本可执行的书"
APPENDICES = "Appendices"  # the English toc's caption of the part the appendices are in
CAPTIONS = {"Chapters": "章节", APPENDICES: "附录"}
SEARCH_WORDS = "search_words.txt"  # jieba's user dictionary, in _build/zh/


# ------------------------------------------------------------------------------ the build
def zh_config(root: Path = ROOT) -> dict:
    """The Chinese book's Jupyter Book config: the English one, with the paths made absolute
    (the Chinese book's source folder is book/zh/) and the few settings that differ."""
    config = copy.deepcopy(yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")))
    config["title"] = TITLE
    config["exclude_patterns"] = [".*", "**/.*"]
    config["execute"]["cache"] = str(root / config["execute"]["cache"])  # the English records
    config["repository"]["path_to_book"] = f"book/{ZH}"
    sphinx = config["sphinx"]
    sphinx["local_extensions"] = {k: str(root / v) for k, v in
                                  sphinx["local_extensions"].items()}
    settings = sphinx["config"]
    settings["html_static_path"] = [str(root / p) for p in settings["html_static_path"]]
    settings.update({
        "language": "zh_CN",
        "html_search_language": "zh",  # needs jieba (requirements.txt)
        # myst-nb's fold labels have no translation (the chapters fold inputs only: hide-input)
        "nb_code_prompt_show": "显示代码",
        "nb_code_prompt_hide": "隐藏代码",
        "colab_notebook_dir": f"notebooks/{ZH}",
        "colab_repository_root": str(root),
        "language_link_label": "English",
        "language_link_hreflang": "en",
        "language_link_other_source": str(root / "book"),
        "language_link_other_url": "../book/",
        # each figure's text alternative in Chinese (book/_ext/figure_alt.py)
        "figure_alt_key": "alt_zh",
        # the glossary's terms as jieba words, so that 梯度裁剪 is one search term (build())
        "html_search_options": {"dict": str(root / "_build" / ZH / SEARCH_WORDS)},
    })
    return config


def appendices(book: Path = BOOK) -> list[Path]:
    """The Chinese appendices: the generated ones (the claims ledger and the glossary, written
    by ``make appendix``, so not committed) and the translated ones (``book/zh/appendix_*.md``)."""
    found = {p.stem for p in (book / ZH).glob(APPENDIX_GLOB)} | set(GENERATED)
    return [book / ZH / f"{stem}.md" for stem in sorted(found)]


def zh_toc(root: Path = ROOT) -> dict:
    """The English table of contents, restricted to the pages translated so far; the
    appendices only the Chinese edition has (the glossary) close the last part."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    translated = {p.stem for p in pages(root / "book") + appendices(root / "book")}
    in_english = {Path(c["file"]).name for part in toc.get("parts", []) for c in part["chapters"]}
    parts = []
    for part in toc.get("parts", []):
        chapters = [{"file": Path(c["file"]).name} for c in part["chapters"]
                    if Path(c["file"]).name in translated]
        if part["caption"] == APPENDICES:
            chapters += [{"file": p.stem} for p in appendices(root / "book")
                         if p.stem not in in_english]
        if chapters:
            parts.append({"caption": CAPTIONS.get(part["caption"], part["caption"]),
                          "chapters": chapters})
    return {"format": toc["format"], "root": Path(toc["root"]).name, "parts": parts}


def build(root: Path = ROOT) -> int:
    """Build the Chinese book into _build/html/zh/ (jupyter-book -W); return its status."""
    work = root / "_build" / ZH
    work.mkdir(parents=True, exist_ok=True)
    words = glossary.search_terms(glossary.load(root / "book" / ZH / "glossary.yml",
                                                root / "book"))
    (work / SEARCH_WORDS).write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    for name, data in (("_config.yml", zh_config(root)), ("_toc.yml", zh_toc(root))):
        (work / name).write_text(
            "# generated by `python -m tools.build.zh.edition build` from the English file\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    # no --all: a page whose English run changed is re-read by book/_ext/cache_records.py
    command = [str(jupyter_book if jupyter_book.exists() else "jupyter-book"), "build", "-W",
               "--keep-going", str(root / "book" / ZH),
               "--config", str(work / "_config.yml"), "--toc", str(work / "_toc.yml"),
               "--path-output", str(work)]
    sys.stdout.flush()
    status = subprocess.call(command, cwd=root)
    if status == 0:
        site = root / "_build" / "html" / ZH
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(work / "_build" / "html", site)
        print(f"The Chinese book is at file://{site}/index.html")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("sync", help="copy the English code cells in; write notebooks/zh/")
    sub.add_parser("check", help="report every problem (exit 1 if any), change nothing")
    stamp_parser = sub.add_parser("stamp", help="record that a page translates the English "
                                                "text as it is now")
    stamp_parser.add_argument("page", nargs="+", help="e.g. 00_setup or intro")
    unwrap_parser = sub.add_parser("unwrap", help="join the lines that break Chinese text")
    unwrap_parser.add_argument("page", nargs="+", help="e.g. 00_setup or intro")
    sub.add_parser("build", help="build the Chinese book into _build/html/zh/")
    args = parser.parse_args()
    if args.command == "sync":
        try:
            sync()
        except CodeCellsMismatch as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    elif args.command == "check":
        found = problems()
        for problem in found:
            print(problem)
        return 1 if found else 0
    elif args.command == "stamp":
        for name in args.page:
            stamp(page_named(name))
    elif args.command == "unwrap":
        for name in args.page:
            page = page_named(name)
            page.write_text(unwrap(page.read_text(encoding="utf-8")), encoding="utf-8")
    elif args.command == "build":
        return build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
