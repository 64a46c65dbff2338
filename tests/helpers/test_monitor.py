import math

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
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


def test_only_weights_keeps_lstm_and_parametrized_weights():
    """An LSTM's weights are weight_ih_l0 and weight_hh_l0 (not ...weight); a parametrized
    weight is parametrizations.weight.original; neither was kept by endswith("weight")."""
    lstm = nn.LSTM(4, 3)
    assert list(GradNormRecorder(lstm, only_weights=True).norms) == [
        "weight_ih_l0", "weight_hh_l0"]
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    nn.utils.parametrizations.weight_norm(model[0])
    nn.utils.parametrizations.orthogonal(model[1])
    assert list(GradNormRecorder(model, only_weights=True).norms) == [
        "0.parametrizations.weight.original0", "0.parametrizations.weight.original1",
        "1.parametrizations.weight.original"]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    assert list(GradNormRecorder(model, only_weights=True).norms) == ["0.weight", "1.weight"]


class Reads(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += getattr(func, "__name__", "") in ("item", "tolist", "__float__")
        return func(*args, **(kwargs or {}))


def test_recorder_reads_a_step_in_one_transfer_and_sees_clipped_gradients():
    """One host read per step however many parameters (N .item() calls were N waits on a
    GPU); the norms are those after clipping, StepInfo.grad_norm the total before."""
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)])
    recorder = GradNormRecorder(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 2.0)
    model[2].bias.grad = None
    with Reads() as reads:
        recorder()
    assert reads.count == 1 and len(recorder.params) == 10
    assert recorder.norms["0.weight"] == [pytest.approx(8.0)]  # sqrt(16 * 4)
    assert recorder.norms["2.bias"] == [0.0]

    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 4, (32,)))
    recorder, seen = GradNormRecorder(model), []

    def hook(info):
        seen.append(info.grad_norm)
        recorder(info)

    fit(model, DataLoader(data, batch_size=8), None, nn.functional.cross_entropy,
        torch.optim.SGD(model.parameters(), lr=0.0), epochs=1, on_step=hook, progress=False,
        max_grad_norm=1e-3)
    after = [math.sqrt(sum(v[i] ** 2 for v in recorder.norms.values())) for i in range(4)]
    assert all(a == pytest.approx(1e-3, rel=1e-3) for a in after)
    assert all(s > 1e-3 for s in seen)


def test_recorder_norms_of_float16_gradients_are_computed_in_float32():
    model = nn.Linear(1000, 1, bias=False).half()
    model.weight.grad = torch.full_like(model.weight, 3000.0)  # norm 94868 > 65504
    recorder = GradNormRecorder(model)
    recorder()
    assert recorder.norms["weight"] == [pytest.approx(3000 * math.sqrt(1000), rel=1e-3)]
