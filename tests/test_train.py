import math

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers import History, accuracy, evaluate, fit, train_one_epoch


def make_data(n=96, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=gen)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return TensorDataset(x, y)


def make_model(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 2))


def hand_written_epoch(model, loader, optimizer, max_norm):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()


def test_one_epoch_equals_the_hand_written_loop_bit_for_bit():
    loader = DataLoader(make_data(), batch_size=16)
    a, b = make_model(), make_model()
    opt_a = torch.optim.SGD(a.parameters(), lr=0.5, momentum=0.9)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.5, momentum=0.9)
    hand_written_epoch(a, loader, opt_a, max_norm=0.5)
    train_one_epoch(b, loader, nn.functional.cross_entropy, opt_b, max_grad_norm=0.5)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_fit_learns_and_keeps_a_consistent_history():
    train, val = make_data(256, 0), make_data(128, 1)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 / (1 + 0.01 * s))
    seen = []
    history = fit(model, DataLoader(train, batch_size=32, shuffle=True), DataLoader(val, 64),
                  nn.functional.cross_entropy, optimizer, epochs=4, scheduler=scheduler,
                  max_grad_norm=1.0, on_step=seen.append, progress=False)
    steps = 4 * 8
    assert len(history.step_loss) == len(history.step_grad_norm) == len(history.step_lr) == steps
    assert [s.step for s in seen] == list(range(steps))
    assert [s.epoch for s in seen][::8] == [0, 1, 2, 3]
    assert history.step_lr[0] > history.step_lr[-1]  # the scheduler was stepped per step
    assert len(history.epoch_val_metric) == 4 and history.epoch_val_metric[-1] > 0.9
    assert history.epoch_train_loss[-1] < history.epoch_train_loss[0]
    assert set(history.as_dict()) == {
        "step_loss", "step_grad_norm", "step_lr",
        "epoch_train_loss", "epoch_val_loss", "epoch_val_metric"}


def test_recorded_grad_norm_is_before_clipping_and_clipping_bounds_it():
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    norms_after = []

    def after_step(info):
        total = torch.linalg.vector_norm(
            torch.stack([p.grad.norm() for p in model.parameters()]))
        norms_after.append(total.item())

    history = History()
    train_one_epoch(model, DataLoader(make_data(), 16), nn.functional.cross_entropy, optimizer,
                    max_grad_norm=1e-3, history=history, on_step=after_step)
    assert all(n > 1e-3 for n in history.step_grad_norm)
    assert all(n <= 1e-3 * (1 + 1e-4) for n in norms_after)


def test_evaluate_restores_mode_and_builds_no_graph():
    model = make_model(dropout=0.5)
    model.train()
    loader = DataLoader(make_data(), 32)
    first = evaluate(model, loader, nn.functional.cross_entropy)
    assert model.training
    assert evaluate(model, loader, nn.functional.cross_entropy) == first  # dropout off
    model.eval()
    evaluate(model, loader, nn.functional.cross_entropy)
    assert not model.training


def test_accuracy():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert accuracy(logits, torch.tensor([0, 1, 1])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="expected logits"):
        accuracy(logits, torch.tensor([0, 1]))


def test_bad_arguments():
    model, loader = make_model(), DataLoader(make_data(), 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ce = nn.functional.cross_entropy
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        fit(model, loader, None, ce, opt, epochs=0)
    for bad in (0, -1.0, math.nan, True):
        with pytest.raises(ValueError, match="max_grad_norm"):
            fit(model, loader, None, ce, opt, epochs=1, max_grad_norm=bad)
    with pytest.raises(ValueError, match="no batches"):
        train_one_epoch(model, [], ce, opt)
    with pytest.raises(ValueError, match="no batches"):
        evaluate(model, [], ce)
    with pytest.raises(TypeError, match=r"\(inputs, targets\) pairs"):
        train_one_epoch(model, [torch.randn(4, 5)], ce, opt)
    with pytest.raises(ValueError, match="no parameters"):
        train_one_epoch(nn.ReLU(), loader, ce, opt)
