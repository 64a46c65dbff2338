"""Chapter 04's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapter_code.py) evidence computed in a world without the effect, and evidence
from the real world as a positive control."""

import random
import types
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from helpers import (
    StepInfo,
    read_metrics,
    read_tensorboard_scalars,
    set_seed,
    start_run,
)
from tests.chapter_code import chapter_function, one_thread  # noqa: F401 (autouse fixture)

CHAPTER = "04_reproducibility"




# C15: seeding every generator, or torch only ----------------------------------------------

def train_briefly(**names):
    """Chapter 04's training function (Python's random, NumPy and torch), 5 steps."""
    generator = torch.Generator().manual_seed(0)  # digit-shaped data: 64 features, 10 classes
    x_train, y_train = torch.rand(256, 64, generator=generator), torch.randint(
        0, 10, (256,), generator=generator)
    train = chapter_function(CHAPTER, "train_briefly", **{
        "random": random, "x_train": x_train, "y_train": y_train, **names})
    fingerprint = chapter_function(CHAPTER, "fingerprint", hashlib=__import__("hashlib"))
    return lambda: fingerprint(train(steps=5))


def fingerprints(run, seed_all) -> tuple[tuple[str, str], tuple[str, str]]:
    all_seeded = []
    for _ in range(2):
        seed_all(0)
        all_seeded.append(run())
    torch_only = []
    for _ in range(2):
        torch.manual_seed(0)
        torch_only.append(run())
    return tuple(all_seeded), tuple(torch_only)


def test_c15_numpy_left_unseeded():
    verdict = chapter_function(CHAPTER, "verdict_c15")
    run = train_briefly()
    verdict(*fingerprints(run, set_seed))

    def seed_but_numpy(seed: int) -> None:  # a set_seed that forgets NumPy's generator
        random.seed(seed)
        torch.manual_seed(seed)

    with pytest.raises(AssertionError, match="seeded everywhere"):
        verdict(*fingerprints(run, seed_but_numpy))


def test_c15_code_draws_from_torch_only():
    verdict = chapter_function(CHAPTER, "verdict_c15")
    # the same training function, its shuffle and its noise drawn from torch's generator
    torch_random = types.SimpleNamespace(
        shuffle=lambda order: order.__setitem__(slice(None), [order[i] for i in
                                                              torch.randperm(len(order))]))
    torch_np = types.SimpleNamespace(
        float32=np.float32,
        random=types.SimpleNamespace(normal=lambda mean, std, size: torch.normal(
            mean, std, size).numpy().astype(np.float64)))
    run = train_briefly(random=torch_random, np=torch_np)
    with pytest.raises(AssertionError, match="seeded in torch only, the two runs agree"):
        verdict(*fingerprints(run, set_seed))


# C16: deterministic algorithms on a GPU ---------------------------------------------------

def counts(order_varies: bool, repeats: int = 20) -> int:
    """Distinct results of a sum over 1000 bins, added in a fixed order or in a new order
    each call (what atomic additions on a GPU do), computed on the CPU."""
    distinct = chapter_function(CHAPTER, "distinct", hashlib=__import__("hashlib"))
    rng = np.random.default_rng(0)
    values = rng.standard_normal(20_000).astype(np.float32)
    index = rng.integers(0, 1000, 20_000)
    outputs = []
    for _ in range(repeats):
        order = rng.permutation(len(values)) if order_varies else np.arange(len(values))
        total = np.zeros(1000, dtype=np.float32)
        np.add.at(total, index[order], values[order])  # one addition at a time, in this order
        outputs.append(torch.from_numpy(total))
    return distinct(outputs)


@pytest.fixture(scope="module")
def sums() -> dict[str, int]:
    return {"fixed order": counts(order_varies=False), "arrival order": counts(order_varies=True)}


def results_from(scatter_default: int, scatter_det: int) -> dict[str, dict]:
    timing = {"scatter_ms": 0.1, "conv_ms": 1.0}
    return {"default": {"scatter": scatter_default, "conv": 1, **timing},
            "deterministic": {"scatter": scatter_det, "conv": 1, **timing}}


def test_c16_deterministic_mode_still_varies(sums):
    verdict = chapter_function(CHAPTER, "verdict_c16")
    assert sums["fixed order"] == 1 < sums["arrival order"]  # the simulated kernels differ
    verdict(results_from(sums["arrival order"], sums["fixed order"]))
    with pytest.raises(AssertionError, match="deterministic index_add_"):
        verdict(results_from(sums["arrival order"], sums["arrival order"]))


def test_c16_default_already_deterministic(sums):
    verdict = chapter_function(CHAPTER, "verdict_c16")
    with pytest.raises(AssertionError, match="by default index_add_ repeated itself"):
        verdict(results_from(sums["fixed order"], sums["fixed order"]))  # e.g. a CPU's kernel


# C36: TensorBoard curves read back --------------------------------------------------------

@dataclass
class Config:
    seed: int = 0


def logged_run(root, name: str, steps: int = 6, planted=None):
    """A run logged with the helpers' RunLogger; `planted` changes what reaches the event
    file (a writer that drops or mislabels scalars)."""
    with start_run(root, name, Config()) as logger:
        if planted is not None:
            real = logger._writer.add_scalar
            logger._writer.add_scalar = lambda tag, value, step: planted(real, tag, value, step)
        for step in range(steps):
            logger.on_step(StepInfo(epoch=0, step=step, loss=2.3 / (1 + step),
                                    grad_norm=1.0 + 0.1 * step, lr=0.1))
    run_dir = root / name
    return [r for r in read_metrics(run_dir) if "loss" in r], read_tensorboard_scalars(run_dir)


def test_c36_event_file_drops_steps(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c36")
    verdict({"ok": logged_run(tmp_path, "ok")}, steps_per_run=6)

    def every_other_step(write, tag, value, step):
        if step % 2 == 0:
            write(tag, value, step)

    with pytest.raises(AssertionError, match="missing steps"):
        verdict({"gaps": logged_run(tmp_path, "gaps", planted=every_other_step)}, 6)


def test_c36_event_file_holds_another_curve(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c36")

    def unchanged(write, tag, value, step):  # the positive control: the writer as it is
        write(tag, value, step)

    def swapped(write, tag, value, step):
        write({"loss": "grad_norm", "grad_norm": "loss"}.get(tag, tag), value, step)

    verdict({"ok": logged_run(tmp_path, "ok", planted=unchanged)}, 6)
    with pytest.raises(AssertionError, match="is not the logged"):
        verdict({"swapped": logged_run(tmp_path, "swapped", planted=swapped)}, 6)

    def no_lr(write, tag, value, step):
        if tag != "lr":
            write(tag, value, step)

    with pytest.raises(AssertionError, match="no 'lr' curve"):
        verdict({"no lr": logged_run(tmp_path, "no_lr", planted=no_lr)}, 6)
