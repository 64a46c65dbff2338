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
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

from tools.build.cache_executed import cell_seconds  # the one reading of nbclient's cell timings

BUDGET_S = 60.0


def run_notebook(path: Path, timeout: int = 600) -> tuple[float, list[dict]]:
    """Execute ``path`` top to bottom in a fresh kernel: the wall-clock seconds, and each code
    cell's seconds and first line (:func:`tools.build.cache_executed.cell_seconds`)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start, cell_seconds(nb)


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
        for row in sorted(cells, key=lambda row: -row["seconds"])[:args.cells]:
            print(f"    {row['seconds']:6.1f} s  {row['first_line']}", file=sys.stderr)
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
