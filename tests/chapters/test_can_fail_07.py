"""Chapter 07's claims can fail: each verdict, compiled from the chapter
(tests/chapters/chapter_code.py), raises on evidence from a world where its claim is false and
passes on the real thing.

The evidence is computed here with small tensors, the mechanism switched off or broken; the
GPU-only parts (C23's speed, C45) get evidence from a model of the machine they describe.
"""

import gc
import json
import os
import subprocess
import sys
import weakref

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from helpers import measure_memory
from tests.chapters.chapter_code import chapter_definitions, chapter_function
from tools.build.chapter_format import ROOT

CHAPTER = "07_memory"


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


# The chapter's own pack hook (saved_bytes_by_kind) must leave no graph alive after the pass

class KeepsWeakOutput(nn.Module):
    """A ReLU (which saves its output for backward) that keeps a weak reference to its output."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[weakref.ref] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(x)
        self.refs.append(weakref.ref(out))
        return out


def outputs_alive_after_saved_bytes_by_kind(replace: tuple[str, str] | None = None) -> int:
    """How many ReLU outputs are still alive after the chapter's saved_bytes_by_kind ran two
    forward passes (without and with autocast) and gc ran; `replace` plants a change in its
    source."""
    source = chapter_definitions(CHAPTER)["saved_bytes_by_kind"][0]
    if replace:
        assert source.count(replace[0]) == 1, replace
        source = source.replace(*replace)
    torch.manual_seed(0)
    relu = KeepsWeakOutput()
    model = nn.Sequential(nn.Linear(16, 16), relu, nn.Linear(16, 10))
    namespace = {"torch": torch, "nn": nn, "F": F, "amp_model": model, "xb": torch.randn(8, 16),
                 "yb": torch.randint(0, 10, (8,)), "device": torch.device("cpu"),
                 "amp_dtype": torch.bfloat16}
    exec(compile(source, f"book/{CHAPTER}.md:saved_bytes_by_kind", "exec"), namespace)
    for use_amp in (False, True):
        assert namespace["saved_bytes_by_kind"](use_amp)  # it counted something
    gc.collect()
    assert len(relu.refs) == 2
    return sum(ref() is not None for ref in relu.refs)


def test_saved_bytes_by_kind_leaves_no_graph_alive():
    assert outputs_alive_after_saved_bytes_by_kind() == 0  # the chapter's hook: t.detach()
    # planted: the hook keeps and hands back t itself; a saved output then holds its graph in a
    # cycle through C++ that gc cannot see, and every measured pass stays alive
    assert outputs_alive_after_saved_bytes_by_kind(("t = t.detach()", "pass")) == 2


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
    `releases`: empty_cache() gives them back; `driver_sees_allocated`: the driver's count
    follows the live tensors, not what PyTorch reports as reserved (a counter that does not
    match what nvidia-smi shows)."""

    CONTEXT = 500 * 2**20  # the CUDA context, which the driver counts and PyTorch does not

    def __init__(self, caching: bool = True, releases: bool = True,
                 driver_sees_allocated: bool = False) -> None:
        self.caching, self.releases = caching, releases
        self.driver_sees_allocated = driver_sees_allocated
        self.allocated, self.cached = 8 * 2**20, 0  # a few tensors already live

    def reading(self) -> tuple[int, int, int]:
        reserved = self.allocated + self.cached
        in_use = self.CONTEXT + (self.allocated if self.driver_sees_allocated else reserved)
        return self.allocated, reserved, in_use

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
        verdict(*[(r[1], r[1], r[2]) for r in (start, live, freed, emptied)], size)
    # PyTorch's counters as above, but the driver's number drops at del: nvidia-smi would not
    # show the reserved memory (the memory went back to the driver at once)
    with pytest.raises(AssertionError):
        verdict(*allocator_evidence(Allocator(driver_sees_allocated=True), size))
    with pytest.raises(AssertionError):  # a driver count that never moves (another device's)
        verdict(*[(r[0], r[1], start[2]) for r in (start, live, freed, emptied)], size)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_c45_real_allocator_holds():
    verdict = chapter_function(CHAPTER, "verdict_c45")

    def reading() -> tuple[int, int, int]:
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        return torch.cuda.memory_allocated(), torch.cuda.memory_reserved(), total - free

    torch.cuda.empty_cache()
    start = reading()
    block = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    live = reading()
    del block
    freed = reading()
    torch.cuda.empty_cache()
    verdict(start, live, freed, reading(), 256 * 2**20)


# C42: a variance as E[x^2] - E[x]^2 by matrix products, under autocast or not

def to_tf32(t: torch.Tensor) -> torch.Tensor:
    """float32 rounded to TF32's 10 significand bits, as a GPU's tensor cores take it."""
    bits = t.float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def variance_evidence(autocast: bool, region: bool, to_float32: bool = True,
                      whole_model_float32: bool = False, tf32: bool = False) -> dict:
    """`tf32`: the region's matrix products take TF32 inputs, as cuBLAS does on a GPU where
    TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (simulated on the CPU)."""
    torch.manual_seed(0)
    raw = 100 + 2 * torch.randn(256, 16)
    true_var = raw.double().var(dim=0, unbiased=False)
    linear = nn.Linear(16, 16)

    def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return to_tf32(a) @ to_tf32(b) if tf32 and a.dtype == torch.float32 else a @ b

    def moments(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weights = torch.full((1, len(x)), 1 / len(x), dtype=x.dtype)
        mean = matmul(weights, x)
        return mean, matmul(weights, x * x) - mean * mean

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


def test_c42_float32_region_in_tf32():
    verdict = chapter_function(CHAPTER, "verdict_c42")
    forced = chapter_function(CHAPTER, "tf32_forced")
    unsafe = variance_evidence(True, False)
    with pytest.raises(AssertionError):  # the float32 region's matmuls in TF32: why C42 skips
        verdict(unsafe, variance_evidence(True, True, tf32=True), torch.bfloat16)
    assert forced({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})  # the reason the skip names
    for value in ("0", "true", ""):  # torch reads only "1"
        assert not forced({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": value}), value
    assert not forced({})


@pytest.mark.skipif(not (hasattr(torch.backends, "fp32_precision")
                         and hasattr(torch.backends.cudnn, "conv")), reason="torch before 2.9")
def test_c42_skips_on_the_setting_in_effect():
    """C42 skips on CUDA when float32 matmuls are in TF32 however that came about: the program
    set it (no variable), and not when the program set IEEE back over the variable."""
    read = chapter_function(CHAPTER, "tf32_in_effect")
    matmul, mkldnn = torch.backends.cuda.matmul, torch.backends.mkldnn.matmul
    before = (torch.get_float32_matmul_precision(), matmul.fp32_precision, mkldnn.fp32_precision)
    try:
        assert not read()["matmul"]  # the default: the claim is checked
        matmul.fp32_precision = "tf32"  # set in the program, no environment variable
        assert read()["matmul"]
        matmul.fp32_precision = "ieee"
        torch.set_float32_matmul_precision("high")  # the older spelling of the same setting
        assert read()["matmul"]
    finally:  # the legacy call also set oneDNN's matmul: restore all three
        torch.set_float32_matmul_precision(before[0])
        matmul.fp32_precision, mkldnn.fp32_precision = before[1:]
    assert not read()["matmul"]
    # the variable set, then the program sets IEEE: the region is float32 again, no skip
    assert tf32_in_fresh_process("1")["matmul"]
    assert not tf32_in_fresh_process(
        "1", first="import torch; torch.backends.cuda.matmul.fp32_precision = 'ieee'")["matmul"]


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


def stashing_checkpoint_evidence() -> tuple:
    """A "checkpoint" that keeps every activation where the saved-tensor hooks do not see it:
    its pack hook (inside measure_memory's, so it wins) stashes the tensor in a Python list, as
    selective checkpointing does by default on torch 2.14. The saved bytes read low; the memory
    is all still held, which only a CUDA peak would show."""
    xs, ys = torch.randn(64, 32), torch.randint(0, 10, (64,))
    results = []
    for stash in (False, True):
        torch.manual_seed(0)
        blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
                               for _ in range(4))
        head = nn.Linear(32, 10)
        params = [*blocks.parameters(), *head.parameters()]
        kept: list[torch.Tensor] = []

        def pack(t: torch.Tensor, kept: list[torch.Tensor] = kept) -> int:
            kept.append(t.detach())
            return len(kept) - 1

        with measure_memory("cpu", exclude=params) as mem:
            h = xs
            for block in blocks:
                if stash:
                    with torch.autograd.graph.saved_tensors_hooks(pack, kept.__getitem__):
                        h = block(h)
                else:
                    h = block(h)
            loss = F.cross_entropy(head(h), ys)
        loss.backward()
        held = sum(t.nbytes for t in kept if t.data_ptr() not in {p.data_ptr() for p in params})
        results.append(([p.grad.clone() for p in params], mem.saved_bytes, held))
    (g_off, mem_off, _), (g_on, mem_on, held) = results
    return g_off, g_on, mem_off, mem_on, held


def test_c25_activations_kept_outside_the_hooks():
    """The peaks are modelled as the bytes held at the end of the forward pass (plus, with real
    checkpointing, one block's activations while it runs): no CUDA peak on a CPU."""
    verdict = chapter_function(CHAPTER, "verdict_c25")
    g_off, g_on, mem_off, mem_on, held = stashing_checkpoint_evidence()
    assert mem_on < 0.3 * mem_off <= 0.3 * (mem_on + held)  # fooled; the memory is all held
    verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.3)  # without a peak (a CPU): it passes
    with pytest.raises(AssertionError):  # a GPU's peak counts what the stash holds
        verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.3, mem_off, mem_on + held)
    g_off, g_on, mem_off, mem_on = checkpoint_evidence()  # real checkpointing: the peak falls
    verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.3, mem_off, mem_on + mem_off // 4)
    with pytest.raises(AssertionError):  # a peak measured for one run only
        verdict(g_off, g_on, mem_off, mem_on, 1.0, 1.3, mem_off, None)


# C57: saved activations grow with the batch; a no_grad forward saves none (computed for real)

def forward_saved(batch: int, grad: bool = True, fixed: bool = False) -> int:
    """Saved bytes of a small MLP's forward pass; `fixed`: a model whose only saved tensor is
    a learned table of fixed size (an embedding-like lookup that ignores the batch)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))
    table = nn.Parameter(torch.randn(64, 32))
    with measure_memory("cpu", exclude=model.parameters()) as mem, torch.set_grad_enabled(grad):
        x = torch.randn(batch, 32)
        if fixed:  # saves the same 64 x 32 tensor at every batch size
            (table * table.detach()).sum() + x.sum()
        else:
            model(x)
    return mem.saved_bytes


def test_c57_fixed_activations_or_a_forward_that_saves():
    verdict = chapter_function(CHAPTER, "verdict_c57")
    verdict({b: forward_saved(b) for b in (16, 32, 64)}, forward_saved(16, grad=False))
    with pytest.raises(AssertionError):  # activations that do not grow with the batch
        verdict({b: forward_saved(b, fixed=True) for b in (16, 32, 64)},
                forward_saved(16, grad=False))
    with pytest.raises(AssertionError):  # the "no_grad" forward run with grad enabled
        verdict({b: forward_saved(b) for b in (16, 32, 64)}, forward_saved(16, grad=True))
    with pytest.raises(AssertionError):  # nothing saved at all: no evidence of growth
        verdict({b: forward_saved(b, grad=False) for b in (16, 32, 64)}, 0)


# C86: a target computed by the model, with its graph or under no_grad (computed for real)

def target_evidence(keep_graph: bool, target_from_model: bool = True) -> tuple:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))
    view_a, view_b = torch.randn(64, 32), torch.randn(64, 32)  # two storages, as the chapter
    with measure_memory("cpu", exclude=model.parameters()) as one:
        model(view_a)
    results = []
    for no_grad_target in (not keep_graph, True):
        model.zero_grad(set_to_none=True)
        with measure_memory("cpu", exclude=model.parameters()) as mem:
            with torch.set_grad_enabled(not no_grad_target):
                target = model(view_b) if target_from_model else torch.zeros(64, 10)
            loss = F.mse_loss(model(view_a), target)
        loss.backward()
        results.append((mem.saved_bytes, [p.grad.clone() for p in model.parameters()]))
    (saved_kept, g_kept), (saved_cut, g_cut) = results
    gap = max((a - b).abs().max().item() for a, b in zip(g_kept, g_cut, strict=True))
    return saved_kept, saved_cut, one.saved_bytes, gap / max(g.abs().max().item() for g in g_cut)


def test_c86_target_without_its_graph():
    verdict = chapter_function(CHAPTER, "verdict_c86")
    verdict(*target_evidence(keep_graph=True))
    with pytest.raises(AssertionError):  # both targets computed under no_grad
        verdict(*target_evidence(keep_graph=False))
    with pytest.raises(AssertionError):  # a fixed target: no second branch to keep
        verdict(*target_evidence(keep_graph=True, target_from_model=False))
    saved_kept, saved_cut, one, gap = target_evidence(keep_graph=True)
    with pytest.raises(AssertionError):  # a kept branch that took no gradient
        verdict(saved_kept, saved_cut, one, 0.0)
    # gradients that differ only by rounding (a nondeterministic reduction on a GPU), float32's
    # relative precision a few times over: no gradient reached the target's branch
    with pytest.raises(AssertionError):
        verdict(saved_kept, saved_cut, one, 8 * torch.finfo(torch.float32).eps)


# C85: autocast's float32 lists, per device (the CPU's computed for real)

IN_NEITHER_LIST = ("mean", "amax", "var")  # the input's dtype on both devices

def test_c85_one_list_for_both_devices_or_no_autocast():
    dtypes_of = chapter_function(CHAPTER, "autocast_dtypes")
    verdict = chapter_function(CHAPTER, "verdict_c85")
    cpu = dtypes_of("cpu", torch.bfloat16)
    cpu_float32, cpu_low = ("prod", "cross_entropy", "mse_loss"), ("sum", "cumsum", "softmax",
                                                                 "log_softmax", "exp")
    verdict(cpu, cpu_float32, cpu_low + IN_NEITHER_LIST, torch.bfloat16)
    with pytest.raises(AssertionError):  # CUDA's list taken for the CPU's
        verdict(cpu, ("sum", "cumsum", "prod", "softmax", "exp"), (), torch.bfloat16)
    with pytest.raises(AssertionError):  # "autocast keeps every reduction in float32"
        verdict(cpu, cpu_float32 + IN_NEITHER_LIST, (), torch.bfloat16)
    with pytest.raises(AssertionError):  # autocast that casts nothing: all float32
        verdict({op: torch.float32 for op in cpu}, cpu_float32, cpu_low, torch.bfloat16)
    # a CPU whose autocast kept every op in low precision (the losses too)
    with pytest.raises(AssertionError):
        verdict({**cpu, "cross_entropy": torch.bfloat16, "mse_loss": torch.bfloat16},
                cpu_float32, cpu_low, torch.bfloat16)


def test_c85_cuda_reductions_all_float32():
    """The CUDA half's verdict on dtypes as CUDA's list (autocast_mode.h) gives them, and on a
    CUDA autocast that upcast mean, amax and var too (a table, not a run: no GPU needed)."""
    verdict = chapter_function(CHAPTER, "verdict_c85")
    float32 = ("sum", "cumsum", "prod", "softmax", "log_softmax", "exp", "cross_entropy",
               "mse_loss")
    listed = {"Linear output": torch.float16, "matmul": torch.float16,
              "parameter": torch.float32, **dict.fromkeys(float32, torch.float32),
              **dict.fromkeys(IN_NEITHER_LIST, torch.float16)}
    verdict(listed, float32, IN_NEITHER_LIST, torch.float16)
    with pytest.raises(AssertionError):  # every reduction upcast: not what CUDA's list says
        verdict({**listed, **dict.fromkeys(IN_NEITHER_LIST, torch.float32)}, float32,
                IN_NEITHER_LIST, torch.float16)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_c85_cuda_list_holds():
    dtypes_of = chapter_function(CHAPTER, "autocast_dtypes")
    verdict = chapter_function(CHAPTER, "verdict_c85")
    verdict(dtypes_of("cuda", torch.float16),
            ("sum", "cumsum", "prod", "softmax", "log_softmax", "exp", "cross_entropy",
             "mse_loss"), IN_NEITHER_LIST, torch.float16)


# C84: the TF32 defaults, read with the chapter's reader after switching them (real flags)

def test_c84_tf32_switched():
    read = chapter_function(CHAPTER, "tf32_in_effect")
    verdict = chapter_function(CHAPTER, "verdict_c84")
    verdict(read())  # the defaults
    backends = torch.backends
    new_api = hasattr(backends, "fp32_precision") and hasattr(backends.cudnn, "conv")
    if new_api:
        matmul_before, conv_before = (backends.cuda.matmul.fp32_precision,
                                      backends.cudnn.conv.fp32_precision)
    try:
        if new_api:
            backends.cuda.matmul.fp32_precision = "tf32"
        else:
            backends.cuda.matmul.allow_tf32 = True
        with pytest.raises(AssertionError):  # matmuls in TF32 (set_float32_matmul_precision)
            verdict(read())
    finally:
        if new_api:
            backends.cuda.matmul.fp32_precision = matmul_before
        else:
            backends.cuda.matmul.allow_tf32 = False
    try:
        if new_api:
            backends.cudnn.conv.fp32_precision = "ieee"
        else:
            backends.cudnn.allow_tf32 = False
        with pytest.raises(AssertionError):  # convolutions in full float32
            verdict(read())
    finally:
        if new_api:
            backends.cudnn.conv.fp32_precision = conv_before
        else:
            backends.cudnn.allow_tf32 = True
    verdict(read())  # restored


# C84 (and C42 on a GPU): TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, read by fresh processes (real flags)

def tf32_in_fresh_process(value: str, first: str = "") -> dict:
    """The chapter's tf32_in_effect() in a new process with the variable set to `value`, after
    the code `first`."""
    env = {**os.environ, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": value}
    code = (f"{first}\nimport json; from tests.chapters.chapter_code import chapter_function; "
            f"print(json.dumps(chapter_function({CHAPTER!r}, 'tf32_in_effect')()))")
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_c84_tf32_forced_by_the_environment():
    verdict = chapter_function(CHAPTER, "verdict_c84")
    forced = chapter_function(CHAPTER, "tf32_forced")
    for value in ("0", "true"):  # values torch ignores: the defaults hold, nothing is skipped
        assert not forced({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": value})
        verdict(tf32_in_fresh_process(value))
    assert forced({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"})
    with pytest.raises(AssertionError):  # "1": matmuls start in TF32, so the chapter skips
        verdict(tf32_in_fresh_process("1"))


# C87 (GPU only): snapshots shaped as torch.cuda.memory._snapshot() documents them

CPP_FRAMES = [{"filename": "c10/cuda/CUDACachingAllocator.cpp", "line": 1200, "name": "malloc"},
              {"filename": "??", "line": 0, "name": "at::empty_cuda"}]


def fake_snapshot(size: int, frames: bool = True, history: bool = True,
                  freed: bool = True, python_frames: bool = True) -> dict:
    stack = ([{"filename": "07_memory.py", "line": 3, "name": "<module>"}] if python_frames
             else []) + CPP_FRAMES if frames else []
    live = {"size": size, "requested_size": size, "address": 1 << 32,
            "state": "active_allocated", "frames": stack}
    cached = {"size": size, "requested_size": size, "address": (1 << 32) + size,
              "state": "inactive", "frames": []}
    segment = {"address": 1 << 32, "total_size": 2 * size, "stream": 0,
               "segment_type": "large", "allocated_size": size, "active_size": size,
               "blocks": [live, cached]}
    trace = [{"action": "segment_alloc", "addr": 1 << 32, "size": 2 * size, "frames": []}]
    if history:
        trace += [{"action": "alloc", "addr": 1 << 32, "size": size, "frames": stack},
                  {"action": "alloc", "addr": (1 << 32) + size, "size": size, "frames": stack}]
        if freed:
            trace.append({"action": "free_requested", "addr": (1 << 32) + size, "size": size,
                          "frames": stack})
    return {"segments": [segment], "device_traces": [trace]}


def test_c87_snapshot_without_history_or_stacks():
    verdict = chapter_function(CHAPTER, "verdict_c87")
    size = 64 * 2**20
    verdict(fake_snapshot(size), size)
    with pytest.raises(AssertionError):  # recording never started: no history
        verdict(fake_snapshot(size, history=False), size)
    with pytest.raises(AssertionError):  # no stack traces recorded (context=None)
        verdict(fake_snapshot(size, frames=False), size)
    with pytest.raises(AssertionError):  # C++ frames only, no Python line to point at
        verdict(fake_snapshot(size, python_frames=False), size)
    with pytest.raises(AssertionError):  # the second tensor never freed
        verdict(fake_snapshot(size, freed=False), size)
    with pytest.raises(AssertionError):  # a snapshot of other allocations
        verdict(fake_snapshot(size), size + 2**21)
    with pytest.raises(AssertionError):  # an empty allocator
        verdict({"segments": [], "device_traces": [[]]}, size)


# C56 (GPU only): the values a fresh process reads back

def test_c56_setting_not_in_effect():
    verdict = chapter_function(CHAPTER, "verdict_c56")
    verdict("False", "True", "True", (2, 14))  # torch 2.11 and later
    verdict("False", "False", "True", (2, 9))  # torch 2.9.1: the new name alone was ignored
    with pytest.raises(AssertionError):  # a torch from 2.11 on that ignores the new name
        verdict("False", "False", "True", (2, 14))
    with pytest.raises(AssertionError):  # the variables reach no allocator
        verdict("False", "False", "False", (2, 9))
    with pytest.raises(AssertionError):  # expandable segments already on by default
        verdict("True", "True", "True", (2, 14))
    with pytest.raises(AssertionError):  # a process that printed no setting (key missing)
        verdict("False", "None", "None", (2, 9))


# C111: halving a conv net's input sides divides its saved activations by 4 (computed for real)

CPU = torch.device("cpu")


class PooledHead(nn.Module):
    """The chapter's body with a classifier head of global pooling and a Linear layer, which
    saves a (batch, channels) tensor whatever the input's size."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).mean((2, 3)))


class ResizesFirst(nn.Module):
    """A network that resizes every input to 16 x 16 before its convolutions."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(F.interpolate(x, size=(16, 16))).mean((2, 3))


def saved_by_side(net: nn.Module, sides: tuple[int, ...]) -> dict[int, int]:
    result = {}
    for side in sides:
        torch.manual_seed(0)
        images = torch.randn(2, 3, side, side)
        with measure_memory("cpu", exclude=net.parameters()) as mem:
            net(images).sum()
        result[side] = mem.saved_bytes
    return result


def unpadded_conv_net() -> nn.Sequential:
    """The chapter's first block with a 3 x 3 convolution without padding: it trims a border."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 10, 1))


def test_c111_fixed_size_tensors_or_sizes_the_strides_do_not_divide():
    verdict = chapter_function(CHAPTER, "verdict_c111")
    conv_net = chapter_function(CHAPTER, "make_conv_net", device=CPU)()
    odd = saved_by_side(conv_net, (63, 31))  # the chapter's odd sides: about 4
    verdict(saved_by_side(conv_net, (16, 8, 4)), odd)  # the chapter's network: exactly 4
    with pytest.raises(AssertionError):  # odd sizes: the poolings round 31 down
        verdict(saved_by_side(conv_net, (62, 31)), odd)
    with pytest.raises(AssertionError):  # convolutions without padding: a border trimmed
        verdict(saved_by_side(unpadded_conv_net(), (32, 16)), odd)
    with pytest.raises(AssertionError):  # a head that saves a tensor of a fixed size
        verdict(saved_by_side(PooledHead(), (16, 8)), odd)
    with pytest.raises(AssertionError):  # a network that resizes its input: no saving
        verdict(saved_by_side(ResizesFirst(), (32, 16)), odd)
    exact = saved_by_side(conv_net, (16, 8, 4))
    with pytest.raises(AssertionError):  # small odd sides: the rounding weighs more (over 5)
        verdict(exact, saved_by_side(conv_net, (15, 7)))
    with pytest.raises(AssertionError):  # odd sides into a network that resizes: no saving
        verdict(exact, saved_by_side(ResizesFirst(), (63, 31)))


# C112: halving an MLP's hidden width (computed for real, with the chapter's MLP builder)

def mlp_evidence(nets: dict[int, nn.Sequential], count_input: bool = False,
                 n_inputs: int = 48, state_of_all: bool = False) -> tuple[dict, dict, dict, dict]:
    """The chapter's evidence; `state_of_all`: the gradients and Adam moments counted over all
    the parameters, not only the hidden-to-hidden weights."""
    saved, square, params, state = {}, {}, {}, {}
    for key, net in nets.items():
        x = torch.randn(8, n_inputs)
        excluded = [*net.parameters()] + ([] if count_input else [x])
        with measure_memory("cpu", exclude=excluded) as mem:
            net(x)
        linears = [layer for layer in net if isinstance(layer, nn.Linear)]
        saved[key] = mem.saved_bytes
        square[key] = sum(layer.weight.numel() for layer in linears[1:-1])
        params[key] = sum(p.numel() for p in net.parameters())
        optimizer = torch.optim.Adam(net.parameters())
        net(x).square().mean().backward()
        optimizer.step()
        counted = [*net.parameters()] if state_of_all else [m.weight for m in linears[1:-1]]
        state[key] = sum(p.grad.nbytes + sum(t.nbytes for name, t in optimizer.state[p].items()
                                             if name != "step") for p in counted)
    return saved, square, params, state


def test_c112_pruned_units_a_counted_input_or_a_shallower_model():
    verdict = chapter_function(CHAPTER, "verdict_c112")
    build = chapter_function(CHAPTER, "mlp_with_hidden", width=48, device=CPU)
    verdict(*mlp_evidence({64: build(64), 32: build(32)}))  # the world of the claim
    # "half the units" pruned by zeroing their weights: the same shapes, nothing saved
    pruned = build(64)
    with torch.no_grad():
        for layer in pruned:
            if isinstance(layer, nn.Linear) and layer.out_features == 64:
                layer.weight[32:] = 0
    with pytest.raises(AssertionError):
        verdict(*mlp_evidence({64: build(64), 32: pruned}))
    with pytest.raises(AssertionError):  # the input counted too: it does not shrink
        verdict(*mlp_evidence({64: build(64), 32: build(32)}, count_input=True))
    with pytest.raises(AssertionError):  # half the depth (4 hidden layers -> 2), not the width
        verdict(*mlp_evidence({64: build(64, depth=4), 32: build(64, depth=2)}))
    with pytest.raises(AssertionError):  # one hidden layer: no square weights, the total < 2x
        verdict(*mlp_evidence({64: build(64, depth=1), 32: build(32, depth=1)}))
    with pytest.raises(AssertionError):  # the state of the first and last layers counted too
        verdict(*mlp_evidence({64: build(64), 32: build(32)}, state_of_all=True))
