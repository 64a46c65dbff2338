"""The training loop of chapter 03, packaged: one epoch, evaluation, and ``fit`` with a history.

The step order is the one chapter 03 writes out and motivates:
``zero_grad → forward → loss → backward → clip → step → scheduler``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from .validate import require_bool

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
MetricFn = Callable[[torch.Tensor, torch.Tensor], float]


@dataclass(frozen=True)
class StepInfo:
    """What a per-step callback receives. The gradients of this step are still on the
    parameters (``.grad``) when it is called."""

    epoch: int
    step: int  # global step, from 0
    loss: float
    grad_norm: float  # total gradient norm before clipping
    lr: float


@dataclass
class History:
    """Per-step and per-epoch records kept by :func:`fit`."""

    step_loss: list[float] = field(default_factory=list)
    step_grad_norm: list[float] = field(default_factory=list)
    step_lr: list[float] = field(default_factory=list)
    epoch_train_loss: list[float] = field(default_factory=list)
    epoch_val_loss: list[float] = field(default_factory=list)
    epoch_val_metric: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[float]]:
        return asdict(self)


def accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of rows whose largest logit is at the target class."""
    if logits.ndim != 2 or targets.shape != logits.shape[:1]:
        raise ValueError(
            f"expected logits (N, C) and targets (N,), got {tuple(logits.shape)} "
            f"and {tuple(targets.shape)}"
        )
    return (logits.argmax(dim=1) == targets).float().mean().item()


def _model_device(model: nn.Module) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        raise ValueError("the model has no parameters: nothing to train") from None


def _batches(loader: Iterable) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    for batch in loader:
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise TypeError("the loader must yield (inputs, targets) pairs, got "
                            f"{type(batch).__name__}")
        yield batch[0], batch[1]


def _check_clip(max_grad_norm: float | None) -> float:
    if max_grad_norm is None:
        return math.inf
    if isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float)) or not (
        max_grad_norm > 0
    ):
        raise ValueError(f"max_grad_norm must be a positive number or None, got {max_grad_norm!r}")
    return float(max_grad_norm)


def train_one_epoch(
    model: nn.Module,
    loader: Iterable,
    loss_fn: LossFn,
    optimizer: torch.optim.Optimizer,
    *,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    max_grad_norm: float | None = None,
    on_step: Callable[[StepInfo], None] | None = None,
    history: History | None = None,
    epoch: int = 0,
    progress: bool = False,
) -> float:
    """Train for one pass over ``loader`` and return the mean training loss (per sample).

    ``scheduler`` (if any) is stepped after every optimizer step, so give it a per-step
    schedule. ``max_grad_norm`` clips the total gradient norm; the norm before clipping is
    recorded either way. ``on_step`` is called after each step with a :class:`StepInfo`.
    """
    require_bool("progress", progress)
    clip_at = _check_clip(max_grad_norm)
    device = _model_device(model)
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    total_loss, n_seen = 0.0, 0
    step = len(history.step_loss) if history is not None else 0
    total = len(loader) if hasattr(loader, "__len__") else None
    batches = tqdm(_batches(loader), desc=f"epoch {epoch}", total=total, leave=False,
                   disable=not progress)
    for inputs, targets in batches:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(params, clip_at)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        loss_value, lr = loss.item(), optimizer.param_groups[0]["lr"]
        total_loss += loss_value * len(inputs)
        n_seen += len(inputs)
        if history is not None:
            history.step_loss.append(loss_value)
            history.step_grad_norm.append(grad_norm.item())
            history.step_lr.append(lr)
        if on_step is not None:
            on_step(StepInfo(epoch, step, loss_value, grad_norm.item(), lr))
        step += 1
    if n_seen == 0:
        raise ValueError("the loader yielded no batches")
    return total_loss / n_seen


def evaluate(
    model: nn.Module, loader: Iterable, loss_fn: LossFn, metric: MetricFn = accuracy
) -> dict[str, float]:
    """Mean loss and metric over ``loader`` in eval mode without a graph; restores the mode."""
    device = _model_device(model)
    was_training = model.training
    model.eval()
    total_loss = total_metric = 0.0
    n_seen = 0
    try:
        with torch.no_grad():
            for inputs, targets in _batches(loader):
                inputs, targets = inputs.to(device), targets.to(device)
                outputs = model(inputs)
                total_loss += loss_fn(outputs, targets).item() * len(inputs)
                total_metric += metric(outputs, targets) * len(inputs)
                n_seen += len(inputs)
    finally:
        model.train(was_training)
    if n_seen == 0:
        raise ValueError("the loader yielded no batches")
    return {"loss": total_loss / n_seen, "metric": total_metric / n_seen}


def fit(
    model: nn.Module,
    train_loader: Iterable,
    val_loader: Iterable | None,
    loss_fn: LossFn,
    optimizer: torch.optim.Optimizer,
    *,
    epochs: int,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    max_grad_norm: float | None = None,
    metric: MetricFn = accuracy,
    on_step: Callable[[StepInfo], None] | None = None,
    progress: bool = True,
) -> History:
    """Train for ``epochs`` epochs, evaluating on ``val_loader`` after each, and keep a history.

    Set ``progress=False`` to hide the tqdm bars (the book does, to keep pages clean).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    require_bool("progress", progress)
    _check_clip(max_grad_norm)
    history = History()
    for epoch in tqdm(range(epochs), desc="epochs", disable=not progress):
        train_loss = train_one_epoch(
            model, train_loader, loss_fn, optimizer, scheduler=scheduler,
            max_grad_norm=max_grad_norm, on_step=on_step, history=history, epoch=epoch,
            progress=progress,
        )
        history.epoch_train_loss.append(train_loss)
        if val_loader is not None:
            result = evaluate(model, val_loader, loss_fn, metric)
            history.epoch_val_loss.append(result["loss"])
            history.epoch_val_metric.append(result["metric"])
    return history
