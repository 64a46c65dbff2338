"""What the tests of helpers.checkpoint and the modules split from it share: a small trained
model, snapshots of everything a load may change, and comparison of nested states."""

import copy
import random

import numpy as np
import torch
from torch import nn


def make(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def generators():
    """Copies of the states of the global random generators."""
    return copy.deepcopy((random.getstate(), np.random.get_state(), torch.get_rng_state()))


def snapshot(model, opt=None, sched=None):
    """Deep copies of everything load_checkpoint may change."""
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": opt.state_dict() if opt is not None else None,
        "scheduler": sched.state_dict() if sched is not None else None,
    }) | {"rng": generators()}


def same(a, b):
    """Whether two nested states are equal, tensors and arrays included."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype == b.dtype and torch.equal(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return a == b


def move_generators_on():
    """Draw from every generator, so that a restored RNG state would show."""
    random.random(), np.random.rand(), torch.rand(1)


def rewrite(path, change):
    """Load a checkpoint's payload, let ``change`` edit it, and save it back (valid zip)."""
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


def corrupt(path, offset, mode):
    """Flip or zero the 64 bytes of ``path`` from ``offset``."""
    data = bytearray(path.read_bytes())
    for i in range(offset, min(offset + 64, len(data))):
        data[i] = data[i] ^ 0xFF if mode == "flip" else 0
    path.write_bytes(bytes(data))
