"""The "Check yourself" keys are held against evidence (tools/check/quiz_keys.py), in both
editions; a planted wrong key fails."""

from __future__ import annotations

import dataclasses

import pytest

from tools.build.chapter_format import BOOK, ZH, chapters
from tools.build.jupyter_markdown import Page, _text
from tools.check import quiz_keys
from tools.check.quiz_keys import MIN_COMPUTED, MIN_QUESTIONS, key_problems, questions

# Chapters still without a "Check yourself" section (issue 45): each must still have none, so
# the set only shrinks; empty when every chapter has its questions.
NOT_YET: set[str] = set()
CHAPTERS = chapters()


def english_and_chinese(chapter):
    return chapter.read_text(encoding="utf-8"), (BOOK / ZH / chapter.name).read_text(
        encoding="utf-8")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_questions_whose_keys_the_evidence_supports(chapter):
    en, zh = english_and_chinese(chapter)
    asked = questions(en)
    if chapter.stem in NOT_YET:
        assert not asked, f"{chapter.stem} has questions now: take it out of NOT_YET"
        return
    assert len(asked) >= MIN_QUESTIONS, f"{chapter.stem}: {len(asked)} questions"
    assert sum(bool(q.compute) for q in asked) >= MIN_COMPUTED
    assert all(q.label.startswith(f"q{chapter.stem[:2]}-") for q in asked)
    claims, anchors = quiz_keys.evidence(en)
    problems = [p for q in asked for p in key_problems(q, claims, anchors)]
    assert not problems, "\n".join(problems)
    # the Chinese page asks the same questions with the same keys and evidence
    same = [(q.label, q.answer, len(q.options), q.compute, q.claim, q.section) for q in asked]
    assert same == [(q.label, q.answer, len(q.options), q.compute, q.claim, q.section)
                    for q in questions(zh)]


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c.stem not in NOT_YET],
                         ids=lambda p: p.stem)
def test_a_planted_wrong_key_fails(chapter):
    en, _ = english_and_chinese(chapter)
    claims, anchors = quiz_keys.evidence(en)
    computed = [q for q in questions(en) if q.compute]
    for q in computed:
        for wrong in set(range(1, len(q.options) + 1)) - {q.answer}:
            planted = dataclasses.replace(q, answer=wrong)
            assert key_problems(planted, claims, anchors), (q.label, wrong)


def test_evidence_that_does_not_exist_is_reported():
    q = quiz_keys.Question("q99-1", "?", 1, ("`1`", "`2`"), "Because.", claim="C999",
                           section="no-such-section")
    found = key_problems(q, {"C01"}, {"a-section"})
    assert len(found) == 2 and "C999" in found[0] and "no-such-section" in found[1]
    assert key_problems(dataclasses.replace(q, claim=None, section=None), set(), set())
    assert key_problems(dataclasses.replace(q, answer=3, claim="C01"), {"C01"}, set())


def test_computed_gives_the_value_or_the_exception_name():
    assert quiz_keys.computed("x = 2; x * 3") == "6"
    assert quiz_keys.computed("torch.zeros(3) + torch.zeros(4)") == "RuntimeError"
    with pytest.raises(ValueError, match="end with an expression"):
        quiz_keys.computed("x = 2")


QUIZ = """:::{quiz} What is `1 + 1`?
:label: q99-1
:answer: 2
:compute: 1 + 1

1. `1`
2. `2`

Because addition.
:::
"""


def test_a_question_reads_as_plain_markdown_in_a_notebook():
    text = _text(QUIZ, Page())
    assert text.startswith("**Check yourself (q99-1).** What is `1 + 1`?")
    assert "1. `1`\n2. `2`" in text
    assert "<details>\n<summary>The answer</summary>" in text and "**Option 2.** Because" in text
    assert ":::" not in text and ":answer:" not in text


@pytest.mark.parametrize("bad, message", [
    (QUIZ.replace("1. `1`", "- `1`"), "numbered"),
    (QUIZ.replace(":answer: 2", ":answer: two"), "option's number"),
])
def test_a_malformed_question_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        questions(bad)
