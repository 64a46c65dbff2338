"""Helpers for the executable PyTorch book: one module per concern, each taught in a chapter."""

from .checkpoint import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    strip_compile_prefix,
    unwrap_compiled,
)
from .claims import ClaimRecord, claim, claim_records
from .data import (
    COLOR_NAMES,
    RangeStream,
    SequenceDataset,
    digits_split,
    make_color_images,
    pad_collate,
    worker_context,
)
from .device import cpu_bf16_features, pick_device
from .env import (
    CudaDiagnosis,
    PythonDiagnosis,
    diagnose_cuda,
    diagnose_python,
    diagnose_torchvision,
    environment_report,
    expected_torchvision,
    installed_torchvision,
    last_verified,
    print_environment,
    read_cuda_facts,
    torch_python_metadata,
    torchvision_matches,
)
from .exercises import check_exercise
from .experiment import (
    RunLogger,
    create_run_dir,
    load_config,
    read_metrics,
    read_tensorboard_scalars,
    save_config,
    start_run,
)
from .export import export_onnx, onnx_session, verify_onnx
from .glue import glue
from .gradcheck import GradError, autograd_grad, compare_gradients, numerical_grad
from .measure import MemoryReport, measure_memory, median_time, remeasure
from .monitor import GradNormRecorder, NaNGuard, has_nonfinite
from .seed import fingerprint, set_seed
from .slowdata import SlowDataset
from .train import History, StepInfo, accuracy, evaluate, fit, train_one_epoch

__all__ = [
    "glue",
    "COLOR_NAMES",
    "ClaimRecord",
    "CudaDiagnosis",
    "PythonDiagnosis",
    "GradError",
    "GradNormRecorder",
    "History",
    "MemoryReport",
    "NaNGuard",
    "RunLogger",
    "RangeStream",
    "SequenceDataset",
    "StepInfo",
    "accuracy",
    "autograd_grad",
    "check_exercise",
    "claim",
    "claim_records",
    "compare_gradients",
    "cpu_bf16_features",
    "create_run_dir",
    "diagnose_cuda",
    "diagnose_python",
    "diagnose_torchvision",
    "digits_split",
    "environment_report",
    "evaluate",
    "expected_torchvision",
    "export_onnx",
    "fingerprint",
    "fit",
    "installed_torchvision",
    "has_nonfinite",
    "last_verified",
    "load_checkpoint",
    "load_config",
    "make_color_images",
    "worker_context",
    "measure_memory",
    "median_time",
    "numerical_grad",
    "onnx_session",
    "pad_collate",
    "pick_device",
    "print_environment",
    "read_cuda_facts",
    "read_metrics",
    "read_tensorboard_scalars",
    "remeasure",
    "rng_state",
    "save_checkpoint",
    "save_config",
    "set_rng_state",
    "set_seed",
    "SlowDataset",
    "start_run",
    "torch_python_metadata",
    "strip_compile_prefix",
    "torchvision_matches",
    "train_one_epoch",
    "unwrap_compiled",
    "verify_onnx",
]
