"""Each chapter's header states its run time on a 2-core CPU; the nbmake run measures it.

A stated time that drifts from the measured one (a chapter grew, a header was not updated) is
prose that no longer matches the output. `make nbmake` writes each chapter's seconds to
``_build/chapter-run-times.json`` (the book's run, from the kernel's start to its last cell,
apart from the student edition's exercises that share its kernel); `make html-test` runs this
check after it.

The same 2-core machine is not always as fast: fresh-clone runs of the same chapters measured
01 9 s and 02 20 s (2026-11-30), 01 18 s and 02 46 s (2026-12-02), 01 8 s and 02 23 s
(2026-12-04), every chapter moving by about the same factor (1.8-2.1x). So a header is checked
against the run's own speed: the median of measured/stated over the chapters. "About N s" is
read as within a factor of 1.5 of N times that speed (run-to-run spread of one chapter is
about +-25 %), and the speed itself must lie within a factor of 2.5 of the headers (the
machine's own range, with a margin): a chapter that grew, or headers that are all stale, fail.
"""

import json
import os
import re
import statistics
from pathlib import Path

import pytest

from tools.build.chapter_format import RUN_TIME_RE, chapters

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMES = ROOT / "_build" / "chapter-run-times.json"  # tests/chapters/test_chapters_run.py
CELL_TIMES = ROOT / "_build" / "nbmake-cell-times.json"  # tools/build/cache_executed.py writes it
# "..., and up to about N s the first time" (09: torch.compile's cache empty): the cold bound,
# read across line breaks (the header is wrapped)
FIRST_TIME_RE = re.compile(r"up\s+to\s+about\s+(\d+)\s+s\s+the\s+first\s+time")
FACTOR = 1.5
SPEED_RANGE = 2.5


def stated_seconds(text: str) -> int:
    """The run time a chapter's header states ("*Runs in about N s on a 2-core CPU...")."""
    match = RUN_TIME_RE.search(text)
    if match is None or "on a 2-core CPU" not in text[match.start():match.end() + 20]:
        raise ValueError("no '*Runs in about N s on a 2-core CPU' line in the chapter header")
    return int(match[1])


def first_time_seconds(text: str) -> int | None:
    """The cold-run time a header states besides the usual one ("up to about N s the first
    time"), or None."""
    match = FIRST_TIME_RE.search(text)
    return int(match[1]) if match else None


def measured_seconds(run_times: Path) -> dict[str, float]:
    """Wall seconds of the book's run per chapter stem, from make nbmake's record."""
    times = json.loads(run_times.read_text(encoding="utf-8"))
    return {stem: float(seconds["book"]) for stem, seconds in times.items()}


def run_speed(measured: dict[str, float], stated: dict[str, int]) -> float:
    """This run's speed against the headers: the median of measured/stated seconds."""
    ratios = [measured[stem] / stated[stem] for stem in stated if stem in measured]
    if not ratios:
        raise ValueError("no chapter is both stated and measured")
    return statistics.median(ratios)


def header_problems(measured: dict[str, float], stated: dict[str, int],
                    first_time: dict[str, int] | None = None) -> list[str]:
    """The headers this run contradicts: a chapter off the run's speed by more than FACTOR,
    or a run whose speed is off every header by more than SPEED_RANGE. A chapter that also
    states a first-time (cold) run may take up to that much (times FACTOR)."""
    first_time = first_time or {}
    speed = run_speed(measured, stated)
    problems = []
    if not 1 / SPEED_RANGE <= speed <= SPEED_RANGE:
        problems.append(f"every chapter ran {speed:.2f}x its stated time: update the headers")
    for stem, seconds in sorted(stated.items()):
        most = max(seconds, first_time.get(stem, seconds)) * speed * FACTOR
        if stem in measured and not seconds * speed / FACTOR <= measured[stem] <= most:
            problems.append(f"{stem} says 'about {seconds} s' but ran in {measured[stem]:.0f} s, "
                            f"where the other chapters ran at {speed:.2f}x their stated times: "
                            "update its header")
    return problems


def test_header_problems_follow_the_run_speed_and_can_fail():
    stated = {"a": 10, "b": 20, "c": 40}
    assert header_problems({"a": 10, "b": 20, "c": 40}, stated) == []
    assert header_problems({"a": 5, "b": 10, "c": 20}, stated) == []  # a machine 2x faster
    assert header_problems({"a": 19, "b": 42, "c": 80}, stated) == []  # 2x slower
    grew = header_problems({"a": 10, "b": 20, "c": 90}, stated)
    assert len(grew) == 1 and grew[0].startswith("c says 'about 40 s' but ran in 90 s")
    assert header_problems({"a": 10, "b": 20, "c": 20}, stated)[0].startswith("c says")  # shrank
    stale = header_problems({"a": 30, "b": 60, "c": 120}, stated)
    assert stale == ["every chapter ran 3.00x its stated time: update the headers"]
    with pytest.raises(ValueError, match="no chapter"):
        run_speed({"x": 1.0}, stated)
    cold = {"a": 10, "b": 20, "c": 40, "d": 30}
    assert header_problems({"a": 10, "b": 20, "c": 40, "d": 70}, cold, {"d": 50}) == []
    assert header_problems({"a": 10, "b": 20, "c": 40, "d": 70}, cold)[0].startswith("d says")
    assert header_problems({"a": 10, "b": 20, "c": 40, "d": 80}, cold, {"d": 50})


def test_first_time_seconds_reads_the_cold_bound():
    assert first_time_seconds("*Runs in about 30 s on a 2-core CPU, and up to about 50 s\n"
                              "the first time (while ...)*") == 50
    # the header wrapped anywhere in the phrase (09's once broke at "the / first": unread)
    assert first_time_seconds("*Runs in about 30 s on a 2-core CPU, and up to about 65 s the\n"
                              "first time (while ...)*") == 65
    assert first_time_seconds("*Runs in about 30 s on a 2-core CPU; no GPU needed.*") is None


def test_stated_seconds_reads_the_header_and_refuses_a_missing_one():
    assert stated_seconds("x\n*Runs in about 25 s on a 2-core CPU; no GPU.*\n") == 25
    assert stated_seconds("*Reading time about 40 min. Runs in about 25 s on a 2-core CPU.*") == 25
    with pytest.raises(ValueError, match="Runs in about"):
        stated_seconds("*Runs quickly.*")


def test_measured_seconds_reads_the_book_s_seconds(tmp_path):
    record = tmp_path / "times.json"
    record.write_text('{"08_checkpoints": {"book": 31.5, "student": 6.0}}')
    assert measured_seconds(record) == {"08_checkpoints": 31.5}


def test_stated_run_times_match_the_measured_ones():
    if not RUN_TIMES.exists():
        if os.environ.get("BOOK_REQUIRE_HTML"):
            raise RuntimeError(f"{RUN_TIMES} is missing: run `make nbmake` first")
        pytest.skip("no nbmake run recorded")
    if os.cpu_count() != 2:
        pytest.skip(f"the headers state times on 2 cores; this machine has {os.cpu_count()}")
    texts = {chapter.stem: chapter.read_text(encoding="utf-8") for chapter in chapters()}
    stated = {stem: stated_seconds(text) for stem, text in texts.items()}
    first_time = {stem: n for stem, text in texts.items() if (n := first_time_seconds(text))}
    measured = measured_seconds(RUN_TIMES)
    print(f"this run's speed: {run_speed(measured, stated):.2f}x the stated times")
    problems = header_problems(measured, stated, first_time)
    cells = json.loads(CELL_TIMES.read_text(encoding="utf-8")) if CELL_TIMES.exists() else {}
    assert not problems, "; ".join(with_slowest_cells(problem, cells) for problem in problems)


def with_slowest_cells(problem: str, cells: dict[str, dict]) -> str:
    """The problem, followed by where the chapter it names spent its time (where recorded):
    all its cells together (the rest is the kernel's start and shutdown) and the slowest."""
    record = cells.get(problem.split(" ", 1)[0])
    if not record:
        return problem
    slowest = ", ".join(f"code cell {row['cell']} {row['seconds']:.0f} s ({row['first_line']!r})"
                        for row in record["slowest"][:3])
    return f"{problem} [cells {record['cells_seconds']:.0f} s in all; slowest: {slowest}]"


def test_a_slow_chapter_names_its_slowest_cells():
    cells = {"01_autograd": {"cells_seconds": 309.6, "slowest": [
        {"cell": 7, "seconds": 301.2, "first_line": "x = load()"}]}}
    assert with_slowest_cells("01_autograd says about 12 s ...", cells) == (
        "01_autograd says about 12 s ... [cells 310 s in all; slowest: code cell 7 301 s "
        "('x = load()')]")
    assert with_slowest_cells("every chapter ran 3.00x ...", cells) == "every chapter ran 3.00x ..."
