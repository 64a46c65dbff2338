import math

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers import GradNormRecorder, NaNGuard, StepInfo, fit, has_nonfinite


class TwoBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.head = nn.Linear(4, 3), nn.Linear(4, 3), nn.Linear(6, 2)

    def forward(self, x):
        return self.head(torch.cat([self.a(x), self.b(x).detach()], dim=1))


def test_recorder_sees_the_detached_branch():
    torch.manual_seed(0)
    model = TwoBranch()
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    recorder = GradNormRecorder(model)
    fit(model, DataLoader(data, batch_size=8), None, nn.functional.cross_entropy,
        torch.optim.SGD(model.parameters(), lr=0.1), epochs=2, on_step=recorder, progress=False)
    assert all(len(v) == 8 for v in recorder.norms.values())
    assert sorted(recorder.zero_layers()) == ["b.bias", "b.weight"]
    assert min(recorder.norms["a.weight"]) > 0


def test_recorder_only_weights_and_bad_input():
    assert list(GradNormRecorder(TwoBranch(), only_weights=True).norms) == [
        "a.weight", "b.weight", "head.weight"]
    with pytest.raises(TypeError, match="nn.Module"):
        GradNormRecorder([torch.zeros(1)])
    with pytest.raises(ValueError, match="no trainable parameters"):
        GradNormRecorder(nn.ReLU())


def test_nan_guard_stops_at_the_first_bad_step():
    guard = NaNGuard()
    guard(StepInfo(0, 0, 1.0, 2.0, 0.1))
    guard(StepInfo(0, 1, 0.9, 2.0, 0.1))
    with pytest.raises(FloatingPointError, match=r"step 2 .*last finite step: 1"):
        guard(StepInfo(0, 2, math.nan, 2.0, 0.1))
    with pytest.raises(FloatingPointError, match="gradient norm inf"):
        NaNGuard()(StepInfo(0, 0, 1.0, math.inf, 0.1))


def test_nan_guard_in_fit_with_a_diverging_learning_rate():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
    x = torch.randn(64, 4) * 100
    data = TensorDataset(x, x.sum(1, keepdim=True) ** 2)
    with pytest.raises(FloatingPointError, match="non-finite training"):
        fit(model, DataLoader(data, batch_size=16), None, nn.functional.mse_loss,
            torch.optim.SGD(model.parameters(), lr=10.0), epochs=20, on_step=NaNGuard(),
            progress=False)


def test_has_nonfinite():
    assert not has_nonfinite(torch.ones(3))
    assert has_nonfinite(torch.tensor([1.0, float("nan")]))
    assert has_nonfinite(torch.tensor([float("-inf")]))
    assert not has_nonfinite(torch.arange(3))
    with pytest.raises(TypeError, match="expected a tensor"):
        has_nonfinite([1.0])
