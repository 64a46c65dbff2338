"""Render the claims appendix (book/appendix_claims.md) from the ledger, the chapters and
the records the claim cells wrote.

- the ledger: ``claims/ledger.yml`` (every claim, C01-C45);
- where each claim is checked: every ``claim("Cxx", ...)`` in ``book/NN_topic.md``, with the
  section heading above it (linked);
- the latest result on CPU and on GPU: JSON lines written through ``BOOK_CLAIMS_LOG`` into
  ``_build/claims/`` by this machine's runs, and any committed under ``claims/records/``
  (e.g. from a GPU machine).

A claim that no cell checks is shown as missing; one that never ran, as not run.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml
from myst_parser.mdit_to_docutils.base import default_slugify

from tools.chapter_format import BOOK, ROOT, chapters

LEDGER = ROOT / "claims" / "ledger.yml"
RECORD_DIRS = [ROOT / "_build" / "claims", ROOT / "claims" / "records"]
OUTPUT = ROOT / "book" / "appendix_claims.md"
CLAIM_RE = re.compile(r'claim\(\s*"(C\d\d)"')
HEADING_RE = re.compile(r"^(#{1,3}) (.+)$")


@dataclass(frozen=True)
class Site:
    chapter: str  # file stem, e.g. 03_training
    title: str  # the chapter's title
    section: str  # heading text above the claim cell
    anchor: str  # MyST's slug of that heading


def load_ledger(path: Path = LEDGER) -> dict[str, dict]:
    return {entry["id"]: entry for entry in yaml.safe_load(path.read_text(encoding="utf-8"))}


def _plain(heading: str) -> str:
    """Heading text as rendered (no markup), which is what MyST slugs."""
    return re.sub(r"[`*]", "", heading).strip()


def claim_sites(book: Path = BOOK) -> dict[str, list[Site]]:
    """For each claim ID used in a chapter, where (chapter and section) it is checked."""
    sites: dict[str, list[Site]] = {}
    for chapter in chapters(book):
        title = section = ""
        in_code = False
        for line in chapter.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                in_code = not in_code if line.strip() == "```" or not in_code else in_code
            heading = None if in_code else HEADING_RE.match(line)
            if heading:
                level, text = len(heading[1]), heading[2]
                if level == 1:
                    title = _plain(text)
                section = _plain(text)
            for claim_id in CLAIM_RE.findall(line):
                site = Site(chapter.stem, title, section, default_slugify(section))
                if site not in sites.setdefault(claim_id, []):
                    sites[claim_id].append(site)
    return sites


def load_records(dirs: list[Path] = RECORD_DIRS) -> list[dict]:
    records = []
    for directory in dirs:
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    records.append(json.loads(line))
    return records


def latest(records: list[dict], claim_id: str, device_type: str, part: str = "") -> dict | None:
    """The newest record of one claim (or one part of it) on one kind of device."""
    mine = [r for r in records if r.get("id") == claim_id and r.get("part", "") == part
            and r.get("device", "").split(":")[0] == device_type and r.get("when")]
    return max(mine, key=lambda r: r["when"]) if mine else None


def _status(record: dict | None, what: str) -> str:
    if record is None:
        return f"not run on {what} yet"
    reason = f" ({record['reason']})" if record.get("reason") else ""
    if len(reason) > 90:
        reason = reason[:87] + "...)"
    return (f"**{record['status']}**{reason}<br>{record['when'][:10]}, "
            f"torch {record['torch']}")


def results(records: list[dict], claim_id: str, device_type: str, what: str) -> str:
    """The table cell of one claim on one kind of device: one line per part it is checked in."""
    parts = sorted({r.get("part", "") for r in records if r.get("id") == claim_id}) or [""]
    if parts == [""]:
        return _status(latest(records, claim_id, device_type), what)
    return "<br>".join(f"*{part or 'whole'}:* "
                       f"{_status(latest(records, claim_id, device_type, part), what)}"
                       for part in parts)


def render(ledger: dict[str, dict], sites: dict[str, list[Site]], records: list[dict]) -> str:
    rows, counts = [], {"checked": 0, "missing": 0}
    for claim_id, entry in sorted(ledger.items()):
        where = sites.get(claim_id, [])
        if where:
            counts["checked"] += 1
            links = "<br>".join(f"[{s.title.split(' · ')[0]} · {s.section}]"
                                f"({s.chapter}.md#{s.anchor})" for s in where)
            cpu = results(records, claim_id, "cpu", "a CPU")
            gpu = results(records, claim_id, "cuda", "a GPU")
        else:
            counts["missing"] += 1
            links, cpu, gpu = "**missing**: no cell checks it", "", ""
        statement = entry["statement"].replace("|", "\\|")
        if entry.get("note"):
            statement += "<br><br>*Where it breaks:* " + entry["note"].replace("|", "\\|")
        rows.append(f"| {claim_id} | {statement} | {links} | {cpu} | {gpu} |")
    return "\n".join([
        "# Appendix · The claims ledger",
        "",
        "Every claim the book makes is checked by a cell that computes the evidence and asserts "
        "it. This page lists them all, where each is checked, and the latest result of that "
        "check on a CPU and on a GPU, with the date and the PyTorch version. It is generated "
        "by `tools/claims_appendix.py` from the records the claim cells write during "
        "`make test` and `make book`; results from GPU machines are kept in `claims/records/`.",
        "",
        f"{counts['checked']} of {len(ledger)} claims have a checking cell"
        + (f"; {counts['missing']} are missing." if counts["missing"] else "."),
        "",
        "| ID | Claim | Checked in | Latest on CPU | Latest on GPU |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])


def main() -> int:
    text = render(load_ledger(), claim_sites(), load_records())
    if OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text:
        print(f"{OUTPUT.relative_to(ROOT)} is up to date")  # no new mtime: no Sphinx re-read
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
