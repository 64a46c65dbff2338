"""Measuring memory and time the same way on CPU and GPU (taught in chapter 06)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch


@dataclass
class MemoryReport:
    """Filled in by :func:`measure_memory` when its block ends.

    ``saved_bytes``: bytes of the distinct tensors autograd saved for backward in the block
    (activations; tensors passed in ``exclude``, typically the parameters, are not counted).
    ``peak_bytes``: on CUDA, the peak allocated memory during the block above what was
    allocated when it started (``torch.cuda.max_memory_allocated``); ``None`` on CPU.
    """

    saved_bytes: int = 0
    saved_tensors: int = 0
    peak_bytes: int | None = None

    @property
    def saved_mib(self) -> float:
        return self.saved_bytes / 2**20


@contextmanager
def measure_memory(
    device: torch.device | str = "cpu", exclude: Iterable[torch.Tensor] = ()
) -> Iterator[MemoryReport]:
    """Measure the activation memory autograd keeps (any device) and the CUDA peak (GPU)."""
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("measure_memory(device='cuda') needs a usable CUDA device")
    excluded = {t.data_ptr() for t in exclude}
    seen: dict[tuple[int, int, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in excluded:
            seen[(t.data_ptr(), t.numel(), t.element_size())] = t.numel() * t.element_size()
        return t

    report = MemoryReport()
    start = 0
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        start = torch.cuda.memory_allocated(device)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield report
    report.saved_bytes, report.saved_tensors = sum(seen.values()), len(seen)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        report.peak_bytes = torch.cuda.max_memory_allocated(device) - start


def median_time(
    fn: Callable[[], object],
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str | None = None,
) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeats`` calls after ``warmup`` calls.

    On a CUDA device the clock is read only after ``torch.cuda.synchronize()``: GPU work is
    asynchronous, and without it the time of launching the kernels would be measured.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    if not callable(fn):
        raise TypeError("fn must be callable with no arguments")
    sync = torch.device(device).type == "cuda" if device is not None else False

    def timed() -> float:
        if sync:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if sync:
            torch.cuda.synchronize()
        return time.perf_counter() - start

    for _ in range(warmup):
        timed()
    return statistics.median(timed() for _ in range(repeats))
