"""tools/check/bench.py and make nbmake read each cell's seconds from the timings nbclient records
(tools/build/cache_executed.py cell_seconds)."""

import nbformat

from tools.build.cache_executed import cell_seconds


def test_cell_seconds_from_nbclient_timings():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# prose"),
        nbformat.v4.new_code_cell("x = 1\ny = 2"),
        nbformat.v4.new_code_cell("never ran"),
    ])
    nb.cells[1].metadata["execution"] = {
        "iopub.execute_input": "2026-12-02T10:00:00.250Z",
        "shell.execute_reply": "2026-12-02T10:00:02.000Z"}
    assert cell_seconds(nb) == [{"cell": 0, "seconds": 1.75, "first_line": "x = 1"}]
