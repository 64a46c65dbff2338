"""Run every chapter that has a timing claim several times, some under load, and print a table
of claim x run -> held / failed with the measured ratios (``make stress``).

A timing claim (a cell that uses ``remeasure``) must hold on a busy laptop as well as on an
idle one. This runs each such chapter ``--runs`` times in a row, then ``--loaded`` more times
while a background process keeps one core busy, reading the claim results from the claims log
and the ratios from the ``attempt i/n: ... -> holds`` lines the chapter prints.
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
from tools.chapter_format import chapters, notebook_for

ATTEMPT_RE = re.compile(r"attempt (\d+)/(\d+): (.*) -> (holds|does not hold.*)")
CLAIM_CELL_RE = re.compile(r'claim\(\s*"(C\d\d)"(?:[^()]|\([^()]*\))*?(?:part="([a-z-]+)")?\)')


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


def run_chapter(chapter: Path) -> tuple[list[dict], dict[str, list[str]], float]:
    path = notebook_for(chapter)
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "claims.jsonl"
        os.environ[CLAIMS_LOG_ENV_VAR] = str(log)
        start = time.perf_counter()
        try:
            NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except Exception as err:  # a failed claim stops the notebook: report, go on
            print(f"  {chapter.stem}: {type(err).__name__}", file=sys.stderr)
        seconds = time.perf_counter() - start
        records = [json.loads(line) for line in log.read_text().splitlines()] \
            if log.exists() else []
    return records, ratios_by_claim(notebook), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loaded", type=int, default=2)
    parser.add_argument("--lock", type=Path, help="a lock file other notebook runs also take")
    parser.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter "
                        "with a timing claim)")
    args = parser.parse_args()
    selected = [c for c in timing_chapters() if not args.chapters or c.stem in args.chapters]
    table: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {}
    plan = ["idle"] * args.runs + ["loaded"] * args.loaded
    for number, condition in enumerate(plan, 1):
        for chapter in selected:
            print(f"run {number} ({condition}): {chapter.stem}", file=sys.stderr, flush=True)
            with lock(args.lock):
                if condition == "loaded":
                    with one_core_busy():
                        records, ratios, took = run_chapter(chapter)
                else:
                    records, ratios, took = run_chapter(chapter)
            seconds.setdefault(chapter.stem, []).append(took)
            for r in records:  # every claim of the chapter: the timing ones show ratios
                key = f"{r['id']}{' [' + r['part'] + ']' if r.get('part') else ''}"
                shown = "/".join(ratios.get(key, []))
                cell = f"{r['status']} {shown}".strip()
                table.setdefault(key, [""] * len(plan))[number - 1] = cell
    header = " | ".join(f"run {i} ({c})" for i, c in enumerate(plan, 1))
    print(f"\n| claim | {header} |\n|---|{'---|' * len(plan)}")
    for key in sorted(table):
        print(f"| {key} | " + " | ".join(table[key]) + " |")
    failures = sum(cell.startswith("failed") or not cell for row in table.values()
                   for cell in row)
    print("\n| chapter | seconds per run |\n|---|---|")
    for stem, values in seconds.items():
        print(f"| {stem} | {', '.join(f'{v:.0f}' for v in values)} |")
    print(f"\nratios: the measured ratio of each attempt (x: attempt did not hold, re-measured); "
          f"{failures} failed or missing results")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
