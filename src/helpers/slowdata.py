"""A ``Dataset`` with a planted per-item delay, for profiling the input pipeline (chapter 06,
"Where the time goes: torch.profiler")."""

from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset

from .validate import require_instance


class SlowDataset(Dataset):
    """Wrap ``base`` so that every ``__getitem__`` first sleeps ``delay`` seconds: a stand-in
    for an item read from a slow disk or a network store. The sleep costs wall time, not CPU,
    as waiting on I/O does. Defined in a module, not in a notebook, so that ``DataLoader``
    workers started with ``spawn`` or ``forkserver`` can import it (chapter 02, "Worker
    start-up and persistent_workers")."""

    def __init__(self, base: Dataset, delay: float) -> None:
        require_instance("base", base, Dataset)
        if isinstance(delay, bool) or not isinstance(delay, (int, float)):
            raise TypeError(f"delay must be a number of seconds, got {delay!r}")
        if not 0 <= delay < 1:
            raise ValueError(f"delay must be in [0, 1) seconds per item, got {delay}")
        if not hasattr(base, "__len__"):
            raise TypeError("base must be a map-style Dataset with __len__")
        self.base, self.delay = base, float(delay)

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        time.sleep(self.delay)
        return self.base[index]
