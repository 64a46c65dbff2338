""""Check yourself" questions: the ``{quiz}`` directive (every chapter; book/README.md,
"Check yourself").

```
:::{quiz} What shape does `torch.zeros(3, 1) + torch.zeros(4)` have?
:label: q01-1
:answer: 2
:compute: tuple((torch.zeros(3, 1) + torch.zeros(4)).shape)

1. `(3, 1)`
2. `(3, 4)`
3. It raises a `RuntimeError`: the sizes differ.

Broadcasting lines the shapes up from the right ... (the explanation)
:::
```

The body is the numbered options, then the explanation. ``:answer:`` is the right option's
number, written once: the page says it when the reader answers, and the test of the keys
(``tools/check/quiz_keys.py``, ``tests/tools/check/test_quiz_keys.py``) runs ``:compute:``
and requires its value in that option's first code span and in no other option's; a
question no code can answer names its evidence instead (``:claim:`` a claim the chapter
checks, or ``:section:`` a heading anchor of the book).

On the site the options become buttons (``book/_static/explorer.js``): choosing one says
right or not and opens the explanation. Without the script, and in print, the explanation sits
in a ``<details>`` block under the options. The notebooks get plain markdown
(``tools/build/jupyter_markdown.py``).
"""

from __future__ import annotations

import html
import re
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

LABEL_RE = re.compile(r"q\d\d-\d+")
WORDS = {
    "en": {"summary": "Show the answer", "answer": "Answer: option {n}."},
    "zh": {"summary": "查看答案", "answer": "答案：第 {n} 项。"},
}


class quiz_node(nodes.General, nodes.Element):
    """The question's block: ``<div class="book-quiz" data-answer="N">``."""


class quiz_explanation(nodes.General, nodes.Element):
    """The explanation, in a ``<details>`` block."""


def _words(language: str | None) -> dict[str, str]:
    return WORDS["zh" if (language or "").startswith("zh") else "en"]


class Quiz(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {
        "label": directives.unchanged_required,
        "answer": directives.positive_int,
        "compute": directives.unchanged,
        "claim": directives.unchanged,
        "section": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        label = self.options.get("label", "")
        if not LABEL_RE.fullmatch(label):
            raise self.error(f"quiz: :label: must be qNN-k (chapter, number), got {label!r}")
        if "answer" not in self.options:
            raise self.error(f"quiz {label}: :answer: (the right option's number) is missing")
        if not ({"compute", "claim", "section"} & set(self.options)):
            raise self.error(f"quiz {label}: name the answer's evidence (:compute:, :claim: or "
                             ":section:)")
        answer = self.options["answer"]
        node = quiz_node(answer=answer, ids=[label])
        self.set_source_info(node)
        question = nodes.paragraph(classes=["quiz-question"])
        inline, messages = self.state.inline_text(self.arguments[0], self.lineno)
        question += inline
        body = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, body)
        parts = list(body.children)
        if not parts or not isinstance(parts[0], nodes.enumerated_list):
            raise self.error(f"quiz {label}: the body starts with the numbered options")
        options = parts[0]
        if not 2 <= len(options.children) or answer > len(options.children):
            raise self.error(f"quiz {label}: :answer: {answer} but {len(options.children)} "
                             "options")
        options["classes"].append("quiz-options")
        if len(parts) < 2:
            raise self.error(f"quiz {label}: the explanation (after the options) is missing")
        words = _words(self.config.language)
        explanation = quiz_explanation(summary=words["summary"])
        lead = nodes.paragraph(classes=["quiz-key"])
        lead += nodes.strong(text=words["answer"].format(n=answer))
        explanation += [lead, *parts[1:]]
        verdict = nodes.raw("", '<p class="quiz-verdict" aria-live="polite"></p>', format="html")
        node += [question, options, verdict, explanation]
        return [node, *messages]


def visit_quiz(self: Any, node: quiz_node) -> None:
    ident = f' id="{node["ids"][0]}"' if node["ids"] else ""
    self.body.append(f'<div class="book-quiz"{ident} data-answer="{node["answer"]}">')


def depart_quiz(self: Any, node: quiz_node) -> None:
    self.body.append("</div>\n")


def visit_explanation(self: Any, node: quiz_explanation) -> None:
    self.body.append(f'<details class="quiz-explanation"><summary>'
                     f'{html.escape(node["summary"])}</summary>')


def depart_explanation(self: Any, node: quiz_explanation) -> None:
    self.body.append("</details>\n")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(quiz_node, html=(visit_quiz, depart_quiz))
    app.add_node(quiz_explanation, html=(visit_explanation, depart_explanation))
    app.add_directive("quiz", Quiz)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
