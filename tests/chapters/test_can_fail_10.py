"""Chapter 10's claim fails where it is false: the chapter's own verdict function
(tests/chapters/chapter_code.py) gets evidence from a DDP step simulated in one process (two
replicas, their gradients combined as the all-reduce would), with the averaging or the sharding
removed, and from the faithful simulation, which passes."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data.distributed import DistributedSampler

from tests.chapters.chapter_code import chapter_function

CHAPTER = "10_distributed"
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


def accumulated(divide: bool = True, sync_at_end: bool = True, k: int = 4) -> tuple:
    """(no_sync_gap, single_gap, replicas_equal) of k micro-batches on 2 simulated ranks: each
    accumulates its own gradients (what no_sync leaves), then they are averaged once (the one
    all-reduce) or not at all (``sync_at_end=False``); ``divide=False`` forgets loss / k."""
    make_model = chapter_function(CHAPTER, "make_model")
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(2 * k * 8, 64, generator=g), torch.randint(0, 10, (2 * k * 8,), generator=g)
    per_rank = []
    for rank in range(2):
        model = make_model()
        for step in range(k):
            part = slice((step * 2 + rank) * 8, (step * 2 + rank + 1) * 8)
            (F.cross_entropy(model(x[part]), y[part]) / (k if divide else 1)).backward()
        per_rank.append([p.grad.clone() for p in model.parameters()])
    final = ([(a + b) / 2 for a, b in zip(*per_rank, strict=True)] if sync_at_end
             else per_rank[0])
    single = make_model()
    F.cross_entropy(single(x), y).backward()
    gap = max((a - p.grad).abs().max().item() for a, p in zip(final, single.parameters(),
                                                            strict=True))
    replicas_equal = sync_at_end
    return gap, gap, replicas_equal


def test_c96_no_sync_that_still_syncs_or_never_syncs_fails():
    verdict = chapter_function(CHAPTER, "verdict_c96")
    no_sync_gap, single_gap, equal = accumulated()
    # arguments: calls without no_sync, with it, with only backward() inside it, k, ...
    verdict(4, 1, 4, 4, False, equal, no_sync_gap, single_gap)  # the claim's world
    with pytest.raises(AssertionError):  # no_sync ignored: an all-reduce per micro-batch
        verdict(4, 4, 4, 4, True, equal, no_sync_gap, single_gap)
    with pytest.raises(AssertionError):  # no_sync around every micro-batch: never synced
        gap, _, equal = accumulated(sync_at_end=False)
        verdict(4, 0, 4, 4, False, equal, gap, gap)
    with pytest.raises(AssertionError):  # the loss not divided by k: k times the gradient
        no_sync_gap, single_gap, equal = accumulated(divide=False)
        verdict(4, 1, 4, 4, False, equal, 0.0, single_gap)


def test_c96_no_sync_around_backward_alone_that_saves_fails():
    """The claim says the forward pass must be inside no_sync too: a DDP where wrapping only
    backward() skipped the all-reduces as well (or skipped some of them) must fail."""
    verdict = chapter_function(CHAPTER, "verdict_c96")
    no_sync_gap, single_gap, equal = accumulated()
    verdict(4, 1, 4, 4, False, equal, no_sync_gap, single_gap)  # the claim's world
    for calls_backward_only in (1, 2):  # backward() inside no_sync saved all or some
        with pytest.raises(AssertionError):
            verdict(4, 1, calls_backward_only, 4, False, equal, no_sync_gap, single_gap)


def _relative_gap(grads: list[torch.Tensor], reference: list[torch.Tensor]) -> float:
    largest = max(r.abs().max().item() for r in reference)
    return max((g - r).abs().max().item() for g, r in zip(grads, reference,
                                                           strict=True)) / largest


def batchnorm_gaps(world: str = "ddp") -> tuple[float, float, float]:
    """(plain_gap, bn_gap, per_rank_gap) of one simulated DDP step on 2 ranks of 32: the gap to
    one process on all 64 without and with BatchNorm, and the BatchNorm gradient's gap to the
    mean of the two ranks' own gradients. ``world``: "ddp" (per-rank statistics, gradients
    averaged), "global" (the whole batch's statistics: what SyncBatchNorm would do),
    "rank 0 alone" (no all-reduce: rank 0 keeps its own gradient), "summed" (the gradients
    summed, not averaged)."""
    make_model = chapter_function(CHAPTER, "make_model")
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(64, 64, generator=g) * 2 + 0.5, torch.randint(0, 10, (64,), generator=g)
    gaps = []
    for batch_norm in (False, True):
        single = make_model(batch_norm=batch_norm)
        F.cross_entropy(single(x), y).backward()
        reference = [p.grad for p in single.parameters()]
        per_rank = []
        for part in (slice(0, 32), slice(32, 64)):
            model = make_model(batch_norm=batch_norm)
            F.cross_entropy(model(x[part]), y[part]).backward()
            per_rank.append([p.grad for p in model.parameters()])
        averaged = [(a + b) / 2 for a, b in zip(*per_rank, strict=True)]
        found = averaged
        if batch_norm:
            found = {"ddp": averaged, "global": reference, "rank 0 alone": per_rank[0],
                     "summed": [a + b for a, b in zip(*per_rank, strict=True)]}[world]
        gaps.append(_relative_gap(found, reference))
    return gaps[0], gaps[1], _relative_gap(found, averaged)


def test_c97_batchnorm_with_global_statistics_or_sync_bn_per_rank_fails():
    verdict = chapter_function(CHAPTER, "verdict_c97_ddp")
    verdict(*batchnorm_gaps("ddp"))  # DDP: per-rank statistics
    with pytest.raises(AssertionError):  # a BatchNorm that used the combined batch
        verdict(*batchnorm_gaps("global"))
    with pytest.raises(AssertionError):  # a DDP that did not match even without BatchNorm
        verdict(0.5, *batchnorm_gaps("ddp")[1:])
    sync = chapter_function(CHAPTER, "verdict_c97_sync")
    features = torch.randn(64, 128, generator=torch.Generator().manual_seed(0)) * 3 + 1
    whole = nn.BatchNorm1d(128)(features).detach()
    halves = torch.cat([nn.BatchNorm1d(128)(part).detach() for part in features.split(32)])
    mean, var = features.mean(0), features.var(0, unbiased=False)
    synced = torch.cat([(part - mean) / (var + 1e-5).sqrt() for part in features.split(32)])
    sync((synced - whole).abs().max().item(), 0.0)  # SyncBatchNorm: the whole batch's statistics
    with pytest.raises(AssertionError):  # a "SyncBatchNorm" that normalised per rank
        sync((halves - whole).abs().max().item(), 0.0)


def test_c97_ddp_batchnorm_gradient_not_the_per_rank_average_fails():
    """Any mismatch with the single process is not enough: a DDP that never all-reduced, or
    summed the gradients, also misses it, yet its gradient is not the mean of the per-rank
    BatchNorm gradients, and the verdict must say so."""
    verdict = chapter_function(CHAPTER, "verdict_c97_ddp")
    verdict(*batchnorm_gaps("ddp"))  # the claim's world
    for world in ("rank 0 alone", "summed"):
        plain_gap, bn_gap, per_rank_gap = batchnorm_gaps(world)
        assert bn_gap > 1e-3  # far from the single process too: the old verdict passed it
        with pytest.raises(AssertionError):
            verdict(plain_gap, bn_gap, per_rank_gap)


def test_c98_prefixed_names_or_a_rank_without_the_weights_fails():
    verdict = chapter_function(CHAPTER, "verdict_c98")
    make_model = chapter_function(CHAPTER, "make_model")
    names = list(make_model().state_dict())
    prefixed = {f"module.{name}": value for name, value in make_model().state_dict().items()}
    try:
        make_model().load_state_dict(prefixed)
        refused = ""
    except RuntimeError as error:
        refused = str(error)
    waited = (False, True)  # rank 1 found no file before the barrier, and the file after it
    verdict(names, list(prefixed), refused, True, waited)  # the claim's world
    with pytest.raises(AssertionError):  # a DDP state_dict without the prefix
        verdict(names, names, refused, True, waited)
    with pytest.raises(AssertionError):  # a plain model that accepted the prefixed names
        verdict(names, list(prefixed), "", True, waited)
    with pytest.raises(AssertionError):  # a rank that read the file before it was complete
        verdict(names, list(prefixed), refused, False, waited)


def test_c98_barrier_that_did_not_wait_fails():
    """The barrier must be what made the file appear for rank 1: a barrier that returned before
    rank 0 had written (or none at all), and a run where the file was there before the
    barrier (which then shows nothing about it), fail."""
    verdict = chapter_function(CHAPTER, "verdict_c98")
    make_model = chapter_function(CHAPTER, "make_model")
    names = list(make_model().state_dict())
    prefixed = [f"module.{name}" for name in names]
    refused = "Missing key(s) in state_dict ... Unexpected key(s) in state_dict ..."
    verdict(names, prefixed, refused, True, (False, True))  # the claim's world
    with pytest.raises(AssertionError):  # no wait: still no file after the "barrier"
        verdict(names, prefixed, refused, True, (False, False))
    with pytest.raises(AssertionError):  # the file was already there: nothing to wait for
        verdict(names, prefixed, refused, True, (True, True))


BARRIER = ("[Rank 0]: Rank 1 failed to pass monitoredBarrier in 1000 ms\n Original exception: \n"
           "Timed out waiting 1000ms for recv operation to complete")
MISMATCH = ("Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[2]), but "
            "Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=0, "
            "OpType=ALLREDUCE, TensorShape=[3]).Collectives differ in the following aspects: "
            "Tensor Tensor shapes: 2vs 3")


def test_c99_unnamed_rank_or_unchecked_collectives_fails():
    import re

    verdict = chapter_function(CHAPTER, "verdict_c99", re=re)
    late = [int(r) for r in re.findall(r"Rank (\d+) failed to pass", BARRIER)]
    verdict(BARRIER, late, 1, MISMATCH)  # the claim's world
    with pytest.raises(AssertionError):  # a barrier that timed out without naming a rank
        verdict("Timed out waiting 1000ms for recv operation to complete", [], 1, MISMATCH)
    with pytest.raises(AssertionError):  # it named the wrong rank
        verdict(BARRIER.replace("Rank 1 failed", "Rank 0 failed"), [0], 1, MISMATCH)
    with pytest.raises(AssertionError):  # no DETAIL check: the backend's own error instead
        verdict(BARRIER, late, 1, "Connection closed by peer")


UNUSED = ("Expected to have finished reduction in the prior iteration before starting a new "
          "one. ...\nParameter indices which did not receive grad for rank 0: 4 5\n")
UNUSED_NAMED = UNUSED.replace("Parameter indices", "Parameters which did not receive grad for "
                               "rank 0: aux_head.bias, aux_head.weight\nParameter indices")


def test_c66_unused_parameter_error_unnamed_or_unfixed_fails():
    verdict = chapter_function(CHAPTER, "verdict_c66", re=__import__("re"))
    real = {"OFF": UNUSED, "INFO": UNUSED_NAMED, "DETAIL": UNUSED_NAMED}
    verdict(real, True)  # the claim's world
    with pytest.raises(AssertionError):  # INFO named nothing: only DETAIL names (the old claim)
        verdict({**real, "INFO": UNUSED}, True)
    with pytest.raises(AssertionError):  # DETAIL named nothing
        verdict({**real, "DETAIL": UNUSED}, True)
    with pytest.raises(AssertionError):  # named already at OFF: the level does nothing
        verdict({**real, "OFF": UNUSED_NAMED}, True)
    with pytest.raises(AssertionError):  # it named the wrong parameters
        verdict({**real, "INFO": UNUSED_NAMED.replace("aux_head.bias", "head.bias")}, True)
    with pytest.raises(AssertionError):  # no error at all: DDP found the unused one itself
        verdict({level: "" for level in real}, True)
    with pytest.raises(AssertionError):  # find_unused_parameters=True did not fix it
        verdict(real, False)


TIMED_OUT = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
             "Timed out waiting 2000ms for recv operation to complete")


def test_c58_uneven_inputs_that_finish_without_join_or_drift_under_it_fail():
    """Join simulated in one process (the chapter's replay_uneven: both replicas end with its
    parameters) passes; a run without Join that finished, a Join that stopped a rank early,
    and replicas left apart at the end fail."""
    make_model = chapter_function(CHAPTER, "make_model")
    g = torch.Generator().manual_seed(0)
    data = (torch.randn(256, 64, generator=g), torch.randint(0, 10, (256,), generator=g))
    replay = chapter_function(CHAPTER, "replay_uneven", found=[{"data": data}],
                              make_model=make_model)
    verdict = chapter_function(CHAPTER, "verdict_c58")
    steps, replayed = (3, 5), replay((3, 5))
    no_join = [("finished", 3), (TIMED_OUT, 3)]
    joined = [(3, replayed), (5, replayed)]
    verdict(no_join, joined, replayed, steps)  # the claim's world
    with pytest.raises(AssertionError):  # no hang: rank 1 finished its 5 steps alone
        verdict([("finished", 3), ("finished", 5)], joined, replayed, steps)
    with pytest.raises(AssertionError):  # Join stopped rank 1 when rank 0 ran out
        verdict(no_join, [(3, replayed), (3, replayed)], replayed, steps)
    with pytest.raises(AssertionError):  # no final sync: rank 0 kept its own 3-step weights
        verdict(no_join, [(3, replay((3, 3))), (5, replayed)], replayed, steps)
    with pytest.raises(AssertionError):  # both agree, but not on Join's rule (no zeros)
        verdict(no_join, [(3, replay((5, 5))), (5, replay((5, 5)))], replayed, steps)
