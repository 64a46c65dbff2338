import pytest
import torch

from helpers import digits_split


def test_split_sizes_types_and_ranges():
    train, val = digits_split(0.2, seed=0)
    assert len(train) + len(val) == 1797 and len(val) == round(1797 * 0.2)
    x, y = train.tensors
    assert x.shape == (len(train), 64) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and set(y.unique().tolist()) == set(range(10))
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_split_is_seeded_and_disjoint():
    a_train, a_val = digits_split(seed=3)
    b_train, b_val = digits_split(seed=3)
    c_train, _ = digits_split(seed=4)
    assert torch.equal(a_val.tensors[0], b_val.tensors[0])
    assert not torch.equal(a_train.tensors[0], c_train.tensors[0])
    train_rows = {tuple(r.tolist()) for r in a_train.tensors[0]}
    val_rows = {tuple(r.tolist()) for r in a_val.tensors[0]}
    # digits has a few duplicate images; the split itself is disjoint by index
    assert len(train_rows & val_rows) < 5


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5])
def test_bad_fraction(bad):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        digits_split(bad)


def test_bad_types():
    with pytest.raises(TypeError, match="val_fraction"):
        digits_split("0.2")
    with pytest.raises(TypeError, match="seed"):
        digits_split(0.2, seed=1.0)
