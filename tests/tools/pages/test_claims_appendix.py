"""The ledger, the chapters and the appendix agree (tools/pages/claims_appendix.py)."""

import re

import pytest

from tools.build.chapter_format import CJK_RE
from tools.pages import claims_appendix as appendix


def test_ledger_lists_c01_to_c45_and_later_claims_once():
    ledger = appendix.load_ledger()
    ids = sorted(ledger, key=lambda i: int(i[1:]))
    assert ids[:45] == [f"C{i:02d}" for i in range(1, 46)]
    assert all(re.fullmatch(r"C(?:\d\d|[1-9]\d\d)", i) for i in ids), ids
    ids_in_file = re.findall(r"^- id: (C\d{2,3})$", appendix.LEDGER.read_text(encoding="utf-8"),
                             re.M)
    assert len(ids_in_file) == len(set(ids_in_file)), "a claim ID is listed twice"
    assert all(entry["statement"].strip() for entry in ledger.values())


def test_every_claim_in_a_chapter_is_known_and_every_known_claim_is_checked():
    ledger, sites = appendix.load_ledger(), appendix.claim_sites()
    unknown = sorted(set(sites) - set(ledger))
    unchecked = sorted(set(ledger) - set(sites))
    assert not unknown, f"claim IDs used in chapters but not in claims/ledger.yml: {unknown}"
    assert not unchecked, f"claims that no chapter checks: {unchecked}"


def test_sites_name_the_chapter_and_the_section():
    sites = appendix.claim_sites()
    [c13] = sites["C13"]
    assert c13.chapter == "03_training" and c13.title.startswith("03 ·")
    assert c13.section.startswith("step() before backward()")
    assert c13.anchor == "step-before-backward-stale-gradients-and-what-pytorch-does-about-them"


def record(claim_id, status, device, when, torch="2.14.1", reason=""):
    return {"id": claim_id, "status": status, "device": device, "when": when, "torch": torch,
            "reason": reason}


def test_latest_record_per_device_type():
    records = [record("C01", "failed", "cpu", "2026-01-01T00:00:00+00:00"),
               record("C01", "held", "cpu", "2026-02-01T00:00:00+00:00"),
               record("C01", "held", "cuda:0", "2026-01-15T00:00:00+00:00", torch="2.11"),
               record("C02", "held", "cpu", "2026-03-01T00:00:00+00:00"),
               {"id": "C01", "status": "failed", "device": "cpu"}]  # old record without a time
    assert appendix.latest(records, "C01", "cpu")["status"] == "held"
    assert appendix.latest(records, "C01", "cuda")["torch"] == "2.11"
    assert appendix.latest(records, "C03", "cpu") is None


def test_render_marks_missing_and_not_run():
    ledger = {"C01": {"statement": "one | two"}, "C02": {"statement": "second"}}
    sites = {"C01": [appendix.Site("01_x", "01 · X", "A section", "a-section")]}
    text = appendix.render(ledger, sites, [record("C01", "skipped", "cpu",
                                                  "2026-05-01T10:00:00+00:00",
                                                  reason="needs CUDA")])
    c01 = next(line for line in text.splitlines() if line.startswith("| C01"))
    c02 = next(line for line in text.splitlines() if line.startswith("| C02"))
    assert "one \\| two" in c01 and "[01 · A section](01_x.md#a-section)" in c01
    assert "**skipped** (needs CUDA)<br>2026-05-01, torch 2.14.1" in c01
    assert "not run on a GPU yet" in c01
    assert "**missing**" in c02 and "held" not in c02
    assert re.search(r"1 of 2 claims have a checking cell; 1 are missing", text)


def test_notes_are_rendered():
    ledger = {"C01": {"statement": "s", "note": "only on Tuesdays"}}
    text = appendix.render(ledger, {}, [])
    assert "*Where it breaks:* only on Tuesdays" in text


def test_a_claim_checked_in_parts_shows_each_part():
    ledger = {"C23": {"statement": "s"}}
    sites = {"C23": [appendix.Site("06_x", "06 · X", "A", "a")]}
    records = [{**record("C23", "held", "cpu", "2026-05-01T10:00:00+00:00"), "part": "memory"},
               {**record("C23", "skipped", "cpu", "2026-05-01T10:00:01+00:00",
                         reason="needs CUDA"), "part": "speed"}]
    row = next(line for line in appendix.render(ledger, sites, records).splitlines()
               if line.startswith("| C23"))
    assert "*memory:* **held**" in row and "*speed:* **skipped** (needs CUDA)" in row


def test_every_claim_has_a_chinese_statement_and_each_note_a_chinese_note():
    for claim_id, entry in appendix.load_ledger().items():
        assert CJK_RE.search(entry.get("statement_zh", "")), f"{claim_id}: no statement_zh"
        assert ("note" in entry) == ("note_zh" in entry), f"{claim_id}: note without note_zh"
        if "note_zh" in entry:
            assert CJK_RE.search(entry["note_zh"]), claim_id


def test_the_chinese_appendix_links_translated_chapters_and_the_english_pages_otherwise():
    ledger = {"C01": {"statement": "s", "statement_zh": "论断一", "note": "n",
                      "note_zh": "只在周二"},
              "C02": {"statement": "t", "statement_zh": "论断二"},
              "C03": {"statement": "u", "statement_zh": "论断三"}}
    en_sites = {"C01": [appendix.Site("01_x", "01 · X", "A section", "a-section")],
                "C02": [appendix.Site("02_y", "02 · Y", "Other", "other")]}
    zh_sites = {"C01": [appendix.Site("01_x", "01 · 甲", "一节", "一节")]}
    records = [record("C01", "held", "cpu", "2026-05-01T10:00:00+00:00")]
    rows = {line[2:5]: line for line in
            appendix.render_zh(ledger, en_sites, zh_sites, records).splitlines()
            if line.startswith("| C")}
    assert "[01 · 一节](01_x.md#一节)" in rows["C01"] and "**成立**" in rows["C01"]
    assert "*在哪里不成立：*只在周二" in rows["C01"]
    assert '<a href="../book/02_y.html#other">02 · Other</a>（英文）' in rows["C02"]
    assert "尚未在 CPU 上运行" in rows["C02"] and "尚未在 GPU 上运行" in rows["C02"]
    assert "**缺失**" in rows["C03"]


def test_the_chinese_appendix_refuses_a_claim_without_a_chinese_statement():
    with pytest.raises(ValueError, match="no statement_zh for C02"):
        appendix.render_zh({"C01": {"statement_zh": "有"}, "C02": {"statement": "s"}}, {}, {}, [])
