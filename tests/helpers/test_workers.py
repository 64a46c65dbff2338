"""helpers.workers: the datasets chapters 02 and 04 give to DataLoader workers load under
``spawn`` (macOS's and Windows' default) and give the same batches as under this platform's
default start method; a dataset defined in a test module's ``__main__`` could not."""

import io

import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.transforms.v2.functional import pil_to_tensor as to_tensor  # importable

from helpers import (
    MemoryAfterReading,
    NoisyDigits,
    OwnRngAugmented,
    PNGDataset,
    TorchAugmented,
    WhatTheWorkerSees,
    private_dirty_kib,
    reseed_dataset_rng,
    usable_cpus,
    worker_context,
)


def png_data() -> PNGDataset:
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (4, 8, 8, 3), dtype=torch.uint8, generator=gen)
    encoded = []
    for array in images.numpy():
        buffer = io.BytesIO()
        Image.fromarray(array).save(buffer, format="PNG")
        encoded.append(buffer.getvalue())
    return PNGDataset(encoded, torch.arange(4), to_tensor, length=8)


def batches(dataset, workers: int, context, **options) -> list:
    torch.manual_seed(0)
    loader = DataLoader(dataset, batch_size=options.pop("batch_size", 4), num_workers=workers,
                        multiprocessing_context=context, **options)
    return list(loader)


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


DATASETS = {
    "PNGDataset": (png_data, {}),
    "TorchAugmented": (TorchAugmented, {}),
    "OwnRngAugmented + reseed_dataset_rng": (OwnRngAugmented,
                                             {"worker_init_fn": reseed_dataset_rng}),
    "NoisyDigits": (lambda: NoisyDigits(torch.arange(32.0).reshape(8, 4), torch.arange(8)), {}),
    "WhatTheWorkerSees": (WhatTheWorkerSees, {"batch_size": None}),
}


@pytest.mark.parametrize("name", DATASETS)
def test_spawn_workers_load_it_and_see_what_default_workers_see(name):
    make, options = DATASETS[name]
    spawned = batches(make(), 2, "spawn", **options)
    default = batches(make(), 2, worker_context(2), **options)
    assert spawned and same(spawned, default), name
    if name == "WhatTheWorkerSees":  # each worker seeded with base + id, whatever the method
        assert [row["worker"] for row in spawned] == [0, 1]
        assert spawned[1]["torch_seed"] == spawned[0]["torch_seed"] + 1
    if name == "OwnRngAugmented + reseed_dataset_rng":  # the two workers' noise differs
        assert not torch.equal(spawned[0][0], spawned[1][0])


def test_what_the_worker_sees_outside_a_worker_says_so():
    """Without workers there is no worker info: a clear error, not "'NoneType' object has no
    attribute 'id'"."""
    for load in (lambda: WhatTheWorkerSees()[0],
                 lambda: next(iter(DataLoader(WhatTheWorkerSees(), batch_size=None)))):
        with pytest.raises(RuntimeError, match=r"main process \(num_workers=0"):
            load()


def test_png_items_decode_to_the_images():
    data = png_data()
    assert len(data) == 8 and torch.equal(data[5][0], data[1][0]) and data[5][1] == 1
    with pytest.raises(ValueError, match="one label per image"):
        PNGDataset(data.encoded, torch.arange(3), to_tensor)


def test_noisy_digits_draws_torch_noise_per_item():
    data = NoisyDigits(torch.zeros(3, 4), torch.arange(3), noise=0.5)
    torch.manual_seed(1)
    x, y = data[2]
    torch.manual_seed(1)
    assert torch.equal(x, 0.5 * torch.randn(4)) and y == 2
    with pytest.raises(ValueError, match="3 inputs but 2 labels"):
        NoisyDigits(torch.zeros(3, 4), torch.arange(2))


def test_private_dirty_kib_reads_smaps_rollup(tmp_path):
    rollup = tmp_path / "smaps_rollup"
    rollup.write_text("Rss:    2048 kB\nPrivate_Clean:   12 kB\nPrivate_Dirty:   345 kB\n")
    assert private_dirty_kib(str(rollup)) == 345
    assert private_dirty_kib(str(tmp_path / "missing")) is None  # macOS, Windows, old kernels
    rollup.write_text("Rss:    2048 kB\n")
    with pytest.raises(ValueError, match="no Private_Dirty"):
        private_dirty_kib(str(rollup))
    here = private_dirty_kib()
    assert here is None or (isinstance(here, int) and here > 0)


def test_memory_after_reading_reads_every_element():
    data = MemoryAfterReading(["ab", "cde", ""], workers=2)
    assert len(data) == 2
    row = data[1]  # in the main process: the index stands for the worker
    assert row["worker"] == 1 and row["chars"] == 5
    assert (row["before_kib"] is None) == (private_dirty_kib() is None)
    with pytest.raises(TypeError, match="sequence"):
        MemoryAfterReading(iter(["a"]), workers=1)
    with pytest.raises(ValueError):
        MemoryAfterReading(["a"], workers=0)


def test_memory_after_reading_loads_in_spawn_workers():
    rows = batches(MemoryAfterReading(["ab", "cde"], workers=2), 2, "spawn", batch_size=None)
    assert [row["worker"] for row in rows] == [0, 1]
    assert all(row["chars"] == 5 for row in rows)


@pytest.mark.parametrize(("cpu_max", "expected"), [("max 100000\n", None), ("100000 100000\n", 1),
                                                    ("150000 100000\n", 2)])
def test_usable_cpus_reads_the_cgroup_quota(tmp_path, cpu_max: str,
                                            expected: int | None) -> None:
    unlimited = usable_cpus(str(tmp_path / "missing"))
    (tmp_path / "cpu.max").write_text(cpu_max)
    assert usable_cpus(str(tmp_path)) == (unlimited if expected is None
                                          else min(unlimited, expected))
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(v1) == 1
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # v1's "no limit"
    assert usable_cpus(v1) == unlimited


def test_usable_cpus_reads_a_parent_cgroup_quota(tmp_path) -> None:
    """cgroup v2 without a cgroup namespace: the process sits in /a/b below the mount, and the
    quota is set on its parent /a (a systemd slice, say), not at the mount's root."""
    unlimited = usable_cpus(str(tmp_path / "missing"))
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "cpu.max").write_text("max 100000\n")
    (tmp_path / "a" / "cpu.max").write_text("100000 100000\n")
    (tmp_path / "a" / "b" / "cpu.max").write_text("max 100000\n")
    membership = tmp_path / "cgroup"
    membership.write_text("0::/a/b\n")
    assert usable_cpus(str(tmp_path), str(membership)) == 1
    membership.write_text("0::/\n")  # in a cgroup namespace: its own cgroup is the mount
    assert usable_cpus(str(tmp_path), str(membership)) == unlimited
    (tmp_path / "a" / "b" / "cpu.max").write_text("50000 100000\n")
    membership.write_text("0::/a/b\n")
    assert usable_cpus(str(tmp_path), str(membership)) == 1
