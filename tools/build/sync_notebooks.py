"""Generate notebooks/NN_topic.ipynb from book/NN_topic.md (``make sync``).

Also writes the repository URL from _config.yml into each chapter's Colab install line, so
that the URL is edited in one place, and then brings the Chinese edition in step
(tools/build/zh/edition.py: the English code cells into book/zh/, notebooks/zh/ from them).
A notebook changed by hand (a learner's saved work) is never replaced: it is kept and
reported, with the command that discards it (tools/build/generated.py holds the rule).
``--check`` changes nothing and exits 1 when a notebook is missing, stale, has outputs, or
has no chapter, or when a Chinese chapter's code differs from the English one's.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from tools.build import chapter_format
from tools.build.chapter_format import ROOT, ipynb_from_myst
from tools.build.generated import Generated
from tools.build.sync_memo import SyncMemo
from tools.build.zh import edition as zh_edition

BOOK = chapter_format.BOOK
NOTEBOOKS = chapter_format.NOTEBOOKS
INSTALL_RE = re.compile(r'%pip install -q \{keep\} "pytorch-book-helpers @ git\+[^"]*"')
# {keep} is the chapter's `keep`, Colab's own torch and torchvision pinned to the versions
# installed there ("torch==2.9.0+cu126 torchvision==..."; IPython expands {...} in a magic):
# pip then installs the helpers and their dependencies around them, or fails, but never
# moves them.


def install_line(config_path: Path = ROOT / "_config.yml") -> str:
    """The Colab install command for the helpers, from the repository URL in _config.yml."""
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    repo = config.get("repository", {})
    url, branch = repo.get("url", "").rstrip("/"), repo.get("branch", "main")
    if not url.startswith("https://"):
        raise ValueError(f"_config.yml repository.url must be an https URL, got {url!r}")
    return f'%pip install -q {{keep}} "pytorch-book-helpers @ git+{url}.git@{branch}"'


def chapters() -> list[Path]:
    return chapter_format.chapters(BOOK)


def notebook_for(chapter: Path) -> Path:
    return chapter_format.notebook_for(chapter, NOTEBOOKS)


def with_current_install_line(text: str, line: str) -> str:
    if not INSTALL_RE.search(text):
        raise ValueError("no Colab install line (%pip install -q {keep} \"pytorch-book-helpers "
                         "@ ...\")")
    return INSTALL_RE.sub(lambda _: line, text)


def notebook_text(chapter: Path) -> str:
    """The .ipynb text of a chapter, as ``make sync`` writes it to notebooks/."""
    return ipynb_from_myst(chapter.read_text(encoding="utf-8"), stem=chapter.stem)


def problems() -> list[str]:
    """Every way notebooks/ disagrees with book/ (empty when in sync)."""
    found, line = [], install_line()
    for chapter in chapters():
        text = chapter.read_text(encoding="utf-8")
        try:
            if with_current_install_line(text, line) != text:
                found.append(f"{chapter.name}: Colab install line differs from _config.yml")
        except ValueError as err:
            found.append(f"{chapter.name}: {err}")
        target = notebook_for(chapter)
        if not target.exists():
            found.append(f"{target.name}: missing")
        elif target.read_text(encoding="utf-8") != notebook_text(chapter):
            found.append(f"{target.name}: stale or has outputs (differs from {chapter.name})")
    expected = {notebook_for(c).name for c in chapters()}
    found += [f"{p.name}: no chapter in book/" for p in NOTEBOOKS.glob("*.ipynb")
              if p.name not in expected]
    return found + zh_edition.sync_problems(BOOK, NOTEBOOKS)


def sync(replace: list[Path] = (), memo: SyncMemo | None = None) -> Generated:
    """Write notebooks/ (and the Chinese edition) from book/; returns what was written and
    what was kept because a person had changed it (``replace``: overwrite these anyway).
    ``memo``: skip the pages whose inputs and outputs are as the last sync left them
    (tools/build/sync_memo.py)."""
    NOTEBOOKS.mkdir(exist_ok=True)
    root = BOOK.parent
    generated = Generated("make sync", manifest=root / ".generated.json", root=root,
                          replace=replace)
    line = install_line()
    for chapter in chapters():
        text = chapter.read_text(encoding="utf-8")
        updated = with_current_install_line(text, line)
        if updated != text:
            chapter.write_text(updated, encoding="utf-8")
        target = notebook_for(chapter)
        if memo and memo.unchanged([chapter.name, updated], [target]):
            continue
        outcome = generated.write(target, notebook_text(chapter))
        if outcome == "wrote":
            print(f"wrote notebooks/{target.name}")
        if memo and outcome != "kept":  # a kept file is reported again at every sync
            memo.record([chapter.name, updated], [target])
    for orphan in NOTEBOOKS.glob("*.ipynb"):
        if orphan.name not in {notebook_for(c).name for c in chapters()}:
            print(f"note: notebooks/{orphan.name} has no chapter; delete it or add the chapter")
    try:
        zh_edition.sync(BOOK, NOTEBOOKS, generated, memo)  # after the install lines: copies code
    finally:
        generated.save()
        if memo:
            memo.save()
    return generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="report differences, change nothing")
    parser.add_argument("--replace", type=Path, nargs="*", default=[],
                        help="generated files to overwrite even though they were edited by hand")
    args = parser.parse_args()
    if args.check:
        issues = problems()
        for issue in issues:
            print(issue)
        return 1 if issues else 0
    try:
        sync(args.replace, SyncMemo())
    except (zh_edition.CodeCellsMismatch, IsADirectoryError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
