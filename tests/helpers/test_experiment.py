import json
import math
import re
from dataclasses import dataclass, field
from typing import Optional

import pytest

from helpers import (
    RunLogger,
    StepInfo,
    create_run_dir,
    load_config,
    read_metrics,
    read_tensorboard_scalars,
    save_config,
    start_run,
)


@dataclass
class Config:
    lr: float = 0.1
    epochs: int = 3
    seed: int = 0


@dataclass
class NoSeed:
    lr: float = 0.1


def test_config_round_trip(tmp_path):
    path = save_config(Config(lr=0.3), tmp_path / "config.json")
    assert json.loads(path.read_text()) == {"lr": 0.3, "epochs": 3, "seed": 0}
    assert load_config(Config, path) == Config(lr=0.3)


def test_config_with_unknown_or_missing_fields_is_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"lr": 0.1, "epochs": 3, "seed": 0, "momentum": 0.9}))
    with pytest.raises(ValueError, match=r"unknown fields \['momentum'\]"):
        load_config(Config, path)

    @dataclass
    class Strict:
        lr: float

    path.write_text("{}")
    with pytest.raises(ValueError, match=r"missing fields \['lr'\]"):
        load_config(Strict, path)


def test_config_types_checked(tmp_path):
    with pytest.raises(TypeError, match="dataclass instance"):
        save_config({"lr": 0.1}, tmp_path / "x.json")
    with pytest.raises(TypeError, match="dataclass type"):
        load_config(dict, tmp_path / "x.json")


def test_run_dir_refuses_to_overwrite_unless_asked(tmp_path):
    run = create_run_dir(tmp_path, "baseline")
    (run / "marker").write_text("x")
    with pytest.raises(FileExistsError, match="already exists"):
        create_run_dir(tmp_path, "baseline")
    again = create_run_dir(tmp_path, "baseline", overwrite=True)
    assert again == run and not (run / "marker").exists()


@pytest.mark.parametrize("bad", ["", "a/b", "../up", ".hidden", "with space", None])
def test_bad_run_names(tmp_path, bad):
    with pytest.raises(ValueError, match="run name"):
        create_run_dir(tmp_path, bad)


def test_logger_writes_jsonl_and_tensorboard(tmp_path):
    with start_run(tmp_path, "lr=0.1", Config()) as logger:
        for step in range(5):
            logger.on_step(StepInfo(epoch=0, step=step, loss=1 / (step + 1), grad_norm=2.0,
                                    lr=0.1))
        logger.log(5, val_accuracy=0.9)
    run = tmp_path / "lr=0.1"
    assert load_config(Config, run / "config.json").seed == 0
    rows = read_metrics(run)
    assert rows[0] == {"step": 0, "loss": 1.0, "grad_norm": 2.0, "lr": 0.1}
    assert rows[-1] == {"step": 5, "val_accuracy": 0.9}
    curves = read_tensorboard_scalars(run)
    assert set(curves) == {"loss", "grad_norm", "lr", "val_accuracy"}
    steps, values = curves["loss"]
    assert steps == [0, 1, 2, 3, 4]
    assert values == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], rel=1e-6)


def test_read_tensorboard_scalars_returns_every_point_of_a_long_run(tmp_path):
    """EventAccumulator keeps 10,000 points of a scalar tag by default (a reservoir sample of
    a longer curve); the helper asks for all of them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    steps = list(range(10_050))  # past the default's 10,000
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        for step in steps:
            writer.add_scalar("loss", 1.0 / (step + 1), step)
    default = EventAccumulator(str(tmp_path))
    default.Reload()
    assert len(default.Scalars("loss")) < len(steps)  # what the helper must not do
    got_steps, values = read_tensorboard_scalars(tmp_path)["loss"]
    assert got_steps == steps
    assert values[-1] == pytest.approx(1.0 / len(steps), rel=1e-6)


def test_logger_without_tensorboard_and_bad_calls(tmp_path):
    run = create_run_dir(tmp_path, "plain")
    logger = RunLogger(run, tensorboard=False)
    with pytest.raises(ValueError, match="at least one scalar"):
        logger.log(0)
    with pytest.raises(ValueError, match="non-negative int"):
        logger.log(-1, loss=1.0)
    logger.log(0, loss=1.0)
    logger.close()
    assert read_metrics(run) == [{"step": 0, "loss": 1.0}]
    with pytest.raises(FileNotFoundError, match="event files"):
        read_tensorboard_scalars(run)
    with pytest.raises(FileNotFoundError, match="create_run_dir"):
        RunLogger(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        read_metrics(tmp_path)


def test_start_run_requires_a_seed(tmp_path):
    with pytest.raises(ValueError, match="record the seed"):
        start_run(tmp_path, "x", NoSeed())


def test_metrics_are_readable_while_the_logger_is_open(tmp_path):
    run = create_run_dir(tmp_path, "live")
    with RunLogger(run, tensorboard=False) as logger:
        logger.log(0, loss=1.0)
        assert read_metrics(run) == [{"step": 0, "loss": 1.0}]  # before: [] until close
        logger.log(1, loss=0.5)
        assert [r["step"] for r in read_metrics(run)] == [0, 1]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_save_config_refuses_non_finite_floats(tmp_path, bad):
    path = tmp_path / "c.json"
    with pytest.raises(ValueError, match=f"config field 'lr' is {bad}: JSON has no NaN"):
        save_config(Config(lr=bad), path)  # before: wrote NaN, which is not JSON
    assert not path.exists()


@dataclass
class Rich:
    lr: float = 0.1
    epochs: int = 3
    name: str = "run"
    amp: bool = False
    note: str | None = None
    widths: list[int] = field(default_factory=lambda: [64, 32])
    decay: Optional[float] = None  # noqa: UP045 (both spellings are checked)


@pytest.mark.parametrize("field_name, value, expected", [
    ("lr", "fast", "float"), ("lr", True, "float"), ("epochs", 3.5, "int"),
    ("epochs", True, "int"), ("name", 3, "str"), ("amp", 1, "bool"),
    ("note", 3, "str | None"), ("widths", [64, "x"], "list[int]"), ("widths", 64, "list[int]"),
    ("decay", "none", "Optional[float]"),
])
def test_load_config_checks_each_field_type(tmp_path, field_name, value, expected):
    path = save_config(Rich(), tmp_path / "c.json")
    data = json.loads(path.read_text())
    data[field_name] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=re.escape(
            f"field {field_name!r} of Rich is {value!r}, expected {expected}")):
        load_config(Rich, path)


def test_load_config_accepts_what_the_types_allow(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"lr": 1, "epochs": 2, "name": "x", "amp": True, "note": None,
                                "widths": [], "decay": 0.5}))
    assert load_config(Rich, path) == Rich(lr=1, epochs=2, name="x", amp=True, widths=[],
                                           decay=0.5)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="expected a JSON object"):
        load_config(Rich, path)


# ------------------------------------------- what save_config wrote, load_config gives back

@dataclass
class Optim:
    lr: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)


@dataclass
class Nested:
    seed: int = 0
    sizes: tuple[int, ...] = (64, 32)
    optim: Optim = field(default_factory=Optim)
    schedule: Optim | None = None
    stages: list[Optim] = field(default_factory=lambda: [Optim(lr=0.5)])
    per_layer: dict[str, tuple[int, int]] = field(default_factory=lambda: {"a": (1, 2)})
    anything: tuple = (1, "x")


def test_tuples_and_nested_dataclasses_come_back_as_they_were_saved(tmp_path):
    config = Nested(sizes=(8,), optim=Optim(lr=0.3, betas=(0.8, 0.9)), schedule=Optim())
    loaded = load_config(Nested, save_config(config, tmp_path / "c.json"))
    assert loaded == config  # before: lists and dicts, so not equal
    assert isinstance(loaded.sizes, tuple) and isinstance(loaded.optim.betas, tuple)
    assert isinstance(loaded.stages[0], Optim) and isinstance(loaded.per_layer["a"], tuple)
    assert load_config(Nested, save_config(Nested(), tmp_path / "d.json")) == Nested()


@pytest.mark.parametrize("change, message", [
    ({"sizes": [64, "x"]}, "field 'sizes' of Nested is [64, 'x'], expected tuple[int, ...]"),
    ({"optim": {"lr": 0.1, "betas": [0.9]}},
     "field 'optim.betas' of Nested is [0.9], expected tuple[float, float]"),
    ({"optim": {"lr": 0.1, "betas": [0.9, 0.99, 0.999]}},
     "field 'optim.betas' of Nested is [0.9, 0.99, 0.999], expected tuple[float, float]"),
    ({"optim": {"lr": "fast"}}, "field 'optim.lr' of Nested is 'fast', expected float"),
    ({"optim": {"lr": 0.1, "momentum": 0.9}},
     "field 'optim' does not match Optim: unknown fields ['momentum'], missing fields []"),
    ({"schedule": {"lr": 0.1, "gamma": 0.5}},
     "field 'schedule' does not match Optim: unknown fields ['gamma']"),
    ({"stages": [{"lr": True}]}, "field 'stages[0].lr' of Nested is True, expected float"),
    ({"optim": [0.1]}, "field 'optim' of Nested is [0.1], expected Optim"),
    ({"per_layer": {"a": [1]}}, "field 'per_layer' of Nested is {'a': [1]}, expected "
                                "dict[str, tuple[int, int]]"),
])
def test_tuple_and_nested_fields_are_checked(tmp_path, change, message):
    path = save_config(Nested(), tmp_path / "c.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_config(Nested, path)


def test_dict_keys_that_json_would_turn_into_strings_are_refused(tmp_path):
    @dataclass
    class ByEpoch:
        lr_at: dict = field(default_factory=lambda: {10: 0.01})

    with pytest.raises(ValueError, match=r"config field 'lr_at' has the key 10: JSON writes every "
                                         r"key as a string, so it would load back as '10'"):
        save_config(ByEpoch(), tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()
