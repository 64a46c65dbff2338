"""A small synthetic chapter (three exercises, seconds to run) for the grader's tests."""

HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
          "    format_version: 0.13\nkernelspec:\n  display_name: Python 3\n  language: python\n"
          "  name: python3\n---\n\n# 99 · A small chapter for the grader's tests\n\n")


def exercise(number: int, solution: str, check: str, chapter: str = "99") -> str:
    label = f"ex{chapter}-{number}"
    return (f":::{{exercise}}\n:label: {label}\nDo exercise {number}.\n:::\n\n"
            f":::{{solution-start}} {label}\n:class: dropdown\n:::\n\n"
            f"```{{code-cell}} ipython3\n{solution}\n```\n\n:::{{solution-end}}\n:::\n\n"
            f'```{{code-cell}} ipython3\nwith check_exercise("{label}"):\n{check}\n```\n\n')


MINI = (HEADER
        + "```{code-cell} ipython3\nfrom helpers import check_exercise\n```\n\n"
        + "```{code-cell} ipython3\n:tags: [raises-exception]\n\n1 / 0  # a pitfall\n```\n\n"
        + exercise(1, "width = 16", '    assert width == 16, "the hidden width is 16"')
        + exercise(2, "def double(x):\n    return 2 * x",
                   '    assert double(3) == 6, "double(3) should be 6"')
        + exercise(3, 'answer = "wheel"', '    assert answer == "wheel", "wheel or driver?"'))


