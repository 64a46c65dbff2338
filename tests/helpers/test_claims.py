import builtins
import io
import json
import os
import platform

import pytest
import torch

from helpers import claim, claim_records
from helpers.claims import CLAIMS_LOG_ENV_VAR


def test_held_prints_one_line_and_records(capsys):
    with claim("C01", "two plus two is four", device="cpu") as c:
        assert 2 + 2 == 4
    line = capsys.readouterr().out.strip()
    assert line.startswith("C01 held: two plus two is four [device=cpu, torch=")
    assert c.record is not None and c.record.status == "held"
    assert claim_records()[-1] == c.record


def test_failed_claim_reraises_and_says_failed(capsys):
    with pytest.raises(AssertionError, match="evidence 0.5"):
        with claim("C02", "a false statement", device="cpu"):
            assert 0.5 < 0.1, "evidence 0.5"
    out = capsys.readouterr().out
    assert "C02 failed (AssertionError: evidence 0.5)" in out
    assert claim_records()[-1].status == "failed"


def test_other_errors_fail_the_claim_too(capsys):
    with pytest.raises(ZeroDivisionError):
        with claim("C03", "division works", device="cpu"):
            1 / 0  # noqa: B018
    assert "C03 failed (ZeroDivisionError" in capsys.readouterr().out


def test_skip_stops_the_block_and_gives_the_reason(capsys):
    reached = []
    with claim("C16", "deterministic kernels cost time", device="cpu") as c:
        c.skip("needs CUDA: run on a GPU machine")
        reached.append(True)
    assert not reached
    assert "C16 skipped (needs CUDA: run on a GPU machine)" in capsys.readouterr().out
    assert c.record.status == "skipped"


def test_skip_needs_a_reason():
    with pytest.raises(ValueError, match="say why"):
        with claim("C16", "x", device="cpu") as c:
            c.skip("  ")


@pytest.mark.parametrize("bad", ["C1", "c01", "C001", "C0104", "C1040", "01", 1])
def test_bad_id(bad):
    with pytest.raises(ValueError, match="look like 'C07'"):
        claim(bad, "statement")


def test_three_digit_id(capsys):
    with claim("C104", "a claim past C99", device="cpu"):
        pass
    assert "C104 held" in capsys.readouterr().out


def test_empty_statement():
    with pytest.raises(ValueError, match="non-empty statement"):
        claim("C01", "   ")


def test_log_file_gets_one_json_line_per_claim(tmp_path, monkeypatch):
    log = tmp_path / "sub" / "claims.jsonl"
    monkeypatch.setenv(CLAIMS_LOG_ENV_VAR, str(log))
    with claim("C05", "first", device="cpu"):
        pass
    with claim("C06", "second", device="cpu") as c:
        c.skip("not here")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["id"], r["status"]) for r in rows] == [("C05", "held"), ("C06", "skipped")]
    assert rows[1]["reason"] == "not here" and rows[0]["device"] == "cpu"
    # what the claims appendix shows beside each result: the versions and when it ran
    for row in rows:
        assert row["torch"] == torch.__version__ and row["python"] == platform.python_version()
        assert row["statement"] in ("first", "second") and row["when"].endswith("+00:00")
        assert isinstance(row["seconds"], float) and 0 <= row["seconds"] < 5
        assert row["seconds"] == round(row["seconds"], 4)


def test_no_log_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(CLAIMS_LOG_ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    with claim("C07", "quiet", device="cpu"):
        pass
    assert list(tmp_path.iterdir()) == []


def test_keyboard_interrupt_is_not_a_verdict():
    before = len(claim_records())
    with pytest.raises(KeyboardInterrupt):
        with claim("C08", "interrupted", device="cpu"):
            raise KeyboardInterrupt
    assert len(claim_records()) == before


def test_record_has_time_and_python(capsys):
    with claim("C09", "timestamped", device="cpu") as c:
        pass
    assert c.record.when.endswith("+00:00") and c.record.python.count(".") == 2


def test_parts_are_recorded_and_printed_apart(tmp_path, monkeypatch, capsys):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(CLAIMS_LOG_ENV_VAR, str(log))
    with claim("C23", "less memory", device="cpu", part="memory"):
        pass
    with claim("C23", "faster", device="cpu", part="speed") as c:
        c.skip("needs CUDA")
    out = capsys.readouterr().out
    assert "C23 [memory] held: less memory" in out and "C23 [speed] skipped (needs CUDA)" in out
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["part"], r["status"]) for r in rows] == [("memory", "held"),
                                                        ("speed", "skipped")]


@pytest.mark.parametrize("bad", ["Speed", "two words", 3, "x" * 30])
def test_bad_part(bad):
    with pytest.raises(ValueError, match="part must be"):
        claim("C23", "s", part=bad)


@pytest.mark.parametrize("bad", ["C07\n", "C07 ", "xC07"])
def test_id_with_trailing_characters_is_refused(bad):
    with pytest.raises(ValueError, match="look like 'C07'"):
        claim(bad, "statement")


def test_a_log_that_cannot_be_written_does_not_hide_the_verdict(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(CLAIMS_LOG_ENV_VAR, str(tmp_path))  # a directory, not a file
    with pytest.raises(RuntimeError, match="could not append to BOOK_CLAIMS_LOG"):
        with claim("C05", "still held", device="cpu"):
            pass
    assert "C05 held: still held" in capsys.readouterr().out
    assert claim_records()[-1].status == "held"


@pytest.mark.parametrize("bad, error, message", [
    (5, TypeError, "device must be a torch.device or a string"),  # before: [device=cuda:5]
    (0, TypeError, "device must be a torch.device or a string"),
    ("cuda:7", ValueError, r"device 'cuda:7' is not available: only 2 CUDA device\(s\)"),
    ("gpu", ValueError, "device 'gpu' is not a device name"),
])
def test_device_must_be_one_this_machine_has(monkeypatch, bad, error, message):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with 2 GPUs
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(error, match=message):
        claim("C01", "statement", device=bad)
    assert claim("C01", "statement", device="cuda:1") is not None  # one it has: accepted


def test_cuda_on_a_machine_without_cuda_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for bad in ("cuda", torch.device("cuda", 0)):
        with pytest.raises(ValueError, match="no usable CUDA device"):
            claim("C01", "statement", device=bad)


def test_no_file_is_opened_for_writing_without_the_variable(monkeypatch, capsys):
    """Not in the working directory, not in HOME, not anywhere: every way of opening a file
    for writing is watched while the claim is checked."""
    monkeypatch.delenv(CLAIMS_LOG_ENV_VAR, raising=False)
    writes = []
    real_io_open, real_os_open = io.open, os.open

    def watched_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            writes.append(file)
        return real_io_open(file, mode, *args, **kwargs)

    def watched_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND):
            writes.append(path)
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(io, "open", watched_open)
    monkeypatch.setattr(builtins, "open", watched_open)
    monkeypatch.setattr(os, "open", watched_os_open)
    with claim("C07", "quiet", device="cpu"):
        pass
    with claim("C08", "quiet too", device="cpu") as c:
        c.skip("not here")
    assert writes == []
    assert "C07 held" in capsys.readouterr().out
