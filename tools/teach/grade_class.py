"""Grade a whole class: every ``.ipynb`` under a folder, one table (``make grade-class``).

    make grade-class DIR=submissions/ [CHAPTER=NN] [TIMEOUT=s] [REGRADE=1]

Each submission is graded by ``python -m tools.teach.grade --json`` in a process of its own, with
a fresh kernel, a time limit for the whole notebook, a memory limit (``RLIMIT_AS``, Linux),
its own temporary working directory and ``HOME``, and, when run as root on Linux, no network
(a network namespace with only loopback). Stored outputs are never trusted: every notebook is
re-executed. A notebook that hangs (``--timeout``: seconds for the whole notebook), exhausts
memory, kills its kernel, deletes the files of its working directory, is not JSON, belongs to
another chapter, or changed a check cell gets a row that says so, and the batch goes on.

Each submission's grades come from its grader (``tools/teach/grade.py``): the book's checks, run
in the grader's process on the answers taken across as data, not what the notebook logged;
the report is taken only if it carries the secret this batch sent the grader on stdin.

The time limit of a notebook is, by default, several times the run time its chapter states
(``TIME_FACTOR``, at least ``TIME_FLOOR_S``); ``--timeout`` (``TIMEOUT=`` from make) sets it.
``grades.csv`` (one row per submission) is rewritten atomically after every submission, with
``grades-rows.json`` (what a rerun needs), so an interrupted batch keeps what it graded; a
rerun skips the submissions already graded (same file, same bytes) unless ``--regrade``.
``grades-summary.md`` (per exercise: how many passed, the most common failing hint; per
submission: how long it took against its limit) is written at the end and printed.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat.reader import NotJSONError
from tqdm import tqdm

from helpers.atomic import write_atomically
from tools.build.chapter_format import BOOK, CHECK_RE, ROOT, chapters
from tools.teach.grade import TIME_FACTOR, TIME_FLOOR_S, default_timeout  # the one rule
from tools.teach.trusted_check import SANDBOX_ONLY, book_check_cells

STARTUP_S = 30  # starting the grader and its kernel, on top of a notebook's time limit
CANARY = "do-not-delete.txt"  # put beside each submission: gone means the notebook deleted it


@dataclass
class Row:
    file: str
    chapter: str = ""
    results: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""  # why the notebook could not be graded normally
    limit: int = 0  # the notebook's time limit, s
    hit_limit: bool = False
    unverified: list[str] = field(default_factory=list)  # passed in the kernel only
    sha256: str = ""  # of the submission's bytes: a rerun skips it while they are the same


check_cells = book_check_cells  # the check cell of each exercise, as the book has it


def _normal(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def detect_chapter(notebook) -> str | None:
    """The chapter number named by the notebook's check cells, if exactly one."""
    numbers = {m["label"][2:4] for cell in notebook.cells if cell.cell_type == "code"
               for m in CHECK_RE.finditer(cell.source)}
    return numbers.pop() if len(numbers) == 1 else None


def network_isolation() -> list[str] | None:
    """The command prefix that runs a program without network, or None where it cannot."""
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("unshare") \
            or not shutil.which("ip"):
        return None
    # the kernel talks to its client over 127.0.0.1, so loopback must be up (shared/NOTES.md)
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


def _limits(memory_bytes: int):
    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    return apply


def grade_submission(path: Path, chapter_files: dict[str, Path], chapter: str | None,
                     timeout: int | None, memory_gb: float) -> Row:
    """Grade one submission in its own sandboxed process; never raises for a bad notebook.

    ``timeout`` None: the chapter's default (:func:`default_timeout`)."""
    row = Row(file=str(path), sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    try:
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except (json.JSONDecodeError, UnicodeDecodeError, NotJSONError) as err:
        row.note = f"not a notebook: not valid JSON ({type(err).__name__})"
        return row
    except Exception as err:  # nbformat's own validation and reading errors
        row.note = f"not a notebook: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
        return row
    if not any(cell.cell_type == "code" and cell.source.strip() for cell in notebook.cells):
        row.note = "empty notebook: no code to run"
        return row
    found = detect_chapter(notebook)
    row.chapter = chapter or found or ""
    if row.chapter not in chapter_files:
        row.note = ("no exercise checks found: cannot tell the chapter" if not row.chapter
                    else f"no chapter {row.chapter} in the book")
        return row
    if chapter and found and found != chapter:
        row.note = f"a notebook of chapter {found}, not of chapter {chapter}"
        return row
    expected = check_cells(chapter_files[row.chapter])
    timeout = timeout or default_timeout(chapter_files[row.chapter])
    row.limit = timeout
    present = {m["label"]: cell.source for cell in notebook.cells if cell.cell_type == "code"
               for m in [CHECK_RE.search(cell.source)] if m}
    for cell in notebook.cells:  # outputs from elsewhere are never trusted
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        # the kernel's working directory holds only the submission and the canary; HOME and
        # TMPDIR (the grader's exercise log, caches) are beside it, so what the submission
        # finds in "." does not depend on what the tools happened to create
        work, scratch = Path(tmp) / "work", Path(tmp) / "scratch"
        work.mkdir()
        scratch.mkdir()
        copy = work / "submission.ipynb"
        nbformat.write(notebook, copy)
        (work / CANARY).write_text("the grader checks that this file survives\n")
        env = {**os.environ, "HOME": str(scratch), "TMPDIR": str(scratch),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        token = secrets.token_hex(16)
        command = [sys.executable, "-m", "tools.teach.grade", "--json", "--token-from-stdin",
                   "--timeout", str(timeout),
                   "--chapter-file", str(chapter_files[row.chapter].resolve()), str(copy)]
        prefix = network_isolation() or []
        start = time.perf_counter()
        process = subprocess.Popen(prefix + command, cwd=work, env=env, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE,
                                   start_new_session=True,
                                   preexec_fn=_limits(int(memory_gb * 2**30)))
        try:
            out, err = process.communicate(input=token + "\n", timeout=timeout + STARTUP_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            out, err = "", ""
            row.note = f"timed out: still running after {timeout} s"
            row.hit_limit = True
        row.seconds = round(time.perf_counter() - start, 1)
        deleted = not (work / CANARY).exists() or not copy.exists()
    report = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                candidate = json.loads(line)
            except ValueError:
                continue
            if type(candidate) is dict and candidate.get("token") == token:
                report = candidate
                break
    if report is None and not row.note:
        last = (err.strip().splitlines() or ["no output"])[-1][:160]
        row.note = f"the grader stopped: {last}"
    if report is not None:
        row.results, row.details = report["results"], report["details"]
        row.errors = report["other_errors"]
        row.unverified = [label for label in report.get("unverified", []) if label in expected]
        if any("ran longer than" in e for e in row.errors):
            row.note = f"timed out: a cell ran longer than {timeout} s"
            row.hit_limit = True
        elif any("MemoryError" in e or "kernel died" in e for e in row.errors):
            row.note = "memory limit or a dead kernel: " + "; ".join(row.errors)[:160]
    if deleted:
        row.errors.append("deleted files in its working directory")
    for label, source in expected.items():
        if label not in present:
            row.results[label] = "missing"
            row.details[label] = "check cell deleted, or its label renamed"
        elif _normal(present[label]) != _normal(source):
            row.results[label] = "check changed"
            row.details[label] = "the check cell differs from the chapter's: not trusted"
        else:
            row.results.setdefault(label, "not attempted")
    row.results = {k: v for k, v in row.results.items() if k in expected}
    return row


def _label_key(label: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", label)]


def labels_of(rows: list[Row], chapter_files: dict[str, Path]) -> list[str]:
    numbers = {row.chapter for row in rows if row.chapter in chapter_files}
    return sorted({label for n in numbers for label in check_cells(chapter_files[n])},
                  key=_label_key)


def write_table(rows: list[Row], labels: list[str], out: Path) -> None:
    """grades.csv, and grades-rows.json (the rows as a rerun reads them), each replaced
    atomically: a reader, or a batch killed now, sees the old file or the new, never half."""
    out.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["file", "chapter", *labels, "passed", "of", "errors", "seconds", "limit",
                     "hit limit", "note"])
    for row in rows:
        results = [row.results.get(label, "") for label in labels]
        writer.writerow([row.file, row.chapter, *results, results.count("passed"),
                         len(labels), " | ".join(row.errors), row.seconds, row.limit,
                         "yes" if row.hit_limit else "", row.note])
    data = text.getvalue().encode("utf-8")
    write_atomically(out / "grades.csv", lambda handle: handle.write(data))
    state = json.dumps([asdict(row) for row in rows], indent=1).encode("utf-8")
    write_atomically(out / "grades-rows.json", lambda handle: handle.write(state))


def read_graded(out: Path) -> dict[str, Row]:
    """The rows a previous run wrote (grades-rows.json), by file; none if it is unreadable."""
    try:
        rows = json.loads((out / "grades-rows.json").read_text(encoding="utf-8"))
        return {r["file"]: Row(**r) for r in rows}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def write_outputs(rows: list[Row], labels: list[str], out: Path, isolation: str) -> str:
    """Write grades.csv and grades-summary.md; return the summary text."""
    write_table(rows, labels, out)
    lines = [f"# Grades: {len(rows)} submissions", "", f"Isolation: {isolation}.", "",
             "| exercise | passed | failed | not attempted | other | most common failing hint "
             "| verified by the grader |",
             "|---|---|---|---|---|---|---|"]
    for label in labels:
        statuses = Counter(row.results.get(label, "not graded") for row in rows)
        hints = Counter(row.details[label] for row in rows
                        if row.results.get(label) == "failed" and label in row.details)
        hint = hints.most_common(1)[0][0].replace("|", "\\|")[:90] if hints else ""
        other = sum(n for status, n in statuses.items()
                    if status not in ("passed", "failed", "not attempted"))
        verified = (f"no: {SANDBOX_ONLY[label]}" if label in SANDBOX_ONLY else "yes")
        lines.append(f"| {label} | {statuses['passed']} | {statuses['failed']} | "
                     f"{statuses['not attempted']} | {other} | {hint} | {verified} |")
    lines += ["", "| submission | seconds | limit (s) | hit the limit |", "|---|---|---|---|"]
    lines += [f"| `{row.file}` | {row.seconds} | {row.limit or ''} | "
              f"{'**yes**' if row.hit_limit else ''} |" for row in rows]
    ungraded = [row for row in rows if row.note]
    if ungraded:
        lines += ["", "Not graded normally:", ""]
        lines += [f"- `{Path(row.file).name}`: {row.note}" for row in ungraded]
    text = "\n".join(lines) + "\n"
    (out / "grades-summary.md").write_text(text, encoding="utf-8")
    return text


def grade_class(folder: Path, out: Path, chapter: str | None = None, timeout: int | None = None,
                memory_gb: float = 8.0, book: Path = BOOK, regrade: bool = False) -> list[Row]:
    """Grade every notebook under ``folder``; ``timeout`` None: each chapter's default."""
    chapter_files = {c.name[:2]: c for c in chapters(book)}
    if chapter is not None and chapter not in chapter_files:
        raise ValueError(f"no chapter {chapter!r} in {book} (have {sorted(chapter_files)})")
    paths = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not paths:
        raise ValueError(f"no .ipynb files under {folder}")
    done = {} if regrade else read_graded(out)
    rows: list[Row] = []
    for path in tqdm(paths, desc="grading", unit="notebook"):
        name = str(path.relative_to(folder))
        previous = done.get(name)
        if previous is not None and previous.sha256 == hashlib.sha256(
                path.read_bytes()).hexdigest() and (chapter is None or
                                                    previous.chapter in ("", chapter)):
            rows.append(previous)  # graded by an earlier run: same bytes
        else:
            row = grade_submission(path, chapter_files, chapter, timeout, memory_gb)
            row.file = name
            rows.append(row)
        write_table(rows, labels_of(rows, chapter_files), out)  # as graded, atomically
    isolation = ("own process, kernel, working directory and HOME; time and memory limits; "
                 + ("no network (network namespace)" if network_isolation() else
                    "network NOT isolated (needs root and `unshare` on Linux)"))
    print(write_outputs(rows, labels_of(rows, chapter_files), out, isolation))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--chapter", help="grade every notebook as this chapter (NN)")
    parser.add_argument("--out", type=Path, default=Path("."), help="where grades.csv goes")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds a whole notebook may run (so also each cell); default: "
                        f"{TIME_FACTOR}x its chapter's stated run time, at least {TIME_FLOOR_S}")
    parser.add_argument("--regrade", action="store_true",
                        help="grade again the submissions an earlier run already graded")
    parser.add_argument("--memory-gb", type=float, default=8.0,
                        help="address-space limit per submission (torch alone maps ~5 GB)")
    parser.add_argument("--book", type=Path, default=BOOK, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.folder.is_dir():
        parser.error(f"no folder {args.folder}")
    try:
        grade_class(args.folder, args.out, args.chapter, args.timeout, args.memory_gb,
                    args.book, args.regrade)
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {args.out / 'grades.csv'} and {args.out / 'grades-summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
