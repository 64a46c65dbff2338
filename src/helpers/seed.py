"""Seeding every random number generator a training script draws from (chapters 00 and 04)."""

from __future__ import annotations

import random

import numpy as np
import torch

_MAX_SEED = 2**32 - 1  # NumPy's legacy global generator accepts seeds in [0, 2**32)


def set_seed(seed: int) -> int:
    """Seed Python's ``random``, NumPy's global generator, torch on CPU and every CUDA device.

    Returns the seed so that a caller can record it. This makes CPU runs repeatable; it does
    not make non-deterministic GPU kernels deterministic (chapter 04 covers that).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} ({seed!r})")
    seed = int(seed)
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must be in [0, {_MAX_SEED}] (NumPy's range), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device in current PyTorch
    torch.cuda.manual_seed_all(seed)  # explicit, and harmless without a GPU
    return seed
