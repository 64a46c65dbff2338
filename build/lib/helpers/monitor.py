"""Callbacks that watch a training run from :func:`helpers.fit`'s ``on_step`` hook (chapter 05)."""

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
    path shows up as a flat line at zero instead of disappearing from the plot.
    """

    def __init__(self, model: nn.Module, only_weights: bool = False) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        require_bool("only_weights", only_weights)
        self.params = [(name, p) for name, p in model.named_parameters()
                       if p.requires_grad and (not only_weights or name.endswith("weight"))]
        if not self.params:
            raise ValueError("the model has no trainable parameters to watch")
        self.norms: dict[str, list[float]] = {name: [] for name, _ in self.params}

    def __call__(self, info: StepInfo | None = None) -> None:
        if info is not None:
            require_instance("info", info, StepInfo)
        for name, p in self.params:
            self.norms[name].append(0.0 if p.grad is None else p.grad.norm().item())

    def zero_layers(self) -> list[str]:
        """Names whose gradient norm was zero at every recorded step."""
        return [name for name, values in self.norms.items() if values and max(values) == 0.0]


class NaNGuard:
    """Stop training at the first step whose loss or gradient norm is not finite.

    Raises ``FloatingPointError`` naming the step and the values, instead of letting the run
    continue with NaN weights for the rest of its epochs.
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
    """Whether a tensor holds a NaN or an infinity (the check to run on inputs, chapter 05)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(tensor).__name__}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return False
    return not bool(torch.isfinite(tensor).all())
