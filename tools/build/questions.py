"""A "Check yourself" question as the page writes it: a ``{quiz}`` directive (book/_ext/quiz.py
renders it on the site; ``jupyter_markdown`` in the notebooks; ``tools/check/quiz_keys.py``
checks its key; ``tools/check/readability.py`` leaves its explanation off the reading path).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPTION_RE = re.compile(r"^(\d+)\.[ \t]+(.*(?:\n[ \t]+\S.*)*)", re.M)


@dataclass(frozen=True)
class Question:
    label: str
    prompt: str
    answer: int
    options: tuple[str, ...]
    explanation: str
    compute: str | None = None
    claim: str | None = None
    section: str | None = None


def parse(arg: str, options_text: str, body: str) -> Question:
    """A ``{quiz}`` directive's argument, ``:option:`` lines and body as a :class:`Question`
    (``ValueError`` naming the question where the form is wrong)."""
    options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", options_text, re.M))
    body = body.strip("\n")
    listed = list(OPTION_RE.finditer(body))
    numbers = [int(m[1]) for m in listed]
    label = options.get("label", "?")
    if not listed or listed[0].start() != 0 or numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"quiz {label}: the body starts with options numbered 1., 2., ...")
    try:
        answer = int(options.get("answer", ""))
    except ValueError:
        raise ValueError(f"quiz {label}: :answer: must be an option's number") from None
    return Question(label=label, prompt=arg.strip(), answer=answer,
                    options=tuple(" ".join(m[2].split()) for m in listed),
                    explanation=body[listed[-1].end():].strip(),
                    compute=options.get("compute"), claim=options.get("claim"),
                    section=options.get("section"))
