"""Checkpoints that resume exactly and survive a crash (taught in chapter 08).

A checkpoint is a dict of plain types and tensors, so that it loads with
``torch.load(..., weights_only=True)``: model, optimizer and scheduler state dicts, the step
and epoch, every random generator's state, and whatever JSON-like ``extra`` the caller adds.
It is written to a temporary file in the same directory and renamed over the old one, so a
crash during the save leaves the previous checkpoint intact.

A float16 run's ``torch.amp.GradScaler`` is part of the state too: pass ``scaler=`` to both
functions (without it a resumed run restarts at scale 2**16 with a reset growth tracker).

Loading never gives a silent wrong result: the archive's CRC32s are checked before
``torch.load`` (an archive written with ``torch.serialization.set_crc32_options(False)`` has
none to check: it loads, with a warning that its bytes could not be checked), every part of
the checkpoint is checked against the objects it is loaded into before any of them changes,
and if applying it fails all the same, model, optimizer, scheduler, scaler and random
generators are put back as they were.
"""

from __future__ import annotations

import copy
import itertools
import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .atomic import remove_stale_temps, write_atomically

# The file (what it can hold, reading it back intact), the random generators and the wrappers'
# prefixes have modules of their own; their names stay importable from here, as they were.
from .checkpoint_file import LOAD_ERRORS as LOAD_ERRORS
from .checkpoint_file import UncheckedArchiveWarning as UncheckedArchiveWarning
from .checkpoint_file import _check_extra, _read_payload
from .random_state import RNG_KEYS as RNG_KEYS
from .random_state import _apply_rng_state, check_rng_state, rng_state
from .random_state import set_rng_state as set_rng_state
from .validate import first_line as _first_line
from .validate import require_bool
from .wrappers import COMPILE_PREFIX as COMPILE_PREFIX
from .wrappers import WRAPPER_PREFIXES as WRAPPER_PREFIXES
from .wrappers import _without_wrapper_prefixes, unwrap_model
from .wrappers import strip_compile_prefix as strip_compile_prefix
from .wrappers import unwrap_compiled as unwrap_compiled

FORMAT_VERSION = 1
CHECKPOINT_KEYS = ("format", "model", "optimizer", "scheduler", "step", "epoch", "rng", "extra")
# Written since the scaler was added; a checkpoint without it (older) reads as scaler=None.
OPTIONAL_KEYS = ("scaler",)
# Keys of an optimizer's parameter group that are not hyperparameters (names do not affect
# loading, see PyTorch's Optimizer.load_state_dict).
NOT_HYPERPARAMETERS = frozenset({"params", "param_names"})
SCALER_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
# Accelerators a checkpoint can be mapped to, by device type, with the name used in messages.
ACCELERATORS = {"cuda": "CUDA", "mps": "MPS", "xpu": "XPU"}


# ---------------------------------------------------------------------------- arguments


def _as_path(path: Any) -> Path:
    """``path`` as a :class:`Path`: ``TypeError`` unless a str or path, ``ValueError`` if empty."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    if str(path) == "":
        raise ValueError("path must name a checkpoint file, got an empty string")
    return Path(path)


def _check_objects(model: Any, optimizer: Any, scheduler: Any, scaler: Any = None) -> None:
    """``TypeError`` unless model is a Module, optimizer an Optimizer, scheduler a scheduler and
    scaler a ``torch.amp.GradScaler`` (the last three may be ``None``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("optimizer must be a torch.optim.Optimizer or None, "
                        f"got {type(optimizer).__name__}")
    if scheduler is not None and not all(
            callable(getattr(scheduler, m, None)) for m in ("state_dict", "load_state_dict")):
        raise TypeError("scheduler must be a learning-rate scheduler (with state_dict and "
                        f"load_state_dict) or None, got {type(scheduler).__name__}")
    if scaler is not None and not isinstance(scaler, torch.amp.GradScaler):
        raise TypeError("scaler must be a torch.amp.GradScaler or None, "
                        f"got {type(scaler).__name__}")


def _accelerator_count(kind: str) -> int:
    """How many devices of ``kind`` (a key of :data:`ACCELERATORS`) this machine can use."""
    if kind == "cuda":
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    if kind == "mps":
        return 1 if torch.backends.mps.is_available() else 0
    xpu = getattr(torch, "xpu", None)
    return xpu.device_count() if xpu is not None and xpu.is_available() else 0


def _check_map_location(map_location: Any) -> None:
    """``TypeError``/``ValueError`` unless ``map_location`` names a device this machine has
    (``"meta"`` is refused: it keeps shapes and no data)."""
    if not isinstance(map_location, (str, torch.device)):
        raise TypeError("map_location must be a str or torch.device such as 'cpu', "
                        f"got {type(map_location).__name__}")
    try:
        device = torch.device(map_location)
    except RuntimeError as err:
        raise ValueError(f"map_location={map_location!r} is not a device; expected e.g. 'cpu' "
                         f"or 'cuda' ({_first_line(err)})") from err
    if device.type == "meta":
        raise ValueError(f"map_location={map_location!r} keeps the shapes of the tensors and "
                         "none of their values; load with map_location='cpu' (or a GPU)")
    if device.type not in ACCELERATORS:
        return
    name, count = ACCELERATORS[device.type], _accelerator_count(device.type)
    if count == 0:
        raise ValueError(f"map_location={map_location!r} but {name} is not available on this "
                         "machine; load with map_location='cpu'")
    if device.index is not None and device.index >= count:
        raise ValueError(f"map_location={map_location!r} but this machine has {count} {name} "
                         f"device(s); use '{device.type}:0' or 'cpu'")


def _check_initialized(model: nn.Module, then: str) -> None:
    """``ValueError`` if ``model`` has parameters or buffers of a lazy module (``nn.LazyLinear``
    ...) that no forward pass has given a shape yet."""
    lazy = [name for name, value in itertools.chain(model.named_parameters(),
                                                     model.named_buffers())
            if nn.parameter.is_lazy(value)]
    if lazy:
        raise ValueError(f"the model has parameters that are not initialized yet {lazy[:5]}: a "
                         "lazy module (nn.LazyLinear, ...) takes its shapes from its first "
                         f"input; run one forward pass first (a batch of real inputs), then {then}")


def _check_counter(name: str, value: Any) -> None:
    """``ValueError`` unless ``value`` is a non-negative int (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def save_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    step: int = 0,
    epoch: int = 0,
    extra: dict[str, Any] | None = None,
    scaler: torch.amp.GradScaler | None = None,
) -> Path:
    """Write a complete checkpoint atomically (temporary file, fsync, rename).

    The file keeps the permission bits of the one it replaces. Temporary files of the same
    checkpoint left by a process killed mid-save are removed. ``extra`` must load back with
    ``torch.load(weights_only=True)`` (plain types and tensors); otherwise ``ValueError``.
    ``scaler``, a float16 run's ``torch.amp.GradScaler``, is saved with its scale and growth
    tracker (save it after ``scaler.update()``). The model is saved without the wrappers of
    :func:`unwrap_model` (``torch.compile``, ``nn.DataParallel``, DDP), so its keys are the
    plain model's. A model with lazy modules not run yet is refused (``ValueError``).
    """
    path = _as_path(path)
    _check_objects(model, optimizer, scheduler, scaler)
    _check_initialized(unwrap_model(model), "save it")
    _check_counter("step", step)
    _check_counter("epoch", epoch)
    extra = _check_extra(extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT_VERSION,
        "model": unwrap_model(model).state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "step": step,
        "epoch": epoch,
        "rng": rng_state(),
        "extra": extra,
        "scaler": scaler.state_dict() if scaler is not None else None,
    }
    remove_stale_temps(path)
    write_atomically(path, lambda f: torch.save(payload, f))
    return path


# ------------------------------------------------------------------------------- reading


def _check_payload(path: Path, payload: Any) -> None:
    """``ValueError`` unless ``payload`` has every key and type :func:`save_checkpoint` writes."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path} was not written by save_checkpoint (format "
                         f"{payload.get('format') if isinstance(payload, dict) else None!r})")
    for key in OPTIONAL_KEYS:  # a checkpoint from before the key existed
        payload.setdefault(key, None)
    missing = [k for k in CHECKPOINT_KEYS if k not in payload]
    if missing:
        raise ValueError(f"{path} lacks the keys {missing}; a checkpoint written by "
                         f"save_checkpoint holds {list(CHECKPOINT_KEYS)}")
    kinds = {"model": (dict,), "optimizer": (dict, type(None)), "scheduler": (dict, type(None)),
             "rng": (dict,), "extra": (dict,), "scaler": (dict, type(None))}
    for key, allowed in kinds.items():
        if not isinstance(payload[key], allowed):
            raise ValueError(f"{path}: {key!r} is a {type(payload[key]).__name__}, expected "
                             f"{' or '.join(t.__name__ for t in allowed)}")
    for key in ("step", "epoch"):
        try:
            _check_counter(key, payload[key])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from err


def _check_model_state(path: Path, saved: dict[str, Any], target: nn.Module) -> dict[str, Any]:
    """The saved model state without the prefixes of wrappers (``torch.compile``,
    ``nn.DataParallel``, DDP), after checking that its keys and shapes are exactly the
    target's (``ValueError`` naming the keys that differ)."""
    if not all(isinstance(k, str) for k in saved):
        raise ValueError(f"{path}: the model state has keys that are not strings")
    # Checked before loading, not left to load_state_dict(strict=True): PyTorch copies every
    # tensor that fits before it raises, so a failed load would leave the model half-changed.
    expected = target.state_dict()
    state, removed = _without_wrapper_prefixes(saved, expected)
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = sorted(k for k in set(state) & set(expected)
                    if isinstance(state[k], torch.Tensor) != isinstance(expected[k], torch.Tensor)
                    or (isinstance(state[k], torch.Tensor)
                        and tuple(state[k].shape) != tuple(expected[k].shape)))
    if missing or unexpected or shapes:
        wrapped = (f" (compared without the prefix {' then '.join(map(repr, removed))} that a "
                   "wrapper put before every saved key)" if removed else "")
        raise ValueError(
            f"{path} holds a different architecture: missing keys {missing[:5]}, unexpected "
            f"keys {unexpected[:5]}, shape mismatches {shapes[:5]}{wrapped}")
    return state


def _state_fits(saved: tuple[int, ...], param: tuple[int, ...]) -> bool:
    """Whether an optimizer state tensor of shape ``saved`` belongs to a parameter of shape
    ``param``: the same shape, or the same rank with 1 in place of some dimensions (the
    factored second moments of Adafactor)."""
    return len(saved) == len(param) and all(s in (p, 1) for s, p in zip(saved, param, strict=True))


def _check_optimizer_state(path: Path, saved: Any, optimizer: torch.optim.Optimizer) -> None:
    """``ValueError`` unless the saved optimizer state can be this optimizer's: over parameters
    of the same number, grouping and shapes, with no hyperparameter this optimizer does not
    have (another optimizer class's). A hyperparameter that the file lacks is accepted: an
    older torch did not have it, and the optimizer's ``load_state_dict`` gives it the value
    that reproduces the older behaviour (its ``__setstate__``: AdamW's
    ``decoupled_weight_decay`` is ``True``, Adam's ``False``)."""
    if saved is None:
        raise ValueError(f"{path} has no optimizer state to load")
    if not {"state", "param_groups"} <= set(saved) or not isinstance(saved["state"], dict) \
            or not isinstance(saved["param_groups"], list):
        raise ValueError(f"{path}: the optimizer state lacks 'state' or 'param_groups'")
    kind = type(optimizer).__name__
    saved_groups, groups = saved["param_groups"], optimizer.state_dict()["param_groups"]
    if len(saved_groups) != len(groups):
        raise ValueError(f"{path} holds {len(saved_groups)} optimizer parameter group(s), the "
                         f"{kind} has {len(groups)}: an optimizer over other parameters")
    for i, (old, new) in enumerate(zip(saved_groups, groups, strict=True)):
        if not isinstance(old, dict) or len(old.get("params", ())) != len(new["params"]):
            count = len(old.get("params", ())) if isinstance(old, dict) else "no"
            raise ValueError(f"{path}: optimizer parameter group {i} holds {count} parameters, "
                             f"the {kind}'s holds {len(new['params'])}: an optimizer over "
                             "other parameters")
        unknown = sorted(set(old) - set(new) - NOT_HYPERPARAMETERS)
        if unknown:
            raise ValueError(
                f"{path} holds the state of another optimizer class: parameter group {i} has "
                f"hyperparameters {unknown} that {kind} does not have")
    ids = list(itertools.chain.from_iterable(g["params"] for g in saved_groups))
    stray = sorted(set(saved["state"]) - set(ids), key=repr)
    if stray:
        raise ValueError(f"{path}: the optimizer state has entries {stray[:5]} for parameters "
                         "that no parameter group holds")
    if isinstance(optimizer, torch.optim.LBFGS):  # flat vectors over all parameters
        return
    params = itertools.chain.from_iterable(g["params"] for g in optimizer.param_groups)
    for index, (saved_id, param) in enumerate(zip(ids, params, strict=True)):
        entry = saved["state"].get(saved_id, {})
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: optimizer state of parameter {index} is a "
                             f"{type(entry).__name__}, expected a dict")
        for name, value in entry.items():
            if isinstance(value, torch.Tensor) and value.ndim > 0 \
                    and not _state_fits(tuple(value.shape), tuple(param.shape)):
                raise ValueError(
                    f"{path}: optimizer state {name!r} of parameter {index} has shape "
                    f"{tuple(value.shape)}, the parameter has shape {tuple(param.shape)}")


def _check_scheduler_state(path: Path, saved: Any, scheduler: Any) -> None:
    """``ValueError`` unless every key of the saved scheduler state is one this scheduler has
    (a key the file lacks, added by a newer torch, keeps the scheduler's own value, as in
    PyTorch's ``load_state_dict``)."""
    if saved is None:
        raise ValueError(f"{path} has no scheduler state to load")
    kind = type(scheduler).__name__
    unknown = sorted(set(saved) - set(scheduler.state_dict()))
    if unknown:
        raise ValueError(f"{path} holds the state of another scheduler class: it has "
                         f"{unknown[:5]} that {kind} does not have")


def _check_scaler_state(path: Path, saved: Any, scaler: torch.amp.GradScaler) -> None:
    """``ValueError`` unless the saved state is a GradScaler's that this scaler can take: the
    same keys, a positive finite scale, a non-negative growth tracker. A disabled scaler
    (``GradScaler(enabled=False)``, chapter 07's choice when the dtype is not float16) has no
    state: it takes a disabled one's (``{}``) or none, and refuses an enabled one's, whose
    scale it would ignore."""
    if not scaler.is_enabled():
        if saved is None or saved == {}:
            return
        raise ValueError("scaler is disabled (GradScaler(enabled=False)): it would ignore the "
                         f"scale saved in {path}; pass an enabled GradScaler or scaler=None")
    if saved is None:
        raise ValueError(f"{path} has no scaler state to load (it was saved without scaler=); "
                         "resuming would restart the loss scale at its initial value")
    if saved == {}:
        raise ValueError(f"{path} holds the state of a disabled GradScaler (empty)")
    if set(saved) != set(SCALER_KEYS):
        raise ValueError(f"{path}: the scaler state has keys {sorted(saved)}, a GradScaler's "
                         f"are {sorted(SCALER_KEYS)}")
    scale, tracker = saved["scale"], saved["_growth_tracker"]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) \
            or not 0 < scale < float("inf"):
        raise ValueError(f"{path}: the scaler's scale is {scale!r}, expected a positive finite "
                         "number")
    if isinstance(tracker, bool) or not isinstance(tracker, int) or tracker < 0:
        raise ValueError(f"{path}: the scaler's growth tracker is {tracker!r}, expected a "
                         "non-negative int")


def _cpu_copy(value: Any) -> Any:
    """A deep copy of a state dict with every tensor copied to the CPU (a backup that costs
    no accelerator memory)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _cpu_copy(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_cpu_copy(v) for v in value)
    return copy.deepcopy(value)


def _snapshot(model: nn.Module, optimizer: Any, scheduler: Any,
              scaler: Any = None) -> dict[str, Any]:
    """Everything :func:`load_checkpoint` may change, to put back if applying fails."""
    return {"model": _cpu_copy(model.state_dict()),
            "optimizer": _cpu_copy(optimizer.state_dict()) if optimizer is not None else None,
            "scheduler": copy.deepcopy(scheduler.state_dict()) if scheduler is not None else None,
            "scaler": scaler.state_dict() if scaler is not None else None,
            "rng": rng_state()}


def _restore(snapshot: dict[str, Any], model: nn.Module, optimizer: Any, scheduler: Any,
             scaler: Any = None) -> None:
    """Put back what :func:`_snapshot` saved."""
    model.load_state_dict(snapshot["model"])
    if optimizer is not None:
        optimizer.load_state_dict(snapshot["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(snapshot["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(snapshot["scaler"])
    _apply_rng_state(snapshot["rng"])


def load_checkpoint(
    path: str | Path,
    *,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    map_location: str | torch.device = "cpu",
    restore_rng: bool = True,
    scaler: torch.amp.GradScaler | None = None,
    check_crc: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` into the given objects.

    Loads with ``weights_only=True`` (no code in the file can run). Returns
    ``{"step", "epoch", "extra"}``. Raises ``TypeError`` for arguments of the wrong type,
    ``FileNotFoundError`` for a missing file, ``ValueError`` for an empty, truncated or
    corrupt file (CRC32s are checked), for a file that is not such a checkpoint, for a device
    this machine lacks, and for a checkpoint whose model, optimizer, scheduler or RNG state
    does not fit the objects given (naming what differs). ``scaler`` (a GradScaler) gets the
    saved scale and growth tracker. Checking the CRC32s reads the whole file once more before
    ``torch.load`` reads it; ``check_crc=False`` skips that read (an archive written without
    CRC32s is loaded with an :class:`UncheckedArchiveWarning`). Everything is checked before
    anything changes; if applying fails all the same, every object is restored and the
    error is raised with a note saying so.

    The model is loaded into the module inside its wrappers (:func:`unwrap_model`), and the
    saved keys may carry a wrapper's prefix (``module.``, ``_orig_mod.``): a model saved from
    ``nn.DataParallel`` loads into the plain model. A lazy module not run yet is refused.
    A hyperparameter that the saved optimizer state lacks (a file from an older torch) is
    filled in by PyTorch as for any old state; one that this optimizer does not have is
    refused (the state of another optimizer class).

    ``restore_rng`` restores the generators of the process that saved: it is meant for a run
    of one process. In a run of several (DDP, chapter 10) where one rank saves, every rank
    would get that rank's state; pass ``restore_rng=False`` there and seed each rank.
    """
    require_bool("restore_rng", restore_rng)
    require_bool("check_crc", check_crc)
    _check_objects(model, optimizer, scheduler, scaler)
    path = _as_path(path)
    _check_map_location(map_location)
    target = unwrap_model(model)
    _check_initialized(target, "load the checkpoint into it")
    payload = _read_payload(path, map_location, check_crc)
    _check_payload(path, payload)
    state = _check_model_state(path, payload["model"], target)
    if optimizer is not None:
        _check_optimizer_state(path, payload["optimizer"], optimizer)
    if scheduler is not None:
        _check_scheduler_state(path, payload["scheduler"], scheduler)
    if scaler is not None:
        _check_scaler_state(path, payload["scaler"], scaler)
    if restore_rng:
        try:
            check_rng_state(payload["rng"])
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from err
    snapshot = _snapshot(target, optimizer, scheduler, scaler)
    try:
        target.load_state_dict(state)
        if optimizer is not None:
            optimizer.load_state_dict(payload["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(payload["scheduler"])
        if scaler is not None and scaler.is_enabled():
            scaler.load_state_dict(payload["scaler"])
        if restore_rng:
            _apply_rng_state(payload["rng"])
    except BaseException as err:
        _restore(snapshot, target, optimizer, scheduler, scaler)
        note = getattr(err, "add_note", None)  # Python 3.11+
        if note is not None:
            note(f"load_checkpoint({str(path)!r}) failed while applying it; model, "
                 "optimizer, scheduler, scaler and random generators were restored as they "
                 "were")
        raise
    return {"step": payload["step"], "epoch": payload["epoch"], "extra": payload["extra"]}
