"""The stress tool's reading of a chapter's output (tools/check/stress_claims.py)."""

import nbformat

from tools.check.stress_claims import ratios_by_claim, timing_chapters


def cell(source: str, printed: str = ""):
    code = nbformat.v4.new_code_cell(source)
    if printed:
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    return code


def test_each_measurement_goes_to_the_claim_cell_after_it():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        cell("speed = remeasure(...)", "  attempt 1/3: 0.91 -> does not hold, measuring again\n"
                                       "  attempt 2/3: 0.62 -> holds\n"),
        cell('with claim("C06", "padding"):\n    assert True'),
        cell("x = 1", "  attempt 1/3: 2.10 -> holds\n"),
        cell('with claim("C23", "memory", part="memory"):\n    pass\n'
             'with claim("C23", "speed (on a GPU)", part="speed") as c:\n    c.skip("cpu")'),
        cell('with claim("C24", "no measurement"):\n    pass'),
    ]
    assert ratios_by_claim(notebook) == {"C06": ["0.91 x", "0.62"], "C23 [speed]": ["2.10"]}


def test_the_timing_chapters_are_the_ones_that_remeasure():
    names = [chapter.stem for chapter in timing_chapters()]
    assert "02_data" in names and "09_deployment" in names and "01_autograd" not in names
