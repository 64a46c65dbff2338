"""Shifting every seed of a chapter together (tools/check/shift_seeds.py, make stress-seeds)."""

import nbformat
import pytest

from tools.check.shift_seeds import prelude, shift_notebook, shift_source, shifted_helpers
from tools.check.stress_claims import parse_shifts


def test_every_kind_of_seed_literal_is_shifted_and_nothing_else():
    source = (
        "set_seed(0)\n"
        "torch.manual_seed(42)  # 42 in a comment stays\n"
        "g = torch.Generator().manual_seed(7)\n"
        "random.seed(1); np.random.seed(2)\n"
        "rng = np.random.default_rng(3)\n"
        "same = random.Random(5).random() == np.random.RandomState([5]).random_sample()\n"
        "train, val = digits_split(val_fraction=0.2, seed=0)\n"
        "run(seed=1, generator_seed=7, workers=3)\n"
        "def make(seed: int = 0, width: int = 64): pass\n"
        "class Config:\n    seed: int = 0\n    epochs: int = 3\n"
        "torch.randn(3, 4)\nx = 10\nset_seed(seed)\n"
    )
    shifted, count = shift_source(source, 10)
    assert count == 13
    assert shifted == (
        "set_seed(10)\n"
        "torch.manual_seed(52)  # 42 in a comment stays\n"
        "g = torch.Generator().manual_seed(17)\n"
        "random.seed(11); np.random.seed(12)\n"
        "rng = np.random.default_rng(13)\n"
        "same = random.Random(15).random() == np.random.RandomState([15]).random_sample()\n"
        "train, val = digits_split(val_fraction=0.2, seed=10)\n"
        "run(seed=11, generator_seed=17, workers=3)\n"
        "def make(seed: int = 10, width: int = 64): pass\n"
        "class Config:\n    seed: int = 10\n    epochs: int = 3\n"
        "torch.randn(3, 4)\nx = 10\nset_seed(seed)\n"
    )


def test_a_seed_parameter_of_a_function_in_another_cell_is_found():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("def seen(generator_seed, n=3):\n    pass"),
                      nbformat.v4.new_markdown_cell("seen(7) in prose stays"),
                      nbformat.v4.new_code_cell("a = seen(7, 4)\nb = other(7)")]
    assert shift_notebook(notebook, 2) == 1
    assert notebook.cells[2].source == "a = seen(9, 4)\nb = other(7)"
    assert notebook.cells[1].source == "seen(7) in prose stays"


def test_magics_are_kept_and_do_not_stop_the_parser():
    source = 'if on_colab:\n    %pip install -q "x @ git+https://e/x.git@main"\nset_seed(0)\n'
    shifted, count = shift_source(source, 1)
    assert count == 1 and shifted == source.replace("set_seed(0)", "set_seed(1)")


@pytest.mark.parametrize("shift", [-1, 1.5, True, "1"])
def test_bad_shifts_are_refused(shift):
    with pytest.raises(ValueError, match="shift must be an int"):
        shift_source("set_seed(0)", shift)


def test_a_cell_that_does_not_parse_is_refused_not_left_unshifted():
    with pytest.raises(ValueError, match="does not parse"):
        shift_source("set_seed(0\n", 1)


def test_seed_settings_on_the_command_line():
    assert parse_shifts("0,2,5") == [0, 2, 5]
    for bad in ("1,1", "a", "-2", "1,-1"):
        with pytest.raises(Exception, match="--seeds takes"):
            parse_shifts(bad)


def test_the_helpers_seeds_move_too(tmp_path):
    """A shifted run imports a copy of the helpers whose seed literals are shifted (the data
    split's default, the datasets'), first on sys.path: the draws the chapters do not seed
    themselves move with the rest."""
    import subprocess
    import sys

    folder = shifted_helpers(3, tmp_path / "shifted")
    data = (folder / "helpers" / "data.py").read_text()
    assert "val_fraction: float = 0.2, seed: int = 3" in data
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("set_seed(0)")]
    shift_notebook(notebook, 3, folder)
    assert notebook.cells[0].source == prelude(folder)
    split = ("from helpers import digits_split\n"
             "train, _ = digits_split()\n"
             "print(train[0][1].item(), train.indices[:5] if hasattr(train, 'indices') else "
             "[int(train[i][1]) for i in range(5)])")

    def run(code: str) -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, timeout=120).stdout

    assert run(split) != run(prelude(folder) + "\n" + split)
