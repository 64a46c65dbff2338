"""What is installed, and why CUDA is or is not usable (taught in chapter 00, claim C38); the
report a bug report states. Whether this Python fits the installed torch (C46) is
``helpers.python_fit``'s."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

# helpers.env kept its public names when this part moved out (issue 46)
from helpers.python_fit import (  # noqa: F401
    _VERSION_RE,
    PythonDiagnosis,
    diagnose_python,
    python_satisfies,
    torch_python_metadata,
)


@dataclass(frozen=True)
class CudaDiagnosis:
    """The outcome of :func:`diagnose_cuda`: a case name, what it means and what to do."""

    case: str  # "cuda-ready", "cpu-wheel", "other-accelerator" or "driver-or-device"
    summary: str
    advice: str

    def __str__(self) -> str:
        return f"[{self.case}] {self.summary}\n  what to do: {self.advice}"


def diagnose_cuda(
    cuda_build: str | None, is_available: bool, driver_version: str | None,
    hip_build: str | None = None, xpu_build: str | None = None, mps_built: bool = False,
) -> CudaDiagnosis:
    """Tell apart the three reasons ``torch.cuda.is_available()`` is what it is.

    The inputs are what :func:`read_cuda_facts` reads on the machine: ``torch.version.cuda``
    (``None`` on a build without CUDA), ``torch.cuda.is_available()``, and the NVIDIA driver
    version that ``nvidia-smi`` reports (``None`` when there is no ``nvidia-smi`` or it fails);
    ``hip_build`` is ``torch.version.hip``, set (and ``torch.version.cuda`` ``None``) on a
    ROCm wheel for AMD GPUs, which ``torch.cuda`` drives too; ``xpu_build`` is
    ``torch.version.xpu`` (an Intel GPU build) and ``mps_built``
    ``torch.backends.mps.is_built()`` (a macOS build with Apple's GPUs): a build without CUDA
    that has one of these is "other-accelerator", not a CPU-only wheel. Passing them in, rather
    than reading them here, lets the chapter and the tests show every case on any machine.
    """
    if hip_build is not None:
        return _diagnose_rocm(cuda_build, is_available, hip_build)
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
        other = _other_accelerator(xpu_build, mps_built, driver_version)
        if other is not None:
            return other
        if not driver_version:  # a laptop, a CI runner: the CPU wheel is right there
            return CudaDiagnosis(
                "cpu-wheel",
                "this PyTorch is a CPU-only build (torch.version.cuda is None) and no NVIDIA "
                "driver is visible: consistent, the CPU runs the code",
                "nothing, unless this machine has an NVIDIA GPU: then install the NVIDIA "
                "driver first (nvidia-smi must list the GPU), then torch and torchvision "
                "together from a CUDA wheel index",
            )
        return CudaDiagnosis(
            "cpu-wheel",
            "this PyTorch is a CPU-only build (torch.version.cuda is None) although an "
            f"NVIDIA driver {driver_version} is present",
            "reinstall torch from a CUDA wheel index that has your torch release (e.g. "
            "--index-url https://download.pytorch.org/whl/cu130), torch and torchvision "
            "together; "
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
        detail = ("nvidia-smi is missing or fails, so no NVIDIA driver or GPU is visible; the "
                  "wheel is not the problem")
        advice = (
            "run nvidia-smi: install or repair the NVIDIA driver, or move to a machine with "
            "a GPU (on Colab: Runtime > Change runtime type > GPU)"
        )
    else:
        detail = (f"the driver {driver_version} is there, but torch cannot use it; the wheel "
                  "is installed correctly, but its CUDA version and the driver may not match, "
                  "or the device is hidden")
        advice = (
            f"the CUDA {cuda_build} runtime in the wheel may need a newer driver than "
            f"{driver_version} (on Linux CUDA 12.x needs driver 525 or newer, 13.x 580 or newer): "
            "update the driver or install a wheel for an older CUDA; also "
            "check CUDA_VISIBLE_DEVICES and that the GPU is not taken by a container limit"
        )
    return CudaDiagnosis(
        "driver-or-device",
        f"the wheel has CUDA {cuda_build}, yet CUDA is not available: {detail}",
        advice,
    )


def _other_accelerator(xpu_build: str | None, mps_built: bool,
                       driver_version: str | None) -> CudaDiagnosis | None:
    """:func:`diagnose_cuda` for a build without CUDA made for Intel (XPU) or Apple (MPS) GPUs."""
    if xpu_build is not None and not isinstance(xpu_build, str):
        raise TypeError(f"xpu_build must be None or a string, got {xpu_build!r}")
    if not isinstance(mps_built, bool):
        raise TypeError(f"mps_built must be a bool, got {type(mps_built).__name__}")
    if xpu_build:
        backend = (f"an XPU build for Intel GPUs (torch.version.xpu {xpu_build})",
                   "use device 'xpu' (torch.xpu.is_available() says whether it works here)")
    elif mps_built:
        backend = ("a build with Apple's GPU backend, MPS",
                   "use device 'mps' (torch.backends.mps.is_available() says whether it works "
                   "here; the book's pick_device() takes it with BOOK_DEVICE=mps)")
    else:
        return None
    nvidia = (f"; for the NVIDIA GPU of driver {driver_version}, install torch and torchvision "
              "together from a CUDA wheel index" if driver_version else "")
    return CudaDiagnosis(
        "other-accelerator",
        f"this PyTorch has no CUDA in it (torch.version.cuda is None): it is {backend[0]}, "
        "which torch.cuda does not drive",
        backend[1] + nvidia)


def _diagnose_rocm(cuda_build: str | None, is_available: bool, hip_build: str) -> CudaDiagnosis:
    """:func:`diagnose_cuda` for a ROCm wheel (``torch.version.hip`` set)."""
    if not isinstance(hip_build, str) or not _VERSION_RE.match(hip_build):
        raise ValueError(f"hip_build must be None or a version such as '6.2', got {hip_build!r}")
    if cuda_build is not None:
        raise ValueError("inconsistent facts: a ROCm wheel (hip_build set) has cuda_build=None, "
                         f"got {cuda_build!r}")
    if not isinstance(is_available, bool):
        raise TypeError(f"is_available must be a bool, got {type(is_available).__name__}")
    if is_available:
        return CudaDiagnosis(
            "cuda-ready", f"ROCm {hip_build} build and a usable AMD GPU (torch.cuda drives it; "
            "torch.version.cuda is None on ROCm)",
            "nothing: use helpers.pick_device() and move models and tensors with .to(device)")
    return CudaDiagnosis(
        "driver-or-device",
        f"the wheel has ROCm {hip_build}, yet no GPU is available; the wheel is not the problem",
        "run rocm-smi: install or repair the AMD ROCm driver, check that this GPU is supported "
        "by ROCm, and check HIP_VISIBLE_DEVICES and container limits")


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
    """The facts :func:`diagnose_cuda` needs, read from this machine."""
    return {
        "cuda_build": torch.version.cuda,
        "is_available": torch.cuda.is_available(),
        "driver_version": nvidia_driver_version(),
        "hip_build": getattr(torch.version, "hip", None),
        "xpu_build": getattr(torch.version, "xpu", None),
        "mps_built": torch.backends.mps.is_built(),
    }


def expected_torchvision(torch_version: str) -> str:
    """The torchvision ``major.minor`` released together with a torch version.

    The pairing has followed one rule since torch 1.3: torchvision ``0.(minor + 1)`` for
    torch ``1.minor`` and ``0.(minor + 15)`` for torch ``2.minor`` (2.0 ↔ 0.15, 2.5 ↔ 0.20).
    Before 1.3 it did not (torch 1.2 came with torchvision 0.4), so those are refused.
    """
    if not isinstance(torch_version, str):
        raise TypeError(f"torch_version must be a string, got {type(torch_version).__name__}")
    match = _VERSION_RE.match(torch_version.strip())
    if not match:
        raise ValueError(f"not a version string: {torch_version!r} (expected e.g. '2.5.1+cu124')")
    major, minor = int(match[1]), int(match[2])
    if major == 1 and minor >= 3:  # 1.3 <-> 0.4.1; 1.0-1.2 shipped 0.2, 0.3, 0.4: no rule
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


def _paired_torch(torchvision_version: str) -> str | None:
    """The torch ``major.minor`` released with a torchvision ``0.minor`` (the rule reversed)."""
    match = _VERSION_RE.match(torchvision_version)
    if not match or match[1] != "0":
        return None
    minor = int(match[2])
    if minor >= 15:
        return f"2.{minor - 15}"
    return f"1.{minor - 1}" if minor >= 4 else None  # the rule starts at 1.3 <-> 0.4


def _local_build(version: str) -> str | None:
    """The wheel's local build tag (``cu128``, ``cpu``, ``rocm6.2``), or ``None`` without one."""
    return version.split("+", 1)[1] if "+" in version else None


def installed_torchvision() -> str | None:
    """The installed torchvision's version, read from its package metadata without importing
    it (a torchvision from another torch release can fail at import); ``None`` if absent."""
    try:
        return importlib.metadata.version("torchvision")
    except importlib.metadata.PackageNotFoundError:
        return None


def diagnose_torchvision(torch_version: str, torchvision_version: str | None) -> str:
    """Say whether an installed torch and torchvision belong together and, if not, what to do.

    Chapter 00 shows it on the reader's own pair (``torch.__version__`` and
    :func:`installed_torchvision`, ``None`` when torchvision is not installed): it reports, it
    never fails because of the environment. A mismatch is reported with the fix (one pip
    command for both, from one index); an unknown future pairing is reported as unknown, not
    guessed. Raises ``TypeError`` for a non-string and ``ValueError`` for a string that is not
    a version.
    """
    if torchvision_version is None and isinstance(torch_version, str) \
            and _VERSION_RE.match(torch_version.strip()):
        try:
            wanted = f' "torchvision=={expected_torchvision(torch_version)}.*"'
        except ValueError:
            wanted = " torchvision"
        return (f"torchvision is not installed (torch {torch_version.strip()}); to add it, "
                f'install it with torch in one command: pip install '
                f'"torch=={torch_version.strip().split("+")[0]}"{wanted}')
    for name, value in (("torch_version", torch_version),
                        ("torchvision_version", torchvision_version)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        if not _VERSION_RE.match(value.strip()):
            raise ValueError(f"{name}: not a version string: {value!r} "
                             "(expected e.g. '2.5.1+cu124' or '0.20.1')")
    torch_version, torchvision_version = torch_version.strip(), torchvision_version.strip()
    pair = f"torch {torch_version} with torchvision {torchvision_version}"
    try:
        expected = expected_torchvision(torch_version)
    except ValueError:
        return (f"{pair}: no known pairing rule for this torch; check the compatibility table "
                "at https://github.com/pytorch/vision#installation, and install torch and "
                "torchvision together in one pip command from one index")
    build = _local_build(torch_version)
    index = (f" --index-url https://download.pytorch.org/whl/{build}" if build
             else "  (from the index torch came from)")
    tv_match = _VERSION_RE.match(torchvision_version)
    installed = f"{tv_match[1]}.{tv_match[2]}"
    tv_build = _local_build(torchvision_version)
    if installed == expected and (build is None or tv_build is None or build == tv_build):
        return f"{pair}: they pair (torch {torch_version} expects torchvision {expected}.x)"
    if installed == expected:
        problem = (f"the versions pair, but torch is the {build} build and torchvision the "
                   f"{tv_build} build")
        fix = f'pip install --force-reinstall "torch=={torch_version.split("+")[0]}" ' \
              f'"torchvision=={torchvision_version.split("+")[0]}"{index}'
    else:
        problem = f"torch {torch_version} expects torchvision {expected}.x"
        paired = _paired_torch(torchvision_version)
        fix = (f'pip install "torch=={torch_version.split("+")[0]}" '
               f'"torchvision=={expected}.*"{index}')
        if paired is not None:
            fix += (f"\n    or, if torchvision {expected} is not released yet, the torch that "
                    f'pairs with this torchvision, in one command: pip install "torch=={paired}.*" '
                    f'"torchvision=={installed}.*"{index}')
    return (f"MISMATCH: {pair}: {problem}. A mismatched pair fails at import with "
            "'operator torchvision::nms does not exist' when torchvision's compiled library "
            "does not load (TORCHVISION_WARN_WHEN_EXTENSION_LOADING_FAILS=1 shows why), or "
            "imports and is still a pair nobody released or tested together.\n"
            f"  what to do: install torch and torchvision together, in one pip command from "
            f"one index:\n    {fix}")


def environment_report() -> dict[str, str]:
    """Versions, build and hardware facts that a bug report or a benchmark should state."""
    tv_version = installed_torchvision()  # read without importing torchvision
    if tv_version is None:
        tv = "not installed"
    else:
        try:
            verdict = diagnose_torchvision(torch.__version__, tv_version)
        except ValueError:  # a version string the rule cannot read: report, do not fail
            verdict = "unknown"
        if verdict.startswith("MISMATCH"):  # the first sentence: what does not pair
            tv = f"{tv_version} (MISMATCH: {verdict.split(': ', 2)[2].split('. ')[0]})"
        elif "they pair" in verdict:
            tv = f"{tv_version} (matches: {verdict.split('(', 1)[1]}"
        else:
            tv = f"{tv_version} (pairing unknown for torch {torch.__version__})"
    requires, listed = torch_python_metadata()
    try:
        fit = diagnose_python(platform.python_version(), requires, listed).case
    except ValueError:  # a spec this check cannot read: report, do not fail
        fit = "unknown"
    facts = read_cuda_facts()
    report = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "torch Requires-Python": f"{requires or '(not in the metadata)'} ({fit})",
        "torchvision": tv,
        "torch.version.cuda": str(facts["cuda_build"]),
        **({"torch.version.hip": str(facts["hip_build"])} if facts["hip_build"] else {}),
        **({"torch.version.xpu": str(facts["xpu_build"])} if facts["xpu_build"] else {}),
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
    try:
        print(diagnose_python(platform.python_version(), *torch_python_metadata()))
    except ValueError as err:  # the reader's environment is diagnosed, never asserted
        print(f"[python: unknown] torch's Requires-Python cannot be read here: {err}")


def apple_chip() -> str | None:
    """The Mac's chip (``"Apple M2 Pro"``) from ``sysctl``, or None where it cannot be read."""
    try:
        found = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                               capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def last_verified(device: torch.device | str) -> str:
    """The line each chapter shows under its title: when and on what it was executed (the
    GPU's name for CUDA and XPU, the Mac's chip for MPS, the thread count for the CPU)."""
    device = torch.device(device)
    where = str(device)
    if device.type == "cuda":
        where += f" ({torch.cuda.get_device_name(device)})"
    elif device.type == "xpu":
        where += f" ({torch.xpu.get_device_name(device)})"
    elif device.type == "mps":
        where += f" ({apple_chip() or 'Apple GPU'}, macOS {platform.mac_ver()[0] or '?'})"
    else:
        where += f" ({torch.get_num_threads()} threads)"
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"Last verified: {now} on {where}\n"
            f"               torch {torch.__version__}, Python {platform.python_version()}")
