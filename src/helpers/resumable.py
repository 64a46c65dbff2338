"""A training script that checkpoints and resumes exactly (studied in chapter 08).

Run it as ``python -m helpers.resumable --out DIR --steps 60 --every 10``. It trains a small
MLP on the digits with dropout, AdamW, a per-step learning-rate schedule, shuffling and
NumPy-drawn input noise (with ``--float16``: under float16 autocast with a
``torch.amp.GradScaler``), saves a checkpoint every ``--every`` steps, and, when ``DIR``
already holds a checkpoint, resumes from it. The result (a fingerprint of the final
weights, and for each step this process ran the learning rate and AdamW beta1 it used and, with
``--float16``, whether its update was skipped) is written to ``DIR/final.json``. Killing it at
any moment loses at most ``--every`` steps of work.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from .checkpoint import load_checkpoint, save_checkpoint
from .data import digits_split
from .seed import fingerprint, set_seed

BATCH_SIZE = 64


def make_scaler() -> torch.amp.GradScaler:
    """The float16 run's loss scaler: it doubles its scale after 4 steps without an overflow
    (2000 by default), so that a 60-step run sees the scale grow, overflow and back off."""
    return torch.amp.GradScaler("cpu", growth_interval=4)


def build(seed: int, total_steps: int):
    """Model, optimizer and scheduler, exactly as a fresh run creates them."""
    set_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2,
                                                    total_steps=total_steps)
    return model, optimizer, scheduler


def epoch_batches(dataset, epoch: int, seed: int, start: int = 0):
    """The batches of one epoch, in an order fixed by (seed, epoch), from batch ``start``:
    a resumed run skips exactly the batches the interrupted run had already used. The
    generator's seed, ``seed * 1000 + epoch``, is distinct for every pair with epoch < 1000
    (epoch 1000 of seed 0 would repeat epoch 0 of seed 1)."""
    order = torch.Generator().manual_seed(seed * 1000 + epoch)
    loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, drop_last=True,
                        generator=order)
    return itertools.islice(loader, start, None)


def train(out: Path, steps: int, every: int, seed: int = 0, stop_after: int | None = None,
          resume: bool = True, load_optimizer: bool = True, sleep: float = 0.0,
          print_steps: bool = True, float16: bool = False,
          load_scaler: bool = True) -> nn.Module:
    """Train to ``steps`` total steps (or stop after ``stop_after``), checkpointing; with
    ``float16``, under float16 autocast with a GradScaler saved in the checkpoint (and loaded
    unless ``load_scaler`` is False). ``final.json`` records, for the steps this call ran,
    the learning rate and beta1 each used (``"lr"``, ``"beta1"``, read from the optimizer's
    ``param_groups`` just before its step) and, with ``float16``, the steps whose update the
    scaler skipped (``"skipped"``: its scale went down)."""
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    train_set, _ = digits_split(seed=0)
    steps_per_epoch = len(train_set) // BATCH_SIZE
    model, optimizer, scheduler = build(seed, steps)
    scaler = make_scaler() if float16 else None
    step = resumed_from = 0
    ran: dict[str, list] = {"steps_run": [], "lr": [], "beta1": [], "skipped": []}
    if resume and ckpt.exists():
        state = load_checkpoint(ckpt, model=model, scheduler=scheduler,
                                optimizer=optimizer if load_optimizer else None,
                                scaler=scaler if load_scaler else None)
        step = resumed_from = state["step"]
    while step < steps:
        epoch, within = divmod(step, steps_per_epoch)
        for inputs, targets in epoch_batches(train_set, epoch, seed, start=within):
            noise = np.random.normal(0.0, 0.05, inputs.shape).astype(np.float32)
            group = optimizer.param_groups[0]  # what this step's update uses
            ran["steps_run"].append(step + 1)
            ran["lr"].append(group["lr"])
            ran["beta1"].append(group["betas"][0] if "betas" in group else None)
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16, enabled=float16):
                loss = nn.functional.cross_entropy(model(inputs + torch.from_numpy(noise)),
                                                   targets)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:  # chapter 07: scale the loss, skip a step whose gradients overflowed
                scale = scaler.get_scale()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                if scaler.get_scale() < scale:  # an overflow: this step's update was skipped
                    ran["skipped"].append(step + 1)
            scheduler.step()
            step += 1
            if print_steps:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step % every == 0 or step == steps:
                save_checkpoint(ckpt, model=model, optimizer=optimizer, scheduler=scheduler,
                                step=step, epoch=epoch, scaler=scaler)
            time.sleep(sleep)
            if step == steps or step == stop_after:
                break
        if step == stop_after:
            break
    if step == steps:
        result = {"fingerprint": fingerprint(model), "resumed_from": resumed_from,
                  "steps": steps, "steps_run": ran["steps_run"], "lr": ran["lr"],
                  "beta1": ran["beta1"]}
        if scaler is not None:
            result["scale"] = scaler.get_scale()
            result["skipped"] = ran["skipped"]
        (out / "final.json").write_text(json.dumps(result))
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to pause per step")
    parser.add_argument("--float16", action="store_true",
                        help="float16 autocast with a GradScaler (saved in the checkpoint)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.every < 1:
        parser.error("--steps and --every must be positive")
    torch.set_num_threads(1)  # the same arithmetic in every run, whatever the machine
    train(args.out, args.steps, args.every, args.seed, sleep=args.sleep, float16=args.float16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
