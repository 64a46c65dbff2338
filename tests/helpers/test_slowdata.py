import time

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from helpers import SlowDataset, worker_context


def base(n: int = 8) -> TensorDataset:
    return TensorDataset(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n))


def test_items_are_the_base_items_after_the_delay():
    slow = SlowDataset(base(), delay=0.01)
    assert len(slow) == 8
    start = time.perf_counter()
    x, y = slow[3]
    assert time.perf_counter() - start >= 0.01
    assert x.item() == 3.0 and y.item() == 3
    assert SlowDataset(base(), delay=0)[7][1].item() == 7


def test_workers_can_load_it():
    loader = DataLoader(SlowDataset(base(), 0.001), batch_size=4, num_workers=2,
                        multiprocessing_context=worker_context(2))
    assert sorted(torch.cat([y for _, y in loader]).tolist()) == list(range(8))


def test_spawn_workers_can_load_it():  # the class lives in a module: spawn can import it
    loader = DataLoader(SlowDataset(base(), 0.0), batch_size=4, num_workers=1,
                        multiprocessing_context="spawn")
    assert sorted(torch.cat([y for _, y in loader]).tolist()) == list(range(8))


def test_bad_input():
    with pytest.raises(TypeError, match="base must be a Dataset"):
        SlowDataset([1, 2, 3], 0.1)
    with pytest.raises(TypeError, match="delay must be a number"):
        SlowDataset(base(), "0.1")
    with pytest.raises(TypeError, match="delay must be a number"):
        SlowDataset(base(), True)
    with pytest.raises(ValueError, match=r"delay must be in \[0, 1\)"):
        SlowDataset(base(), -0.1)
    with pytest.raises(ValueError, match=r"delay must be in \[0, 1\)"):
        SlowDataset(base(), 1.0)
