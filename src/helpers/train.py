"""The training loop of chapter 03, packaged: one epoch, evaluation, and ``fit`` with a history.

The step order is the one chapter 03 writes out and motivates:
``zero_grad → forward → loss → backward → clip → step → scheduler``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from .validate import (
    require_bool,
    require_callable,
    require_instance,
    require_int,
    require_loader,
)

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
    """Fraction of rows whose largest logit is at the target class.

    A row holding a NaN or +inf, or whose every logit is -inf, raises ``ValueError``:
    ``argmax`` of a row of NaNs is 0, so a diverged model would score the share of class 0
    (all of it, on a batch of 0s). A -inf beside finite logits is class masking
    (``logits.masked_fill(mask, -inf)``) and is accepted.
    """
    share, bad = _accuracy_on_device(logits, targets)
    if bad.item():
        _raise_nonfinite_logits(int(bad), len(logits))
    return share.item()


def _accuracy_on_device(logits: torch.Tensor,
                        targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`accuracy` without reading the device: (the share of correct rows, the number of
    rows with a NaN or +inf or with every logit -inf), both 0-dim tensors where ``logits`` is."""
    require_instance("logits", logits, torch.Tensor)
    require_instance("targets", targets, torch.Tensor)
    if logits.ndim != 2 or targets.shape != logits.shape[:1]:
        raise ValueError(
            f"expected logits (N, C) and targets (N,), got {tuple(logits.shape)} "
            f"and {tuple(targets.shape)}"
        )
    if logits.is_floating_point():
        bad = ((torch.isnan(logits) | torch.isposinf(logits)).any(dim=1)
               | torch.isneginf(logits).all(dim=1)).sum()
    else:
        bad = logits.new_zeros((), dtype=torch.long)
    return (logits.argmax(dim=1) == targets).float().mean(), bad


def _raise_nonfinite_logits(bad: int, rows: int) -> None:
    raise ValueError(f"logits are not finite (a NaN or +inf, or -inf in every class) in {bad} "
                     f"of {rows} rows: the model has diverged; accuracy of such logits means "
                     "nothing")


def _model_device(model: nn.Module) -> torch.device:
    require_instance("model", model, nn.Module)
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


def _check_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Refuse an optimizer that holds none of ``model``'s parameters (compared by identity):
    it would step other tensors and leave the model as it is, epoch after epoch."""
    require_instance("optimizer", optimizer, torch.optim.Optimizer)
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    if not any(id(p) in held for p in model.parameters()):
        raise ValueError(
            "the optimizer holds none of the model's parameters (was it built on another "
            "model instance?); build it with torch.optim.X(model.parameters(), ...)")


def _check_scheduler(scheduler: object) -> None:
    if scheduler is not None and not callable(getattr(scheduler, "step", None)):
        raise TypeError("scheduler must be None or an LR scheduler with a step() method, got "
                        f"{type(scheduler).__name__}")
    if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
        raise ValueError(
            "ReduceLROnPlateau cannot be given to train_one_epoch or fit: they step the "
            "scheduler after every batch with no argument, and it needs a validation metric "
            "once per epoch; write the epoch loop and call scheduler.step(val_loss) after "
            "evaluate() (chapter 03)")


def _len_or_none(loader: Iterable) -> int | None:
    """The number of batches for the progress bar, or None where the loader cannot tell (a
    DataLoader over an IterableDataset without __len__ has __len__ but raises TypeError)."""
    try:
        return len(loader)  # type: ignore[arg-type]
    except TypeError:
        return None


def _copies_without_blocking(device: torch.device) -> bool:
    """Whether a batch is copied to ``device`` with ``non_blocking=True``: only to a CUDA
    device, where a copy from pinned memory (``DataLoader(..., pin_memory=True)``) lets the
    host go on while it runs (chapter 02). Not to the CPU, whose result could be read before
    the copy has finished; not to MPS, where the loader does not pin and PyTorch issues
    #139550 and #189690 report wrong values from non-blocking copies of ordinary (pageable)
    tensors; not to other devices, whose copies this book has not checked."""
    return device.type == "cuda"


def _to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy a batch to the model's device, without blocking where
    ``_copies_without_blocking`` says so."""
    return tensor.to(device, non_blocking=_copies_without_blocking(device))


_WIDE = (torch.float32, torch.float64)


def _norm_terms(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """What ``get_total_norm`` is given for ``grads``: a float32 or float64 gradient as it is
    (so the total is bit for bit ``clip_grad_norm_``'s), any other floating one (float16,
    bfloat16) as its own norm computed in float32 (``vector_norm(g, dtype=torch.float32)``).
    In float16 a norm above 65504 is inf: clipping by it would zero every gradient, and
    ``error_if_nonfinite`` would call finite gradients non-finite (chapter 03)."""
    return [g if g.dtype in _WIDE or not g.is_floating_point()
            else torch.linalg.vector_norm(g, dtype=torch.float32) for g in grads]


def _check_loss(loss: object) -> torch.Tensor:
    """The loss as ``train_one_epoch`` and ``evaluate`` need it: a 0-dim tensor."""
    require_instance("the value of loss_fn", loss, torch.Tensor)
    if loss.ndim != 0:
        raise ValueError(
            f"loss_fn must return the batch's mean loss as a 0-dim tensor, got shape "
            f"{tuple(loss.shape)}; a loss built with reduction='none' needs .mean()")
    return loss


def _raise_nonfinite(loss: torch.Tensor, epoch: int, step: int) -> None:
    """Raise ``FloatingPointError`` for a non-finite loss, before it reaches the weights."""
    raise FloatingPointError(
        f"non-finite training loss {loss.detach().float().mean().item()} at epoch {epoch}, step "
        f"{step} (global, from 0); stopped before backward, so the weights are those of the "
        "previous step. Look for NaN/inf in the inputs or a learning rate that is too large "
        "(chapter 06)")


# Without an ``on_step`` hook, the loss and gradient norm of each step stay on the device and
# are read to the host (one transfer, one wait) every READ_EVERY steps and at the end of the
# epoch: a per-step ``.item()`` would make the CPU wait for the GPU at every step (chapter 03).
READ_EVERY = 1024


def _check_clip(max_grad_norm: float | None) -> float | None:
    if max_grad_norm is None:
        return None
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
    stop_on_nonfinite: bool = False,
    stop_on_nonfinite_grad: bool = False,
) -> float:
    """Train for one pass over ``loader`` and return the mean training loss (per sample).

    ``scheduler`` (if any) is stepped after every optimizer step, so give it a per-step
    schedule: ``OneCycleLR`` with ``total_steps`` in batches, or ``StepLR``'s ``step_size``
    counted in batches, not epochs (``ReduceLROnPlateau`` raises ``ValueError``: it needs a
    metric per epoch). The learning rate recorded for a step (``StepInfo.lr``,
    ``history.step_lr``) is the one that step's update used, read from the optimizer's first
    parameter group (group 0) only; a rate held in a tensor (``lr=torch.tensor(...)``, which
    schedulers change in place) is recorded as its value at that step. ``max_grad_norm``
    clips the total gradient norm; the norm before clipping is recorded either way. It is
    measured by ``torch.nn.utils.get_total_norm``, which leaves the gradients as they are,
    over ``_norm_terms`` (float16 and bfloat16 gradients count by their float32 norms), and
    clipping is then ``clip_grads_with_norm_`` with that norm: for float32 gradients the two
    are ``clip_grad_norm_``, bit for bit. ``on_step`` is called after each step with a
    :class:`StepInfo`.

    ``loss_fn`` must return the batch's *mean* loss as a 0-dim tensor (``ValueError``
    otherwise, e.g. for ``reduction='none'``): the epoch's loss weights it by the batch size.
    A ``reduction='sum'`` loss cannot be told from its value; it would make every reported
    loss batch-size times too large (and the gradients with it). ``loader`` is a
    ``DataLoader`` or any iterable of (inputs, targets) batches; a ``Dataset`` itself raises
    ``TypeError`` (it would train on one unbatched sample per step).

    The losses and norms stay on the model's device and are read to the host in one transfer
    every ``READ_EVERY`` steps and at the end of the epoch, so that on a GPU the CPU does not
    wait for every step to finish (chapter 03). Batches are copied to the device with
    ``non_blocking=True``; from a loader without ``pin_memory=True`` that copy still waits for
    the device (chapter 02). Two options need a value every step and read it then:
    ``on_step`` (its ``StepInfo`` holds Python floats) and ``stop_on_nonfinite``.
    At the first NaN or infinite loss it warns (``RuntimeWarning``, when the values are read)
    and trains on, so that a divergence can be studied from ``history``;
    ``stop_on_nonfinite=True`` raises ``FloatingPointError`` (naming the epoch and step) there
    instead, before its backward pass. ``stop_on_nonfinite_grad=True`` raises
    ``FloatingPointError`` when the total gradient norm is NaN or infinite, before
    ``optimizer.step()``, so the weights stay those of the previous step: it passes
    ``error_if_nonfinite=True`` to ``get_total_norm``, which reads the norm every step, and
    catches a finite loss with non-finite gradients that ``stop_on_nonfinite`` cannot see
    (chapter 06, C80). An optimizer that holds none of the model's parameters raises
    ``ValueError``.
    """
    require_bool("progress", progress)
    require_bool("stop_on_nonfinite", stop_on_nonfinite)
    require_bool("stop_on_nonfinite_grad", stop_on_nonfinite_grad)
    clip_at = _check_clip(max_grad_norm)
    require_loader("loader", loader)
    require_callable("loss_fn", loss_fn)
    _check_scheduler(scheduler)
    if on_step is not None:
        require_callable("on_step", on_step)
    if history is not None:
        require_instance("history", history, History)
    require_int("epoch", epoch, minimum=0)
    device = _model_device(model)
    _check_optimizer(model, optimizer)
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    step = len(history.step_loss) if history is not None else 0
    # (global step, loss, grad norm, lr, batch size) of the steps not yet read to the host
    pending: list[tuple[int, torch.Tensor, torch.Tensor, float | torch.Tensor, int]] = []
    total_loss, n_seen, warned = 0.0, 0, False
    last_read: tuple[float, float] = (math.nan, math.nan)

    def read_pending() -> None:
        """Read the pending steps' values to the host in one transfer, and record them."""
        nonlocal total_loss, n_seen, warned, last_read
        if not pending:
            return
        on, dtype = pending[0][1].device, pending[0][1].dtype
        for _, loss, norm, _, _ in pending:  # a common dtype: the values convert exactly
            dtype = torch.promote_types(dtype, torch.promote_types(loss.dtype, norm.dtype))
        values = torch.stack([torch.stack([loss.to(on, dtype), norm.to(on, dtype)])
                              for _, loss, norm, _, _ in pending]).tolist()  # the one host read
        for (at, _, _, lr, size), (loss_value, norm_value) in zip(pending, values, strict=True):
            if not math.isfinite(loss_value) and not warned:
                warned = True  # never silent, but training on is what a divergence study needs
                warnings.warn(f"the training loss is {loss_value} at epoch {epoch}, step {at}; "
                              "training went on and the weights are probably no longer finite. "
                              "Pass stop_on_nonfinite=True to stop there (chapter 06: NaNGuard).",
                              RuntimeWarning, stacklevel=3)
            total_loss += loss_value * size
            n_seen += size
            if history is not None:
                history.step_loss.append(loss_value)
                history.step_grad_norm.append(norm_value)
                history.step_lr.append(float(lr))
        last_read = (values[-1][0], values[-1][1])
        pending.clear()

    batches = tqdm(_batches(loader), desc=f"epoch {epoch}", total=_len_or_none(loader),
                   leave=False, disable=not progress)
    for inputs, targets in batches:
        inputs, targets = _to_device(inputs, device), _to_device(targets, device)
        optimizer.zero_grad(set_to_none=True)
        loss = _check_loss(loss_fn(model(inputs), targets))
        if stop_on_nonfinite and not bool(torch.isfinite(loss.detach()).all()):  # a host read
            read_pending()
            _raise_nonfinite(loss, epoch, step)
        loss.backward()
        grads = [p.grad for p in params if p.grad is not None]
        try:  # measured apart from clipping: clip_grad_norm_(inf) would still rescale them
            grad_norm = (nn.utils.get_total_norm(
                _norm_terms(grads), error_if_nonfinite=stop_on_nonfinite_grad) if grads
                else loss.new_zeros(()))
        except RuntimeError as err:
            if not (stop_on_nonfinite_grad and "non-finite" in str(err)):
                raise
            read_pending()
            raise FloatingPointError(
                f"non-finite total gradient norm at epoch {epoch}, step {step} (global, from 0); "
                "stopped before optimizer.step(), so the weights are those of the previous "
                "step (chapter 06)") from err
        if clip_at is not None:  # with the norm above: clip_grad_norm_, bit for bit in float32
            nn.utils.clip_grads_with_norm_(params, clip_at, grad_norm)
        lr = optimizer.param_groups[0]["lr"]  # this step's rate, before the scheduler moves it
        if isinstance(lr, torch.Tensor):  # a scheduler changes it in place: keep this value
            lr = lr.detach().clone()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        pending.append((step, loss.detach(), grad_norm.detach(), lr, len(inputs)))
        if on_step is not None or len(pending) == READ_EVERY:
            read_pending()
        if on_step is not None:
            on_step(StepInfo(epoch, step, *last_read, float(lr)))
        step += 1
    read_pending()
    if n_seen == 0:
        raise ValueError("the loader yielded no batches")
    return total_loss / n_seen


def evaluate(
    model: nn.Module, loader: Iterable, loss_fn: LossFn, metric: MetricFn = accuracy
) -> dict[str, float]:
    """Mean loss and metric over ``loader`` in eval mode without a graph; restores the mode.

    As in :func:`train_one_epoch` (and chapter 03's loop), the batches' losses stay on the
    model's device and are read to the host in one transfer every ``READ_EVERY`` batches and at
    the end, so on a GPU the CPU does not wait for every batch. The default metric,
    :func:`accuracy`, is computed on the device too (its check for NaN or infinite logits is
    read with the rest, and raises ``ValueError`` then); a ``metric`` that returns a 0-dim
    tensor stays on the device, one that returns a Python number has read it itself. The sums
    are the same, term for term, as reading every batch: the result does not change.

    As for :func:`train_one_epoch`, ``loss_fn`` must return the batch's mean loss as a 0-dim
    tensor (a ``reduction='sum'`` loss cannot be detected and would be batch-size times too
    large), ``metric`` a Python number or a 0-dim tensor (``TypeError`` or ``ValueError``
    otherwise), and a ``Dataset`` in place of a loader raises ``TypeError``.
    """
    device = _model_device(model)
    require_loader("loader", loader)
    require_callable("loss_fn", loss_fn)
    require_callable("metric", metric)
    was_training = model.training
    model.eval()
    total_loss = total_metric = 0.0
    n_seen = 0
    # (loss, metric, non-finite logit rows, batch size) of the batches not yet read
    pending: list[tuple[torch.Tensor, torch.Tensor | float, torch.Tensor | None, int]] = []

    def read_pending() -> None:
        nonlocal total_loss, total_metric, n_seen
        on_device = [t for loss, value, bad, _ in pending
                     for t in (loss, value, bad) if isinstance(t, torch.Tensor)]
        if not on_device:
            return
        on, dtype = on_device[0].device, torch.float32
        for t in on_device:  # a common dtype in which every value converts exactly
            dtype = torch.promote_types(dtype, t.dtype)
        values = iter(torch.stack([t.detach().reshape(()).to(on, dtype)
                                   for t in on_device]).tolist())  # the one host read
        for _, value, bad, size in pending:
            loss_value = next(values)
            metric_value = next(values) if isinstance(value, torch.Tensor) else value
            if bad is not None and next(values):
                _raise_nonfinite_logits(int(bad), size)
            total_loss += loss_value * size
            total_metric += metric_value * size
            n_seen += size
        pending.clear()

    try:
        with torch.no_grad():
            for inputs, targets in _batches(loader):
                inputs, targets = _to_device(inputs, device), _to_device(targets, device)
                outputs = model(inputs)
                loss = _check_loss(loss_fn(outputs, targets))
                if metric is accuracy:
                    value, bad = _accuracy_on_device(outputs, targets)
                else:
                    value, bad = _check_metric(metric(outputs, targets)), None
                pending.append((loss, value, bad, len(inputs)))
                if len(pending) == READ_EVERY:
                    read_pending()
            read_pending()
    finally:
        model.train(was_training)
    if n_seen == 0:
        raise ValueError("the loader yielded no batches")
    return {"loss": total_loss / n_seen, "metric": total_metric / n_seen}


def _check_metric(value: object) -> torch.Tensor | float:
    """A metric's value for one batch: a real Python number or a 0-dim tensor."""
    if isinstance(value, torch.Tensor):
        if value.ndim != 0:
            raise ValueError(f"metric must return one number per batch (a float or a 0-dim "
                             f"tensor), got a tensor of shape {tuple(value.shape)}")
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"metric must return a float or a 0-dim tensor, got "
                        f"{type(value).__name__}")
    return float(value)


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
    stop_on_nonfinite: bool = False,
    stop_on_nonfinite_grad: bool = False,
) -> History:
    """Train for ``epochs`` epochs, evaluating on ``val_loader`` after each, and keep a history.

    Set ``progress=False`` to hide the tqdm bars (the book does, to keep pages clean).
    ``stop_on_nonfinite=True`` stops with ``FloatingPointError`` at the first NaN or infinite
    loss, naming its epoch and step; the default trains on, as chapter 05 shows (its divergence
    plot needs the steps after the NaN), and :class:`helpers.NaNGuard` is the hook for that.
    ``stop_on_nonfinite_grad=True`` stops with ``FloatingPointError`` before ``optimizer.step()``
    when the total gradient norm is not finite (``get_total_norm(..., error_if_nonfinite=True)``):
    see :func:`train_one_epoch`, also for what ``loss_fn`` must return and which learning rate
    is recorded. The scheduler is stepped after every batch, as there; ``ReduceLROnPlateau``
    raises ``ValueError``. A ``Dataset`` in place of a loader raises ``TypeError``.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    require_bool("progress", progress)
    require_bool("stop_on_nonfinite", stop_on_nonfinite)
    require_bool("stop_on_nonfinite_grad", stop_on_nonfinite_grad)
    _check_clip(max_grad_norm)
    _model_device(model)
    _check_optimizer(model, optimizer)
    require_loader("train_loader", train_loader)
    if val_loader is not None:
        require_loader("val_loader", val_loader)
    require_callable("loss_fn", loss_fn)
    require_callable("metric", metric)
    _check_scheduler(scheduler)
    history = History()
    for epoch in tqdm(range(epochs), desc="epochs", disable=not progress):
        train_loss = train_one_epoch(
            model, train_loader, loss_fn, optimizer, scheduler=scheduler,
            max_grad_norm=max_grad_norm, on_step=on_step, history=history, epoch=epoch,
            progress=progress, stop_on_nonfinite=stop_on_nonfinite,
            stop_on_nonfinite_grad=stop_on_nonfinite_grad,
        )
        history.epoch_train_loss.append(train_loss)
        if val_loader is not None:
            result = evaluate(model, val_loader, loss_fn, metric)
            history.epoch_val_loss.append(result["loss"])
            history.epoch_val_metric.append(result["metric"])
    return history
