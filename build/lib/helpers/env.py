"""What is installed, and why CUDA is or is not usable (taught in chapter 00, claim C38)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class CudaDiagnosis:
    """The outcome of :func:`diagnose_cuda`: a case name, what it means and what to do."""

    case: str  # "cuda-ready", "cpu-wheel" or "driver-or-device"
    summary: str
    advice: str

    def __str__(self) -> str:
        return f"[{self.case}] {self.summary}\n  what to do: {self.advice}"


def diagnose_cuda(
    cuda_build: str | None, is_available: bool, driver_version: str | None
) -> CudaDiagnosis:
    """Tell apart the three reasons ``torch.cuda.is_available()`` is what it is.

    The inputs are what :func:`read_cuda_facts` reads on the machine: ``torch.version.cuda``
    (``None`` on a CPU-only wheel), ``torch.cuda.is_available()``, and the NVIDIA driver
    version that ``nvidia-smi`` reports (``None`` when there is no ``nvidia-smi`` or it fails).
    Passing them in, rather than reading them here, lets the chapter and the tests show every
    case on any machine.
    """
    bad_build = not isinstance(cuda_build, str) or not _VERSION_RE.match(cuda_build)
    if cuda_build is not None and bad_build:
        raise ValueError(f"cuda_build must be None or a version such as '12.4', got {cuda_build!r}")
    if not isinstance(is_available, bool):
        raise TypeError(f"is_available must be a bool, got {type(is_available).__name__}")
    if driver_version is not None and not isinstance(driver_version, str):
        raise TypeError(f"driver_version must be None or a string, got {driver_version!r}")
    if cuda_build is None:
        if is_available:
            raise ValueError(
                "inconsistent facts: a wheel without CUDA (cuda_build=None) cannot report "
                "is_available=True"
            )
        gpu_note = (
            f" although an NVIDIA driver {driver_version} is present"
            if driver_version
            else ""
        )
        return CudaDiagnosis(
            "cpu-wheel",
            f"this PyTorch is a CPU-only build (torch.version.cuda is None){gpu_note}",
            "reinstall torch from a CUDA wheel index (e.g. --index-url "
            "https://download.pytorch.org/whl/cu128), torch and torchvision together; "
            "no separate CUDA toolkit is needed, the wheel brings its runtime",
        )
    if is_available:
        return CudaDiagnosis(
            "cuda-ready",
            f"CUDA {cuda_build} build and a usable GPU"
            + (f" (driver {driver_version})" if driver_version else ""),
            "nothing: use helpers.pick_device() and move models and tensors with .to(device)",
        )
    if driver_version is None:
        detail = "nvidia-smi is missing or fails, so no NVIDIA driver or GPU is visible"
        advice = (
            "run nvidia-smi: install or repair the NVIDIA driver, or move to a machine with "
            "a GPU (on Colab: Runtime > Change runtime type > GPU)"
        )
    else:
        detail = f"the driver {driver_version} is there, but torch cannot use it"
        advice = (
            f"the CUDA {cuda_build} runtime in the wheel may need a newer driver than "
            f"{driver_version}: update the driver or install a wheel for an older CUDA; also "
            "check CUDA_VISIBLE_DEVICES and that the GPU is not taken by a container limit"
        )
    return CudaDiagnosis(
        "driver-or-device",
        f"the wheel has CUDA {cuda_build}, yet CUDA is not available: {detail}; the wheel is "
        "not the problem",
        advice,
    )


def nvidia_driver_version() -> str | None:
    """The driver version ``nvidia-smi`` reports, or ``None`` if it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None


def read_cuda_facts() -> dict[str, object]:
    """The three facts :func:`diagnose_cuda` needs, read from this machine."""
    return {
        "cuda_build": torch.version.cuda,
        "is_available": torch.cuda.is_available(),
        "driver_version": nvidia_driver_version(),
    }


def expected_torchvision(torch_version: str) -> str:
    """The torchvision ``major.minor`` released together with a torch version.

    The pairing has followed one rule since torch 1.x: torchvision ``0.(minor + 1)`` for
    torch ``1.minor`` and ``0.(minor + 15)`` for torch ``2.minor`` (2.0 ↔ 0.15, 2.5 ↔ 0.20).
    """
    if not isinstance(torch_version, str):
        raise TypeError(f"torch_version must be a string, got {type(torch_version).__name__}")
    match = _VERSION_RE.match(torch_version.strip())
    if not match:
        raise ValueError(f"not a version string: {torch_version!r} (expected e.g. '2.5.1+cu124')")
    major, minor = int(match[1]), int(match[2])
    if major == 1:
        return f"0.{minor + 1}"
    if major == 2:
        return f"0.{minor + 15}"
    raise ValueError(f"no known torchvision pairing for torch {torch_version!r}")


def torchvision_matches(torch_version: str, torchvision_version: str) -> bool:
    """Whether an installed torchvision belongs with the installed torch (chapter 00)."""
    match = _VERSION_RE.match(str(torchvision_version).strip())
    if not match:
        raise ValueError(f"not a version string: {torchvision_version!r}")
    return f"{match[1]}.{match[2]}" == expected_torchvision(torch_version)


def environment_report() -> dict[str, str]:
    """Versions, build and hardware facts that a bug report or a benchmark should state."""
    try:
        import torchvision

        tv_version = torchvision.__version__
        tv_note = "matches" if torchvision_matches(torch.__version__, tv_version) else "MISMATCH"
        tv = f"{tv_version} ({tv_note}: torch {torch.__version__} expects "
        tv += f"{expected_torchvision(torch.__version__)}.x)"
    except ImportError:
        tv = "not installed"
    facts = read_cuda_facts()
    report = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "torchvision": tv,
        "torch.version.cuda": str(facts["cuda_build"]),
        "cuda available": str(facts["is_available"]),
        "nvidia driver": str(facts["driver_version"]),
        "cpu threads (torch)": str(torch.get_num_threads()),
        "BOOK_DEVICE": os.environ.get("BOOK_DEVICE", "(unset)"),
    }
    if facts["is_available"]:
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        report["gpus"] = ", ".join(names)
        report["cudnn"] = str(torch.backends.cudnn.version())
    return report


def print_environment() -> None:
    """Print :func:`environment_report` as aligned lines, then the CUDA diagnosis."""
    report = environment_report()
    width = max(map(len, report))
    for key, value in report.items():
        print(f"{key:<{width}}  {value}")
    print(diagnose_cuda(**read_cuda_facts()))


def last_verified(device: torch.device | str) -> str:
    """The line each chapter shows under its title: when and on what it was executed."""
    device = torch.device(device)
    where = str(device)
    if device.type == "cuda":
        where += f" ({torch.cuda.get_device_name(device)})"
    else:
        where += f" ({torch.get_num_threads()} threads)"
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Last verified: {now} on {where}\n"
            f"               torch {torch.__version__}, Python {platform.python_version()}")
