"""Measuring memory and time the same way on CPU and GPU (taught in chapter 07)."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import torch

from .quiet import quiet_logger
from .validate import require_instance

# torch.utils.benchmark imports cpp_extension, which logs "No CUDA runtime is found" on a
# machine that has nvcc but no GPU; nothing here compiles, so that line would only clutter
# every chapter's first output.
with quiet_logger("torch.utils.cpp_extension", logging.ERROR):
    import torch.utils.benchmark as benchmark


def _storage_of(t: torch.Tensor) -> object:
    """The storage ``t`` lives in (one Python object per storage while the storage lives), or
    ``t`` itself for a tensor without one (sparse, nested)."""
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):
        return t


def _nbytes(storage: object) -> int:
    if isinstance(storage, torch.Tensor):  # no storage: count its elements
        return storage.numel() * storage.element_size()
    return storage.nbytes()


@dataclass
class MemoryReport:
    """Filled in by :func:`measure_memory` when its block ends.

    ``saved_bytes``: bytes of the distinct storages that the tensors autograd saved for
    backward in the block live in (activations; tensors in ``exclude``, typically the
    parameters, and every view of their storage are not counted). A storage is counted once,
    whole, however many of its views are saved: that is the memory the saved tensors keep
    alive (a saved slice keeps all of its storage). ``saved_tensors``: how many such storages.
    ``peak_bytes``: on CUDA, the peak allocated memory during the block above what was
    allocated when it started (``torch.cuda.max_memory_allocated``); ``None`` off CUDA.
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
    """Measure the activation memory autograd keeps (any device) and the CUDA peak (GPU).

    Saved tensors are told apart by their storage, not by their address: two views of one
    storage are one storage, and a storage freed inside the block (after a ``backward``)
    whose address a later one reuses is another storage (a weak reference tells them apart,
    and keeps nothing alive). Chapter 07.
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("measure_memory(device='cuda') needs a usable CUDA device")
    excluded = [_storage_of(require_instance("each tensor in exclude", t, torch.Tensor))
                for t in exclude]
    excluded_ids = {id(s) for s in excluded}  # alive: the caller holds the tensors
    seen: dict[int, weakref.ref] = {}  # id of a storage -> a weak reference to it
    counted = [0, 0]  # bytes, storages

    def pack(t: torch.Tensor) -> torch.Tensor:
        # The graph keeps what pack returns. t itself would make a reference cycle when t is
        # the output of the operation saving it (t -> grad_fn -> saved t): a forward whose
        # output is dropped would never be freed. A detached alias shares t's memory and has
        # no grad_fn (torch/autograd/graph.py: "use lambda x: x.detach()").
        storage = _storage_of(t)
        key = id(storage)
        if key not in excluded_ids:
            known = seen.get(key)
            if known is None or known() is not storage:  # new, or a dead one's id reused
                seen[key] = weakref.ref(storage)
                counted[0] += _nbytes(storage)
                counted[1] += 1
        return t.detach()

    report = MemoryReport()
    start = 0
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        start = torch.cuda.memory_allocated(device)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield report
    report.saved_bytes, report.saved_tensors = counted
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        report.peak_bytes = torch.cuda.max_memory_allocated(device) - start


def median_time(fn: Callable[[], object], min_run_time: float = 0.2, warmup: int = 1) -> float:
    """Median seconds of one ``fn()`` call, measured by ``torch.utils.benchmark``.

    ``Timer.blocked_autorange`` runs ``fn`` in blocks for at least ``min_run_time`` seconds
    and takes the median over blocks; it synchronizes CUDA before reading the clock (GPU work
    is asynchronous) and, as used here, keeps the process's thread count (the default would
    measure with one thread). ``warmup`` calls run first (compilation, caches, allocator).
    """
    if not callable(fn):
        raise TypeError("fn must be callable with no arguments")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    if isinstance(min_run_time, bool) or not isinstance(min_run_time, int | float) \
            or not 0 < min_run_time <= 60:
        raise ValueError(f"min_run_time must be seconds in (0, 60], got {min_run_time!r}")
    for _ in range(warmup):
        fn()
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


T = TypeVar("T")


def remeasure(measure: Callable[[], T], holds: Callable[[T], bool], attempts: int = 3,
              show: Callable[[T], str] = repr) -> T:
    """Measure; while ``holds(result)`` is false, measure again, at most ``attempts`` times.

    For timing claims on a noisy machine (chapters 02, 05, 06, 08): every attempt is printed,
    the failed ones too, and the last result is returned for the claim cell to assert. A claim
    that is false fails every attempt; one that is true survives a burst of load.
    """
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"attempts must be a positive int, got {attempts!r}")
    if not callable(measure) or not callable(holds):
        raise TypeError("measure and holds must be callables")
    for attempt in range(1, attempts + 1):
        result = measure()
        ok = bool(holds(result))
        verdict = "holds" if ok else ("does not hold, measuring again" if attempt < attempts
                                      else "does not hold (last attempt)")
        print(f"  attempt {attempt}/{attempts}: {show(result)} -> {verdict}")
        if ok:
            break
    return result
