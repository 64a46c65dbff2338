"""Render the claims appendix (book/appendix_claims.md, and the Chinese edition's
book/zh/appendix_claims.md) from the ledger, the chapters and the records the claim cells wrote.

- the ledger: ``claims/ledger.yml`` (every claim, C01-C45);
- where each claim is checked: every ``claim("Cxx", ...)`` in ``book/NN_topic.md``, with the
  section heading above it (linked);
- the latest result on CPU and on GPU: JSON lines written through ``BOOK_CLAIMS_LOG`` into
  ``_build/claims/`` by this machine's runs, and any committed under ``claims/records/``
  (e.g. from a GPU machine).

A claim that no cell checks is shown as missing; one that never ran, as not run. The Chinese
page uses each entry's ``statement_zh`` (and ``note_zh``), links to the Chinese chapter where it
is translated and to the English page otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.build.chapter_format import (
    BOOK,
    CLAIM_CALL_RE,
    ROOT,
    ZH,
    chapters,
    heading_anchor,
    plain_heading,
)

LEDGER = ROOT / "claims" / "ledger.yml"
RECORD_DIRS = [ROOT / "_build" / "claims", ROOT / "claims" / "records"]
OUTPUT = ROOT / "book" / "appendix_claims.md"
OUTPUT_ZH = ROOT / "book" / ZH / "appendix_claims.md"
# The words of a result, in each edition (the records themselves stay English)
WORDS = {
    "en": {"held": "held", "failed": "failed", "skipped": "skipped", "torch": "torch",
           "not_run": "not run on {what} yet", "cpu": "a CPU", "gpu": "a GPU", "whole": "whole",
           "missing": "**missing**: no cell checks it", "breaks": "<br><br>*Where it breaks:* ",
           "can_fail": "<br><br>*Shown to fail where false:* "},
    "zh": {"held": "成立", "failed": "不成立", "skipped": "跳过", "torch": "torch",
           "not_run": "尚未在 {what} 上运行", "cpu": "CPU", "gpu": "GPU", "whole": "整体",
           "missing": "**缺失**：没有单元格检查它", "breaks": "<br><br>*在哪里不成立：*",
           "can_fail": "<br><br>*在论断不成立时确实会失败的测试：*"},
}
HEADING_RE = re.compile(r"^(#{1,3}) (.+)$")


@dataclass(frozen=True)
class Site:
    chapter: str  # file stem, e.g. 03_training
    title: str  # the chapter's title
    section: str  # heading text above the claim cell
    anchor: str  # MyST's slug of that heading


def load_ledger(path: Path = LEDGER) -> dict[str, dict]:
    return {entry["id"]: entry for entry in yaml.safe_load(path.read_text(encoding="utf-8"))}


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
                    title = plain_heading(text)
                section = plain_heading(text)
            for claim_id in CLAIM_CALL_RE.findall(line):
                site = Site(chapter.stem, title, section, heading_anchor(section))
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


def _status(record: dict | None, what: str, lang: str = "en") -> str:
    words = WORDS[lang]
    if record is None:
        return words["not_run"].format(what=what)
    reason = f" ({record['reason']})" if record.get("reason") else ""
    if len(reason) > 90:
        reason = reason[:87] + "...)"
    status = words.get(record["status"], record["status"])
    return f"**{status}**{reason}<br>{record['when'][:10]}, torch {record['torch']}"


def results(records: list[dict], claim_id: str, device_type: str, what: str,
            lang: str = "en") -> str:
    """The table cell of one claim on one kind of device: one line per part it is checked in."""
    parts = sorted({r.get("part", "") for r in records if r.get("id") == claim_id}) or [""]
    if parts == [""]:
        return _status(latest(records, claim_id, device_type), what, lang)
    return "<br>".join(f"*{part or WORDS[lang]['whole']}:* "
                       f"{_status(latest(records, claim_id, device_type, part), what, lang)}"
                       for part in parts)


def _rows(ledger: dict[str, dict], sites: dict[str, list[Site]], link, records: list[dict],
          lang: str) -> tuple[list[str], int]:
    """The table rows of one edition (statement, where checked, CPU, GPU) and how many claims
    have a checking cell; ``link`` renders one site."""
    words, suffix = WORDS[lang], "" if lang == "en" else f"_{lang}"
    rows, checked = [], 0
    for claim_id, entry in sorted(ledger.items(), key=lambda item: int(item[0][1:])):
        where = sites.get(claim_id, [])
        if where:
            checked += 1
            links = "<br>".join(link(s) for s in where)
            cpu = results(records, claim_id, "cpu", words["cpu"], lang)
            gpu = results(records, claim_id, "cuda", words["gpu"], lang)
        else:
            links, cpu, gpu = words["missing"], "", ""
        statement = entry["statement" + suffix].replace("|", "\\|")
        if entry.get("note" + suffix):
            statement += words["breaks"] + entry["note" + suffix].replace("|", "\\|")
        if entry.get("can_fail"):
            statement += words["can_fail"] + ", ".join(
                f"`{test.split('::')[-1]}`" for test in entry["can_fail"])
        rows.append(f"| {claim_id} | {statement} | {links} | {cpu} | {gpu} |")
    return rows, checked


def render(ledger: dict[str, dict], sites: dict[str, list[Site]], records: list[dict]) -> str:
    rows, checked = _rows(ledger, sites, lambda s: f"[{s.title.split(' · ')[0]} · {s.section}]"
                          f"({s.chapter}.md#{s.anchor})", records, "en")
    missing = len(ledger) - checked
    return "\n".join([
        "# Appendix · The claims ledger",
        "",
        "Every claim the book makes is checked by a cell that computes the evidence and asserts "
        "it. This page lists them all, where each is checked, and the latest result of that "
        "check on a CPU and on a GPU, with the date and the PyTorch version. It is generated "
        "by `tools/pages/claims_appendix.py` from the records the claim cells write during "
        "`make test` and `make book`; results from GPU machines are kept in `claims/records/`. "
        "Each claim's verdict is also fed, by a test in `tests/chapters/test_can_fail_NN.py` "
        "(named in its row), evidence from a world where the claim is false, and must fail "
        "there; and `make stress-seeds` checks every claim with all of its chapter's seeds "
        "shifted.",
        "",
        f"{checked} of {len(ledger)} claims have a checking cell"
        + (f"; {missing} are missing." if missing else "."),
        "",
        "| ID | Claim | Checked in | Latest on CPU | Latest on GPU |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])


def _zh_link(site: Site, translated: dict[str, list[Site]]) -> str:
    """A link to where a claim is checked, from the Chinese appendix: the Chinese section when
    the chapter is translated, the English page (an HTML link into the English site) if not."""
    number = site.title.split(" · ")[0]
    if site.chapter in translated:
        return f"[{number} · {site.section}]({site.chapter}.md#{site.anchor})"
    return (f'<a href="../book/{site.chapter}.html#{site.anchor}">{number} · {site.section}'
            "</a>（英文）")


def render_zh(ledger: dict[str, dict], sites: dict[str, list[Site]],
              zh_sites: dict[str, list[Site]], records: list[dict]) -> str:
    """The Chinese claims appendix: ``statement_zh`` of every entry (refused when missing)."""
    missing = sorted(c for c, entry in ledger.items() if not entry.get("statement_zh"))
    if missing:
        raise ValueError(f"claims/ledger.yml: no statement_zh for {', '.join(missing)}")
    by_chapter: dict[str, list[Site]] = {}
    for where in zh_sites.values():
        for site in where:
            by_chapter.setdefault(site.chapter, []).append(site)
    where = {c: zh_sites.get(c) or sites.get(c, []) for c in ledger}
    rows, checked = _rows(ledger, where, lambda s: _zh_link(s, by_chapter), records, "zh")
    return "\n".join([
        "# 附录 · 论断清单",
        "",
        "本书的每一个论断都由一个单元格检查：它计算证据并断言。本页列出全部论断、各自在哪里检查，"
        "以及该检查在 CPU 和 GPU 上的最新结果（日期与 PyTorch 版本）。本页由 "
        "`tools/pages/claims_appendix.py` 根据论断单元格在 `make test` 和 `make book` "
        "时写下的记录生成；"
        "GPU 机器上的结果保存在 `claims/records/`。结果一栏的原因说明来自代码的输出，保持英文。"
        "每个论断的判定函数还会由 `tests/chapters/test_can_fail_NN.py` "
        "中的一个测试（名称列在该行）喂入"
        "论断不成立的情形下的证据，并且必须在那里失败；`make stress-seeds` 则把该章所有随机种子"
        "一起平移，再检查每个论断。",
        "",
        f"{len(ledger)} 个论断中有 {checked} 个有检查它的单元格"
        + (f"；{len(ledger) - checked} 个缺失。" if checked < len(ledger) else "。"),
        "",
        "| 编号 | 论断 | 在哪里检查 | CPU 上的最新结果 | GPU 上的最新结果 |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text``, unless the file holds it already (no new mtime: no Sphinx re-read)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        print(f"{path.relative_to(ROOT)} is up to date")
        return
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> int:
    ledger, sites, records = load_ledger(), claim_sites(), load_records()
    write_if_changed(OUTPUT, render(ledger, sites, records))
    if OUTPUT_ZH.parent.is_dir():
        write_if_changed(OUTPUT_ZH, render_zh(ledger, sites, claim_sites(BOOK / ZH), records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
