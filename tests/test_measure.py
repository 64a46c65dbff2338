import time

import pytest
import torch
from torch import nn

from helpers import measure_memory, median_time


def test_saved_bytes_of_an_mlp_match_the_count_by_hand():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 4))
    x = torch.randn(16, 32)
    with measure_memory("cpu", exclude=model.parameters()) as report:
        model(x).sum().backward()
    # saved: x (input of the first Linear), each ReLU output (shared with the next Linear)
    assert report.saved_bytes == (16 * 32 + 16 * 64 + 16 * 64) * 4
    assert report.peak_bytes is None and report.saved_mib == report.saved_bytes / 2**20


def test_parameters_count_unless_excluded_and_no_grad_saves_nothing():
    model = nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)  # so the weight is saved too (for x's grad)
    with measure_memory() as with_params:
        model(x)
    assert with_params.saved_bytes == (4 * 8 + 8 * 8) * 4
    with measure_memory(exclude=model.parameters()) as without_params:
        model(x)
    assert without_params.saved_bytes == 4 * 8 * 4
    with measure_memory() as nothing, torch.no_grad():
        model(x)
    assert nothing.saved_bytes == 0 and nothing.saved_tensors == 0


def test_cuda_requested_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a usable CUDA device"):
        with measure_memory("cuda"):
            pass


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peak():
    with measure_memory("cuda") as report:
        torch.empty(2**20, device="cuda")
    assert report.peak_bytes >= 2**20 * 4


def test_median_time_is_the_median_after_warmup():
    calls = []
    durations = iter([0.5, 0.0, 0.02, 0.0, 0.01])  # the first call is the warm-up

    def fn():
        calls.append(1)
        time.sleep(next(durations))

    assert 0.0 <= median_time(fn, repeats=4, warmup=1) < 0.02
    assert len(calls) == 5


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"warmup": -1}, {"repeats": 2.5}])
def test_median_time_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        median_time(lambda: None, **kwargs)
    with pytest.raises(TypeError, match="callable"):
        median_time(42)
