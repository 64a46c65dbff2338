"""Chapter 06's claims can fail: each verdict, compiled from the chapter (tests/chapter_code.py),
raises on evidence from a world where its claim is false and passes on the real thing.

The evidence is computed here with small tensors, the mechanism switched off or broken; the
GPU-only parts (C23's speed, C45) get evidence from a model of the machine they describe.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from helpers import measure_memory
from tests.chapter_code import chapter_function

CHAPTER = "06_memory"


# C23 (memory): autocast saves its inputs in low precision, unless the batch is small

def saved_bytes(batch: int, use_amp: bool, width: int = 64) -> int:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                          nn.ReLU(), nn.Linear(width, 10))
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))
    with measure_memory("cpu", exclude=model.parameters()) as mem:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
            F.cross_entropy(model(x), y)
    return mem.saved_bytes


def test_c23_memory_autocast_removed_or_batch_too_small():
    verdict = chapter_function(CHAPTER, "verdict_c23_memory")
    verdict(saved_bytes(1024, False), saved_bytes(1024, True))  # the chapter's case: holds
    with pytest.raises(AssertionError):  # autocast off in both runs: nothing saved
        verdict(saved_bytes(1024, False), saved_bytes(1024, False))
    # a batch of 2: the weight copies autocast keeps outweigh the halved activations
    assert saved_bytes(2, True) > saved_bytes(2, False)
    with pytest.raises(AssertionError):
        verdict(saved_bytes(2, False), saved_bytes(2, True))


# C23 (speed, GPU only): step times from a roofline model of the chapter's MLP step

def step_seconds(matmul_flops_per_s: float, bytes_per_number: int) -> float:
    """A training step of the chapter's MLP (batch 4096, 4 Linear 1024x1024 + head) on a GPU
    with the given matrix-product throughput and 3.35 TB/s of memory bandwidth."""
    batch, numbers = 4096, 4 * 1024 * 1024 + 1024 * 10
    flops = 6 * batch * numbers  # forward + backward, 2 flops per multiply-add
    traffic = 3 * 5 * batch * 1024 * bytes_per_number  # activations written, read twice
    return flops / matmul_flops_per_s + traffic / 3.35e12


def test_c23_speed_without_tensor_cores():
    verdict = chapter_function(CHAPTER, "verdict_c23_speed")
    float32 = step_seconds(60e12, 4)  # an H100's float32 rate without TF32
    verdict(float32, step_seconds(700e12, 2))  # float16 on its tensor cores: holds
    with pytest.raises(AssertionError):  # a GPU whose float16 matmuls run at the fp32 rate
        verdict(float32, step_seconds(60e12, 2))
    with pytest.raises(AssertionError):  # a Pascal GPU: float16 at 1/64 of float32's rate
        verdict(float32, step_seconds(60e12 / 64, 2))


# C45 (GPU only): a caching allocator in miniature, and allocators without the effect

class Allocator:
    """Blocks rounded up to 2 MiB; `caching`: freed blocks stay reserved until empty_cache();
    `releases`: empty_cache() gives them back."""

    def __init__(self, caching: bool = True, releases: bool = True) -> None:
        self.caching, self.releases = caching, releases
        self.allocated, self.cached = 8 * 2**20, 0  # a few tensors already live

    def reading(self) -> tuple[int, int]:
        return self.allocated, self.allocated + self.cached

    def alloc(self, size: int) -> int:
        block = -(-size // 2**21) * 2**21
        self.allocated += block
        self.cached = max(0, self.cached - block)  # a cached block is reused first
        return block

    def free(self, block: int) -> None:
        self.allocated -= block
        if self.caching:
            self.cached += block

    def empty_cache(self) -> None:
        if self.releases:
            self.cached = 0


def allocator_evidence(allocator: Allocator, size: int) -> tuple:
    allocator.empty_cache()
    start = allocator.reading()
    block = allocator.alloc(size)
    live = allocator.reading()
    allocator.free(block)
    freed = allocator.reading()
    allocator.empty_cache()
    return start, live, freed, allocator.reading(), size


def test_c45_no_caching_or_empty_cache_that_keeps():
    verdict = chapter_function(CHAPTER, "verdict_c45")
    size = 256 * 2**20 + 5  # not a multiple of the block size
    verdict(*allocator_evidence(Allocator(), size))
    with pytest.raises(AssertionError):  # freed memory goes back at once (the CPU's case)
        verdict(*allocator_evidence(Allocator(caching=False), size))
    with pytest.raises(AssertionError):  # empty_cache() that returns nothing
        verdict(*allocator_evidence(Allocator(releases=False), size))
    start, live, freed, emptied, _ = allocator_evidence(Allocator(), size)
    with pytest.raises(AssertionError):  # a counter that reports reserved as allocated
        verdict((start[1],) * 2, (live[1],) * 2, (freed[1],) * 2, (emptied[1],) * 2, size)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_c45_real_allocator_holds():
    verdict = chapter_function(CHAPTER, "verdict_c45")

    def reading() -> tuple[int, int]:
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated(), torch.cuda.memory_reserved()

    torch.cuda.empty_cache()
    start = reading()
    block = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    live = reading()
    del block
    freed = reading()
    torch.cuda.empty_cache()
    verdict(start, live, freed, reading(), 256 * 2**20)


# C42: a variance as E[x^2] - E[x]^2 by matrix products, under autocast or not

def variance_evidence(autocast: bool, region: bool, to_float32: bool = True,
                      whole_model_float32: bool = False) -> dict:
    torch.manual_seed(0)
    raw = 100 + 2 * torch.randn(256, 16)
    true_var = raw.double().var(dim=0, unbiased=False)
    linear = nn.Linear(16, 16)

    def moments(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weights = torch.full((1, len(x)), 1 / len(x), dtype=x.dtype)
        mean = weights @ x
        return mean, weights @ (x * x) - mean * mean

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        inputs = raw if to_float32 else raw.bfloat16()
        if region:
            with torch.autocast("cpu", enabled=False):
                mean, var = moments(inputs.float() if to_float32 else inputs)
        else:
            mean, var = moments(inputs)
        with torch.autocast("cpu", enabled=autocast and not whole_model_float32):
            out = linear((raw - mean) / torch.sqrt(var + 1e-5))
    error = ((var.double().squeeze(0) - true_var).abs() / true_var).nan_to_num(nan=float("inf"))
    return {"output": out.dtype, "variance": var.dtype, "error": error.max().item()}


def test_c42_no_autocast_or_a_region_that_stays_low():
    verdict = chapter_function(CHAPTER, "verdict_c42")
    low = torch.bfloat16
    verdict(variance_evidence(True, False), variance_evidence(True, True), low)
    with pytest.raises(AssertionError):  # autocast that leaves matmuls in float32
        verdict(variance_evidence(False, False), variance_evidence(True, True), low)
    with pytest.raises(AssertionError):  # the region without .float(): still bfloat16
        verdict(variance_evidence(True, False),
                variance_evidence(True, True, to_float32=False), low)
    with pytest.raises(AssertionError):  # a "fix" that turns autocast off for everything
        verdict(variance_evidence(True, False),
                variance_evidence(True, True, whole_model_float32=True), low)


# C24: accumulation over micro-batches, computed for real

def accumulation_evidence(divide: bool = True, sizes: tuple = (10, 10, 10, 2),
                          bn_training: bool = True) -> tuple:
    max_diff = chapter_function(CHAPTER, "max_diff")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5))
    x, y, k = torch.randn(32, 20), torch.randint(0, 5, (32,)), 4

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        return out

    F.cross_entropy(model(x), y).backward()
    full = grads()
    for xs, ys in zip(x.chunk(k), y.chunk(k), strict=True):
        (F.cross_entropy(model(xs), ys) / (k if divide else 1)).backward()
    accumulated = grads()
    for xs, ys in zip(x.chunk(k), y.chunk(k), strict=True):
        F.cross_entropy(model(xs), ys).backward()
    undivided = grads()
    for xs, ys in zip(x.split(list(sizes)), y.split(list(sizes)), strict=True):
        (F.cross_entropy(model(xs), ys) / len(sizes)).backward()
    uneven_wrong = grads()
    for xs, ys in zip(x.split(list(sizes)), y.split(list(sizes)), strict=True):
        (F.cross_entropy(model(xs), ys, reduction="sum") / len(x)).backward()
    uneven_right = grads()

    bn = nn.Sequential(nn.Linear(20, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))
    bn.train(bn_training)
    model = bn
    initial = {n: v.clone() for n, v in bn.state_dict().items()}
    F.cross_entropy(bn(2 * x + 1), y).backward()
    bn_full, running_full = grads(), bn[1].running_mean.clone()
    bn.load_state_dict(initial)
    for xs, ys in zip((2 * x + 1).chunk(k), y.chunk(k), strict=True):
        (F.cross_entropy(bn(xs), ys) / k).backward()
    bn_gap = max_diff(grads(), bn_full)
    drift = (bn[1].running_mean - running_full).abs().max().item()
    return full, accumulated, undivided, k, uneven_wrong, uneven_right, bn_gap, drift


def test_c24_division_removed_even_split_or_batchnorm_in_eval():
    verdict = chapter_function(CHAPTER, "verdict_c24",
                               max_diff=chapter_function(CHAPTER, "max_diff"))
    verdict(*accumulation_evidence())
    with pytest.raises(AssertionError):  # loss not divided by k
        verdict(*accumulation_evidence(divide=False))
    with pytest.raises(AssertionError):  # an even split: the mean of means is right
        verdict(*accumulation_evidence(sizes=(8, 8, 8, 8)))
    with pytest.raises(AssertionError):  # BatchNorm in eval mode uses no batch statistics
        verdict(*accumulation_evidence(bn_training=False))
    full, accumulated, undivided, k, *rest = accumulation_evidence()
    with pytest.raises(AssertionError):  # undivided gradients only 2x too large, not k = 4
        verdict(full, accumulated, [g / 2 for g in undivided], k, *rest)


# C25: checkpointing, computed for real on small blocks with dropout

def checkpoint_evidence(recompute: bool = True, preserve_rng_state: bool = True) -> tuple:
    xs, ys = torch.randn(64, 32), torch.randint(0, 10, (64,))
    results = []
    for use_checkpoint in (False, True):
        torch.manual_seed(0)
        blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(0.1),
                                             nn.Linear(64, 32), nn.GELU()) for _ in range(4))
        head = nn.Linear(32, 10)
        params = [*blocks.parameters(), *head.parameters()]
        torch.manual_seed(1)
        with measure_memory("cpu", exclude=params) as mem:
            h = xs
            for block in blocks:
                if use_checkpoint and recompute:
                    h = checkpoint(block, h, use_reentrant=False,
                                   preserve_rng_state=preserve_rng_state)
                else:
                    h = block(h)
            loss = F.cross_entropy(head(h), ys)
        loss.backward()
        results.append(([p.grad.clone() for p in params], mem.saved_bytes))
    (g_off, mem_off), (g_on, mem_on) = results
    return g_off, g_on, mem_off, mem_on


def test_c25_no_recomputation_other_masks_or_free_time():
    verdict = chapter_function(CHAPTER, "verdict_c25")
    g_off, g_on, mem_off, mem_on = checkpoint_evidence()
    verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.3)  # one extra forward: about 1.3x
    with pytest.raises(AssertionError):  # "checkpointing" that keeps every activation
        verdict(*checkpoint_evidence(recompute=False), 1.0, 1.3)
    with pytest.raises(AssertionError):  # the recomputation draws other dropout masks
        verdict(*checkpoint_evidence(preserve_rng_state=False), 1.0, 1.3)
    with pytest.raises(AssertionError):  # recomputation that costs no time
        verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.0)
