"""Helpers for the executable PyTorch book: one module per concern, each taught in a chapter."""

from .claims import ClaimRecord, claim, claim_records
from .device import pick_device
from .env import (
    CudaDiagnosis,
    diagnose_cuda,
    environment_report,
    expected_torchvision,
    print_environment,
    read_cuda_facts,
    torchvision_matches,
)
from .exercises import check_exercise
from .gradcheck import GradError, autograd_grad, compare_gradients, numerical_grad
from .seed import set_seed

__all__ = [
    "ClaimRecord",
    "CudaDiagnosis",
    "GradError",
    "autograd_grad",
    "check_exercise",
    "claim",
    "claim_records",
    "compare_gradients",
    "diagnose_cuda",
    "environment_report",
    "expected_torchvision",
    "numerical_grad",
    "pick_device",
    "print_environment",
    "read_cuda_facts",
    "set_seed",
    "torchvision_matches",
]
