"""Time each notebook in a fresh kernel and print a table (``make bench``).

A benchmark, not a test: it prints wall-clock seconds on this machine, with the machine
described, so chapters can be held to the 60 s budget.
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

BUDGET_S = 60.0


def run_notebook(path: Path, timeout: int = 600) -> float:
    """Execute ``path`` top to bottom in a fresh kernel; return the wall-clock seconds."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"cuda available: {torch.cuda.is_available()}")
    rows, total = [], 0.0
    for path in args.notebooks:
        seconds = run_notebook(path)
        total += seconds
        rows.append((path.name, seconds))
        print(f"  ran {path.name} in {seconds:.1f} s", file=sys.stderr)
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
