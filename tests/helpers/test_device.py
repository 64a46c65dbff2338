import pytest
import torch

from helpers import pick_device
from helpers.device import DEVICE_ENV_VAR


def test_default_is_cuda_exactly_when_available(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV_VAR, raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected


def test_default_without_cuda_is_cpu(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV_VAR, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device() == torch.device("cpu")


def test_environment_variable_overrides(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV_VAR, " CPU ")
    assert pick_device() == torch.device("cpu")


def test_argument_beats_environment(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV_VAR, "not-a-device")
    assert pick_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("bad", ["gpu0", "cuda:x", "tpu"])
def test_unknown_device_is_a_value_error(bad):
    with pytest.raises(ValueError, match="expected one of cpu, cuda, mps"):
        pick_device(bad)


def test_non_string_override_is_a_type_error():
    with pytest.raises(TypeError, match="must be a string"):
        pick_device(0)  # type: ignore[arg-type]


def test_cuda_requested_but_unavailable_raises(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="diagnose_cuda"):
        pick_device("cuda")


def test_cuda_index_out_of_range(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match="only 1 CUDA device"):
        pick_device("cuda:3")


# cpu_bf16_features: /proc/cpuinfo as x86 and ARM Linux write it

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme sse sse2 avx2 avx512f avx512_bf16 avx512_vnni
bugs\t\t: sysret_ss_attrs
processor\t: 1
flags\t\t: fpu vme sse sse2 avx2 avx512f avx512_bf16 avx512_vnni
"""
X86_WITHOUT = "processor\t: 0\nflags\t\t: fpu sse sse2 avx2 avx512f avx512_vnni\n"
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics sve svebf16 i8mm bf16 rng
CPU implementer\t: 0x41
"""
ARM_WITHOUT = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n"


def test_cpu_bf16_features_x86_flags():
    from helpers.device import cpu_bf16_features

    assert cpu_bf16_features(X86_CPUINFO) == ["avx512_bf16"]
    assert cpu_bf16_features(X86_WITHOUT) == []


def test_cpu_bf16_features_arm_features_line():
    from helpers.device import cpu_bf16_features

    assert cpu_bf16_features(ARM_CPUINFO) == ["bf16", "svebf16"]
    assert cpu_bf16_features(ARM_WITHOUT) == []


def test_cpu_bf16_features_ignores_other_lines():
    from helpers.device import cpu_bf16_features

    # a feature name elsewhere (a model name, a bugs line) is not an instruction set
    assert cpu_bf16_features("model name\t: bf16 amx_bf16 edition\nbugs\t: avx512_bf16\n") == []


def test_cpu_bf16_features_reads_this_machine():
    from helpers.device import cpu_bf16_features

    found = cpu_bf16_features()
    assert isinstance(found, list) and set(found) <= {"avx512_bf16", "amx_bf16", "bf16", "svebf16"}


def test_cpu_bf16_features_rejects_non_text():
    from helpers.device import cpu_bf16_features

    with pytest.raises(TypeError, match="cpuinfo"):
        cpu_bf16_features(b"flags : avx512_bf16")  # type: ignore[arg-type]
