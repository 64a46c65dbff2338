"""Chapter 02's claims fail where they are false: each verdict function, compiled from the
chapter's source (tests/chapters/chapter_code.py), gets evidence from a world without the effect and
must raise; evidence from the world with it must pass (the positive control)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info
from torch.utils.data._utils.worker import _generate_state

from helpers import SequenceDataset, make_color_images, worker_context
from tests.chapters.chapter_code import chapter_function, one_thread  # noqa: F401 (a fixture)

STEM = "02_data"


# C06: padding per batch --------------------------------------------------------------------

def _fed(sequences: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, int]:
    """Elements each collate of the chapter feeds the model, over batches of 32."""
    pad_batch = chapter_function(STEM, "pad_batch")
    global_max = max(len(s) for s, _ in sequences)
    to_max = chapter_function(STEM, "pad_to_global_max", pad_batch=pad_batch,
                              global_max=global_max)
    fed = {}
    for name, collate in (("per batch", pad_batch), ("global max", to_max)):
        fed[name] = sum(padded.shape[0] * padded.shape[1] for padded, _, _ in
                        DataLoader(sequences, batch_size=32, collate_fn=collate))
    return fed


def _last_step_gap(take_last_real_step: bool) -> float:
    """How far a GRU's per-sequence output moves when the batch is padded further."""
    torch.manual_seed(0)
    gru = nn.GRU(8, 16, batch_first=True)
    seqs = [torch.randn(n, 8) for n in (3, 7, 5)]
    lens = torch.tensor([3, 7, 5])
    outputs = []
    for extra in (0, 9):  # padded to the batch's longest, or 9 steps further
        padded = nn.utils.rnn.pad_sequence(seqs, batch_first=True)
        padded = torch.nn.functional.pad(padded, (0, 0, 0, extra))
        with torch.no_grad():
            out, _ = gru(padded)
        last = lens - 1 if take_last_real_step else torch.full_like(lens, out.shape[1] - 1)
        outputs.append(out[torch.arange(3), last])
    return (outputs[0] - outputs[1]).abs().max().item()


def test_c06_equal_lengths_remove_the_saving() -> None:
    verdict = chapter_function(STEM, "verdict_c06")
    data = SequenceDataset(256, min_len=4, max_len=256, features=8, seed=0)
    varied = [data[i] for i in range(len(data))]
    fed = _fed(varied)
    seconds = {name: n * 1e-6 for name, n in fed.items()}  # a cost that follows the elements
    verdict(fed, seconds, _last_step_gap(True))  # positive control: real, long-tailed lengths
    same_length = [(torch.randn(64, 8), torch.tensor(0)) for _ in range(256)]
    fed = _fed(same_length)
    assert fed["per batch"] == fed["global max"]
    with pytest.raises(AssertionError):
        verdict(fed, {name: n * 1e-6 for name, n in fed.items()}, 0.0)


def test_c06_time_not_following_the_elements() -> None:
    verdict = chapter_function(STEM, "verdict_c06")
    data = SequenceDataset(256, min_len=4, max_len=256, features=8, seed=0)
    fed = _fed([data[i] for i in range(len(data))])
    with pytest.raises(AssertionError):  # an overhead-bound model: fewer elements, same time
        verdict(fed, {"per batch": 1.0, "global max": 1.05}, 0.0)


def test_c06_reading_the_padded_last_step() -> None:
    verdict = chapter_function(STEM, "verdict_c06")
    data = SequenceDataset(256, min_len=4, max_len=256, features=8, seed=0)
    fed = _fed([data[i] for i in range(len(data))])
    seconds = {name: n * 1e-6 for name, n in fed.items()}
    assert _last_step_gap(True) < 1e-6
    with pytest.raises(AssertionError):  # out[:, -1] reads padding: padding changes the answer
        verdict(fed, seconds, _last_step_gap(False))


# C07: num_workers --------------------------------------------------------------------------

def _c07():
    return chapter_function(STEM, "verdict_c07", BATCHES_PER_WORKER=8)


def _grid(cores: int) -> list[int]:
    return sorted({0, 1, cores, 2 * cores} | {2**k for k in range(1, (2 * cores).bit_length())})


def _machine(cores: int, parallel: int, batches: dict[int, int]) -> dict[int, float]:
    """Items/s of a loader whose items cost 1 ms of CPU each, on a machine that runs `parallel`
    of them at once, with `batches` per epoch (a batch goes to one worker)."""
    speed = {}
    for w, n in batches.items():
        busy = min(max(w, 1), parallel, n)
        speed[w] = 1000.0 * busy * (0.9 if w == 0 else 1.0)
    return speed


def test_c07_positive_control_knee_at_the_cores() -> None:
    for cores in (1, 2, 16, 64):
        batches = {w: 8 * max(w, 2) for w in _grid(cores)}
        _c07()(_machine(cores, cores, batches), batches, cores)


def test_c07_still_rising_past_the_cores() -> None:
    """A bigger machine than counted (or items that wait rather than compute): throughput keeps
    rising with the workers, and the verdict says no knee was found."""
    cores = 16
    batches = {w: 8 * max(w, 2) for w in _grid(cores)}
    with pytest.raises(AssertionError, match="no knee found"):
        _c07()(_machine(cores, 64, batches), batches, cores)


def test_c07_too_few_batches_per_epoch() -> None:
    """The old setup: 8 batches an epoch caps every setting at 8-way parallelism, so 16 and 32
    workers look equally fast on any machine with 8 or more cores, whatever the truth."""
    cores = 16
    batches = dict.fromkeys(_grid(cores), 8)
    speed = _machine(cores, 64, batches)
    assert speed[32] == speed[16]  # flat, though the machine scales to 64
    with pytest.raises(AssertionError, match="too short"):
        _c07()(speed, batches, cores)


def test_c07_a_quarter_more_past_the_cores() -> None:
    """Throughput that still gains 30 % from 16 to 32 workers on 16 CPUs: not a knee."""
    cores = 16
    batches = {w: 8 * max(w, 2) for w in _grid(cores)}
    speed = _machine(cores, cores, batches)
    _c07()(speed, batches, cores)  # positive control
    with pytest.raises(AssertionError, match="a quarter or more"):
        _c07()({**speed, 2 * cores: 1.3 * speed[cores]}, batches, cores)


def test_c07_grid_must_reach_twice_the_cores() -> None:
    batches = {w: 8 * max(w, 2) for w in (0, 1, 2, 4)}
    speed = _machine(8, 8, batches)
    with pytest.raises(AssertionError, match="lacks"):
        _c07()(speed, batches, 8)


# C08: random validation transform ---------------------------------------------------------

def _scores(model: nn.Module, transform, evaluations: int = 5) -> list[float]:
    torch.manual_seed(0)
    x, y = torch.randn(400, 16), torch.randint(0, 4, (400,))
    scores = []
    for _ in range(evaluations):
        with torch.no_grad():
            scores.append((model(transform(x)).argmax(1) == y).float().mean().item())
    return scores


def _noisy(x: torch.Tensor) -> torch.Tensor:
    return x + torch.randn_like(x)


def test_c08_randomness_removed_from_the_transform() -> None:
    verdict = chapter_function(STEM, "verdict_c08")
    torch.manual_seed(0)
    model = nn.Linear(16, 4).eval()
    verdict(_scores(model, _noisy), _scores(model, lambda x: x))  # positive control

    def reseeded(x: torch.Tensor) -> torch.Tensor:  # "random", but the same draw every time
        torch.manual_seed(0)
        return _noisy(x)

    with pytest.raises(AssertionError):
        verdict(_scores(model, reseeded), _scores(model, lambda x: x))


def test_c08_fixed_transform_that_is_not_fixed() -> None:
    verdict = chapter_function(STEM, "verdict_c08")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.5), nn.Linear(16, 4)).train()  # eval() forgotten
    with pytest.raises(AssertionError):
        verdict(_scores(model, _noisy), _scores(model, lambda x: x))


# C09: seeding workers ----------------------------------------------------------------------
# Worker processes are slow to start on a busy machine, so the DataLoader's seeding is emulated
# in-process (torch/utils/data/_utils/worker.py: base seed drawn per epoch from the loader's
# generator or torch's global one, worker i seeded with base + i, batch b made by worker
# b % num_workers); each counterfactual switches one piece of that mechanism off.

def _base_seed(generator: torch.Generator | None) -> int:
    return torch.empty((), dtype=torch.int64).random_(generator=generator).item()


def _c09():
    return chapter_function(STEM, "verdict_c09", random=random, _generate_state=_generate_state)


def _hashes(seed: int | None, generator_seed: int | None = None, workers: int = 2,
            seeding: str = "pytorch") -> list[str]:
    """Batches of a dataset adding torch noise to item i, 2 epochs of 4 batches of 4 items."""
    if seed is not None:
        torch.manual_seed(seed)
    generator = None if generator_seed is None else torch.Generator().manual_seed(generator_seed)
    batches = []
    for _ in range(2):
        base = _base_seed(generator if seeding != "generator ignored" else None)
        streams = [torch.Generator().manual_seed(0 if seeding == "constant" else base + i)
                   for i in range(workers)]
        if seeding == "entropy":  # each worker seeds itself from the operating system
            for stream in streams:
                stream.seed()
        for b in range(4):
            items = []
            for i in range(4 * b, 4 * b + 4):
                stream = (torch.Generator().manual_seed(base + i) if seeding == "per sample"
                          else streams[b % workers])
                items.append((torch.randn(3, generator=stream) + i).tolist())
            batches.append(str(items))
    return batches


def _noise(reseed: bool = False, seed: int = 0, state: str = "copied") -> list[torch.Tensor]:
    """Noise batches of a dataset with its own Generator (seeded 0 in __init__), 2 workers,
    2 epochs of 4 batches; reseed: a worker_init_fn that seeds each copy with base + id."""
    torch.manual_seed(seed)
    shared = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(2):
        base = _base_seed(None)
        if state == "shared":  # one state for all workers and epochs: nothing is copied
            copies = [shared, shared]
        else:  # each worker starts from a copy of the dataset's state
            copies = [torch.Generator().manual_seed(base + i if reseed else 0) for i in range(2)]
        batches += [torch.randn(4, 3, generator=copies[b % 2]) for b in range(4)]
    return batches


def _worker_rows(main_seed: int, numpy: str = "pytorch") -> tuple[list[dict], int]:
    """What WhatTheWorkerSees reports from 2 workers of a loader whose generator is seeded 7,
    after random and NumPy were seeded `main_seed` in the main process; numpy="inherited": the
    workers keep the main process's NumPy state (forked workers before torch 1.9)."""
    base = _base_seed(torch.Generator().manual_seed(7))
    rows = []
    for i in range(2):
        state = (np.random.RandomState(_generate_state(base, i)) if numpy == "pytorch"
                 else np.random.RandomState(main_seed))
        rows.append({"worker": i, "info_seed": base + i, "torch_seed": base + i,
                     "random": random.Random(base + i).random(), "numpy": state.random_sample()})
    return rows, base


def _evidence(seeding: str = "pytorch", numpy: str = "pytorch") -> dict:
    (rows, base), (rows_again, _) = _worker_rows(1, numpy), _worker_rows(2, numpy)
    return {
        "worker_rows": (rows, rows_again),
        "base": base,
        "seeded": (_hashes(0, seeding=seeding), _hashes(0, seeding=seeding)),
        "unseeded": (_hashes(None, seeding=seeding), _hashes(None, seeding=seeding)),
        "generator": (_hashes(1, 7, seeding=seeding), _hashes(2, 7, seeding=seeding)),
        "three_workers": _hashes(0, workers=3, seeding=seeding),
        "copied": _noise(),
        "fixed": (_noise(reseed=True), _noise(reseed=True)),
        "fixed_other_seed": _noise(reseed=True, seed=1),
    }


def test_c09_positive_control() -> None:
    _c09()(**_evidence())


def test_c09_positive_control_real_workers() -> None:
    """One real loader with 2 workers: a dataset's own Generator is duplicated."""
    class OwnRng(Dataset):
        def __init__(self) -> None:
            self.rng = torch.Generator().manual_seed(0)

        def __len__(self) -> int:
            return 8

        def __getitem__(self, index: int):
            return torch.randn(3, generator=self.rng), index

    def reseed(worker_id: int) -> None:
        info = get_worker_info()
        info.dataset.rng = torch.Generator().manual_seed(info.seed)

    copied = [x for x, _ in DataLoader(OwnRng(), batch_size=4, num_workers=2,
                                       multiprocessing_context=worker_context(2))]
    assert torch.equal(copied[0], copied[1])
    fixed = [x for x, _ in DataLoader(OwnRng(), batch_size=4, num_workers=2, worker_init_fn=reseed,
                                      multiprocessing_context=worker_context(2))]
    assert not torch.equal(fixed[0], fixed[1])


def test_c09_workers_seeded_with_a_constant() -> None:
    """Every worker seeded with one fixed number: the main seed changes nothing."""
    verdict = _c09()
    with pytest.raises(AssertionError, match="not reseeded, yet two runs are equal"):
        verdict(**_evidence("constant"))


def test_c09_workers_seeded_from_entropy() -> None:
    """The world the old statement described: without a worker_init_fn (or a seeded generator)
    the workers' global generators are not reproducible, even with torch seeded in the main
    process."""
    verdict = _c09()
    with pytest.raises(AssertionError, match="main process seeded, yet two runs differ"):
        verdict(**_evidence("entropy"))


def test_c09_workers_inherit_the_main_numpy_state() -> None:
    """Workers that do not seed NumPy (forked workers before torch 1.9): they draw from the main
    process's NumPy state, so main-process NumPy seeds change what they draw, and both workers
    draw the same numbers."""
    verdict = _c09()
    with pytest.raises(AssertionError, match="changed what the workers drew"):
        verdict(**_evidence(numpy="inherited"))
    rows, base = _worker_rows(1, "inherited")
    with pytest.raises(AssertionError, match="NumPy not seeded"):  # even with one main seed
        verdict(**{**_evidence(), "worker_rows": (rows, rows), "base": base})


def test_c09_generator_ignored() -> None:
    verdict = _c09()
    with pytest.raises(AssertionError, match="same generator= seed"):
        verdict(**_evidence("generator ignored"))


def test_c09_stream_independent_of_num_workers() -> None:
    """Seeding per sample (base + index) instead of per worker: 2 and 3 workers agree."""
    verdict = _c09()
    with pytest.raises(AssertionError, match="2 and 3 workers"):
        verdict(**_evidence("per sample"))


def test_c09_dataset_state_not_copied() -> None:
    verdict = _c09()
    with pytest.raises(AssertionError, match="did not duplicate"):
        verdict(**{**_evidence(), "copied": _noise(state="shared")})


def test_c09_worker_init_fn_that_does_not_reseed() -> None:
    verdict = _c09()
    with pytest.raises(AssertionError, match="workers still duplicate"):
        verdict(**{**_evidence(), "fixed": (_noise(), _noise())})


# C10: channel order and normalization ------------------------------------------------------

def _color_accuracy(channel_symmetric: bool) -> dict[str, float]:
    """Accuracies of a nearest-centroid classifier on each image's brightest value per channel
    (trained in no time). With channel_symmetric it sees those values sorted: a model blind to
    channel order, for which BGR input costs nothing."""
    train_x, train_y = make_color_images(400, size=8, seed=0)
    val_x, val_y = make_color_images(200, size=8, seed=1)
    pixels = train_x.permute(0, 3, 1, 2).float() / 255
    mean, std = pixels.mean(dim=(0, 2, 3)), pixels.std(dim=(0, 2, 3))

    def preprocess(images: torch.Tensor, flip: bool = False) -> torch.Tensor:
        images = images.flip(-1) if flip else images
        return (images.permute(0, 3, 1, 2).float() / 255 - mean[:, None, None]) / std[:, None, None]

    def features(x: torch.Tensor) -> torch.Tensor:
        f = x.amax(dim=(2, 3))
        return f.sort(dim=1).values if channel_symmetric else f

    train_f = features(preprocess(train_x))
    centroids = torch.stack([train_f[train_y == c].mean(0) for c in range(4)])

    def accuracy(x: torch.Tensor) -> float:
        read = torch.cdist(features(x), centroids).argmin(1)
        return (read == val_y).float().mean().item()

    bgr = val_x.flip(-1)
    return {"shared preprocess (RGB)": accuracy(preprocess(val_x)),
            "BGR fed as if RGB": accuracy(preprocess(bgr)),
            "no normalization": accuracy(val_x.permute(0, 3, 1, 2).float() / 255),
            "shared preprocess, told BGR": accuracy(preprocess(bgr, flip=True))}


def _raw_spread(images: torch.Tensor) -> list[float]:
    """Per channel: the spread of unnormalized inputs over that of normalized ones."""
    raw = images.permute(0, 3, 1, 2).float() / 255
    return (raw.std(dim=(0, 2, 3)) / ((raw - raw.mean(dim=(0, 2, 3), keepdim=True))
                                       / raw.std(dim=(0, 2, 3), keepdim=True)).std(
        dim=(0, 2, 3))).tolist()


def _preprocessors(train_x: torch.Tensor) -> dict[str, object]:
    """The chapter's own `preprocess` (with the training images' statistics) and broken
    variants of it: each still gives the right tensor for the training images told RGB."""
    pixels = train_x.permute(0, 3, 1, 2).float() / 255
    mean, std = pixels.mean(dim=(0, 2, 3)), pixels.std(dim=(0, 2, 3))

    def normalize(images: torch.Tensor) -> torch.Tensor:
        return (images.permute(0, 3, 1, 2).float() / 255 - mean[:, None, None]) / std[:, None, None]

    def defaulted(images: torch.Tensor, channel_order: str = "RGB") -> torch.Tensor:
        """A default and no check: a call that names no order, or 'bgr', is read as RGB."""
        return normalize(images.flip(-1) if channel_order == "BGR" else images)

    def optional_normalization(images: torch.Tensor, *, channel_order: str,
                               normalize_inputs: bool = False) -> torch.Tensor:
        """Normalization left to the caller, off unless asked for."""
        if channel_order not in ("RGB", "BGR"):
            raise ValueError(channel_order)
        images = images.flip(-1) if channel_order == "BGR" else images
        x = images.permute(0, 3, 1, 2).float() / 255
        return normalize(images) if normalize_inputs else x

    def flipped_after(images: torch.Tensor, *, channel_order: str) -> torch.Tensor:
        """Normalizes with the RGB statistics first, then reorders: BGR input has its red and
        blue channels normalized with each other's statistics."""
        if channel_order not in ("RGB", "BGR"):
            raise ValueError(channel_order)
        x = normalize(images)
        return x.flip(1) if channel_order == "BGR" else x

    def ignores_order(images: torch.Tensor, *, channel_order: str) -> torch.Tensor:
        """Validates the order, then never uses it."""
        if channel_order not in ("RGB", "BGR"):
            raise ValueError(channel_order)
        return normalize(images)

    def per_batch(images: torch.Tensor, *, channel_order: str) -> torch.Tensor:
        """Normalizes with the statistics of whatever batch it is given: mean 0 and spread 1
        on the training images, another input for the same image elsewhere."""
        if channel_order not in ("RGB", "BGR"):
            raise ValueError(channel_order)
        images = images.flip(-1) if channel_order == "BGR" else images
        x = images.permute(0, 3, 1, 2).float() / 255
        return (x - x.mean(dim=(0, 2, 3), keepdim=True)) / x.std(dim=(0, 2, 3), keepdim=True)

    def statistics_flipped(images: torch.Tensor, *, channel_order: str) -> torch.Tensor:
        """Never reorders the channels: told BGR, it normalizes each channel with the flipped
        statistics, so the output is normalized but still in BGR order."""
        if channel_order not in ("RGB", "BGR"):
            raise ValueError(channel_order)
        m, s = (mean.flip(0), std.flip(0)) if channel_order == "BGR" else (mean, std)
        return (images.permute(0, 3, 1, 2).float() / 255 - m[:, None, None]) / s[:, None, None]

    return {"chapter": chapter_function(STEM, "preprocess", CHANNEL_MEAN=mean, CHANNEL_STD=std),
            "defaulted": defaulted, "optional normalization": optional_normalization,
            "flipped after": flipped_after, "ignores order": ignores_order,
            "per batch": per_batch, "statistics flipped": statistics_flipped}


def _c10_evidence(variant: str = "chapter") -> tuple:
    """The verdict's evidence with one preprocessing function: the accuracies of a small
    classifier, the unnormalized spread, and what the chapter's preprocess_guarantees reads
    off the function (fitted on one set of images, tried on another)."""
    images, _ = make_color_images(200, size=16, seed=0)
    unseen, _ = make_color_images(100, size=16, seed=1)
    guarantees = chapter_function(STEM, "preprocess_guarantees")
    refused, stats, consistent = guarantees(_preprocessors(images)[variant], images, unseen)
    return (_color_accuracy(channel_symmetric=False), _raw_spread(images), refused, stats,
            consistent)


def test_c10_model_blind_to_channel_order() -> None:
    verdict = chapter_function(STEM, "verdict_c10")
    accuracy, spread, refused, stats, consistent = _c10_evidence()
    verdict(accuracy, spread, refused, stats, consistent)  # positive control
    with pytest.raises(AssertionError):
        verdict(_color_accuracy(channel_symmetric=True), spread, refused, stats, consistent)


def test_c10_shared_function_that_ignores_the_channel_order() -> None:
    verdict = chapter_function(STEM, "verdict_c10")
    accuracy, spread, refused, stats, consistent = _c10_evidence("ignores order")
    broken = {**accuracy, "shared preprocess, told BGR": accuracy["BGR fed as if RGB"]}
    with pytest.raises(AssertionError):
        verdict(broken, spread, refused, stats, consistent)
    with pytest.raises(AssertionError, match="told BGR"):  # its output alone gives it away
        verdict(accuracy, spread, refused, stats, consistent)


def test_c10_data_already_at_the_trained_scale() -> None:
    """Images whose pixels already have unit spread: skipping the normalization changes the
    scale by nothing, so the claim about a change of scale must not pass."""
    verdict = chapter_function(STEM, "verdict_c10")
    accuracy, _, refused, stats, consistent = _c10_evidence()
    standard = torch.randn(200, 3, 16, 16)  # unit spread before any normalization
    spread = (standard.std(dim=(0, 2, 3)) / ((standard - standard.mean(dim=(0, 2, 3),
                                                                       keepdim=True))
              / standard.std(dim=(0, 2, 3), keepdim=True)).std(dim=(0, 2, 3))).tolist()
    with pytest.raises(AssertionError, match="changes little"):
        verdict(accuracy, spread, refused, stats, consistent)


def test_c10_channel_order_defaulted_and_unchecked() -> None:
    """A function with a default order and no check: a caller that says nothing, or misspells
    the order, gets RGB silently."""
    verdict = chapter_function(STEM, "verdict_c10")
    evidence = _c10_evidence("defaulted")
    assert not any(evidence[2].values()), evidence[2]
    with pytest.raises(AssertionError, match="without a valid channel order"):
        verdict(*evidence)


def test_c10_normalization_left_to_the_caller() -> None:
    verdict = chapter_function(STEM, "verdict_c10")
    with pytest.raises(AssertionError, match="told RGB, the shared function's output is not"):
        verdict(*_c10_evidence("optional normalization"))


def test_c10_flipped_after_normalizing() -> None:
    """Right for RGB; for BGR, red and blue are normalized with each other's statistics."""
    verdict = chapter_function(STEM, "verdict_c10")
    with pytest.raises(AssertionError, match="told BGR, the shared function's output is not"):
        verdict(*_c10_evidence("flipped after"))


def test_c10_normalizes_with_the_batch_statistics() -> None:
    """Each batch normalized with its own statistics: mean 0 and spread 1 on the training
    images, as the chapter's function gives, but an image served alone (or in another batch)
    gets another input than in training."""
    verdict = chapter_function(STEM, "verdict_c10")
    evidence = _c10_evidence("per batch")
    means, stds = evidence[3]["RGB"]
    assert all(abs(m) < 1e-3 for m in means) and all(abs(s - 1) < 1e-3 for s in stds)
    with pytest.raises(AssertionError, match="one image alone as in a batch"):
        verdict(*evidence)


def test_c10_statistics_flipped_instead_of_channels() -> None:
    """Told BGR, the channels keep BGR order and are normalized with the flipped statistics:
    the output is normalized, but it is not the tensor the RGB image gives."""
    verdict = chapter_function(STEM, "verdict_c10")
    evidence = _c10_evidence("statistics flipped")
    means, stds = evidence[3]["BGR"]
    assert all(abs(m) < 1e-3 for m in means) and all(abs(s - 1) < 1e-3 for s in stds)
    with pytest.raises(AssertionError, match="told BGR, the same tensor as RGB"):
        verdict(*evidence)


# C44: pinned memory (GPU only: a simulated machine) ----------------------------------------

def test_c44_pinning_that_does_not_pin() -> None:
    """Memory that is not page-locked copies as fast as pageable memory, and non_blocking=True
    waits like a blocking copy (CUDA stages it synchronously)."""
    verdict = chapter_function(STEM, "verdict_c44_bandwidth")
    returns = {("pageable", False): 5.0, ("pageable", True): 5.0, ("pinned", False): 2.5,
               ("pinned", True): 0.02}
    verdict({"pageable": 10.0, "pinned": 25.0}, returns,
            {"pinned": True, "pageable": False})  # positive control: an H100-like machine
    with pytest.raises(AssertionError):
        verdict({"pageable": 10.0, "pinned": 10.5}, returns, {"pinned": True, "pageable": False})
    with pytest.raises(AssertionError):
        verdict({"pageable": 10.0, "pinned": 25.0}, {**returns, ("pinned", True): 2.4},
                {"pinned": True, "pageable": False})
    with pytest.raises(AssertionError):
        verdict({"pageable": 10.0, "pinned": 25.0}, returns, {"pinned": False, "pageable": False})


def test_c44_pageable_copy_that_returns_at_once() -> None:
    """A world where non_blocking=True made a copy from pageable memory asynchronous too: then
    'asynchronous only from pinned memory' is false."""
    verdict = chapter_function(STEM, "verdict_c44_bandwidth")
    returns = {("pageable", False): 5.0, ("pageable", True): 4.6, ("pinned", False): 2.5,
               ("pinned", True): 0.02}
    verdict({"pageable": 10.0, "pinned": 25.0}, returns,
            {"pinned": True, "pageable": False})  # positive control
    with pytest.raises(AssertionError, match="from pageable memory, non_blocking=True returned"):
        verdict({"pageable": 10.0, "pinned": 25.0}, {**returns, ("pageable", True): 0.03},
                {"pinned": True, "pageable": False})


def test_pin_memory_check_on_machines_that_pin_or_not() -> None:
    """The chapter's check of pin_memory=True: pinned and silent with CUDA, not pinned and a
    warning without an accelerator or on MPS; it fails where the loader did otherwise."""
    check = chapter_function(STEM, "check_pinning")
    none_found = ["'pin_memory' argument is set as true but no accelerator is found, then "
                  "device pinned memory won't be used."]
    on_mps = ["'pin_memory' argument is set as true but not supported on MPS now, device "
              "pinned memory won't be used."]
    check(None, False, none_found)                 # positive controls: a CPU machine,
    check(torch.device("cuda"), True, [])          # a CUDA machine,
    check(torch.device("mps"), False, on_mps)      # a Mac with torch 2.14,
    check(torch.device("mps"), True, [])           # a Mac with a release that pins there
    with pytest.raises(AssertionError, match="pinned False"):
        check(torch.device("cuda"), False, none_found)  # a CUDA machine that did not pin
    with pytest.raises(AssertionError, match="won't be used"):
        check(torch.device("mps"), True, on_mps)  # pinned, yet warned that it would not pin
    with pytest.raises(AssertionError, match=r"\[\]"):
        check(torch.device("mps"), False, [])  # declined to pin without a word
    with pytest.raises(AssertionError, match=r"\[\]"):
        check(None, False, [])  # a loader that ignored pin_memory without a word


def test_c44_epoch_without_the_saving() -> None:
    verdict = chapter_function(STEM, "verdict_c44_epoch")
    runs = {"pageable": {"wait_ms": 1.2, "epoch_ms": 40.0, "pinned": False},
            "pinned, blocking copy": {"wait_ms": 0.6, "epoch_ms": 35.0, "pinned": True},
            "pinned + non_blocking": {"wait_ms": 0.05, "epoch_ms": 30.0, "pinned": True}}
    verdict(runs)  # positive control
    with pytest.raises(AssertionError):  # non_blocking ignored: it waits as long as pageable
        verdict({**runs, "pinned + non_blocking": {**runs["pinned + non_blocking"],
                                                   "wait_ms": 1.0}})
    with pytest.raises(AssertionError):  # pin_memory=True without effect: batches not pinned
        verdict({**runs, "pinned + non_blocking": {**runs["pinned + non_blocking"],
                                                   "pinned": False}})


def test_c44_pinning_that_speeds_no_copy() -> None:
    """A world where pinning makes the copy no faster: non_blocking=True still returns at once
    (the copy is queued), so the wait in .to() alone cannot tell; the blocking copy of a pinned
    batch takes as long as a pageable one, and the verdict must fail on it."""
    verdict = chapter_function(STEM, "verdict_c44_epoch")
    runs = {"pageable": {"wait_ms": 1.2, "epoch_ms": 40.0, "pinned": False},
            "pinned, blocking copy": {"wait_ms": 0.6, "epoch_ms": 35.0, "pinned": True},
            "pinned + non_blocking": {"wait_ms": 0.05, "epoch_ms": 40.0, "pinned": True}}
    verdict(runs)  # positive control: the epoch no shorter (the copy is not the slowest stage)
    with pytest.raises(AssertionError, match="no faster than pageable"):
        verdict({**runs, "pinned, blocking copy": {**runs["pinned, blocking copy"],
                                                   "wait_ms": 1.15}})


# C60: which way round attention reads a padding mask ---------------------------------------

_RIGHT = {("MultiheadAttention", "~mask"): 0.0, ("MultiheadAttention", "mask"): 1.2,
          ("scaled_dot_product_attention", "mask"): 0.0,
          ("scaled_dot_product_attention", "~mask"): 2.2}
_NAN = {**dict.fromkeys(_RIGHT, False), ("MultiheadAttention", "mask"): True}


def test_c60_one_convention_for_both_apis() -> None:
    """A world where both APIs read True the same way (as 'attend'): MultiheadAttention with
    ~mask would then attend to the padding only, and with mask it would be the right one."""
    verdict = chapter_function(STEM, "verdict_c60")
    verdict(_RIGHT, _NAN)  # positive control: the conventions the chapter measured
    same_sense = {**_RIGHT, ("MultiheadAttention", "~mask"): 1.7,
                  ("MultiheadAttention", "mask"): 0.0}
    with pytest.raises(AssertionError):
        verdict(same_sense, dict.fromkeys(_RIGHT, False))
    with pytest.raises(AssertionError):  # a mask that does not mask at all: padding leaks in
        verdict({key: 0.5 for key in _RIGHT}, _NAN)
    with pytest.raises(AssertionError):  # no attention layer looks at the mask's sense
        verdict(dict.fromkeys(_RIGHT, 0.0), dict.fromkeys(_RIGHT, False))


def test_c60_nan_from_a_fully_masked_row_is_no_move() -> None:
    """A world where the wrong sense only turns the row with every key masked into NaN and moves
    nothing else: the old check read that NaN as a move of inf and passed."""
    verdict = chapter_function(STEM, "verdict_c60")
    with pytest.raises(AssertionError, match="key_padding_mask=mask ignored the padding too"):
        verdict({**_RIGHT, ("MultiheadAttention", "mask"): 0.0}, _NAN)
    with pytest.raises(AssertionError):  # the right sense, yet NaN at real steps
        verdict(_RIGHT, {**_NAN, ("MultiheadAttention", "~mask"): True})


def _attention_evidence(sdpa_mask_as_is: bool = False) -> tuple[dict, dict]:
    """The chapter's moved_at_real_steps, mha and sdpa on 4 sequences padded to 4 steps, so
    that a (batch, length) mask also has the shape (length, length); with sdpa_mask_as_is the
    mask goes to scaled_dot_product_attention without the reshape to (batch, 1, 1, length)."""
    torch.manual_seed(0)
    lens = torch.tensor([4, 2, 3, 4])
    padded = nn.utils.rnn.pad_sequence([torch.randn(int(n), 8) for n in lens], batch_first=True)
    mask = torch.arange(padded.shape[1])[None, :] < lens[:, None]
    refilled = padded.clone()
    refilled[~mask] = torch.randn(int((~mask).sum()), 8)
    attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True).eval()
    mha = chapter_function(STEM, "mha", attention=attention)

    def sdpa_as_is(x: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
        q = x[:, None]
        return torch.nn.functional.scaled_dot_product_attention(q, q, q,
                                                                attn_mask=attn_mask)[:, 0]

    sdpa = sdpa_as_is if sdpa_mask_as_is else chapter_function(STEM, "sdpa")
    moved_at = chapter_function(STEM, "moved_at_real_steps", padded=padded, refilled=refilled,
                                mask=mask, lens=lens, device=torch.device("cpu"))
    results = {("MultiheadAttention", "~mask"): moved_at(mha, ~mask),
               ("MultiheadAttention", "mask"): moved_at(mha, mask),
               ("scaled_dot_product_attention", "mask"): moved_at(sdpa, mask),
               ("scaled_dot_product_attention", "~mask"): moved_at(sdpa, ~mask)}
    return ({key: m for key, (m, _) in results.items()},
            {key: n for key, (_, n) in results.items()})


def test_c60_mask_passed_without_reshaping() -> None:
    """A (batch, length) mask passed to scaled_dot_product_attention as it is: broadcast as a
    query x key mask, it raises when the batch size differs from the length and, when they are
    equal, runs and lets the padding in."""
    verdict = chapter_function(STEM, "verdict_c60")
    verdict(*_attention_evidence())  # positive control: the chapter's own sdpa
    q = torch.randn(4, 1, 16, 8)
    with pytest.raises(RuntimeError, match="must match"):
        torch.nn.functional.scaled_dot_product_attention(
            q, q, q, attn_mask=torch.ones(4, 16, dtype=torch.bool))
    with pytest.raises(AssertionError, match="scaled_dot_product_attention"):
        verdict(*_attention_evidence(sdpa_mask_as_is=True))


# C61: IterableDataset in several workers ---------------------------------------------------

def test_c61_a_loader_that_shards_by_itself() -> None:
    """If DataLoader split an IterableDataset's stream itself, the unsharded stream would come
    once: the claim's duplication would be gone."""
    from collections import Counter

    verdict = chapter_function(STEM, "verdict_c61", Counter=Counter)
    once, twice = Counter(range(12)), Counter(dict.fromkeys(range(12), 2))
    verdict(twice, once, n=12, workers=2)  # positive control
    with pytest.raises(AssertionError):
        verdict(once, once, n=12, workers=2)


def test_c61_a_sharding_that_drops_or_repeats() -> None:
    from collections import Counter

    from helpers import RangeStream

    verdict = chapter_function(STEM, "verdict_c61", Counter=Counter)

    class EveryWorkerFromZero(RangeStream):  # reads num_workers but not the id: repeats
        def __iter__(self):
            info = get_worker_info()
            return iter(range(0, self.n, info.num_workers if info else 1))

    def counts(dataset) -> Counter:
        loader = DataLoader(dataset, batch_size=4, num_workers=2,
                            multiprocessing_context=worker_context(2))
        return Counter(int(v) for batch in loader for v in batch)

    if worker_context(2) is None:
        pytest.skip("the planted class is defined in a test: it needs fork workers")
    twice = counts(RangeStream(12, shard=False))
    verdict(twice, counts(RangeStream(12)), n=12, workers=2)  # the real helper passes
    with pytest.raises(AssertionError):
        verdict(twice, counts(EveryWorkerFromZero(12)), n=12, workers=2)
    with pytest.raises(AssertionError):  # one sample lost
        verdict(twice, Counter(range(11)), n=12, workers=2)


# C62: spawn workers and notebook classes ---------------------------------------------------

def test_c62_a_notebook_class_that_loads_or_a_spawn_loader_that_loses() -> None:
    from collections import Counter

    verdict = chapter_function(STEM, "verdict_c62", Counter=Counter)
    error = ("AttributeError: Can't get attribute 'NotebookStream' on "
             "<module '__main__' (built-in)>")
    verdict(Counter(range(12)), 12, error, "NotebookStream")  # positive control
    with pytest.raises(AssertionError):  # a world where pickles carried the class: it loads
        verdict(Counter(range(12)), 12, "", "NotebookStream")
    with pytest.raises(AssertionError):  # another failure than the missing class
        verdict(Counter(range(12)), 12, "ModuleNotFoundError: No module named 'torch'",
                "NotebookStream")
    with pytest.raises(AssertionError):  # spawn workers that lost or repeated samples
        verdict(Counter(dict.fromkeys(range(12), 2)), 12, error, "NotebookStream")


# C63: non_blocking copies back to the host (GPU only: a simulated machine) -----------------

def test_c63_a_copy_that_blocks_or_never_lands() -> None:
    verdict = chapter_function(STEM, "verdict_c63")
    verdict(False, True)  # positive control: still running when it returned, right after sync
    with pytest.raises(AssertionError):  # a copy that blocked (pageable memory, or sync copy)
        verdict(True, True)
    with pytest.raises(AssertionError):
        verdict(False, False)


# C101: preloading into a list and a hand-written loop, against a DataLoader ----------------

def _slow_evidence(workers: int = 4, batch: int = 16, loader_order: str = "same",
                   n: int = 128, repeats: int = 2) -> tuple[dict[str, bool], dict[str, float]]:
    """The chapter's own preload_then_slice and loader_epoch on items that sleep 2 ms (each
    timed `repeats` times, the fastest kept: a burst of load on a shared machine can slow one
    run, never speed it up), and its hand_batches against a DataLoader over tensors in memory."""
    import time

    from torch.utils.data import TensorDataset

    from helpers import SlowDataset, median_time

    slow_items = SlowDataset(TensorDataset(torch.randn(n, 8), torch.arange(n)), delay=0.002)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()
    loader = DataLoader(slow_items, batch_size=batch, num_workers=workers,
                        sampler=order if loader_order == "same" else list(range(n)),
                        persistent_workers=workers > 0,
                        multiprocessing_context=worker_context(workers))
    preload = chapter_function(STEM, "preload_then_slice", slow_items=slow_items, N_ITEMS=n,
                               BATCH=batch, slow_order=order, time=time)
    loader_epoch = chapter_function(STEM, "loader_epoch", slow_loader=loader, time=time)
    loader_batches = loader_epoch()[2]  # starts the workers
    preloads = [preload() for _ in range(repeats)]
    preload_s, batches = min(t for t, _ in preloads), preloads[0][1]
    epochs = [loader_epoch() for _ in range(repeats)]
    first, epoch = min(e[0] for e in epochs), min(e[1] for e in epochs)
    same = len(batches) == len(loader_batches) and all(
        all(torch.equal(a, b) for a, b in zip(p, s, strict=True))
        for p, s in zip(batches, loader_batches, strict=True))
    # Stop the persistent workers now: the compiled function's namespace refers to the loader
    # and the function to the namespace, a cycle that only the garbage collector would free,
    # and a loader collected that way waits 5 s per worker for a shutdown message that its
    # already finalized queues never send.
    loader_epoch.__globals__.pop("slow_loader")
    del loader
    images, labels = torch.randn(1797, 1, 8, 8), torch.randint(0, 10, (1797,))
    memory_order = torch.randperm(1797, generator=torch.Generator().manual_seed(0))
    hand_batches = chapter_function(STEM, "hand_batches")
    memory_loader = DataLoader(TensorDataset(images, labels), batch_size=64,
                               sampler=memory_order.tolist())
    times = {"preload": preload_s, "loader first batch": first, "loader epoch": epoch,
             "in memory, by hand": median_time(
                 lambda: hand_batches(images, labels, memory_order, 64), min_run_time=0.05),
             "in memory, DataLoader": median_time(lambda: list(memory_loader),
                                                  min_run_time=0.05)}
    return {"slow items": same}, times


def test_c101_positive_control_real_workers() -> None:
    chapter_function(STEM, "verdict_c101")(*_slow_evidence())


def test_c101_a_loader_without_workers_overlaps_nothing() -> None:
    """num_workers=0: the first batch still comes after one batch, but the epoch takes as long
    as the preload."""
    verdict = chapter_function(STEM, "verdict_c101")
    with pytest.raises(AssertionError, match="did not overlap"):
        verdict(*_slow_evidence(workers=0))


def test_c101_a_first_batch_that_needs_every_item() -> None:
    """One batch of all 128 items: the loader's first batch waits as long as the preload."""
    verdict = chapter_function(STEM, "verdict_c101")
    with pytest.raises(AssertionError, match="no sooner"):
        verdict(*_slow_evidence(batch=128))


def test_c101_other_batches_or_a_slower_hand_loop() -> None:
    verdict = chapter_function(STEM, "verdict_c101")
    same, times = _slow_evidence(loader_order="in order")  # the loader ignores the order
    assert not same["slow items"]
    with pytest.raises(AssertionError, match="different batches"):
        verdict(same, times)
    same, times = _slow_evidence()
    slower_by_hand = {**times, "in memory, by hand": 2 * times["in memory, DataLoader"]}
    with pytest.raises(AssertionError):  # a machine where slicing by hand lost
        verdict(same, slower_by_hand)


# C102: memory per forked worker: a list of Python objects against one NumPy array ---------

def _fork_and_smaps() -> None:
    from helpers import private_dirty_kib

    if worker_context(2) != "fork" or private_dirty_kib() is None:
        pytest.skip("needs fork as the default start method and Linux's smaps_rollup")


def _memory_evidence(array_dtype: object = None, start_method: str | None = None,
                     n: int = 100_000) -> tuple[dict[str, list[int]], dict[str, float]]:
    """The chapter's grown_in_workers over a list of file names and over a NumPy array of
    them (fixed-width strings, or dtype=object), with workers started by fork or another
    method."""
    import sys

    import numpy as np

    from helpers import MemoryAfterReading

    names = [f"images/train/{i:07d}.jpg" for i in range(n)]
    array = np.array(names, dtype=array_dtype)
    grown_in_workers = chapter_function(
        STEM, "grown_in_workers", DataLoader=DataLoader, MemoryAfterReading=MemoryAfterReading,
        worker_context=worker_context if start_method is None else lambda k: start_method)
    grown = {}
    for name, data in (("list of str", names), ("NumPy array", array)):
        rows = grown_in_workers(data)
        assert all(r["chars"] == sum(map(len, names)) for r in rows), "a worker read less"
        grown[name] = [r["after_kib"] - r["before_kib"] for r in rows]
    return grown, {"list of str": sum(sys.getsizeof(s) for s in names) / 1024,
                   "NumPy array": array.nbytes / 1024}


def test_c102_positive_control_fork() -> None:
    _fork_and_smaps()
    chapter_function(STEM, "verdict_c102")(*_memory_evidence())


def test_c102_an_object_array_is_a_list_in_disguise() -> None:
    """dtype=object: the array holds pointers to str objects, whose counts reading writes."""
    _fork_and_smaps()
    verdict = chapter_function(STEM, "verdict_c102")
    with pytest.raises(AssertionError, match="copied it into the workers"):
        verdict(*_memory_evidence(array_dtype=object))


def test_c102_spawn_workers_share_no_pages() -> None:
    """Under spawn each worker unpickles its own copy at start-up: reading copies nothing
    more, so the list's growth on reading is gone."""
    _fork_and_smaps()
    verdict = chapter_function(STEM, "verdict_c102")
    with pytest.raises(AssertionError, match="copied little"):
        verdict(*_memory_evidence(start_method="spawn", n=5_000))


# C100: resizing with antialiasing for training and with nearest at serving -----------------

def _resize_functions():
    import torchvision.transforms.v2 as T

    return (chapter_function(STEM, "resize_antialiased", T=T),
            chapter_function(STEM, "resize_nearest"))


def _moved(serve) -> dict[str, float]:
    """The chapter's four test images, resized as in training and with `serve`: the share of
    pixels more than a tenth of the range apart."""
    from sklearn.datasets import load_sample_image

    train_resize, _ = _resize_functions()
    images = {
        "photo": torch.tensor(load_sample_image("china.jpg")).permute(2, 0, 1)[None],
        "one-pixel stripes": (torch.arange(64) % 2 * 255).to(torch.uint8).repeat(1, 3, 64, 1),
        "random pixels": torch.randint(0, 256, (1, 3, 64, 64), dtype=torch.uint8,
                                       generator=torch.Generator().manual_seed(0)),
        "smooth gradient": torch.linspace(0, 255, 64).round().to(torch.uint8).repeat(1, 3, 64, 1),
    }
    moved = {}
    for name, image in images.items():
        size = (image.shape[2] // 4, image.shape[3] // 4)
        gap = (train_resize(image, size).float() - serve(image, size).float()) / 255
        moved[name] = (gap.abs() > 0.1).float().mean().item()
    return moved


def test_c100_serving_with_the_training_resize() -> None:
    verdict = chapter_function(STEM, "verdict_c100")
    train_resize, nearest = _resize_functions()
    verdict(_moved(nearest), True)  # positive control
    with pytest.raises(AssertionError, match="agree"):
        verdict(_moved(train_resize), True)


def test_c100_a_shared_function_that_resizes_arrays_its_own_way() -> None:
    """'Shared', but an array goes through nearest: training and serving tensors differ."""
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_sample_image

    verdict = chapter_function(STEM, "verdict_c100")
    train_resize, nearest = _resize_functions()
    photo = load_sample_image("china.jpg")

    def preprocess(image) -> torch.Tensor:
        resize = train_resize if isinstance(image, Image.Image) else nearest
        pixels = torch.tensor(np.asarray(image)).permute(2, 0, 1)[None]
        return resize(pixels, (106, 160))[0].float() / 255

    identical = torch.equal(preprocess(Image.fromarray(photo)), preprocess(photo.copy()))
    assert not identical
    with pytest.raises(AssertionError, match="different tensors"):
        verdict(_moved(nearest), identical)


def test_c100_a_serving_path_that_differs_everywhere() -> None:
    """A service that also shifts the brightness: the smooth gradient moves too, so the gap
    no longer comes from the fine detail."""
    verdict = chapter_function(STEM, "verdict_c100")
    train_resize, _ = _resize_functions()

    def brighter(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        return (train_resize(image, size).int() + 40).clamp(max=255).to(torch.uint8)

    with pytest.raises(AssertionError, match="smooth gradient"):
        verdict(_moved(brighter), True)


# C103: a model trained on antialiased resizes, served nearest-resized stripes --------------

COARSE = (8.0, 16.0)  # the chapter's coarse stripe periods, in pixels


def _stripe_evidence(serve: str = "nearest", steps: int = 100) -> tuple[dict, dict, list]:
    """The chapter's stripe data and model, trained on antialiased resizes; validation resized
    as trained and with `serve` (reported under the key "nearest"), and the strongest period
    of the fine stripes resized with `serve` (the chapter's stripe_periods)."""
    import math

    train_resize, nearest = _resize_functions()
    stripe_images = chapter_function(STEM, "stripe_images")
    stripe_set = chapter_function(STEM, "stripe_set", stripe_images=stripe_images)
    generator = torch.Generator().manual_seed(0)
    train_x, train_y = stripe_set(128, generator)
    val_x, val_y = stripe_set(128, generator)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    inputs = train_resize(train_x, (16, 16)).float() / 255 - 0.5
    loss = torch.zeros(())
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(inputs), train_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    resizes = {"antialiased, as trained": train_resize,
               "nearest": nearest if serve == "nearest" else train_resize}
    with torch.no_grad():
        read = {name: model(resize(val_x, (16, 16)).float() / 255 - 0.5).argmax(1)
                for name, resize in resizes.items()}
    assert math.isfinite(loss.item())
    periods = chapter_function(STEM, "stripe_periods")(resizes["nearest"](val_x[val_y == 1],
                                                                          (16, 16)), 4)
    return ({name: (r == val_y).float().mean().item() for name, r in read.items()},
            {name: (r[val_y == 1] == 0).float().mean().item() for name, r in read.items()},
            periods.tolist())


def test_c103_serving_with_the_training_resize() -> None:
    verdict = chapter_function(STEM, "verdict_c103")
    verdict(*_stripe_evidence(), coarse=COARSE)  # positive control
    with pytest.raises(AssertionError, match="not read as coarse"):
        verdict(*_stripe_evidence(serve="antialiased"), coarse=COARSE)


def test_c103_a_model_that_did_not_learn() -> None:
    verdict = chapter_function(STEM, "verdict_c103")
    with pytest.raises(AssertionError, match="did not learn"):
        verdict(*_stripe_evidence(steps=0), coarse=COARSE)


def test_c103_nearest_that_makes_noise_not_stripes() -> None:
    """A world where the serving resize turned fine stripes into high-contrast noise, not into
    coarse stripes, and the model read anything textured as coarse: the model's answers alone
    would pass; the periods of what the resize made must not."""
    verdict = chapter_function(STEM, "verdict_c103")
    accuracy, fine_as_coarse, periods = _stripe_evidence()
    assert all(COARSE[0] <= p <= COARSE[1] for p in periods), periods  # real nearest: coarse
    noise = torch.randint(0, 256, (64, 1, 16, 16), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(0))
    noise_periods = chapter_function(STEM, "stripe_periods")(noise, 4).tolist()
    with pytest.raises(AssertionError, match="did not turn the fine stripes into coarse ones"):
        verdict(accuracy, fine_as_coarse, noise_periods, coarse=COARSE)
