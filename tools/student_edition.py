"""Write the student edition: notebooks without solutions (``make student``).

For every chapter ``book/NN_topic.md`` it writes ``student/NN_topic.ipynb`` in which each
exercise's solution (everything from ``solution-start`` to ``solution-end``, prose and code)
is replaced by one code cell that raises ``NotImplementedError`` with a hint, the exercise
text becomes plain markdown, and the check cells stay. Outputs are empty.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_notebooks import ipynb_from_myst  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_RE = re.compile(
    r":::\{solution-start\} (?P<label>ex\d\d-\d+)\n.*?:::\{solution-end\}\n:::\n", re.S)
EXERCISE_RE = re.compile(r":::\{exercise\}\n:label: (?P<label>ex\d\d-\d+)\n(?P<body>.*?)\n:::\n",
                         re.S)
STUB_MARKER = "# Your answer to"


def stub(label: str) -> str:
    """The code cell that takes a solution's place."""
    return (
        "```{code-cell} ipython3\n"
        f"{STUB_MARKER} {label}: replace the next line with your code, run it, then run the\n"
        "# check cell below.\n"
        f'raise NotImplementedError("{label}: not attempted yet")\n'
        "```\n"
    )


def student_text(chapter_text: str) -> str:
    """The MyST source of a chapter with its solutions replaced by stubs."""
    labels = [m["label"] for m in EXERCISE_RE.finditer(chapter_text)]
    text, count = SOLUTION_RE.subn(lambda m: stub(m["label"]), chapter_text)
    if count != len(labels):
        raise ValueError(f"{len(labels)} exercises but {count} solution blocks")
    return EXERCISE_RE.sub(lambda m: f"**Exercise {m['label']}.** {m['body'].strip()}\n", text)


def write_student_edition(out_dir: Path, book_dir: Path = ROOT / "book") -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in sorted(book_dir.glob("[0-9][0-9]_*.md")):
        target = out_dir / chapter.with_suffix(".ipynb").name
        target.write_text(ipynb_from_myst(student_text(chapter.read_text(encoding="utf-8"))),
                          encoding="utf-8")
        written.append(target)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "student")
    args = parser.parse_args()
    for path in write_student_edition(args.out):
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
