"""Each chapter's header states its run time on a 2-core CPU; the nbmake run measures it.

A stated time that drifts from the measured one (a chapter grew, a header was not updated) is
prose that no longer matches the output. `make nbmake` writes the per-notebook times to a JUnit
file; `make html-test` runs this check after it. "About N s" is read as within a factor of 1.5
of the measured wall time: run-to-run spread on a 2-core machine is about ±25 %.
"""

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tools.chapter_format import chapters

ROOT = Path(__file__).resolve().parents[1]
JUNIT = ROOT / "_build" / "nbmake-junit.xml"
STATED_RE = re.compile(r"^\*Runs in about (\d+) s on a 2-core CPU", re.MULTILINE)
FACTOR = 1.5


def stated_seconds(text: str) -> int:
    """The run time a chapter's header states ("*Runs in about N s on a 2-core CPU...")."""
    match = STATED_RE.search(text)
    if match is None:
        raise ValueError("no '*Runs in about N s on a 2-core CPU' line in the chapter header")
    return int(match[1])


def measured_seconds(junit: Path) -> dict[str, float]:
    """Wall seconds per notebook stem, from pytest's JUnit XML of the nbmake run."""
    times = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        stem = Path(case.get("classname", "").replace(".", "/")).name or case.get("name", "")
        name = case.get("name", "")
        key = Path(name).stem if name.endswith(".ipynb") else stem
        times[key] = float(case.get("time", "0"))
    return times


def test_stated_seconds_reads_the_header_and_refuses_a_missing_one():
    assert stated_seconds("x\n*Runs in about 25 s on a 2-core CPU; no GPU.*\n") == 25
    with pytest.raises(ValueError, match="Runs in about"):
        stated_seconds("*Runs quickly.*")


def test_measured_seconds_reads_junit(tmp_path):
    junit = tmp_path / "j.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="" name="07_checkpoints.ipynb" '
                     'time="31.5"/></testsuite></testsuites>')
    assert measured_seconds(junit) == {"07_checkpoints": 31.5}


@pytest.mark.parametrize("chapter", chapters(), ids=lambda p: p.stem)
def test_stated_run_time_matches_the_measured_one(chapter):
    if not JUNIT.exists():
        if os.environ.get("BOOK_REQUIRE_HTML"):
            raise RuntimeError(f"{JUNIT} is missing: run `make nbmake` first")
        pytest.skip("no nbmake run recorded")
    if os.cpu_count() != 2:
        pytest.skip(f"the headers state times on 2 cores; this machine has {os.cpu_count()}")
    measured = measured_seconds(JUNIT).get(chapter.stem)
    if measured is None:
        pytest.skip(f"{chapter.stem} was not in the recorded nbmake run")
    stated = stated_seconds(chapter.read_text(encoding="utf-8"))
    assert measured / FACTOR <= stated <= measured * FACTOR, (
        f"{chapter.name} says 'about {stated} s' but ran in {measured:.0f} s: update its header")
