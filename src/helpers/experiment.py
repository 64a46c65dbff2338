"""One directory per experiment: config, per-step metrics, TensorBoard curves (chapter 04).

A run directory ``<root>/<name>/`` holds ``config.json`` (with the seed), ``metrics.jsonl``
(one JSON object per logged step) and TensorBoard event files. Whatever else a run saves
(its best checkpoint, its final evaluation) goes in the same directory.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .train import StepInfo
from .validate import require_bool

T = TypeVar("T")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$")


def save_config(config: Any, path: str | Path) -> Path:
    """Write a dataclass instance as pretty JSON; returns the path."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config must be a dataclass instance, got {type(config).__name__}")
    path = Path(path)
    path.write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n")
    return path


def load_config(cls: type[T], path: str | Path) -> T:
    """Read JSON written by :func:`save_config` back into ``cls``, refusing unknown or
    missing fields (a renamed hyper-parameter must not be dropped silently)."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"cls must be a dataclass type, got {cls!r}")
    data = json.loads(Path(path).read_text())
    names = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown, missing = set(data) - names, required - set(data)
    if unknown or missing:
        raise ValueError(f"{path}: does not match {cls.__name__}: unknown fields "
                         f"{sorted(unknown)}, missing fields {sorted(missing)}")
    return cls(**data)


def create_run_dir(root: str | Path, name: str, *, overwrite: bool = False) -> Path:
    """Create ``root/name`` for a new run. An existing run is never reused by accident:
    it raises ``FileExistsError`` unless ``overwrite=True``, which deletes it first."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"run name must be letters, digits and _ . = - (no slashes), got {name!r}")
    path = Path(root) / name
    if path.exists():
        if not require_bool("overwrite", overwrite):
            raise FileExistsError(
                f"run directory {path} already exists; choose a new name or pass overwrite=True")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


class RunLogger:
    """Log scalars of a run to ``metrics.jsonl`` and to TensorBoard.

    ``on_step`` fits :func:`helpers.fit`'s hook and records, at every step, the loss, the
    gradient norm and the learning rate: the curves seed B asks to keep for every run.
    """

    def __init__(self, run_dir: str | Path, *, tensorboard: bool = True) -> None:
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():
            raise FileNotFoundError(f"{self.run_dir} is not a directory; use create_run_dir")
        self._metrics = (self.run_dir / "metrics.jsonl").open("a", encoding="utf-8")
        self._writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

            self._writer = SummaryWriter(log_dir=str(self.run_dir))

    def log(self, step: int, **scalars: float) -> None:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")
        if not scalars:
            raise ValueError("log at least one scalar, e.g. log(step, loss=0.3)")
        values = {k: float(v) for k, v in scalars.items()}
        self._metrics.write(json.dumps({"step": step, **values}) + "\n")
        if self._writer is not None:
            for tag, value in values.items():
                self._writer.add_scalar(tag, value, step)

    def on_step(self, info: StepInfo) -> None:
        self.log(info.step, loss=info.loss, grad_norm=info.grad_norm, lr=info.lr)

    def close(self) -> None:
        self._metrics.close()
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> RunLogger:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def start_run(root: str | Path, name: str, config: Any, *, overwrite: bool = False,
              tensorboard: bool = True) -> RunLogger:
    """Create the run directory, save the config (which must record its ``seed``) and
    return a :class:`RunLogger` for it."""
    require_bool("tensorboard", tensorboard)
    if not dataclasses.is_dataclass(config) or not hasattr(config, "seed"):
        raise ValueError("config must be a dataclass with a `seed` field: record the seed")
    run_dir = create_run_dir(root, name, overwrite=overwrite)
    save_config(config, run_dir / "config.json")
    return RunLogger(run_dir, tensorboard=tensorboard)


def read_metrics(run_dir: str | Path) -> list[dict[str, float]]:
    """The rows of a run's ``metrics.jsonl``."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no metrics.jsonl in {run_dir}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_tensorboard_scalars(run_dir: str | Path) -> dict[str, tuple[list[int], list[float]]]:
    """Every scalar curve in a run's TensorBoard event files, as ``tag -> (steps, values)``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if not list(Path(run_dir).glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"no TensorBoard event files in {run_dir}")
    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    curves = {}
    for tag in accumulator.Tags()["scalars"]:
        events = accumulator.Scalars(tag)
        curves[tag] = ([e.step for e in events], [e.value for e in events])
    return curves
