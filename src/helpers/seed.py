"""Reproducibility: seeding every random number generator a training script draws from, and
the fingerprint that says whether two runs are bit-identical (chapters 00 and 04)."""

from __future__ import annotations

import hashlib
import os
import random
import re

import numpy as np
import torch
from torch import nn

from .wrappers import unwrap_model

_MAX_SEED = 2**32 - 1  # NumPy's legacy global generator accepts seeds in [0, 2**32)


def needs_cublas_workspace_config(version: str | None = None) -> bool:
    """Whether deterministic mode on a GPU needs ``CUBLAS_WORKSPACE_CONFIG`` with this torch
    (``version``: ``torch.__version__`` by default; chapter 04). torch 2.9 and older raise on
    a cuBLAS matrix product without it; 2.10 removed that check (its wheels no longer carry the
    alert, checked on 2.9.1 and 2.10.0). A 2.10 pre-release (``2.10.0a0+git...``, a nightly or
    a vendor's build) may predate that change, so it counts as needing the variable, which
    costs nothing where it is not needed."""
    version = torch.__version__ if version is None else version
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?(?P<pre>(?:a|b|rc|\.dev)\w*)?(?:\+.*)?",
                         str(version))
    if match is None:
        raise ValueError(f"not a torch version: {version!r}")
    major, minor = int(match[1]), int(match[2])
    return (major, minor) < (2, 10) or ((major, minor) == (2, 10) and bool(match["pre"]))


def set_seed(seed: int, deterministic: bool = False) -> int:
    """Seed Python's ``random``, NumPy's global generator, torch on CPU and every CUDA device.

    Only the global generators: a ``np.random.default_rng()`` Generator (NumPy's advice over
    its legacy ``np.random.seed``) is not reached; make it as ``np.random.default_rng(seed)``
    (chapter 00). Returns the seed so that a caller can record it. This makes CPU runs
    repeatable. With ``deterministic=True`` it also asks for deterministic kernels (chapter 04,
    C16):
    ``torch.use_deterministic_algorithms(True)``, cuDNN's benchmark off and deterministic on,
    and, on torch 2.9 and older, ``CUBLAS_WORKSPACE_CONFIG`` for cuBLAS (those releases raise
    on a GPU matrix product in deterministic mode without it; PyTorch has long given each
    cuBLAS handle and stream a workspace of its own, and torch 2.10 removed the check that
    still demanded the variable, pytorch/pytorch#161749: see
    :func:`needs_cublas_workspace_config`); an operation with no
    deterministic version then raises. ``deterministic=False`` (the default) switches those
    settings back to PyTorch's defaults, also when the caller had turned them on:
    ``set_seed(seed)`` after ``torch.use_deterministic_algorithms(True)`` undoes it (chapter
    00 says so).
    """
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be a bool, got {deterministic!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} ({seed!r})")
    seed = int(seed)
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must be in [0, {_MAX_SEED}] (NumPy's range), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device in current PyTorch
    torch.cuda.manual_seed_all(seed)  # explicit, and harmless without a GPU
    if deterministic and needs_cublas_workspace_config():
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(deterministic)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = deterministic
    return seed


def fingerprint(model: nn.Module) -> str:
    """A short hash of every parameter's and persistent buffer's name, dtype, shape and raw
    bytes, in ``state_dict`` order (chapter 04); a buffer registered with
    ``persistent=False`` is not in the ``state_dict`` and not hashed. Bit-identical models
    have equal fingerprints; a model that differs in one bit, a dtype or a shape gets another
    one (barring a collision of the 64-bit hash). Any dtype is hashed by its bytes, bfloat16
    included (NumPy has none). A model wrapped by ``torch.compile``, ``DataParallel`` or
    ``DistributedDataParallel`` is hashed as the module inside, so that wrapping does not
    change its fingerprint (their ``state_dict`` keys carry ``_orig_mod.`` or ``module.``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"fingerprint needs an nn.Module, got {type(model).__name__}")
    model = unwrap_model(model)
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"fingerprint hashes tensors; state_dict entry {name!r} is a "
                            f"{type(tensor).__name__} (a module's extra state?)")
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]
