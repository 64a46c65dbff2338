"""The numbers of the book's tested run, for the notebooks a learner opens (``make record-run``).

The site fills each glued number (``{glue:text}`name:.3f```) from the run whose outputs it
shows. A notebook has no such run until the learner makes one, so ``make sync`` writes in the
value of the book's tested run, marked as such (tools/build/jupyter_markdown.py). Those values live
in ``notebooks/book-run.json``, committed: ``make record-run`` writes it from the executed copies
that ``make nbmake`` left in ``.executed/`` (the values, and one line saying when, on what and
with which torch the run was made). No other command writes it, so ``make sync`` and its
check give the same notebooks on every machine until someone records a new run on purpose.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK_RUN = ROOT / "notebooks" / "book-run.json"
EXECUTED = ROOT / ".executed"
RECORD_PREFIX = "application/papermill.record/"  # how myst-nb's glue stores a value
# helpers.last_verified's line, printed by each chapter's setup cell
VERIFIED_RE = re.compile(r"Last verified: (?P<date>\S+) \S+ UTC on (?P<where>.+)\n\s+torch "
                         r"(?P<torch>\S+), Python (?P<python>\S+)")


@dataclass(frozen=True)
class BookRun:
    """The glued values of the book's tested run: ``values`` name -> text/plain (as myst-nb
    stores it), and ``run``: when, on what and with which torch it ran."""

    run: str = ""
    values: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path = BOOK_RUN) -> BookRun:
        if not path.exists():
            return cls()
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["run"], data["values"])

    def text(self, name: str, fmt: str) -> str:
        """The value ``name`` formatted as the site's ``{glue:text}`name:fmt``` shows it."""
        from myst_nb.core.variables import format_plain_text

        if name not in self.values:
            raise KeyError(f"glued number {name!r} has no value from the book's run in "
                           f"{BOOK_RUN.relative_to(ROOT)}: run `make nbmake`, then "
                           "`make record-run`, then `make sync`")
        return format_plain_text(self.values[name], fmt or "")


def glued_values(notebook: dict) -> dict[str, str]:
    """name -> text/plain of every value a notebook's outputs glued."""
    found = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            text = output.get("data", {}).get(f"{RECORD_PREFIX}text/plain")
            if name and text is not None:
                found[name] = "".join(text) if isinstance(text, list) else text
    return found


def run_line(notebook: dict) -> str:
    """'2026-12-06, cpu (2 threads), torch 2.14.1' from the setup cell's Last verified line."""
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            match = VERIFIED_RE.search("".join(text) if isinstance(text, list) else text)
            if match:
                return f"{match['date']}, {match['where']}, torch {match['torch']}"
    raise ValueError("no 'Last verified' line in the executed notebook: did its setup cell run?")


def record(executed: Path = EXECUTED) -> BookRun:
    """The book's run from the executed chapters in ``executed``; refuses an incomplete run
    (a chapter missing or not executed) and a name glued with two values."""
    from tools.build.chapter_format import BOOK, chapters

    values: dict[str, str] = {}
    runs = set()
    for chapter in chapters(BOOK):
        path = executed / chapter.with_suffix(".ipynb").name
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run `make nbmake` first")
        notebook = json.loads(path.read_text(encoding="utf-8"))
        runs.add(run_line(notebook))
        for name, text in glued_values(notebook).items():
            if name in values and values[name] != text:
                raise ValueError(f"{name} is glued by two chapters with different values")
            values[name] = text
    dates = sorted(r.split(", ", 1)[0] for r in runs)
    setting = {r.split(", ", 1)[1] for r in runs}
    if len(setting) != 1:
        raise ValueError(f"the chapters ran in different settings: {sorted(setting)}")
    return BookRun(f"{dates[-1]}, {setting.pop()}", dict(sorted(values.items())))


def write(run: BookRun, path: Path = BOOK_RUN) -> None:
    path.write_text(json.dumps({"run": run.run, "values": run.values}, indent=1,
                               ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("executed", nargs="?", type=Path, default=EXECUTED)
    args = parser.parse_args()
    try:
        run = record(args.executed)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    write(run)
    print(f"wrote {BOOK_RUN.relative_to(ROOT)}: {len(run.values)} values, run {run.run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
