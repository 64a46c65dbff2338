"""The ``Dataset`` classes and the ``worker_init_fn`` that chapters 02 ("Workers: measure, then
choose num_workers", "Memory per worker", "Seeding workers") and 04 ("Threads and workers")
hand to ``DataLoader`` workers.

They live in a module, not in the notebooks, because workers started with ``spawn`` (the
default on macOS and Windows) or ``forkserver`` (Linux from Python 3.14) unpickle the dataset
in a fresh interpreter, which finds a class by its module and name and cannot find one defined
in a notebook's ``__main__`` (chapter 02, "Spawn and forkserver workers need an importable
Dataset"). The chapters print each class's source where they use it. Everything a worker
needs is an attribute of the dataset (no notebook globals), and importing this module does no
work beyond definitions, because every worker imports it. With them, :func:`usable_cpus`: how
many workers can run at once (chapter 02, "Workers").
"""

from __future__ import annotations

import io
import math
import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info

from .validate import require_callable, require_instance, require_int


class PNGDataset(Dataset):
    """``length`` items cycling through ``encoded`` (PNG bytes): each is decoded and passed
    through ``transform`` in ``__getitem__``, a millisecond or more of CPU per item."""

    def __init__(self, encoded: Sequence[bytes], labels: torch.Tensor, transform: Callable,
                 length: int | None = None) -> None:
        require_instance("labels", labels, torch.Tensor)
        require_callable("transform", transform)
        if not encoded or len(encoded) != len(labels):
            raise ValueError(f"need one label per image, got {len(encoded)} images and "
                             f"{len(labels)} labels")
        self.encoded, self.labels, self.transform = list(encoded), labels, transform
        self.length = len(self.encoded) if length is None else require_int(
            "length", length, minimum=1)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        from PIL import Image  # Pillow (torchvision's) is no dependency of helpers: used here only

        i = index % len(self.encoded)
        image = Image.open(io.BytesIO(self.encoded[i])).convert("RGB")  # decode
        return self.transform(image), self.labels[i]                     # augment


class WhatTheWorkerSees(Dataset):
    """Two items; item ``i``, made in worker ``i``, reports that worker's seeds and its first
    draw from ``random`` and from NumPy's global generator."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> dict:
        info = get_worker_info()
        if info is None:
            raise RuntimeError(
                "WhatTheWorkerSees reports what a DataLoader worker sees, and this item was "
                "loaded in the main process (num_workers=0, or indexed directly): load it "
                "with DataLoader(WhatTheWorkerSees(), batch_size=None, num_workers=2)")
        return {"worker": info.id, "info_seed": info.seed, "torch_seed": torch.initial_seed(),
                "random": random.random(), "numpy": np.random.random_sample()}


class TorchAugmented(Dataset):
    """Noise drawn from torch's global generator, like torchvision's random transforms."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int):
        return torch.full((3,), float(index)) + torch.randn(3), index


class OwnRngAugmented(Dataset):
    """Augmentation noise from the dataset's own NumPy ``Generator``, made in ``__init__``."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)  # the dataset's own random state

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int):
        return torch.tensor(self.rng.normal(size=3)), index  # just the augmentation noise


def reseed_dataset_rng(worker_id: int) -> None:
    """worker_init_fn: give each worker's copy of the dataset its own seeded Generator."""
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)  # info.seed = base seed + worker id


class NoisyDigits(Dataset):
    """The first ``len(inputs)`` digits with torch noise drawn per item: which worker draws it
    matters (chapter 04)."""

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor, noise: float = 0.05) -> None:
        require_instance("inputs", inputs, torch.Tensor)
        require_instance("labels", labels, torch.Tensor)
        if len(inputs) != len(labels):
            raise ValueError(f"{len(inputs)} inputs but {len(labels)} labels")
        self.inputs, self.labels, self.noise = inputs, labels, float(noise)

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, i: int):
        return self.inputs[i] + self.noise * torch.randn(self.inputs.shape[1:]), self.labels[i]


def private_dirty_kib(smaps_rollup: str = "/proc/self/smaps_rollup") -> int | None:
    """This process's private dirty memory in KiB: the pages it has written and shares with no
    other process (``Private_Dirty`` of Linux's ``/proc/self/smaps_rollup``, Linux 4.14 and
    later), or ``None`` where that file does not exist (macOS, Windows, older kernels).
    Chapter 02, "Memory per worker"."""
    try:
        text = Path(smaps_rollup).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1])
    raise ValueError(f"{smaps_rollup} has no Private_Dirty line")


def usable_cpus(cgroup: str | Path = "/sys/fs/cgroup",
                membership: str | Path = "/proc/self/cgroup") -> int:
    """CPUs this process may use, for sizing ``num_workers`` (chapter 02, "Workers"): its CPU
    affinity (``os.process_cpu_count()`` on Python 3.13+, ``os.sched_getaffinity`` on Linux,
    else ``os.cpu_count()``), capped by the tightest CPU quota set on its own cgroup or a parent
    (cgroup v2 ``cpu.max`` at each level below the mount ``cgroup``, found from the ``0::``
    line of ``membership``; else v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), rounded up
    (a quota of 1.5 CPUs' time lets 2 workers run at once, each part of the time)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        count = os.process_cpu_count() or 1
    elif hasattr(os, "sched_getaffinity"):  # Linux
        count = len(os.sched_getaffinity(0))
    else:
        count = os.cpu_count() or 1
    root = Path(cgroup)
    try:  # cgroup v2: the line "0::/a/b" names this process's cgroup below the mount
        lines = Path(membership).read_text().splitlines()
        own = [part for part in next(line[3:] for line in lines
                                     if line.startswith("0::")).split("/") if part]
    except (OSError, StopIteration):
        own = []
    quotas = []
    for depth in range(len(own), -1, -1):  # its own cgroup, then each parent up to the mount
        try:  # "max 100000" (no limit) or "200000 100000" (2 CPUs' worth of time)
            limit, period = root.joinpath(*own[:depth], "cpu.max").read_text().split()
            quotas += [] if limit == "max" else [int(limit) / int(period)]
        except (OSError, ValueError):
            pass
    if not quotas:
        try:  # cgroup v1: a quota of -1 means no limit
            limit = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
            quotas += [limit / period] if limit > 0 else []
        except (OSError, ValueError):
            pass
    return max(1, min([count] + [math.ceil(q) for q in quotas]))


class MemoryAfterReading(Dataset):
    """One item per worker (load it with ``batch_size=None`` and ``workers`` workers): item
    ``i``, made in worker ``i``, reads every element of ``data`` as ``__getitem__`` would read
    a sample, and reports the worker's private dirty memory (:func:`private_dirty_kib`) before
    and after the reading, and how many characters it read (chapter 02, "Memory per worker").
    A forked worker shares the main process's pages until it writes to one; reading an element
    of a list writes the element's reference count, reading one of a NumPy array writes nothing
    in the array."""

    def __init__(self, data: Sequence, workers: int) -> None:
        if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
            raise TypeError(f"data must be a sequence (a list, an array), got {type(data)}")
        self.data, self.workers = data, require_int("workers", workers, minimum=1)

    def __len__(self) -> int:
        return self.workers

    def __getitem__(self, index: int) -> dict:
        info = get_worker_info()
        before = private_dirty_kib()
        data, chars = self.data, 0
        for i in range(len(data)):
            chars += len(data[i])  # sample i, read as a Dataset's __getitem__ reads it
        after = private_dirty_kib()
        return {"worker": index if info is None else info.id, "before_kib": before,
                "after_kib": after, "chars": chars}
