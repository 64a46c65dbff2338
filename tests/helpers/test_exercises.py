import json

import pytest

from helpers import check_exercise
from helpers.exercises import EXERCISES_LOG_ENV_VAR


def test_pass(capsys):
    with check_exercise("ex00-1") as check:
        assert True
    assert check.passed is True
    assert capsys.readouterr().out.strip() == "Exercise ex00-1: passed"


def test_wrong_answer_prints_hint_and_reraises(capsys):
    with pytest.raises(AssertionError):
        with check_exercise("ex01-2"):
            assert 1 == 2, "the output should have shape (4, 3)"
    assert "ex01-2: not yet: the output should have shape (4, 3)" in capsys.readouterr().out


def test_missing_answer_says_define_it(capsys):
    with pytest.raises(NameError):
        with check_exercise("ex01-3") as check:
            undefined_answer  # noqa: B018, F821
    assert check.status == "failed" and check.passed is False  # what the graders count
    out = capsys.readouterr().out
    assert "not yet" in out and "undefined_answer" in out and "define it" in out


def test_not_implemented(capsys):
    with pytest.raises(NotImplementedError):
        with check_exercise("ex02-1"):
            raise NotImplementedError
    assert "still raises NotImplementedError" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["ex1", "00-1", "ex00_1", None])
def test_bad_label(bad):
    with pytest.raises(ValueError, match="ex00-1"):
        check_exercise(bad)


def test_log(tmp_path, monkeypatch):
    log = tmp_path / "ex.jsonl"
    monkeypatch.setenv(EXERCISES_LOG_ENV_VAR, str(log))
    with check_exercise("ex00-1"):
        pass
    with pytest.raises(AssertionError):
        with check_exercise("ex00-2"):
            raise AssertionError
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(r["label"], r["status"]) for r in rows] == [("ex00-1", "passed"),
                                                          ("ex00-2", "failed")]
    assert rows[1]["message"] == "not yet: AssertionError"


def test_not_attempted_is_logged_as_such(tmp_path, monkeypatch):
    log = tmp_path / "ex.jsonl"
    monkeypatch.setenv(EXERCISES_LOG_ENV_VAR, str(log))
    with pytest.raises(NotImplementedError), check_exercise("ex00-3") as check:
        raise NotImplementedError("ex00-3: not attempted yet")
    assert check.status == "not attempted" and check.passed is False
    assert json.loads(log.read_text())["status"] == "not attempted"


def test_keyboard_interrupt_is_no_verdict(tmp_path, monkeypatch, capsys):
    log = tmp_path / "ex.jsonl"
    monkeypatch.setenv(EXERCISES_LOG_ENV_VAR, str(log))
    with pytest.raises(KeyboardInterrupt), check_exercise("ex00-3") as check:
        raise KeyboardInterrupt
    assert check.passed is None and not log.exists() and capsys.readouterr().out == ""


def test_label_with_a_trailing_newline_is_refused():
    with pytest.raises(ValueError, match="ex00-1"):
        check_exercise("ex00-1\n")
