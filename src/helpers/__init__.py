"""Helpers for the executable PyTorch book: one module per concern, each taught in a chapter.

``import helpers`` imports no submodule (and so not torch): a name is imported from its module
the first time it is used (PEP 562), so the book's tools that need only a torch-free module
(the exercise label rule in ``helpers.exercises``) start in a fraction of a second.
``from helpers import fit`` works as it always did.
"""

from __future__ import annotations

import importlib
from typing import Any

# glue is both a submodule and its function: bound here (torch-free) so that the name is the
# function whichever is imported first, `helpers.glue` the module or `from helpers import glue`.
from .glue import glue as glue

# Every public name, and the submodule that defines it: the one list of what helpers exports.
_EXPORTS: dict[str, str] = {
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "ClaimRecord": "claims",
    "claim": "claims",
    "claim_records": "claims",
    "COLOR_NAMES": "data",
    "RangeStream": "data",
    "SequenceDataset": "data",
    "digits_split": "data",
    "make_color_images": "data",
    "pad_collate": "data",
    "worker_context": "data",
    "cpu_bf16_features": "device",
    "pick_device": "device",
    "CudaDiagnosis": "env",
    "PythonDiagnosis": "python_fit",
    "diagnose_cuda": "env",
    "diagnose_python": "python_fit",
    "diagnose_torchvision": "env",
    "environment_report": "env",
    "expected_torchvision": "env",
    "installed_torchvision": "env",
    "last_verified": "env",
    "print_environment": "env",
    "read_cuda_facts": "env",
    "torch_python_metadata": "python_fit",
    "torchvision_matches": "env",
    "check_exercise": "exercises",
    "Explorer": "explore",
    "Slider": "explore",
    "RunLogger": "experiment",
    "create_run_dir": "experiment",
    "load_config": "experiment",
    "read_metrics": "experiment",
    "read_tensorboard_scalars": "experiment",
    "save_config": "experiment",
    "start_run": "experiment",
    "export_onnx": "export",
    "onnx_session": "export",
    "verify_onnx": "export",
    "glue": "glue",
    "GradError": "gradcheck",
    "autograd_grad": "gradcheck",
    "compare_gradients": "gradcheck",
    "numerical_grad": "gradcheck",
    "MemoryReport": "measure",
    "measure_memory": "measure",
    "median_time": "measure",
    "remeasure": "measure",
    "GradNormRecorder": "monitor",
    "NaNGuard": "monitor",
    "has_nonfinite": "monitor",
    "rng_state": "random_state",
    "set_rng_state": "random_state",
    "fingerprint": "seed",
    "needs_cublas_workspace_config": "seed",
    "set_seed": "seed",
    "SlowDataset": "slowdata",
    "History": "train",
    "StepInfo": "train",
    "accuracy": "train",
    "evaluate": "train",
    "fit": "train",
    "train_one_epoch": "train",
    "MemoryAfterReading": "workers",
    "NoisyDigits": "workers",
    "OwnRngAugmented": "workers",
    "PNGDataset": "workers",
    "TorchAugmented": "workers",
    "WhatTheWorkerSees": "workers",
    "private_dirty_kib": "workers",
    "reseed_dataset_rng": "workers",
    "usable_cpus": "workers",
    "strip_compile_prefix": "wrappers",
    "unwrap_compiled": "wrappers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import ``name`` from its submodule on first use (a submodule itself is imported too)."""
    module = _EXPORTS.get(name)
    if module is None:
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
