import math
import warnings

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

import helpers.train as train_module
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


def test_accuracy_refuses_non_finite_logits():
    targets = torch.tensor([0, 0, 1])
    with pytest.raises(ValueError, match="not finite .* in 3 of 3 rows"):
        accuracy(torch.full((3, 2), math.nan), targets)  # argmax of NaNs is 0: it scored 2/3
    with pytest.raises(ValueError, match="not finite .* in 1 of 3 rows"):
        accuracy(torch.tensor([[1.0, 0.0], [0.0, 1.0], [math.inf, 0.0]]), targets)


def nan_in_second_batch_loader():
    data = make_data(32)
    data.tensors[0][20] = math.nan  # sample 20: the second batch of 16
    return DataLoader(data, batch_size=16)


def test_fit_can_stop_at_the_first_non_finite_loss():
    model = make_model()
    with pytest.warns(RuntimeWarning, match=r"loss is nan at epoch \d, step \d;") as caught:
        history = fit(model, nan_in_second_batch_loader(), None, nn.functional.cross_entropy,
                      torch.optim.SGD(model.parameters(), lr=0.1), epochs=2, progress=False)
    assert [str(w.message).split(";")[0] for w in caught] == [  # once per epoch, not per step
        "the training loss is nan at epoch 0, step 1",
        "the training loss is nan at epoch 1, step 2"]
    assert math.isnan(history.step_loss[1])  # the default trains on (chapter 05 plots it)
    assert not all(torch.isfinite(p).all() for p in model.parameters())

    model = make_model()
    with pytest.raises(FloatingPointError, match=r"loss nan at epoch 0, step 1 "):
        fit(model, nan_in_second_batch_loader(), None, nn.functional.cross_entropy,
            torch.optim.SGD(model.parameters(), lr=0.1), epochs=2, progress=False,
            stop_on_nonfinite=True)
    assert all(torch.isfinite(p).all() for p in model.parameters())  # stopped before backward
    with pytest.raises(TypeError, match="stop_on_nonfinite must be True or False"):
        train_one_epoch(model, nan_in_second_batch_loader(), nn.functional.cross_entropy,
                        torch.optim.SGD(model.parameters(), lr=0.1), stop_on_nonfinite="yes")


def train_with_an_infinite_gradient_at_step_1(**options):
    """One epoch whose loss stays finite while step 1's gradient holds an infinity (a hook
    plants it): the case a loss check cannot see. Returns (how it ended, the model, history)."""
    model, calls, history = make_model(), [], History()

    def plant(grad):
        calls.append(None)
        return grad.index_fill(1, torch.tensor([0]), math.inf) if len(calls) == 2 else grad

    model[0].weight.register_hook(plant)
    try:
        with warnings.catch_warnings():  # the NaN loss after the bad update warns: expected
            warnings.simplefilter("ignore", RuntimeWarning)
            train_one_epoch(model, DataLoader(make_data(64), 16), nn.functional.cross_entropy,
                            torch.optim.SGD(model.parameters(), lr=0.1), history=history,
                            **options)
    except FloatingPointError as err:
        return str(err), model, history
    return "finished", model, history


def finite(model):
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


@pytest.mark.parametrize("max_grad_norm", [1.0, None])
def test_stop_on_nonfinite_grad_stops_before_the_update(max_grad_norm):
    """C80 in fit: clip_grad_norm_(..., error_if_nonfinite=True) (get_total_norm's, without
    clipping) raises before optimizer.step(); without the option, or with the loss check only,
    the infinite gradient reaches the weights."""
    ended, model, history = train_with_an_infinite_gradient_at_step_1(
        max_grad_norm=max_grad_norm, stop_on_nonfinite_grad=True)
    assert ended.startswith("non-finite total gradient norm at epoch 0, step 1 ")
    assert finite(model) and len(history.step_loss) == 1  # step 0 applied and read, 1 not
    for options in ({}, {"stop_on_nonfinite": True}):
        ended, model, _ = train_with_an_infinite_gradient_at_step_1(
            max_grad_norm=max_grad_norm, **options)
        assert not finite(model), (options, ended)  # the loss check stops one step late
    with pytest.raises(TypeError, match="stop_on_nonfinite_grad must be True or False"):
        fit(make_model(), DataLoader(make_data(), 16), None, nn.functional.cross_entropy,
            torch.optim.SGD(make_model().parameters(), lr=0.1), epochs=1, progress=False,
            stop_on_nonfinite_grad=1)


def test_fit_passes_stop_on_nonfinite_grad_on():
    model = make_model()
    model[0].weight.register_hook(lambda g: g.index_fill(1, torch.tensor([0]), math.nan))
    with pytest.raises(FloatingPointError, match="epoch 0, step 0 "):
        fit(model, DataLoader(make_data(), 16), None, nn.functional.cross_entropy,
            torch.optim.SGD(model.parameters(), lr=0.1), epochs=1, progress=False,
            max_grad_norm=1.0, stop_on_nonfinite_grad=True)
    assert finite(model)


def test_an_optimizer_of_another_model_is_refused():
    model, other = make_model(0), make_model(1)
    before = [p.clone() for p in model.parameters()]
    stray = torch.optim.SGD(other.parameters(), lr=0.1)
    loader = DataLoader(make_data(), 16)
    with pytest.raises(ValueError, match="none of the model's parameters"):
        fit(model, loader, None, nn.functional.cross_entropy, stray, epochs=1, progress=False)
    with pytest.raises(ValueError, match="none of the model's parameters"):
        train_one_epoch(model, loader, nn.functional.cross_entropy, stray)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    # an optimizer over part of the model (a frozen body, a trained head) is fine
    train_one_epoch(model, loader, nn.functional.cross_entropy,
                    torch.optim.SGD(model[-1].parameters(), lr=0.1))
    assert torch.equal(before[0], model[0].weight) and not torch.equal(before[-1], model[-1].bias)


def test_evaluate_builds_no_graph_in_the_model_or_the_loss():
    model = make_model()
    seen = []
    model[0].register_forward_hook(lambda module, args, out: seen.append(out.requires_grad))

    def loss_fn(outputs, targets):
        seen.append(outputs.requires_grad)
        loss = nn.functional.cross_entropy(outputs, targets)
        seen.append(loss.grad_fn is not None)
        return loss

    evaluate(model, DataLoader(make_data(), 32), loss_fn)
    assert len(seen) == 3 * 3 and not any(seen)


def test_epoch_loss_is_the_mean_per_sample_not_per_batch():
    data = make_data(5)
    data.tensors[1][4] = 1 - data.tensors[1][4]  # the lone last sample: a different loss
    loader = DataLoader(data, batch_size=4)  # batches of 4 and 1
    model = make_model()
    with torch.no_grad():
        per_sample = nn.functional.cross_entropy(model(data.tensors[0]), data.tensors[1],
                                                 reduction="none")
    weighted = per_sample.mean().item()
    per_batch = (per_sample[:4].mean().item() + per_sample[4].item()) / 2
    assert abs(weighted - per_batch) > 0.05  # the data tells the two apart
    frozen = torch.optim.SGD(model.parameters(), lr=0.0)  # the model does not change
    train_loss = train_one_epoch(model, loader, nn.functional.cross_entropy, frozen)
    assert train_loss == pytest.approx(weighted, rel=1e-6)
    assert evaluate(model, loader, nn.functional.cross_entropy)["loss"] == pytest.approx(
        weighted, rel=1e-6)


@pytest.mark.parametrize("with_history", [True, False])
def test_on_step_gets_what_history_records(with_history):
    """Chapter 05's recorders read StepInfo: its step count, loss, norm and lr must be true."""
    model, seen = make_model(), []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    history = History() if with_history else None
    train_one_epoch(model, DataLoader(make_data(), 32), nn.functional.cross_entropy, optimizer,
                    on_step=seen.append, history=history, epoch=2)
    assert [(i.epoch, i.step) for i in seen] == [(2, 0), (2, 1), (2, 2)]
    assert all(i.lr == 0.05 for i in seen)
    if with_history:
        assert [i.loss for i in seen] == history.step_loss
        assert [i.grad_norm for i in seen] == history.step_grad_norm
    assert all(math.isfinite(i.loss) and i.grad_norm > 0 for i in seen)


def test_fit_passes_clipping_metric_and_records_validation():
    """fit is train_one_epoch + evaluate per epoch: what it is given must reach them."""
    loader, val = DataLoader(make_data(), batch_size=16), DataLoader(make_data(64, 1), 32)
    a, b = make_model(), make_model()
    opt_a = torch.optim.SGD(a.parameters(), lr=0.5, momentum=0.9)
    opt_b = torch.optim.SGD(b.parameters(), lr=0.5, momentum=0.9)
    hand_written_epoch(a, loader, opt_a, max_norm=0.05)
    fit(b, loader, None, nn.functional.cross_entropy, opt_b, epochs=1, max_grad_norm=0.05)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)  # clipped exactly as by hand

    def always_half(logits, targets):
        return 0.5

    model = make_model()
    history = fit(model, loader, val, nn.functional.cross_entropy,
                  torch.optim.SGD(model.parameters(), lr=0.1), epochs=2, metric=always_half)
    assert history.epoch_val_metric == [0.5, 0.5]
    assert all(isinstance(v, float) and v > 0 for v in history.epoch_val_loss)
    assert len(history.epoch_val_loss) == 2


def test_evaluate_averages_the_metric_over_samples():
    model, data = make_model(), make_data(50, 3)
    result = evaluate(model, DataLoader(data, batch_size=16), nn.functional.cross_entropy)
    model.eval()
    with torch.no_grad():
        logits = model(data.tensors[0])
    expected = (logits.argmax(1) == data.tensors[1]).float().mean().item()
    assert result["metric"] == pytest.approx(expected, abs=1e-6)
    assert result["loss"] == pytest.approx(
        nn.functional.cross_entropy(logits, data.tensors[1]).item(), rel=1e-5)


def test_a_loader_of_triples_is_refused():
    triples = [(torch.randn(4, 5), torch.zeros(4, dtype=torch.long), torch.ones(4))]
    model = make_model()
    with pytest.raises(TypeError, match="pairs"):
        train_one_epoch(model, triples, nn.functional.cross_entropy,
                        torch.optim.SGD(model.parameters(), lr=0.1))


class HostReads(TorchFunctionMode):
    """Counts the calls that copy a tensor's value into Python (each one waits for a GPU)."""

    READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy")

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += getattr(func, "__name__", "") in self.READS
        return func(*args, **(kwargs or {}))


def reads_of_one_epoch(n_batches: int, **options) -> int:
    data = make_data(16 * n_batches)
    batches = list(DataLoader(data, batch_size=16))  # a list: no DataLoader seed draw inside
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with HostReads() as reads:
        train_one_epoch(model, batches, nn.functional.cross_entropy, optimizer, **options)
    return reads.count


def test_an_epoch_reads_the_device_once_not_once_per_step():
    """Chapter 03: no .item() per step; the values are read in one transfer per epoch."""
    assert reads_of_one_epoch(3) == reads_of_one_epoch(9) == 1
    assert reads_of_one_epoch(3, max_grad_norm=1.0) == reads_of_one_epoch(9, max_grad_norm=1.0)
    # the two options that need a value every step read it every step
    assert reads_of_one_epoch(9, on_step=lambda info: None) >= 9
    assert reads_of_one_epoch(9, stop_on_nonfinite=True) >= 9


def test_values_are_read_every_read_every_steps(monkeypatch):
    monkeypatch.setattr(train_module, "READ_EVERY", 4)
    assert reads_of_one_epoch(9) == 3  # steps 0-3, 4-7, then the last one at the end
    history, seen = History(), []
    model = make_model()
    train_one_epoch(model, DataLoader(make_data(144), 16), nn.functional.cross_entropy,
                    torch.optim.SGD(model.parameters(), lr=0.1), history=history)
    monkeypatch.setattr(train_module, "READ_EVERY", 1024)
    model = make_model()
    train_one_epoch(model, DataLoader(make_data(144), 16), nn.functional.cross_entropy,
                    torch.optim.SGD(model.parameters(), lr=0.1), on_step=seen.append)
    assert len(history.step_loss) == 9 and history.step_loss == [i.loss for i in seen]
    assert history.step_grad_norm == [i.grad_norm for i in seen]


def reads_of_one_evaluation(n_batches: int, metric=accuracy) -> int:
    batches = list(DataLoader(make_data(16 * n_batches), batch_size=16))
    model = make_model()
    with HostReads() as reads:
        evaluate(model, batches, nn.functional.cross_entropy, metric)
    return reads.count


def test_evaluate_reads_the_device_once_not_once_per_batch(monkeypatch):
    """Like chapter 03's validation loop: no .item() (nor accuracy's finiteness check) per
    batch; the sums stay on the device and are read in one transfer. The old per-batch
    .item() and accuracy made 3 reads a batch (3 -> 9, 9 -> 27) and fail here."""
    assert reads_of_one_evaluation(3) == reads_of_one_evaluation(9) == 1
    on_device = lambda logits, targets: (logits.argmax(1) == targets).float().mean()  # noqa: E731
    assert reads_of_one_evaluation(3, on_device) == reads_of_one_evaluation(9, on_device) == 1
    monkeypatch.setattr(train_module, "READ_EVERY", 4)
    assert reads_of_one_evaluation(9) == 3


def evaluate_reading_every_batch(model, loader, loss_fn, metric=accuracy):
    """helpers.evaluate as it was: .item() and the metric's own read at every batch."""
    model.eval()
    total_loss = total_metric = 0.0
    n_seen = 0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = model(inputs)
            total_loss += loss_fn(outputs, targets).item() * len(inputs)
            total_metric += metric(outputs, targets) * len(inputs)
            n_seen += len(inputs)
    return {"loss": total_loss / n_seen, "metric": total_metric / n_seen}


def test_evaluate_gives_the_same_numbers_as_reading_every_batch():
    loader = DataLoader(make_data(100, 4), batch_size=16)  # a last batch of 4
    model = make_model(3)
    assert evaluate(model, loader, nn.functional.cross_entropy) == \
        evaluate_reading_every_batch(model, loader, nn.functional.cross_entropy)  # bit for bit
    half = lambda logits, targets: 0.5  # noqa: E731  (a metric that returns a float)
    assert evaluate(model, loader, nn.functional.cross_entropy, half) == \
        evaluate_reading_every_batch(model, loader, nn.functional.cross_entropy, half)


def test_evaluate_still_refuses_non_finite_logits():
    with pytest.raises(ValueError, match="not finite .* in 1 of 16 rows"):
        evaluate(make_model(), nan_in_second_batch_loader(), nn.functional.cross_entropy)
    with pytest.raises(TypeError, match="loss_fn"):
        evaluate(make_model(), DataLoader(make_data(), 16), lambda o, t: 1.0)


def test_without_clipping_the_gradients_are_left_as_they_are():
    """max_grad_norm=None measures the norm (get_total_norm); clip_grad_norm_(inf) would
    multiply every gradient by inf / inf = NaN as soon as one entry is infinite."""
    model = make_model()
    model[0].weight.register_hook(lambda g: g.index_fill(1, torch.tensor([0]), math.inf))
    finite_elsewhere, history = [], History()

    def look(info):
        finite_elsewhere.append(bool(torch.isfinite(model[-1].weight.grad).all()))

    train_one_epoch(model, [next(iter(DataLoader(make_data(), 16)))],
                    nn.functional.cross_entropy, torch.optim.SGD(model.parameters(), lr=0.0),
                    on_step=look, history=history)
    assert finite_elsewhere == [True] and history.step_grad_norm == [math.inf]


LINEAR_LR_STEPS = [0.05, 0.0625, 0.075, 0.0875, 0.1]  # LinearLR(0.5, 4 steps) from 0.1


def fit_with_linear_lr(model: nn.Module, optimizer: torch.optim.Optimizer):
    """One epoch of five steps under LinearLR(start_factor=0.5, total_iters=4): the history
    and every StepInfo."""
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5, total_iters=4)
    seen = []
    history = fit(model, DataLoader(make_data(80), batch_size=16), None,
                  nn.functional.cross_entropy, optimizer, epochs=1, scheduler=scheduler,
                  on_step=seen.append, progress=False)
    return history, seen


def test_the_recorded_lr_is_the_one_each_step_used():
    """step_lr[k] and StepInfo.lr are the rate of step k's update, read before scheduler.step()
    moves it (not the next step's)."""
    model = make_model()
    history, seen = fit_with_linear_lr(model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert history.step_lr == pytest.approx(LINEAR_LR_STEPS, rel=1e-12)
    assert [info.lr for info in seen] == history.step_lr
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    one_cycle = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=6)
    history = fit(model, DataLoader(make_data(96), batch_size=16), None,
                  nn.functional.cross_entropy, optimizer, epochs=1, scheduler=one_cycle,
                  progress=False)
    assert history.step_lr[0] == pytest.approx(0.1 / 25, rel=1e-12)  # OneCycleLR's first value


def test_the_updates_used_the_recorded_lr():
    """Plain SGD without momentum: each step moved the weights by -step_lr[k] x its gradient."""
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 / (1 + s))
    moves = []

    def record(info):
        weight = model[0].weight
        moves.append((weight.detach().clone(), weight.grad.clone(), info.lr))

    before = model[0].weight.detach().clone()
    train_one_epoch(model, DataLoader(make_data(48), batch_size=16), nn.functional.cross_entropy,
                    optimizer, scheduler=scheduler, on_step=record)
    for after, grad, lr in moves:
        assert torch.allclose(after, before - lr * grad, atol=1e-7)
        before = after


def test_a_loader_without_a_length_trains():
    """A DataLoader over an IterableDataset has __len__ but raises TypeError: no progress
    total, and the epoch still runs (with or without the progress bar)."""

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(make_data(64))

    loader = DataLoader(Stream(), batch_size=16)
    with pytest.raises(TypeError):
        len(loader)
    for progress in (False, True):
        model = make_model()
        loss = train_one_epoch(model, loader, nn.functional.cross_entropy,
                               torch.optim.SGD(model.parameters(), lr=0.1), progress=progress)
        assert math.isfinite(loss)


def test_reduce_lr_on_plateau_is_refused():
    model, loader = make_model(), DataLoader(make_data(), 16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    for call in (lambda: fit(model, loader, None, nn.functional.cross_entropy, optimizer,
                             epochs=1, scheduler=plateau, progress=False),
                 lambda: train_one_epoch(model, loader, nn.functional.cross_entropy, optimizer,
                                         scheduler=plateau)):
        with pytest.raises(ValueError, match="ReduceLROnPlateau .* scheduler.step\\(val_loss\\)"):
            call()


def test_batches_are_copied_without_blocking_to_cuda_only(monkeypatch):
    """non_blocking=True only for a copy to a CUDA device (from pinned batches, an overlap);
    never to the CPU (the copy could be read unfinished) nor to MPS, where the loader does not
    pin and PyTorch issues #139550 and #189690 report wrong values from non-blocking copies of
    pageable tensors."""
    decide = train_module._copies_without_blocking
    assert decide(torch.device("cuda")) and decide(torch.device("cuda:1"))
    for other in ("cpu", "mps", "meta", "xpu"):
        assert not decide(torch.device(other)), other
    assert train_module._to_device(torch.ones(1), torch.device("cpu")).device.type == "cpu"
    calls = []

    def spy(self, device, *args, **kwargs):  # records the request; copies nothing
        calls.append((torch.device(device).type, kwargs.get("non_blocking")))
        return self

    monkeypatch.setattr(torch.Tensor, "to", spy)
    for device in ("cpu", "mps", "cuda"):
        train_module._to_device(torch.ones(1), torch.device(device))
    assert calls == [("cpu", False), ("mps", False), ("cuda", True)]


def half_model_with_a_gradient_norm_above_float16s_range():
    """A float16 linear layer whose gradient is 3000 in each of its 1000 weights: every entry
    is finite in float16, the norm is 3000 * sqrt(1000) = 94868, above float16's 65504."""
    model = nn.Linear(1000, 1, bias=False).half()
    nn.init.zeros_(model.weight)
    inputs = torch.full((8, 1000), 3.0, dtype=torch.float16)
    batches = [(inputs, torch.zeros(8))]
    loss_fn = lambda out, _: out.float().mean() * 1000  # noqa: E731  (d loss / d w = 3000)
    return model, batches, loss_fn


@pytest.mark.parametrize("max_grad_norm", [None, 1.0])
def test_a_float16_gradient_norm_above_65504_is_measured_and_clipped_in_float32(max_grad_norm):
    """In float16 the norm would be inf: clipping by it zeroes every gradient, and
    stop_on_nonfinite_grad raises although every gradient is finite."""
    model, batches, loss_fn = half_model_with_a_gradient_norm_above_float16s_range()
    expected = 3000 * math.sqrt(1000)
    history, after = History(), []

    def look(info):
        after.append(torch.linalg.vector_norm(model.weight.grad, dtype=torch.float32).item())

    train_one_epoch(model, batches, loss_fn, torch.optim.SGD(model.parameters(), lr=0.0),
                    max_grad_norm=max_grad_norm, history=history, on_step=look,
                    stop_on_nonfinite_grad=True)
    assert bool(torch.isfinite(model.weight.grad).all())
    assert history.step_grad_norm == [pytest.approx(expected, rel=1e-3)]
    if max_grad_norm is None:
        assert after == [pytest.approx(expected, rel=1e-3)]  # left as they were
    else:
        assert after == [pytest.approx(1.0, rel=1e-2)]  # clipped to 1, not to 0


def test_the_norm_terms_leave_float32_gradients_as_they_are():
    """The float32 path gives get_total_norm the gradients themselves (clip_grad_norm_'s
    total, bit for bit); a float16 or bfloat16 gradient is replaced by its float32 norm."""
    wide = [torch.randn(3), torch.randn(2, dtype=torch.float64)]
    assert all(a is b for a, b in zip(train_module._norm_terms(wide), wide, strict=True))
    narrow = torch.full((1000,), 3000.0, dtype=torch.float16)
    [term] = train_module._norm_terms([narrow])
    assert term.dtype == torch.float32 and term.item() == pytest.approx(3000 * math.sqrt(1000))
    assert nn.utils.get_total_norm([narrow]).item() == math.inf  # what it replaces
    [term] = train_module._norm_terms([torch.ones(4, dtype=torch.bfloat16)])
    assert term.dtype == torch.float32 and term.item() == 2.0


def test_a_learning_rate_held_in_a_tensor_is_recorded_step_by_step():
    """A tensor lr is changed in place by the scheduler: each step records its own value, not
    a reference that ends as the last one. Only group 0's rate is recorded."""
    model = make_model()
    optimizer = torch.optim.SGD([{"params": model[0].parameters()},
                                 {"params": model[-1].parameters(), "lr": 1.0}],
                                lr=torch.tensor(0.1))
    history, seen = fit_with_linear_lr(model, optimizer)
    assert history.step_lr == pytest.approx(LINEAR_LR_STEPS, rel=1e-6)
    assert all(isinstance(lr, float) for lr in history.step_lr)
    assert [info.lr for info in seen] == history.step_lr


def test_class_masked_logits_are_accepted_and_all_minus_inf_rows_are_not():
    """masked_fill(mask, -inf) is ordinary class masking; NaN, +inf, or -inf in every class
    of a row, is a diverged model."""
    masked = torch.tensor([[2.0, -math.inf, 1.0], [-math.inf, 0.5, 3.0]])
    assert accuracy(masked, torch.tensor([0, 2])) == 1.0
    loader = [(torch.randn(4, 5), torch.tensor([1, 1, 1, 1]))]  # class 0 is ruled out
    masking = nn.Sequential(make_model(), MaskClass(0))
    result = evaluate(masking, loader, nn.functional.cross_entropy)
    assert math.isfinite(result["loss"]) and result["metric"] == 1.0
    cases = {"nan": [math.nan, 1.0], "+inf": [math.inf, 1.0], "all -inf": [-math.inf, -math.inf]}
    for row in cases.values():
        with pytest.raises(ValueError, match="not finite .* in 1 of 2 rows"):
            accuracy(torch.tensor([[0.0, 1.0], row]), torch.tensor([1, 1]))


class MaskClass(nn.Module):
    """Masks one class with -inf, as a model that rules it out does."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def forward(self, logits):
        return logits.index_fill(1, torch.tensor([self.index]), -math.inf)


def test_a_dataset_where_a_loader_belongs_is_refused():
    """Iterating a Dataset yields one unbatched sample per step: it would train silently."""
    model, data = make_model(), make_data()
    ce = nn.functional.cross_entropy
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(data, 16)

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(data)

    for dataset in (data, Stream()):
        calls = (lambda d=dataset: train_one_epoch(model, d, ce, opt),
                 lambda d=dataset: evaluate(model, d, ce),
                 lambda d=dataset: fit(model, d, None, ce, opt, epochs=1, progress=False),
                 lambda d=dataset: fit(model, loader, d, ce, opt, epochs=1, progress=False))
        for call in calls:
            with pytest.raises(TypeError, match=r"Dataset.*DataLoader\(dataset, batch_size"):
                call()


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_a_loss_must_be_the_batch_mean_as_a_0_dim_tensor(reduction):
    """reduction='none' is refused with a named error in both loops; reduction='sum' cannot
    be told from its value (the docstrings say so): it is a 0-dim tensor and passes."""
    model, loader = make_model(), DataLoader(make_data(), 16)
    loss_fn = lambda out, y: nn.functional.cross_entropy(out, y, reduction=reduction)  # noqa: E731
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    if reduction == "none":
        for call in (lambda: train_one_epoch(model, loader, loss_fn, opt),
                     lambda: evaluate(model, loader, loss_fn)):
            with pytest.raises(ValueError, match=r"0-dim tensor, got shape \(16,\);.*mean\(\)"):
                call()
    else:
        mean = evaluate(model, loader, nn.functional.cross_entropy)["loss"]
        assert evaluate(model, loader, loss_fn)["loss"] == pytest.approx(16 * mean, rel=1e-5)


def test_a_metric_must_return_one_number_per_batch():
    model, loader = make_model(), DataLoader(make_data(), 16)
    ce = nn.functional.cross_entropy
    per_row = lambda logits, targets: (logits.argmax(1) == targets).float()  # noqa: E731
    with pytest.raises(ValueError, match=r"metric must return one number .* shape \(16,\)"):
        evaluate(model, loader, ce, per_row)
    with pytest.raises(TypeError, match="metric must return a float or a 0-dim tensor, got str"):
        evaluate(model, loader, ce, lambda logits, targets: "high")
    import numpy as np

    assert evaluate(model, loader, ce, lambda logits, targets: np.float32(0.25))["metric"] == 0.25
