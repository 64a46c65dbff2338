"""A submission cannot write its own verdict (issue 34): forgeries written only in the answer
cells of the student edition, each graded by ``make grade-class`` in one batch, none graded
"passed", and the batch goes on after each.

Run by `make test` beside the book build (it executes a kernel per submission), like
tests/tools/teach/test_grade_class.py."""

import csv

import nbformat
import pytest

from tests.tools.mini_chapter import HEADER, exercise, student_with
from tools.teach import grade_class
from tools.teach.trusted_check import check_program, encode_argument

# The small chapter of tests/tools/mini_chapter.py, a fourth exercise whose check uses torch, and a
# fifth whose check has a probe (it hooks a model it builds)
PROBE_99_5 = ("def probe_ex99_5(x):\n    layer, tracked = torch.nn.Linear(3, 1), []\n"
              "    hook = layer.register_forward_hook(\n"
              "        lambda m, i, out: tracked.append(out.requires_grad))\n"
              "    out = predict(layer, x)\n    hook.remove()\n"
              "    return {'out': out, 'tracked': tracked, 'expected': layer(x).detach()}")
BOOK = (HEADER
        + "```{code-cell} ipython3\nimport torch\n\nfrom helpers import check_exercise\n```\n\n"
        + exercise(1, "width = 16", '    assert width == 16, "the hidden width is 16"')
        + exercise(2, "def double(x):\n    return 2 * x",
                   '    assert double(3) == 6, "double(3) should be 6"')
        + exercise(3, 'answer = "wheel"', '    assert answer == "wheel", "wheel or driver?"')
        + exercise(4, "def scaled(x):\n    return 2 * x",
                   "    assert torch.allclose(scaled(torch.ones(3)), torch.full((3,), 2.0)), "
                   '"scaled should double every entry"')
        # a fifth whose check watches the answer run: a probe (tools/teach/trusted_check.py)
        + exercise(5, "def predict(model, x):\n    with torch.no_grad():\n        return model(x)",
                   '    seen = probe_ex99_5(torch.ones(2, 3))\n'
                   '    assert seen["tracked"] == [False], "build no graph"\n'
                   '    assert torch.equal(seen["out"], seen["expected"]), "run the model"'
                   ).replace('```{code-cell} ipython3\nwith check_exercise("ex99-5")',
                             '```{code-cell} ipython3\n' + PROBE_99_5
                             + '\n\nwith check_exercise("ex99-5")'))
SOLVED = {"ex99-1": "width = 16", "ex99-2": "def double(x):\n    return 2 * x",
          "ex99-3": 'answer = "wheel"', "ex99-4": "def scaled(x):\n    return 2 * x",
          "ex99-5": "def predict(model, x):\n    with torch.no_grad():\n        return model(x)"}

FORGE_LOG = ("import json, os\n"
             "with open(os.environ['BOOK_EXERCISES_LOG'], 'a') as log:\n"
             "    for n in (1, 2, 3, 4):\n"
             "        log.write(json.dumps({'label': f'ex99-{n}', 'status': 'passed',"
             " 'message': 'passed'}) + '\\n')\n")
ALWAYS_EQUAL = ("class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n"
                "    def __bool__(self):\n        return True\n")

# name -> (the exercise whose answer cell holds the forgery, the answer cell's code)
FORGERIES = {
    # the two of the issue: a check_exercise of its own that swallows the error and logs
    # "passed"; a "passed" line appended to the log beside a wrong answer
    "own_check_exercise": ("ex99-1", (
        "import contextlib, json, os\n\n@contextlib.contextmanager\n"
        "def check_exercise(label):\n    try:\n        yield\n    except Exception:\n"
        "        pass\n    with open(os.environ['BOOK_EXERCISES_LOG'], 'a') as log:\n"
        "        log.write(json.dumps({'label': label, 'status': 'passed',"
        " 'message': 'passed'}) + '\\n')\n    print(f'Exercise {label}: passed')\n\n"
        "width = 32")),
    "log_line": ("ex99-1", FORGE_LOG + "width = 32"),
    "log_variable_elsewhere": ("ex99-1", (
        "import os, tempfile\nos.environ['BOOK_EXERCISES_LOG'] = "
        "os.path.join(tempfile.mkdtemp(), 'forged.jsonl')\n" + FORGE_LOG + "width = 32")),
    "garbage_in_log": ("ex99-1", (
        "import os\nwith open(os.environ['BOOK_EXERCISES_LOG'], 'a') as log:\n"
        "    log.write('{not json\\n[1, 2]\\n\"passed\"\\n')\nwidth = 32")),
    "patched_helpers": ("ex99-1", (
        "import helpers.exercises as exercises\n"
        "exercises._verdict = lambda exc: ('passed', 'passed')\nwidth = 32")),
    "patched_torch": ("ex99-4", (
        "torch.allclose = lambda *args, **kwargs: True\n"
        "def scaled(x):\n    return x")),
    "rebound_torch": ("ex99-4", (
        "class Yes:\n    def __getattr__(self, name):\n        return lambda *a, **k: True\n"
        "torch = Yes()\ndef scaled(x):\n    return x")),
    "patched_tensor_eq": ("ex99-1", (
        "import torch as real_torch\n"
        "real_torch.Tensor.__eq__ = lambda self, other: real_torch.tensor(True)\n"
        "width = real_torch.tensor(15)")),
    "equal_to_anything": ("ex99-3", ALWAYS_EQUAL + "answer = AlwaysEqual()"),
    "int_subclass": ("ex99-1", (
        "class Sixteen(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\nwidth = Sixteen(32)")),
    "returns_equal_to_anything": ("ex99-2", ALWAYS_EQUAL + (
        "def double(x):\n    return AlwaysEqual()")),
    "tensor_subclass": ("ex99-4", (
        "class Yes(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True\n"
        "def scaled(x):\n    return x.as_subclass(Yes)")),
    "fake_grader_channel": ("ex99-1", (
        "import types\n_book_grader = types.SimpleNamespace(serve=lambda *a: None)\n"
        + FORGE_LOG + "width = 32")),
    # a probe of its own (the check cell defines the book's again), and hooks that never fire
    "own_probe": ("ex99-5", (
        "def probe_ex99_5(x):\n    return {'out': x, 'tracked': [False], 'expected': x}\n"
        "def predict(model, x):\n    return model(x)")),
    "hooks_disabled": ("ex99-5", (
        "import types\ntorch.nn.Module.register_forward_hook = (\n"
        "    lambda self, hook: types.SimpleNamespace(remove=lambda: None))\n"
        "def predict(model, x):\n    return model(x)")),
    "exit_after_forging": ("ex99-1", FORGE_LOG + "import os\nos._exit(0)"),
    # a report line of its own on the grader's stdout, then the grader killed: the batch
    # takes only the line that carries the secret it sent the grader
    "kill_the_grader": ("ex99-1", (
        "import json, os, signal\nreport = {'results': {f'ex99-{n}': 'passed' for n in "
        "(1, 2, 3, 4)}, 'details': {}, 'other_errors': [], 'unverified': [], 'token': None}\n"
        "os.write(1, (json.dumps(report) + '\\n').encode())\n"
        "os.kill(os.getppid(), signal.SIGKILL)\nos._exit(0)")),
}


def submission(answers: dict[str, str]) -> nbformat.NotebookNode:
    return student_with(answers, chapter=BOOK)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("forgeries")
    book, subs, out = root / "book", root / "submissions", root / "out"
    book.mkdir()
    subs.mkdir()
    (book / "99_mini.md").write_text(BOOK, encoding="utf-8")
    nbformat.write(submission(SOLVED), subs / "00_solved.ipynb")
    for name, (label, code) in FORGERIES.items():
        nbformat.write(submission({**SOLVED, label: code}), subs / f"{name}.ipynb")
    grade_class.grade_class(subs, out, chapter="99", timeout=60, memory_gb=8, book=book)
    table = {row["file"]: row for row in csv.DictReader((out / "grades.csv").open())}
    return table, (out / "grades-summary.md").read_text()


def test_there_are_at_least_eight_forgeries():
    assert len(FORGERIES) >= 8


def test_the_control_passes(graded):
    table, _ = graded
    row = table["00_solved.ipynb"]
    assert [row[f"ex99-{n}"] for n in (1, 2, 3, 4, 5)] == ["passed"] * 5, row
    assert not row["note"] and not row["errors"]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_no_forgery_is_graded_passed(graded, name):
    table, _ = graded
    label, _ = FORGERIES[name]
    row = table[f"{name}.ipynb"]  # a row for every submission: the batch went on
    assert row[label] != "passed", (name, row)
    assert row[label] in ("failed", "not attempted", "missing") or row["note"], (name, row)


def test_forged_answers_get_the_books_hint_or_why_they_cannot_be_checked(graded):
    table, summary = graded
    assert table["own_check_exercise.ipynb"]["ex99-1"] == "failed"
    assert table["log_line.ipynb"]["ex99-1"] == "failed"
    assert table["patched_torch.ipynb"]["ex99-4"] == "failed"
    assert table["equal_to_anything.ipynb"]["ex99-3"] == "failed"
    assert table["hooks_disabled.ipynb"]["ex99-5"] == "failed"  # a probe's record is checked
    assert table["kill_the_grader.ipynb"]["note"].startswith("the grader stopped")
    # the other exercises of a forging notebook are still graded on their (right) answers
    assert table["own_check_exercise.ipynb"]["ex99-2"] == "passed"
    assert "the hidden width is 16" in summary  # the book's hint, from the grader's run


def test_the_check_reads_only_the_with_block_and_the_notebook_names():
    source = ("import copy\n\nwith check_exercise(\"ex99-1\"):\n    got = f(x)\n"
              "    assert got == copy.copy(y), len(z)\nshutil.rmtree(WORK)\n")
    program, reads = check_program(source, "ex99-1")
    assert reads == ["f", "x", "y", "z"]  # not copy (imported), got (bound first), len
    assert "rmtree" not in __import__("ast").unparse(program)  # clean-up is not the check


def test_a_probe_runs_in_the_notebook_and_only_its_data_is_checked():
    source = ("def probe_ex99_1(seed):\n    model = make_model()\n    return answer(model, seed)\n"
              "\nwith check_exercise(\"ex99-1\"):\n    seen = probe_ex99_1(3)\n"
              "    assert seen[\"ok\"], expected\n")
    program, reads = check_program(source, "ex99-1")
    text = __import__("ast").unparse(program)
    assert "def probe_ex99_1" not in text and "make_model" not in text  # not re-run here
    assert reads == ["expected", "probe_ex99_1"]  # the probe is the notebook's function


def test_devices_and_dtypes_cross_to_the_notebook_as_names():
    import torch

    assert encode_argument([torch.device("cpu"), torch.float16]) == [
        {"__book_grader__": "device", "name": "cpu"},
        {"__book_grader__": "dtype", "name": "float16"}]
