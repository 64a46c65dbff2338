"""tools/bench.py reads each cell's seconds from the timings nbclient records."""

import nbformat

from tools.bench import cell_seconds


def test_cell_seconds_from_nbclient_timings():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# prose"),
        nbformat.v4.new_code_cell("x = 1\ny = 2"),
        nbformat.v4.new_code_cell("never ran"),
    ])
    nb.cells[1].metadata["execution"] = {
        "iopub.execute_input": "2026-12-02T10:00:00.250Z",
        "shell.execute_reply": "2026-12-02T10:00:02.000Z"}
    assert cell_seconds(nb) == [(1.75, "x = 1")]
