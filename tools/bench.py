"""Time each notebook in a fresh kernel and print a table (``make bench``).

A benchmark, not a test: it prints wall-clock seconds on this machine, with the machine
described, so chapters can be held to the 60 s budget. ``--cells N`` also prints each
notebook's N slowest code cells (from the timings nbclient records), to find where a chapter's
seconds go.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

BUDGET_S = 60.0


def run_notebook(path: Path, timeout: int = 600) -> tuple[float, list[tuple[float, str]]]:
    """Execute ``path`` top to bottom in a fresh kernel: the wall-clock seconds, and each code
    cell's seconds with its first line."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start, cell_seconds(nb)


def cell_seconds(nb) -> list[tuple[float, str]]:
    """(seconds, first line) of every executed code cell, from nbclient's timing metadata."""
    found = []
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        began, ended = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if cell.cell_type == "code" and began and ended:
            seconds = (datetime.fromisoformat(ended.replace("Z", "+00:00"))
                       - datetime.fromisoformat(began.replace("Z", "+00:00"))).total_seconds()
            found.append((seconds, (cell.source.strip().splitlines() or [""])[0][:70]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--cells", type=int, default=0, metavar="N",
                        help="also print each notebook's N slowest cells")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"cuda available: {torch.cuda.is_available()}")
    rows, total = [], 0.0
    for path in args.notebooks:
        seconds, cells = run_notebook(path)
        total += seconds
        rows.append((path.name, seconds))
        print(f"  ran {path.name} in {seconds:.1f} s", file=sys.stderr)
        for took, first_line in sorted(cells, reverse=True)[:args.cells]:
            print(f"    {took:6.1f} s  {first_line}", file=sys.stderr)
    width = max(len(name) for name, _ in rows)
    print(f"\n| {'notebook':<{width}} | seconds | within {BUDGET_S:.0f} s |")
    print(f"|{'-' * (width + 2)}|---------|-------------|")
    for name, seconds in rows:
        ok = "yes" if seconds <= BUDGET_S else "NO"
        print(f"| {name:<{width}} | {seconds:7.1f} | {ok:<11} |")
    print(f"| {'total':<{width}} | {total:7.1f} |             |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
