"""Run chapters several times and print a table of claim x run -> held / failed / skipped:
``make stress`` (timing claims, some runs under load) and ``make stress-seeds`` (every claim,
with every seed of the chapter shifted together).

A timing claim (a cell that uses ``remeasure``) must hold on a busy laptop as well as on an
idle one. ``make stress`` runs each such chapter ``--runs`` times in a row, then ``--loaded``
more times while a background process keeps one core busy, reading the claim results from the
claims log and the ratios from the ``attempt i/n: ... -> holds`` lines the chapter prints.

A claim must also hold for any seed. ``--seeds 1,2,3`` runs every chapter once per shift, each
time with every seed literal of its code cells increased by that shift (tools/check/shift_seeds.py),
and the table has one column per shift plus a pass/fail row per chapter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from helpers.claims import CLAIMS_LOG_ENV_VAR
from tools.build.chapter_format import ROOT, chapters, notebook_for
from tools.check.shift_seeds import shift_notebook, shifted_helpers

ATTEMPT_RE = re.compile(r"attempt (\d+)/(\d+): (.*) -> (holds|does not hold.*)")
CLAIM_CELL_RE = re.compile(r'claim\(\s*"(C\d{2,3})"(?:[^()]|\([^()]*\))*?(?:part="([a-z-]+)")?\)')


def timing_chapters() -> list[Path]:
    return [c for c in chapters() if "remeasure(" in c.read_text(encoding="utf-8")]


@contextmanager
def one_core_busy():
    """A background process spinning on one core for the duration."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def ratios_by_claim(notebook) -> dict[str, list[str]]:
    """For each claim, the attempts printed by the measuring cells before its claim cell."""
    found: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            pending += [f"{m[3]}{'' if m[4] == 'holds' else ' x'}"
                        for m in ATTEMPT_RE.finditer(text)]
        claims = CLAIM_CELL_RE.findall(cell.source)
        if claims and pending:  # the measurement belongs to the cell's last claim (or part)
            claim_id, part = claims[-1]
            found.setdefault(f"{claim_id} [{part}]" if part else claim_id, []).extend(pending)
            pending = []
    return found


@contextmanager
def lock(path: Path | None):
    """Hold an advisory lock (shared with other notebook runs on this machine), if asked."""
    if path is None:
        yield
        return
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def run_chapter(chapter: Path, seed_shift: int = 0
                ) -> tuple[list[dict], dict[str, list[str]], float, str]:
    """Execute a chapter's notebook (its seeds shifted by ``seed_shift``): the claim records,
    the ratios by claim, the seconds it took, and "" or the error that stopped it."""
    path = notebook_for(chapter)
    notebook = nbformat.read(path, as_version=4)
    error = ""
    with tempfile.TemporaryDirectory() as tmp:
        if seed_shift:
            helpers = shifted_helpers(seed_shift, Path(tmp) / "shifted")
            count = shift_notebook(notebook, seed_shift, helpers)
            print(f"  {chapter.stem}: {count} seeds shifted by {seed_shift}, and the helpers'",
                  file=sys.stderr)
        log = Path(tmp) / "claims.jsonl"
        os.environ[CLAIMS_LOG_ENV_VAR] = str(log)
        start = time.perf_counter()
        try:
            NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except Exception as err:  # a failed claim stops the notebook: report, go on
            error = _first_line(err)
            print(f"  {chapter.stem}: {error}", file=sys.stderr)
        seconds = time.perf_counter() - start
        records = [json.loads(line) for line in log.read_text().splitlines()] \
            if log.exists() else []
    return records, ratios_by_claim(notebook), seconds, error


def _first_line(err: Exception) -> str:
    """The error's name and the last line of its message (nbclient puts the traceback first)."""
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    tail = re.sub(r"\x1b\[[0-9;]*m", "", lines[-1]) if lines else ""
    return f"{type(err).__name__}: {tail[:160]}"


def parse_shifts(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; refuses anything but distinct integers >= 0 (0: the seeds
    as written)."""
    try:
        shifts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes integers like 1,2,3, got {text!r}") from None
    if any(s < 0 for s in shifts) or len(set(shifts)) != len(shifts):
        raise argparse.ArgumentTypeError(f"--seeds takes distinct integers >= 0, got {text!r}")
    return shifts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loaded", type=int, default=2)
    parser.add_argument("--lock", type=Path, help="a lock file other notebook runs also take")
    parser.add_argument("--seeds", type=parse_shifts, metavar="1,2,...",
                        help="run every chapter once per shift, its seeds shifted by it "
                        "(instead of --runs/--loaded)")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    parser.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter "
                        "with a timing claim; with --seeds, every chapter)")
    args = parser.parse_args()
    pool = chapters() if args.seeds else timing_chapters()
    selected = [c for c in pool if not args.chapters or c.stem in args.chapters]
    if args.chapters and len(selected) != len(set(args.chapters)):
        parser.error(f"unknown chapter among {args.chapters}: "
                     f"choose from {[c.stem for c in pool]}")
    table: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {}
    outcome: dict[str, list[str]] = {}
    # (column label, seed shift, one core busy)
    plan = ([(f"seeds+{k}", k, False) for k in args.seeds] if args.seeds else
            [("idle", 0, False)] * args.runs + [("loaded", 0, True)] * args.loaded)
    for number, (condition, shift, loaded) in enumerate(plan, 1):
        for chapter in selected:
            print(f"run {number} ({condition}): {chapter.stem}", file=sys.stderr, flush=True)
            with lock(args.lock):
                if loaded:
                    with one_core_busy():
                        records, ratios, took, error = run_chapter(chapter, shift)
                else:
                    records, ratios, took, error = run_chapter(chapter, shift)
            seconds.setdefault(chapter.stem, []).append(took)
            outcome.setdefault(chapter.stem, [""] * len(plan))[number - 1] = \
                f"failed ({error})" if error else "passed"
            for r in records:  # every claim of the chapter: the timing ones show ratios
                key = f"{r['id']}{' [' + r['part'] + ']' if r.get('part') else ''}"
                shown = "/".join(ratios.get(key, []))
                why = f" ({r['reason'][:48]})" if r["status"] == "skipped" and r.get("reason") \
                    else ""
                cell = f"{r['status']}{why} {shown}".strip()
                table.setdefault(key, [""] * len(plan))[number - 1] = cell
    header = " | ".join(f"run {i} ({c})" for i, (c, _, _) in enumerate(plan, 1))
    rows = [f"| claim | {header} |", f"|---|{'---|' * len(plan)}"]
    rows += [f"| {key} | " + " | ".join(table[key]) + " |" for key in sorted(table)]
    failures = sum(cell.startswith("failed") or not cell for row in table.values()
                   for cell in row)
    failures += sum(not cell.startswith("passed") for row in outcome.values() for cell in row)
    rows += ["", f"| chapter | {header} | seconds per run |", f"|---|{'---|' * (len(plan) + 1)}"]
    rows += [f"| {stem} | " + " | ".join(outcome[stem]) + " | "
             + ", ".join(f"{v:.0f}" for v in values) + " |" for stem, values in seconds.items()]
    rows += ["", "ratios: the measured ratio of each attempt (x: attempt did not hold, "
             f"re-measured); {failures} failed or missing results"]
    print("\n" + "\n".join(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(rows) + "\n", encoding="utf-8")
        shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
        print(f"written to {shown}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
