"""One directory per experiment: config, per-step metrics, TensorBoard curves (chapter 04).

A run directory ``<root>/<name>/`` holds ``config.json`` (with the seed), ``metrics.jsonl``
(one JSON object per logged step) and TensorBoard event files. Whatever else a run saves
(its best checkpoint, its final evaluation) goes in the same directory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import types
import typing
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .train import StepInfo
from .validate import require_bool, require_instance, require_path

T = TypeVar("T")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$")


def save_config(config: Any, path: str | Path) -> Path:
    """Write a dataclass instance as pretty JSON; returns the path.

    A NaN or infinite float is refused (``ValueError`` naming the field): Python would write
    ``NaN``, which is not JSON, and other tools could not read the config back. So is a dict
    key that is not a string: JSON would write ``1`` as ``"1"``, which loads back as a string.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config must be a dataclass instance, got {type(config).__name__}")
    path = require_path("path", path)
    values = dataclasses.asdict(config)
    for name, value in values.items():
        _check_finite(name, value)
    path.write_text(json.dumps(values, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return path


def _check_finite(name: str, value: object) -> None:
    """Refuse a NaN or infinite float anywhere in a config value (lists, dicts included), and
    a dict key that is not a string (JSON writes it as one)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"config field {name!r} is {value}: JSON has no NaN or infinity; "
                         "store a finite number (or None)")
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_finite(f"{name}[{i}]", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"config field {name!r} has the key {key!r}: JSON writes every "
                                 f"key as a string, so it would load back as {str(key)!r}; "
                                 "use string keys")
            _check_finite(f"{name}[{key!r}]", item)


def load_config(cls: type[T], path: str | Path) -> T:
    """Read JSON written by :func:`save_config` back into ``cls``, refusing unknown or
    missing fields (a renamed hyper-parameter must not be dropped silently).

    It gives back what was saved: a ``tuple[...]`` field, which JSON writes as a list, is a
    tuple again (its length and items checked), and a field whose type is a dataclass is that
    dataclass again, checked as the config itself is. Each value is checked against its field's
    type (``ValueError`` naming the field, dotted inside a nested dataclass).
    """
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"cls must be a dataclass type, got {cls!r}")
    path = require_path("path", path)
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of config fields, got "
                         f"{type(data).__name__}")
    try:
        return _build(cls, data, cls.__name__, "")
    except _ConfigError as err:
        raise ValueError(f"{path}: {err}") from None


class _Mismatch(Exception):
    """A JSON value that does not fit the type asked (reported for its whole field)."""


class _ConfigError(Exception):
    """A config object that does not fit its dataclass; the message, without the file."""


def _build(cls: type[T], data: dict[str, Any], root: str, where: str) -> T:
    """``cls(**data)`` with every field checked and converted by :func:`_convert`; ``where``
    is the dotted name of ``data`` in the config (``""`` for the config itself)."""
    fields = dataclasses.fields(cls)
    names = {f.name for f in fields}
    required = {f.name for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown, missing = set(data) - names, required - set(data)
    if unknown or missing:
        what = f"field {where!r} " if where else ""
        raise _ConfigError(f"{what}does not match {cls.__name__}: unknown fields "
                           f"{sorted(unknown)}, missing fields {sorted(missing)}")
    hints, values = _field_types(cls), {}
    for name, value in data.items():
        dotted = f"{where}.{name}" if where else name
        try:
            values[name] = (_convert(value, hints[name], root, dotted) if name in hints
                            else value)
        except _Mismatch:
            raise _ConfigError(f"field {dotted!r} of {root} is {value!r}, expected "
                               f"{_type_name(hints[name])}") from None
    return cls(**values)


def _field_types(cls: type) -> dict[str, Any]:
    """The resolved type of each field (string annotations included)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation that names something not importable here
        return {f.name: f.type for f in dataclasses.fields(cls) if not isinstance(f.type, str)}


def _convert(value: Any, hint: Any, root: str, where: str) -> Any:
    """A JSON value as the field type ``hint`` has it, after checking that it fits (else
    ``_Mismatch``): bool, int (not bool), float (int accepted), str, None, unions
    (``X | None``, ``Optional[X]``), ``list[X]``, ``tuple[X, ...]`` and ``tuple[X, Y]`` (a
    tuple again, of that length), ``dict[str, X]`` and dataclasses (built again, checked by
    :func:`_build`). Other types are not checked."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or isinstance(hint, (str, TypeVar)):
        return value
    if hint is type(None) or hint is None:
        if value is None:
            return None
        raise _Mismatch
    if origin in (typing.Union, types.UnionType):
        nested = None
        for arg in args:
            try:
                return _convert(value, arg, root, where)
            except _Mismatch:
                continue
            except _ConfigError as err:  # a nested config that fails: the closer report
                nested = err
        raise nested or _Mismatch()
    if origin is list or hint is list:
        if not isinstance(value, list):
            raise _Mismatch
        return [_convert(v, args[0], root, f"{where}[{i}]") for i, v in enumerate(value)] \
            if args else value
    if origin is tuple or hint is tuple:
        if not isinstance(value, list):
            raise _Mismatch
        if hint in (tuple, typing.Tuple):  # noqa: UP006 - without item types: any items
            return tuple(value)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif args == ((),):  # tuple[()] before Python 3.11
            args = ()
        if len(value) != len(args):
            raise _Mismatch
        return tuple(_convert(v, a, root, f"{where}[{i}]")
                     for i, (v, a) in enumerate(zip(value, args, strict=True)))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        return {k: _convert(v, args[1], root, f"{where}[{k!r}]") for k, v in value.items()} \
            if args else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise _Mismatch
        return _build(hint, value, root, where)
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is str:
        ok = isinstance(value, str)
    else:
        ok = True
    if not ok:
        raise _Mismatch
    return value


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def create_run_dir(root: str | Path, name: str, *, overwrite: bool = False) -> Path:
    """Create ``root/name`` for a new run. An existing run is never reused by accident:
    it raises ``FileExistsError`` unless ``overwrite=True``, which deletes it first."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"run name must be letters, digits and _ . = - (no slashes), got {name!r}")
    require_bool("overwrite", overwrite)
    path = require_path("root", root) / name
    if path.exists():
        if not overwrite:
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
        require_bool("tensorboard", tensorboard)
        self.run_dir = require_path("run_dir", run_dir)
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
        values = {k: _scalar(k, v) for k, v in scalars.items()}
        self._metrics.write(json.dumps({"step": step, **values}) + "\n")
        self._metrics.flush()  # a reader (another notebook, read_metrics) sees every step
        if self._writer is not None:
            for tag, value in values.items():
                self._writer.add_scalar(tag, value, step)

    def on_step(self, info: StepInfo) -> None:
        require_instance("info", info, StepInfo)
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


def _scalar(name: str, value: object) -> float:
    """``value`` as a float; a ``TypeError`` naming the scalar if it is not a number."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"scalar {name!r} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"scalar {name!r} must be a number (or a one-element tensor), got "
                        f"{type(value).__name__}") from err


def start_run(root: str | Path, name: str, config: Any, *, overwrite: bool = False,
              tensorboard: bool = True) -> RunLogger:
    """Create the run directory, save the config (which must record its ``seed``) and
    return a :class:`RunLogger` for it."""
    require_bool("tensorboard", tensorboard)
    require_bool("overwrite", overwrite)
    if not dataclasses.is_dataclass(config) or not hasattr(config, "seed"):
        raise ValueError("config must be a dataclass with a `seed` field: record the seed")
    run_dir = create_run_dir(root, name, overwrite=overwrite)
    save_config(config, run_dir / "config.json")
    return RunLogger(run_dir, tensorboard=tensorboard)


def read_metrics(run_dir: str | Path) -> list[dict[str, float]]:
    """The rows of a run's ``metrics.jsonl``."""
    path = require_path("run_dir", run_dir) / "metrics.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no metrics.jsonl in {run_dir}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_tensorboard_scalars(run_dir: str | Path) -> dict[str, tuple[list[int], list[float]]]:
    """Every scalar curve in a run's TensorBoard event files, as ``tag -> (steps, values)``
    (chapter 04).

    Every point: ``EventAccumulator`` keeps at most 10,000 points of a scalar tag by default
    and replaces the others by a random sample of the curve (reservoir sampling), so this asks
    it to keep all of them (``size_guidance={"scalars": 0}``).
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    if not list(require_path("run_dir", run_dir).glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"no TensorBoard event files in {run_dir}")
    accumulator = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})  # 0: keep all
    accumulator.Reload()
    curves = {}
    for tag in accumulator.Tags()["scalars"]:
        events = accumulator.Scalars(tag)
        curves[tag] = ([e.step for e in events], [e.value for e in events])
    return curves
