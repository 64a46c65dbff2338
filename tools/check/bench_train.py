"""How much helpers.fit costs over a bare hand-written loop (target: at most 3 %).

Both loops do the same work per step (zero_grad, forward, loss, backward, clip, step, and
read the loss), on the digits data with the same model and data order; the helper adds its
history, callback check and (disabled) progress bar. Runs are interleaved and the median
ratio is printed, with the ratio for the visible tqdm bar for reference.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader

from helpers import digits_split, fit

EPOCHS, REPEATS = 3, 7


def make(seed: int = 0) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def bare_loop(loader: DataLoader) -> float:
    model, optimizer = make()
    start = time.perf_counter()
    losses = []
    for _ in range(EPOCHS):
        model.train()
        for inputs, targets in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    return time.perf_counter() - start


def helper_loop(loader: DataLoader, progress: bool) -> float:
    model, optimizer = make()
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # the bars are drawn, not shown
        fit(model, loader, None, nn.functional.cross_entropy, optimizer, epochs=EPOCHS,
            max_grad_norm=1.0, progress=progress)
    return time.perf_counter() - start


def main() -> int:
    train, _ = digits_split()
    loader = DataLoader(train, batch_size=32)
    bare_loop(loader), helper_loop(loader, False)  # warm-up
    ratios, ratios_bar = [], []
    for _ in range(REPEATS):
        bare = bare_loop(loader)
        ratios.append(helper_loop(loader, progress=False) / bare)
        ratios_bar.append(helper_loop(loader, progress=True) / bare_loop(loader))
    overhead = statistics.median(ratios) - 1
    print(f"helpers.fit vs bare loop ({EPOCHS} epochs x {len(loader)} steps, median of "
          f"{REPEATS}, torch {torch.__version__}, {torch.get_num_threads()} threads): "
          f"overhead {overhead:+.1%} without progress bar, "
          f"{statistics.median(ratios_bar) - 1:+.1%} with it (target <= +3%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
