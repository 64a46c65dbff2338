"""Small offline data sets for the chapters (taught in chapter 02)."""

from __future__ import annotations

import torch
from torch.utils.data import TensorDataset


def digits_split(
    val_fraction: float = 0.2, seed: int = 0
) -> tuple[TensorDataset, TensorDataset]:
    """scikit-learn's bundled handwritten digits as (train, validation) tensor data sets.

    1,797 images of 8×8 pixels, flattened to 64 float32 features scaled to [0, 1], with int64
    labels 0–9. The split is a seeded permutation, so it is the same on every machine and
    needs no download.
    """
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)):
        raise TypeError(f"val_fraction must be a number, got {val_fraction!r}")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be strictly between 0 and 1, got {val_fraction}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    from sklearn.datasets import load_digits  # imported here: only this helper needs it

    images, labels = load_digits(return_X_y=True)
    x = torch.tensor(images / 16.0, dtype=torch.float32)
    y = torch.tensor(labels, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_val = round(len(x) * val_fraction)
    val_idx, train_idx = order[:n_val], order[n_val:]
    return TensorDataset(x[train_idx], y[train_idx]), TensorDataset(x[val_idx], y[val_idx])
