"""Chapter 04's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapters/chapter_code.py) evidence computed in a world without the effect, and
evidence from the real world as a positive control."""

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
from tests.chapters.chapter_code import chapter_function, one_thread  # noqa: F401 (autouse fixture)

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
    return {"default": {"scatter": scatter_default, "conv": 1},
            "deterministic": {"scatter": scatter_det, "conv": 1}}


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


# C75: the code version covers build() and the helpers ------------------------------------

TRAIN_SOURCE = "def run_experiment(name, config):\n    model, optimizer, *loaders = build(config)\n"
BUILD_SOURCE = ("def build(config):\n"
                "    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))\n"
                "    return model, torch.optim.SGD(model.parameters(), lr=0.1)\n")


def helpers_tree(root, name: str, edit: str = ""):
    """A small stand-in for the helpers package's source files, one of them edited."""
    package = root / name
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .train import fit\n")
    (package / "train.py").write_text("def fit():\n    return 0\n" + edit)
    (package / "sub" / "util.py").write_text("X = 1\n")
    return package


def versions_from(code_version, tmp_path) -> dict[str, str]:
    """The chapter's evidence for C75, computed with `code_version` on stand-in code."""
    package = helpers_tree(tmp_path, "as_run")
    edited_package = helpers_tree(tmp_path, "edited", edit="# an edit\n")
    sources = [TRAIN_SOURCE, BUILD_SOURCE]
    edited = [TRAIN_SOURCE, BUILD_SOURCE.replace("nn.ReLU()", "nn.GELU()")]
    return {"as run": code_version(*sources, helpers_source=package),
            "again": code_version(*sources, helpers_source=package),
            "architecture edited": code_version(*edited, helpers_source=package),
            "helpers edited": code_version(*sources, helpers_source=edited_package)}


def chapter_code_version(helpers_source):
    from pathlib import Path

    return chapter_function(CHAPTER, "code_version", hashlib=__import__("hashlib"), Path=Path,
                            HELPERS_SOURCE=helpers_source)


def test_c75_code_version_of_the_training_function_only(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c75")
    verdict(versions_from(chapter_code_version(tmp_path), tmp_path))  # the chapter's version

    def training_function_only(*sources, helpers_source=None):  # the chapter's old record
        return __import__("hashlib").sha256(sources[0].encode()).hexdigest()[:12]

    with pytest.raises(AssertionError, match="editing the architecture"):
        verdict(versions_from(training_function_only, tmp_path / "old"))


def test_c75_code_version_without_the_helpers(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c75")

    def sources_only(*sources, helpers_source=None):  # build() covered, the helpers not
        return __import__("hashlib").sha256("".join(sources).encode()).hexdigest()[:12]

    with pytest.raises(AssertionError, match="editing a helper"):
        verdict(versions_from(sources_only, tmp_path))


def test_c75_helpers_are_hashed_with_their_paths(tmp_path):
    """A file moved within the helpers package is another package: the path is hashed too."""
    code_version = chapter_code_version(tmp_path)
    package = helpers_tree(tmp_path, "a")
    before = code_version(TRAIN_SOURCE, helpers_source=package)
    (package / "sub" / "util.py").rename(package / "util.py")
    assert code_version(TRAIN_SOURCE, helpers_source=package) != before


# C76: the environment record --------------------------------------------------------------

def chapter_environment(tmp_path):
    import os
    import sys
    from collections.abc import Callable

    code_version = chapter_code_version(helpers_tree(tmp_path, "helpers"))
    return chapter_function(CHAPTER, "environment", code_version=code_version,
                            inspect=__import__("inspect"), Callable=Callable, sys=sys, os=os,
                            platform=__import__("platform"),
                            legacy_matmul_precision=chapter_function(
                                CHAPTER, "legacy_matmul_precision"))


def records(environment, device):
    """As the chapter makes them: the default run's, and one in deterministic mode with the
    benchmark on and one thread."""
    threads = torch.get_num_threads()
    set_seed(0)
    default = environment(train_briefly, device=device)
    set_seed(0, deterministic=True)
    torch.backends.cudnn.benchmark = True
    torch.set_num_threads(1)
    try:
        deterministic = environment(train_briefly, device=device)
    finally:
        torch.set_num_threads(threads)
        set_seed(0)
    return default, deterministic


def test_c76_old_record_lacks_the_device_and_settings(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c76")
    cpu = torch.device("cpu")
    verdict(*records(chapter_environment(tmp_path), cpu), cpu)  # the chapter's record

    def old_environment(*code, device):  # code version, torch and threads only
        return {"code_version": "0" * 12, "torch": torch.__version__,
                "threads": torch.get_num_threads()}

    with pytest.raises(AssertionError, match="record lacks"):
        verdict(*records(old_environment, cpu), cpu)


@pytest.fixture
def new_precision_api():
    """TF32 asked for with the per-backend settings chapter 07 teaches, as a user's script
    would before a run; put back afterwards."""
    matmul = torch.backends.cuda.matmul
    if not hasattr(matmul, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision settings (torch < 2.9)")
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    yield
    matmul.fp32_precision = before


def test_c76_record_is_made_after_the_new_precision_api_is_used(tmp_path, new_precision_api):
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        torch.get_float32_matmul_precision()  # what the record called before (issue 44, 5)
    environment = chapter_environment(tmp_path)
    record = environment(train_briefly, device=torch.device("cpu"))
    assert record["cuda.matmul.fp32_precision"] == "tf32"
    assert record["float32_matmul_precision"] is None  # the old getter refuses: not asked
    verdict = chapter_function(CHAPTER, "verdict_c76")
    verdict(*records(environment, torch.device("cpu")), torch.device("cpu"))


def test_c76_record_sees_bf16_matmuls_on_a_cpu(tmp_path):
    """oneDNN may multiply float32 matrices in bf16 on a CPU: the record must show it, and a
    record without the key fails the verdict (issue 44)."""
    mkldnn = getattr(torch.backends.mkldnn, "matmul", None)
    if not hasattr(mkldnn, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision settings (torch < 2.9)")
    environment = chapter_environment(tmp_path)
    cpu = torch.device("cpu")
    before = mkldnn.fp32_precision
    try:
        ieee = environment(train_briefly, device=cpu)
        mkldnn.fp32_precision = "bf16"
        bf16 = environment(train_briefly, device=cpu)
    finally:
        mkldnn.fp32_precision = before
    assert bf16 != ieee and bf16["mkldnn.matmul.fp32_precision"] == "bf16"
    verdict = chapter_function(CHAPTER, "verdict_c76")

    def without_mkldnn(*code, device):
        record = environment(*code, device=device)
        return {k: v for k, v in record.items() if not k.startswith("mkldnn.")}

    with pytest.raises(AssertionError, match="lacks .*mkldnn.matmul"):
        verdict(*records(without_mkldnn, cpu), cpu)


def test_c76_record_that_assumes_the_settings(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c76")
    environment = chapter_environment(tmp_path)
    cpu = torch.device("cpu")

    def assumed(*code, device):  # the right keys, the deterministic flags written as False
        return {**environment(*code, device=device), "deterministic_algorithms": False,
                "cudnn.deterministic": False}

    with pytest.raises(AssertionError, match="does not say so"):
        verdict(*records(assumed, cpu), cpu)


@pytest.mark.parametrize("field, written", [
    ("threads", 1), ("cudnn.benchmark", False), ("torch", "2.0.0"), ("numpy", "1.0"),
    ("cudnn", None), ("torch.version.cuda", None), ("cpu_capability", "DEFAULT")])
def test_c76_record_that_writes_a_field_rather_than_reading_it(tmp_path, field, written):
    """A record with the right keys and one field written as a constant (issue 44): the
    verdict must tell it from the record read from the process."""
    verdict = chapter_function(CHAPTER, "verdict_c76")
    environment = chapter_environment(tmp_path)
    cpu = torch.device("cpu")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # so that one thread is not what the default run used
    try:
        real = records(environment, cpu)
        verdict(*real, cpu)  # the chapter's records

        def hard_coded(*code, device):
            return {**environment(*code, device=device), field: written}

        if all(record[field] == written for record in real):  # e.g. None in a CPU-only torch
            pytest.skip(f"{field} is {written!r} in this process as well")
        with pytest.raises(AssertionError, match="not this process's|does not say so|"
                                                 "not those in force"):
            verdict(*records(hard_coded, cpu), cpu)
    finally:
        torch.set_num_threads(threads)


def test_c76_record_without_the_gpu_on_a_gpu(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c76")
    default, deterministic = records(chapter_environment(tmp_path), torch.device("cpu"))
    on_gpu = [{**r, "device": "cuda:0"} for r in (default, deterministic)]  # a simulated GPU
    verdict(*[{**r, "gpu": "NVIDIA H100"} for r in on_gpu], torch.device("cuda:0"))
    with pytest.raises(AssertionError, match="record's gpu is None"):
        verdict(*on_gpu, torch.device("cuda:0"))


# C77: reading a long curve back -----------------------------------------------------------

@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    from torch.utils.tensorboard import SummaryWriter

    run_dir = tmp_path_factory.mktemp("long_run")
    written = list(range(10_050))
    with SummaryWriter(log_dir=str(run_dir)) as writer:
        for step in written:
            writer.add_scalar("loss", 1 / (1 + step), step)
    return run_dir, written


def steps_read(run_dir, size_guidance=None) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir), size_guidance=size_guidance)
    accumulator.Reload()
    return [e.step for e in accumulator.Scalars("loss")]


def test_c77_reader_that_keeps_the_default(long_run):
    verdict = chapter_function(CHAPTER, "verdict_c77")
    run_dir, written = long_run
    default_steps = steps_read(run_dir)
    verdict(written, default_steps, read_tensorboard_scalars(run_dir)["loss"][0])
    with pytest.raises(AssertionError, match="read_tensorboard_scalars returned"):
        verdict(written, default_steps, default_steps)  # the helper before the fix


def test_c77_a_default_that_keeps_everything_or_a_short_curve(long_run, tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c77")
    run_dir, written = long_run
    every = steps_read(run_dir, size_guidance={"scalars": 0})
    with pytest.raises(AssertionError, match="no sampling to guard against"):
        verdict(written, every, every)  # a TensorBoard whose default kept every point
    short = list(range(500))
    with pytest.raises(AssertionError, match="too short"):
        verdict(short, short, short)


def test_c77_a_default_that_truncates_or_keeps_another_number(long_run):
    """Two readers the verdict missed (issue 44): one that keeps the first 10,000 points, and
    one that samples 1,000, as the TensorBoard app does."""
    verdict = chapter_function(CHAPTER, "verdict_c77")
    run_dir, written = long_run
    every = read_tensorboard_scalars(run_dir)["loss"][0]
    verdict(written, steps_read(run_dir), every)  # the control
    with pytest.raises(AssertionError, match="truncated the curve"):
        verdict(written, written[:10_000], every)
    sample = sorted(random.Random(0).sample(written[:-1], 999)) + written[-1:]
    with pytest.raises(AssertionError, match="not 10,000"):
        verdict(written, sample, every)


# C78: one seed, two devices ---------------------------------------------------------------

def test_c78_streams_that_agree_or_do_not_repeat():
    verdict = chapter_function(CHAPTER, "verdict_c78")
    seeded_draws = chapter_function(CHAPTER, "seeded_draws")
    cpu = (seeded_draws("cpu"), seeded_draws("cpu"))

    def philox(seed_advance: int = 0) -> torch.Tensor:  # another generator, seeded the same
        rng = np.random.Generator(np.random.Philox(0))
        rng.standard_normal(seed_advance)
        return torch.from_numpy(rng.standard_normal(5).astype(np.float32))

    verdict(cpu, (philox(), philox()))  # a second generator: its own, repeatable stream
    with pytest.raises(AssertionError, match="drew the same numbers"):
        verdict(cpu, (seeded_draws("cpu"), seeded_draws("cpu")))  # one generator for both
    with pytest.raises(AssertionError, match="do not repeat"):
        verdict(cpu, (philox(0), philox(5)))  # a generator not reset by the seed


# C79: a DataLoader's own generator --------------------------------------------------------

def orders_from(epoch_order) -> dict[str, tuple[list[int], list[int]]]:
    return {kind: (epoch_order(32, own), epoch_order(64, own))
            for kind, own in (("global generator", False), ("own generator", True))}


def moved_from(moves_global_generator) -> dict[str, bool]:
    return {kind: moves_global_generator(own)
            for kind, own in (("global generator", False), ("own generator", True))}


def chapter_moves(**names):
    from torch.utils.data import DataLoader

    return chapter_function(CHAPTER, "moves_global_generator",
                            **{"DataLoader": DataLoader, **names})


def chapter_epoch_order(**names):
    from torch.utils.data import DataLoader

    return chapter_function(CHAPTER, "epoch_order", **{
        "set_seed": set_seed, "DataLoader": DataLoader, "train_set": list(range(300)), **names})


def test_c79_loader_that_ignores_its_generator():
    verdict = chapter_function(CHAPTER, "verdict_c79")
    moved = moved_from(chapter_moves())
    verdict(orders_from(chapter_epoch_order()), moved)
    from torch.utils.data import DataLoader

    def ignoring(dataset, generator=None, **kwargs):  # a loader that drops generator=
        return DataLoader(dataset, **kwargs)

    with pytest.raises(AssertionError, match="still changed with the model"):
        verdict(orders_from(chapter_epoch_order(DataLoader=ignoring)), moved)
    with pytest.raises(AssertionError, match="with its own generator= the loader drew"):
        verdict(orders_from(chapter_epoch_order()), moved_from(chapter_moves(
            DataLoader=ignoring)))


def test_c79_nothing_drawn_before_the_loader():
    verdict = chapter_function(CHAPTER, "verdict_c79")
    no_draws = types.SimpleNamespace(Sequential=lambda *layers: None, Linear=lambda *a: None,
                                     ReLU=lambda: None)  # a model that draws no weights
    with pytest.raises(AssertionError, match="did not change with the model"):
        verdict(orders_from(chapter_epoch_order(nn=no_draws)), moved_from(chapter_moves()))


def test_c79_loader_that_draws_only_to_shuffle():
    verdict = chapter_function(CHAPTER, "verdict_c79")

    def batches_in_order(dataset, batch_size, generator=None):  # no base seed drawn
        return [list(dataset[i:i + batch_size]) for i in range(0, len(dataset), batch_size)]

    with pytest.raises(AssertionError, match="left torch's generator alone"):
        verdict(orders_from(chapter_epoch_order()),
                moved_from(chapter_moves(DataLoader=batches_in_order)))


def test_c79_loader_that_draws_in_its_first_epoch_only():
    """A loader with persistent workers makes its iterator, and draws its base seed, once: a
    check that looks at one epoch takes it for a loader that draws every epoch (issue 44)."""
    import functools

    from torch.utils.data import DataLoader

    from helpers import worker_context

    verdict = chapter_function(CHAPTER, "verdict_c79")
    orders = orders_from(chapter_epoch_order())
    verdict(orders, moved_from(chapter_moves()))  # the plain loader draws in both epochs
    persistent = functools.partial(DataLoader, num_workers=1, persistent_workers=True,
                                   multiprocessing_context=worker_context(1))
    moved = moved_from(chapter_moves(DataLoader=persistent))
    assert moved["global generator"] == [True, False]  # the planted world, as torch has it
    with pytest.raises(AssertionError, match="first epoch only"):
        verdict(orders, moved)
    with pytest.raises(AssertionError, match="one epoch cannot show"):
        verdict(orders, {kind: m[:1] for kind, m in moved_from(chapter_moves()).items()})


# Python's string hash: a set's order and PYTHONHASHSEED (an assert of the chapter) ----------

WORDS = ["relu", "gelu", "tanh", "sigmoid", "silu", "elu", "selu", "mish", "softplus",
         "hardtanh", "prelu", "swish"]  # the chapter's twelve words


def test_set_order_check_fails_where_the_hash_is_not_seeded():
    import ast
    import os
    import subprocess
    import sys

    set_order = chapter_function(CHAPTER, "set_order", subprocess=subprocess, sys=sys, os=os,
                                 ast=ast, WORDS=WORDS)
    check = chapter_function(CHAPTER, "check_set_order")
    check({name: set_order(seed) for name, seed in (("1", "1"), ("1 again", "1"), ("2", "2"))})
    numbers = list(range(40, 0, -3))  # an int hashes to itself: no hash seed involved
    with pytest.raises(AssertionError, match="does not depend on PYTHONHASHSEED"):
        check({name: set_order(seed, numbers)
               for name, seed in (("1", "1"), ("1 again", "1"), ("2", "2"))})
