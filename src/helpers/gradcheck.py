"""Numerical gradients by central differences, and their comparison with autograd (chapter 01)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .validate import require_callable

Fn = Callable[..., torch.Tensor]
_PRECISE_ENOUGH = (torch.float32, torch.float64)


def _check_inputs(inputs: tuple[torch.Tensor, ...], h: float) -> None:
    if not inputs:
        raise ValueError("pass at least one input tensor")
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"input {i} must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(
                f"input {i} has dtype {x.dtype}; numerical gradients need a real floating "
                "dtype (e.g. x.double())"
            )
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not math.isfinite(h) or h <= 0:
        raise ValueError(f"step h must be a positive finite number, got {h!r}")


def _check_dtype(name: str, dtype: torch.dtype) -> None:
    """Refuse a dtype whose rounding swamps a central difference (or that cannot hold one)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float64 or None, "
                        f"got {dtype!r}")
    if dtype not in _PRECISE_ENOUGH:
        raise TypeError(
            f"{name} is {dtype}; numerical gradients need torch.float32 or torch.float64 "
            "(float64 is recommended): an integer dtype cannot hold x ± h, and float16 or "
            "bfloat16 round f(x + h) - f(x - h) to nothing")


def _scalar(fn: Fn, args: list[torch.Tensor]) -> torch.Tensor:
    out = fn(*args)
    if not isinstance(out, torch.Tensor) or out.numel() != 1:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"fn must return a scalar tensor (one element), got {shape}")
    return out.reshape(())


def numerical_grad(
    fn: Fn, *inputs: torch.Tensor, h: float = 1e-6, dtype: torch.dtype | None = torch.float64
) -> tuple[torch.Tensor, ...]:
    """Central-difference gradient of a scalar ``fn(*inputs)`` with respect to every input.

    Each element is moved by ``+h`` and ``-h`` and ``(f(x+h) - f(x-h)) / (2h)`` is taken.
    The inputs are copied to ``dtype`` first (float64 by default: in float32 the rounding
    error of the difference swamps the estimate; chapter 01 shows by how much). Pass
    ``dtype=None`` to keep the inputs' own dtype. The inputs are not modified. Only float32
    and float64 are accepted (``TypeError`` otherwise): float16 gives 0 for the slope of x² at 3.
    """
    require_callable("fn", fn)
    _check_inputs(inputs, h)
    if dtype is not None:
        _check_dtype("dtype", dtype)
    else:
        for i, x in enumerate(inputs):
            _check_dtype(f"input {i}'s dtype (dtype=None keeps it)", x.dtype)
    args = [
        x.detach().to(dtype or x.dtype).clone(memory_format=torch.contiguous_format)
        for x in inputs
    ]
    with torch.no_grad():
        _scalar(fn, args)  # validate the output once, before the loop
        grads = []
        for x in args:
            grad = torch.zeros_like(x)
            flat_x, flat_g = x.view(-1), grad.view(-1)
            for j in range(flat_x.numel()):
                original = flat_x[j].item()
                flat_x[j] = original + h
                plus = _scalar(fn, args)
                flat_x[j] = original - h
                minus = _scalar(fn, args)
                flat_x[j] = original
                flat_g[j] = (plus - minus) / (2 * h)
            grads.append(grad)
    return tuple(grads)


def autograd_grad(fn: Fn, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The gradient of a scalar ``fn(*inputs)`` from ``torch.autograd``, in float64."""
    _check_inputs(inputs, 1.0)
    args = [x.detach().double().requires_grad_(True) for x in inputs]
    return torch.autograd.grad(_scalar(fn, args), args, allow_unused=True, materialize_grads=True)


@dataclass(frozen=True)
class GradError:
    """How far autograd's and the numerical gradient of one input are apart."""

    input_index: int
    max_abs_error: float
    max_rel_error: float


def compare_gradients(fn: Fn, *inputs: torch.Tensor, h: float = 1e-6) -> list[GradError]:
    """Compare autograd with central differences (both in float64), input by input.

    The relative error divides by the larger magnitude of the two gradients (at least 1e-12),
    so gradients of different scales can be compared, but only above the central difference's
    rounding level, about ``eps * |f(x)| / h`` (``eps`` = 2.2e-16 in float64, chapter 01):
    each difference carries an error of that size whatever the gradient. Where the gradient
    is near or below that level, at a minimum for instance, the numerical gradient is mostly
    rounding and ``max_rel_error`` can be close to 1 for a correct backward (a least-squares
    loss at its minimum gives about 1); compare ``max_abs_error`` with ``eps * |f(x)| / h``
    there, as chapter 01 does.
    """
    numeric = numerical_grad(fn, *inputs, h=h)
    analytic = autograd_grad(fn, *inputs)
    errors = []
    for i, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        diff = (a - n).abs()
        scale = torch.maximum(a.abs(), n.abs()).clamp_min(1e-12)
        max_abs = diff.max().item() if diff.numel() else 0.0
        max_rel = (diff / scale).max().item() if diff.numel() else 0.0
        errors.append(GradError(i, max_abs, max_rel))
    return errors
