"""Callbacks that watch a training run from :func:`helpers.fit`'s ``on_step`` hook (chapters 05
and 06)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .train import StepInfo
from .validate import require_bool, require_instance


class GradNormRecorder:
    """Record the gradient L2 norm of every parameter tensor at every step.

    ``norms[name]`` is a list with one value per step; a parameter that received no gradient
    in a step (``.grad is None``, e.g. behind a ``.detach()``) records ``0.0``, so a broken
    path shows up as a flat line at zero instead of disappearing from the plot. Called as
    ``fit``'s ``on_step`` hook, it sees the gradients *after* clipping (``max_grad_norm``),
    unlike ``StepInfo.grad_norm``, the total norm *before* clipping. Each norm is computed in
    float32 at least (a float16 norm above 65504 would be inf), and a step's norms are read
    to the host in one transfer, not one per parameter.

    ``only_weights=True`` keeps the weight tensors: a parameter whose own name (the last part
    of its dotted name) starts with ``weight``, so ``lin.weight``, an LSTM's ``weight_ih_l0``
    and ``weight_hh_l0``, the old ``weight_norm``'s ``weight_g`` and ``weight_v``; and a
    weight under a parametrization (``lin.parametrizations.weight.original``). Biases and
    the rest are left out (chapter 05).
    """

    def __init__(self, model: nn.Module, only_weights: bool = False) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        require_bool("only_weights", only_weights)
        self.params = [(name, p) for name, p in model.named_parameters()
                       if p.requires_grad and (not only_weights or _is_weight(name))]
        if not self.params:
            raise ValueError("the model has no trainable parameters to watch")
        self.norms: dict[str, list[float]] = {name: [] for name, _ in self.params}

    def __call__(self, info: StepInfo | None = None) -> None:
        if info is not None:
            require_instance("info", info, StepInfo)
        with torch.no_grad():
            norms = [None if p.grad is None else _float32_norm(p.grad) for _, p in self.params]
            present = [n for n in norms if n is not None]
            values = iter(_read_together(present) if present else [])  # the one host read
        for (name, _), norm in zip(self.params, norms, strict=True):
            self.norms[name].append(0.0 if norm is None else next(values))

    def zero_layers(self) -> list[str]:
        """Names whose gradient norm was zero at every recorded step."""
        return [name for name, values in self.norms.items() if values and max(values) == 0.0]


def _is_weight(name: str) -> bool:
    """Whether a parameter's dotted name is a weight's: its last part starts with ``weight``,
    or it is the original of a parametrized tensor whose name does
    (``parametrizations.weight.original``, ``...original0``)."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[-3] == "parametrizations" and parts[-1].startswith("original"):
        return parts[-2].startswith("weight")
    return parts[-1].startswith("weight")


def _float32_norm(grad: torch.Tensor) -> torch.Tensor:
    """The L2 norm of ``grad``, computed in float32 for a float16 or bfloat16 gradient (in
    float16 a norm above 65504 is inf); a float32 or float64 one in its own dtype."""
    if grad.is_floating_point() and grad.dtype not in (torch.float32, torch.float64):
        return torch.linalg.vector_norm(grad, dtype=torch.float32)
    return grad.norm()


def _read_together(norms: list[torch.Tensor]) -> list[float]:
    """The values of 0-dim ``norms`` in one transfer: stacked on the first one's device, in a
    dtype that holds each of them exactly."""
    on, dtype = norms[0].device, norms[0].dtype
    for norm in norms:
        dtype = torch.promote_types(dtype, norm.dtype)
    return torch.stack([norm.to(on, dtype) for norm in norms]).tolist()


class NaNGuard:
    """Stop training at the first step whose loss or gradient norm is not finite.

    Raises ``FloatingPointError`` naming the step and the values, instead of letting the run
    continue with NaN weights for the rest of its epochs (chapter 06).
    """

    def __init__(self) -> None:
        self.last_finite_step: int | None = None

    def __call__(self, info: StepInfo) -> None:
        require_instance("info", info, StepInfo)
        if not (math.isfinite(info.loss) and math.isfinite(info.grad_norm)):
            raise FloatingPointError(
                f"non-finite training at step {info.step} (epoch {info.epoch}): loss "
                f"{info.loss}, gradient norm {info.grad_norm}, lr {info.lr}; last finite step: "
                f"{self.last_finite_step}"
            )
        self.last_finite_step = info.step


def has_nonfinite(tensor: torch.Tensor) -> bool:
    """Whether a tensor holds a NaN or an infinity (the check to run on inputs, chapter 06)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(tensor).__name__}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return False
    return not bool(torch.isfinite(tensor).all())
