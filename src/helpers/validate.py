"""Argument checks shared by the helpers: one place for the rule, one wording of the error."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch


def first_line(err: BaseException) -> str:
    """``Type: first line of the message`` (an empty message is fine), for error messages
    that say why a value was refused."""
    lines = str(err).splitlines()
    return f"{type(err).__name__}: {lines[0][:200] if lines else ''}"


def require_bool(name: str, value: object) -> bool:
    """``value`` if it is a real bool; a ``TypeError`` naming ``name`` otherwise.

    A string such as ``"no"`` is truthy: accepted silently it would do the opposite of what
    it says (``create_run_dir(overwrite="no")`` would delete the run).
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def require_int(name: str, value: object, minimum: int | None = None) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``; else a clear error.

    ``TypeError`` for another type (``1.0``, ``"1"``, ``True``), ``ValueError`` below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


_PUBLIC_NAMES = {torch.Tensor: "torch.Tensor", torch.nn.Module: "nn.Module",
                 torch.optim.Optimizer: "torch.optim.Optimizer"}


def require_instance(name: str, value: Any, expected: type | tuple[type, ...]) -> Any:
    """``value`` if it is an instance of ``expected``; a ``TypeError`` naming ``name``, the
    expected type(s) and the type it got otherwise (instead of an ``AttributeError`` deeper in)."""
    if not isinstance(value, expected):
        types = expected if isinstance(expected, tuple) else (expected,)
        wanted = " or ".join(_PUBLIC_NAMES.get(t, t.__qualname__) for t in types)
        raise TypeError(f"{name} must be a {wanted}, got {type(value).__name__}")
    return value


def require_callable(name: str, value: object) -> Callable:
    """``value`` if it can be called; a ``TypeError`` naming ``name`` otherwise."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def require_iterable(name: str, value: object) -> Iterable:
    """``value`` if it can be iterated over (a DataLoader, a list of batches, or anything with
    ``__getitem__``); a ``TypeError`` naming ``name`` otherwise. It is not iterated here: that
    would start a DataLoader's workers."""
    if not isinstance(value, Iterable) and not hasattr(type(value), "__getitem__"):
        raise TypeError(f"{name} must be iterable (e.g. a DataLoader or a list of batches), "
                        f"got {type(value).__name__}")
    return value


def require_loader(name: str, value: object) -> Iterable:
    """``value`` if it can serve as a loader of batches (:func:`require_iterable`) and is not a
    ``Dataset``: iterating a dataset yields one sample at a time, unbatched, so a training
    loop given one would take a step per sample without any error. ``TypeError`` naming
    ``name`` otherwise (chapters 02 and 03)."""
    from torch.utils.data import Dataset  # here: most helpers need no torch.utils.data

    if isinstance(value, Dataset):
        raise TypeError(f"{name} is a {type(value).__name__}, a Dataset: iterating it gives one "
                        "unbatched sample at a time; wrap it in "
                        "DataLoader(dataset, batch_size=...)")
    return require_iterable(name, value)


def require_path(name: str, value: object) -> Path:
    """``value`` as a :class:`~pathlib.Path` if it is a ``str`` or path-like; a ``TypeError``
    naming ``name`` otherwise."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), got {type(value).__name__}")
    return Path(value)


def require_device(name: str, value: object) -> torch.device:
    """``value`` as a :class:`torch.device` if it names a device this machine has.

    Accepts a ``torch.device`` or a string such as ``"cpu"``, ``"cuda:0"``. A bare int is
    refused (``TypeError``): ``5`` is not ``"cuda:5"`` on a machine without a GPU. A CUDA or MPS
    device that is not available here, or a CUDA index past ``torch.cuda.device_count()``, is a
    ``ValueError``: a result must never be labelled with a device it did not run on.
    """
    if not isinstance(value, (torch.device, str)):
        raise TypeError(f"{name} must be a torch.device or a string such as 'cpu' or 'cuda:0', "
                        f"got {type(value).__name__} {value!r}")
    try:
        device = torch.device(value)
    except RuntimeError as err:
        raise ValueError(f"{name} {value!r} is not a device name (e.g. 'cpu', 'cuda:0')") from err
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{name} {str(device)!r} is not available: this machine has no "
                             "usable CUDA device")
        if device.index is not None and device.index >= count:
            raise ValueError(f"{name} {str(device)!r} is not available: only {count} CUDA "
                             f"device(s) (cuda:0 to cuda:{count - 1})")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name} 'mps' is not available on this machine")
    return device
