"""Choosing the one device a chapter runs on (taught in chapter 00)."""

from __future__ import annotations

import os

import torch

DEVICE_ENV_VAR = "BOOK_DEVICE"
_KNOWN_TYPES = ("cpu", "cuda", "mps")


def pick_device(override: str | None = None) -> torch.device:
    """Return the device the book's code should run on.

    Order: the ``override`` argument, then the ``BOOK_DEVICE`` environment variable
    (``cpu``, ``cuda``, ``cuda:1``, ``mps``), then ``cuda`` when it is usable, else ``cpu``.
    Asking for a device that this machine cannot use raises instead of silently falling
    back, so a GPU run never turns into a CPU run without saying so.
    """
    requested = override if override is not None else os.environ.get(DEVICE_ENV_VAR, "")
    if not isinstance(requested, str):
        raise TypeError(f"device override must be a string like 'cpu' or 'cuda', got {requested!r}")
    requested = requested.strip().lower()
    if not requested:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError as err:
        raise ValueError(
            f"{DEVICE_ENV_VAR}/override {requested!r} is not a device; "
            f"expected one of {', '.join(_KNOWN_TYPES)} (optionally with an index, e.g. cuda:0)"
        ) from err
    if device.type not in _KNOWN_TYPES:
        raise ValueError(
            f"device type {device.type!r} is not supported by the book; "
            f"expected one of {', '.join(_KNOWN_TYPES)}"
        )
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"{requested!r} was requested but torch.cuda.is_available() is False; "
                "run helpers.diagnose_cuda() to see why, or unset BOOK_DEVICE"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"{requested!r} was requested but only {torch.cuda.device_count()} "
                "CUDA device(s) are visible"
            )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise RuntimeError(f"{requested!r} was requested but MPS is not available here")
    return device


# CPU features that give bfloat16 arithmetic in hardware, as /proc/cpuinfo names them:
# x86 lists them on its "flags" lines, ARM (Linux) on its "Features" lines.
_BF16_FEATURES = {
    "flags": ("avx512_bf16", "amx_bf16"),  # x86: AVX512-BF16, AMX (recent Intel, AMD Zen 4)
    "features": ("bf16", "svebf16"),  # ARMv8.6 BF16 (Graviton3, Neoverse V1/N2, ...)
}


def cpu_bf16_features(cpuinfo: str | None = None) -> list[str]:
    """The processor's bfloat16 instructions found in ``/proc/cpuinfo`` (taught in chapter 07).

    Reads x86 ``flags`` lines (``avx512_bf16``, ``amx_bf16``) and ARM ``Features`` lines
    (``bf16``, ``svebf16``). ``cpuinfo`` is that file's text (for tests); by default the file
    is read, and a system without it (macOS, Windows) gives ``[]``, which means "not found",
    not "absent": measure before relying on either answer.
    """
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return []
    if not isinstance(cpuinfo, str):
        raise TypeError(f"cpuinfo must be the text of /proc/cpuinfo, got {type(cpuinfo).__name__}")
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        wanted = _BF16_FEATURES.get(key.strip().lower())
        if sep and wanted:
            found.update(set(value.split()) & set(wanted))
    return sorted(found)
