"""Per-module mutation scores from ``mutmut results --all true`` (``make mutate``).

Reads the lines ``    helpers.MODULE.x_FUNCTION__mutmut_N: STATUS`` and prints, per module,
how many mutants were killed, survived, timed out or were not checked (no test reached
them, or the run stopped first), the score (killed / checked), and the surviving mutants'
names, so that each can be looked at with ``mutmut show NAME``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")
CHECKED = ("killed", "survived", "timeout", "segfault", "suspicious")


def module_of(name: str) -> str:
    """``helpers.train.x_fit__mutmut_3`` -> ``train``; a method's mutant names its class."""
    parts = name.split(".")
    return parts[1] if parts[0] == "helpers" and len(parts) > 2 else parts[0]


def summarise(text: str) -> tuple[dict[str, Counter], dict[str, list[str]]]:
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors: dict[str, list[str]] = defaultdict(list)
    for line in text.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        module, status = module_of(match["name"]), match["status"].strip()
        counts[module][status] += 1
        if status == "survived":
            survivors[module].append(match["name"])
    return counts, survivors


def table(counts: dict[str, Counter]) -> str:
    rows = ["| module | mutants | killed | survived | timeout | not checked | score |",
            "|---|---|---|---|---|---|---|"]
    for module, c in sorted(counts.items()):
        checked = sum(c[s] for s in CHECKED)
        killed = c["killed"] + c["timeout"]  # a mutant that hangs the tests is caught too
        score = f"{killed / checked:.0%}" if checked else "-"
        rows.append(f"| {module} | {sum(c.values())} | {c['killed']} | {c['survived']} | "
                    f"{c['timeout']} | {sum(c.values()) - checked} | {score} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="output of `mutmut results --all true`")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    counts, survivors = summarise(args.results.read_text(encoding="utf-8"))
    if not counts:
        sys.exit(f"no mutmut results in {args.results}")
    text = table(counts) + "\n\nSurviving mutants (`mutmut show NAME`):\n" + "\n".join(
        f"- {module}: {', '.join(n.split('.', 2)[-1] for n in names)}"
        for module, names in sorted(survivors.items())) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
