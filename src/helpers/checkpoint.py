"""Checkpoints that resume exactly and survive a crash (taught in chapter 07).

A checkpoint is a dict of plain types and tensors, so that it loads with
``torch.load(..., weights_only=True)``: model, optimizer and scheduler state dicts, the step
and epoch, every random generator's state, and whatever JSON-like ``extra`` the caller adds.
It is written to a temporary file in the same directory and renamed over the old one, so a
crash during the save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import pickle
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .validate import require_bool

FORMAT_VERSION = 1
COMPILE_PREFIX = "_orig_mod."


def rng_state() -> dict[str, Any]:
    """The state of every generator a training script draws from, in weights-only types."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    missing = {"python", "numpy", "torch", "cuda"} - set(state)
    if missing:
        raise ValueError(f"RNG state lacks {sorted(missing)}")
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def unwrap_compiled(model: nn.Module) -> nn.Module:
    """The original module behind ``torch.compile`` (chapter 07, C28), or the model itself."""
    return getattr(model, "_orig_mod", model)


def strip_compile_prefix(state_dict: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``state_dict`` without the ``_orig_mod.`` prefix that ``torch.compile`` adds."""
    return {k.removeprefix(COMPILE_PREFIX): v for k, v in state_dict.items()}


def save_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    step: int = 0,
    epoch: int = 0,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a complete checkpoint atomically (temporary file, fsync, rename)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    for name, value in (("step", step), ("epoch", epoch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT_VERSION,
        "model": unwrap_compiled(model).state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "step": step,
        "epoch": epoch,
        "rng": rng_state(),
        "extra": extra or {},
    }
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX and Windows: old file or new, never half
    finally:
        if tmp.exists():
            tmp.unlink()
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
    return path


def load_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    map_location: str | torch.device = "cpu",
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into the given objects.

    Loads with ``weights_only=True`` (no code in the file can run). Returns
    ``{"step", "epoch", "extra"}``. Raises ``FileNotFoundError`` for a missing file,
    ``ValueError`` for a truncated or corrupt file, for a file that is not such a checkpoint,
    and for a checkpoint of another architecture (naming the keys that differ).
    """
    require_bool("restore_rng", restore_rng)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, pickle.UnpicklingError) as err:
        if isinstance(err, pickle.UnpicklingError) and "Weights only load failed" in str(err):
            raise ValueError(f"{path} contains objects other than tensors and plain types; "
                             "refusing to unpickle it (see chapter 07 on weights_only)") from err
        raise ValueError(f"{path} is not a complete checkpoint (truncated or corrupt?): "
                         f"{type(err).__name__}: {str(err).splitlines()[0][:200]}") from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path} was not written by save_checkpoint (format "
                         f"{payload.get('format') if isinstance(payload, dict) else None!r})")
    target = unwrap_compiled(model)
    state = strip_compile_prefix(payload["model"])
    # Checked before loading, not left to load_state_dict(strict=True): PyTorch copies every
    # tensor that fits before it raises, so a failed load would leave the model half-changed.
    expected = target.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = sorted(k for k in set(state) & set(expected)
                    if tuple(state[k].shape) != tuple(expected[k].shape))
    if missing or unexpected or shapes:
        raise ValueError(
            f"{path} holds a different architecture: missing keys {missing[:5]}, unexpected "
            f"keys {unexpected[:5]}, shape mismatches {shapes[:5]}")
    target.load_state_dict(state)
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise ValueError(f"{path} has no optimizer state to load")
        optimizer.load_state_dict(payload["optimizer"])
    if scheduler is not None:
        if payload["scheduler"] is None:
            raise ValueError(f"{path} has no scheduler state to load")
        scheduler.load_state_dict(payload["scheduler"])
    if restore_rng:
        set_rng_state(payload["rng"])
    return {"step": payload["step"], "epoch": payload["epoch"], "extra": payload["extra"]}
