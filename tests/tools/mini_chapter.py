"""A small synthetic chapter (three exercises, seconds to run) for the grader's tests."""

import nbformat

from tools.build.chapter_format import STUB_MARKER, ipynb_from_myst, student_text

HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
          "    format_version: 0.13\nkernelspec:\n  display_name: Python 3\n  language: python\n"
          "  name: python3\n---\n\n# 99 · A small chapter for the grader's tests\n\n")


def exercise(number: int, solution: str, check: str, chapter: str = "99") -> str:
    label = f"ex{chapter}-{number}"
    return (f":::{{exercise}}\n:label: {label}\nDo exercise {number}.\n:::\n\n"
            f":::{{solution-start}} {label}\n:class: dropdown\n:::\n\n"
            f"```{{code-cell}} ipython3\n# @title Solution to {label}\n{solution}\n```\n\n"
            ":::{solution-end}\n:::\n\n"
            f'```{{code-cell}} ipython3\nwith check_exercise("{label}"):\n{check}\n```\n\n')


MINI = (HEADER
        + "```{code-cell} ipython3\nfrom helpers import check_exercise\n```\n\n"
        + "```{code-cell} ipython3\n:tags: [raises-exception]\n\n1 / 0  # a pitfall\n```\n\n"
        + exercise(1, "width = 16", '    assert width == 16, "the hidden width is 16"')
        + exercise(2, "def double(x):\n    return 2 * x",
                   '    assert double(3) == 6, "double(3) should be 6"')
        + exercise(3, 'answer = "wheel"', '    assert answer == "wheel", "wheel or driver?"'))




def student_with(answers: dict[str, str], extra: list[tuple[str, str]] = (),
                 chapter: str = MINI) -> nbformat.NotebookNode:
    """The student edition of ``chapter`` (MyST text; the small chapter by default), with the
    stubs of ``answers``' labels replaced by their code, and each ``(label, code)`` of ``extra``
    as a cell right after that exercise's check cell."""
    notebook = nbformat.reads(ipynb_from_myst(student_text(chapter)), as_version=4)
    for cell in notebook.cells:
        for label, code in answers.items():
            if cell.source.startswith(f"{STUB_MARKER} {label}:"):
                cell.source = f"{STUB_MARKER} {label}:\n{code}"
    for after, code in extra:
        position = next(i for i, cell in enumerate(notebook.cells)
                        if f'check_exercise("{after}")' in cell.source) + 1
        notebook.cells.insert(position, nbformat.v4.new_code_cell(code))
    return notebook
