"""helpers.glue: measured numbers into the prose through myst-nb (tools/prose_numbers.py)."""

import math

import pytest
import torch

from helpers import glue


def test_returns_the_value_it_glued():
    assert glue("c13_loss", 2.5) == 2.5
    assert glue("c13_steps", 30) == 30 and isinstance(glue("c13_steps", 30), int)
    assert glue("c13_order", "zero_grad first") == "zero_grad first"


@pytest.mark.parametrize("name", ["C13", "has space", "", "x" * 65, 3])
def test_a_bad_name_is_refused(name):
    with pytest.raises(ValueError, match="glue name"):
        glue(name, 1.0)


@pytest.mark.parametrize("value", [torch.tensor(1.0), [1.0], None, True])
def test_a_value_that_prose_cannot_format_is_refused(value):
    with pytest.raises(TypeError, match="number or a string"):
        glue("x", value)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_number_is_refused(value):
    with pytest.raises(ValueError, match="cannot be shown"):
        glue("x", value)
