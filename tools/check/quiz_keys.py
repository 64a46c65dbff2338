"""The answer keys of the "Check yourself" questions, held against evidence
(``tests/tools/check/test_quiz_keys.py`` runs it over both editions and plants wrong keys).

A key is written once, as ``:answer: N`` in the page. :func:`key_problems`: ``:compute:`` is
run (:func:`computed`) and its value must be the first code span of option N and of no other
option; otherwise ``:claim:`` must be a claim the chapter checks, or ``:section:`` a heading
anchor the book has.
"""

from __future__ import annotations

import ast
from typing import Any

from tools.build.chapter_format import CLAIM_CALL_RE, heading_anchor, headings
from tools.build.jupyter_markdown import CODE_SPAN_RE, DIRECTIVE_RE
from tools.build.questions import Question, parse

MIN_QUESTIONS, MIN_COMPUTED = 3, 2  # per chapter


def questions(text: str) -> list[Question]:
    """Every question of a chapter's MyST text, in order."""
    return [parse(m["arg"], m["options"], m["body"])
            for m in DIRECTIVE_RE.finditer(text) if m["name"] == "quiz"]


def computed(code: str) -> str:
    """What ``:compute:`` evaluates to, as text: ``str()`` of the last expression's value
    (statements before it run first, in a namespace with torch, ``nn``, ``F``, math and
    numpy as ``np``, torch seeded with 0), or the name of the exception it raises."""
    import math

    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    tree = ast.parse(code, mode="exec")
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise ValueError(f":compute: must end with an expression, got {code!r}")
    last = ast.Expression(tree.body.pop().value)
    namespace: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "math": math, "np": np}
    torch.manual_seed(0)
    try:
        exec(compile(tree, "<quiz>", "exec"), namespace)
        value = eval(compile(last, "<quiz>", "eval"), namespace)
    except Exception as err:  # the answer may be "it raises"
        return type(err).__name__
    return str(value)


def first_code(option: str) -> str | None:
    """The text of an option's first code span (None without one)."""
    span = CODE_SPAN_RE.search(option)
    return span[2].strip() if span else None


def key_problems(q: Question, claims: set[str], anchors: set[str]) -> list[str]:
    """What is wrong with a question's key: [] when its evidence supports it."""
    found = []
    if not 1 <= q.answer <= len(q.options):
        return [f"{q.label}: :answer: {q.answer} but {len(q.options)} options"]
    if q.compute:
        value = computed(q.compute)
        matching = [n for n, option in enumerate(q.options, 1) if first_code(option) == value]
        if matching != [q.answer]:
            found.append(f"{q.label}: :compute: gives {value!r}, which is the first code span "
                         f"of option(s) {matching or 'none'}, but :answer: is {q.answer}")
    if q.claim and q.claim not in claims:
        found.append(f"{q.label}: :claim: {q.claim} is not a claim this chapter checks")
    if q.section and q.section.lstrip("#") not in anchors:
        found.append(f"{q.label}: :section: {q.section} is no heading anchor of the book")
    if not (q.compute or q.claim or q.section):
        found.append(f"{q.label}: no evidence for the key (:compute:, :claim: or :section:)")
    return found


def evidence(text: str) -> tuple[set[str], set[str]]:
    """The claims a chapter's text checks (``claim("C24", ...)``) and its heading anchors:
    what ``:claim:`` and ``:section:`` may name."""
    claims = set(CLAIM_CALL_RE.findall(text))
    return claims, {heading_anchor(h) for level, h, _ in headings(text) if level <= 3}
