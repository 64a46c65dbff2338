"""A DistributedDataParallel training script for torchrun (studied in chapter 09).

Launch it with::

    python -m torch.distributed.run --standalone --nproc_per_node=2 -m helpers.ddp_train --out DIR

Every process (rank) builds the same model from the same seed, wraps it in
``DistributedDataParallel`` and reads its own shard of the digits through a
``DistributedSampler``. DDP all-reduces (averages) the gradients during ``backward()``, so
after each step every rank holds the same parameters. The script records, per rank, the
sample indices it trained on in the first step and its parameters after that step
(``DIR/rank{r}.pt``), the parameters at the end, its loss at every step and the wall-clock
time; only rank 0 writes the summary ``DIR/summary.json``, with each step's loss averaged
over the ranks (with equal shards, the loss on the combined batch). ``--crash-rank R`` makes
rank R fail after the first step, to show what a learner sees when a process dies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from .data import digits_split

BATCH_PER_RANK = 32
LR = 0.1


def make_model(seed: int = 0) -> nn.Module:
    """The model every rank (and the single-process reference) starts from."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


class Indexed(Dataset):
    """A data set that also returns each sample's index (to check the shards)."""

    def __init__(self, base: Dataset) -> None:
        self.base = base

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int):
        x, y = self.base[i]
        return x, y, i


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--crash-rank", type=int, default=None)
    args = parser.parse_args(argv)

    # NCCL needs one GPU per process on this node; otherwise the processes share the CPU (gloo)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= local_world
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.set_num_threads(1)  # one core per process on a CPU machine

    train_set, _ = digits_split(seed=0)
    data = Indexed(train_set)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=BATCH_PER_RANK, sampler=sampler)
    model = DistributedDataParallel(make_model().to(device),
                                    device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    args.out.mkdir(parents=True, exist_ok=True)

    start, step, losses = time.perf_counter(), 0, []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        for inputs, targets, indices in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs.to(device)), targets.to(device))
            loss.backward()  # DDP averages the gradients across ranks here
            optimizer.step()
            losses.append(loss.item())  # this rank's mean loss on its shard of the batch
            step += 1
            if step == 1:
                torch.save({"indices": indices, "loss": loss.item(),
                            "params": [p.detach().cpu() for p in model.module.parameters()]},
                           args.out / f"rank{rank}.pt")
                if rank == args.crash_rank:
                    print(f"rank {rank}: failing on purpose", flush=True)
                    sys.exit(3)
    elapsed = time.perf_counter() - start
    final = [p.detach().cpu() for p in model.module.parameters()]
    torch.save(final, args.out / f"final{rank}.pt")
    gathered = [None] * world
    dist.all_gather_object(gathered, (elapsed, losses))  # collected, then reported once
    times = [seconds for seconds, _ in gathered]
    per_rank_losses = [rank_losses for _, rank_losses in gathered]
    loss_per_step = [sum(at_step) / world for at_step in zip(*per_rank_losses, strict=True)]
    dist.barrier()  # every rank has written its files before rank 0 summarises
    if rank == 0:
        summary = {"world_size": world, "backend": dist.get_backend(), "steps": step,
                   "seconds_per_rank": times, "batch_per_rank": BATCH_PER_RANK,
                   "loss_per_step": loss_per_step}
        (args.out / "summary.json").write_text(json.dumps(summary))
        print(f"rank 0: {step} steps on each of {world} ranks in {max(times):.2f} s", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
