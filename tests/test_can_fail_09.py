"""Chapter 09's claim fails where it is false: the chapter's own verdict function
(tests/chapter_code.py) gets evidence from a DDP step simulated in one process (two replicas,
their gradients combined as the all-reduce would), with the averaging or the sharding
removed, and from the faithful simulation, which passes."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data.distributed import DistributedSampler

from tests.chapter_code import chapter_function

CHAPTER = "09_distributed"
BATCH, LR, N = 32, 0.1, 200


def simulated_step(reduce: str = "mean", shard: bool = True) -> tuple:
    """(indices, batch_per_rank, ranks_agree, finals_agree, gap) of one simulated DDP step on
    2 ranks: each replica starts from rank 0's weights (DDP's broadcast), computes its gradient
    on its first batch, then the gradients are averaged ("mean", what DDP does), summed
    ("sum") or left alone ("none"), and each replica takes its SGD step. ``shard=False``: both
    ranks read the whole dataset in the same order (a plain shuffle, no DistributedSampler)."""
    make_model = chapter_function(CHAPTER, "make_model")
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(N, 64, generator=g), torch.randint(0, 10, (N,), generator=g)
    if shard:
        orders = [list(DistributedSampler(range(N), num_replicas=2, rank=r, shuffle=True,
                                          seed=0)) for r in range(2)]
    else:
        orders = [torch.randperm(N, generator=torch.Generator().manual_seed(0)).tolist()] * 2
    indices = [order[:BATCH] for order in orders]
    replicas = [make_model() for _ in range(2)]
    grads = []
    for model, part in zip(replicas, indices, strict=True):
        F.cross_entropy(model(x[part]), y[part]).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    combined = {"mean": [(a + b) / 2 for a, b in zip(*grads, strict=True)],
                "sum": [a + b for a, b in zip(*grads, strict=True)]}.get(reduce)
    with torch.no_grad():
        for rank, model in enumerate(replicas):
            for p, grad in zip(model.parameters(), combined or grads[rank], strict=True):
                p.add_(grad, alpha=-LR)  # SGD's step
    params = [[p.detach() for p in model.parameters()] for model in replicas]
    ranks_agree = all(torch.equal(a, b) for a, b in zip(*params, strict=True))
    single = make_model()  # one process on the combined batch
    both = indices[0] + indices[1]
    F.cross_entropy(single(x[both]), y[both]).backward()
    with torch.no_grad():
        for p in single.parameters():
            p.add_(p.grad, alpha=-LR)  # SGD's step (torch.optim's first step imports seconds)
    gap = max((a - b).abs().max().item() for a, b in zip(params[0], single.parameters(),
                                                     strict=True))
    return indices, BATCH, ranks_agree, ranks_agree, gap


def test_c35_ddp_without_averaging_or_sharding_fails():
    verdict = chapter_function(CHAPTER, "verdict_c35")
    verdict(*simulated_step())  # the world of the claim: averaged gradients, disjoint shards
    with pytest.raises(AssertionError):  # no all-reduce: each replica steps on its own shard
        verdict(*simulated_step(reduce="none"))
    with pytest.raises(AssertionError):  # gradients summed, not averaged: twice the step
        verdict(*simulated_step(reduce="sum"))
    with pytest.raises(AssertionError):  # no DistributedSampler: both ranks read the same batch
        verdict(*simulated_step(shard=False))
