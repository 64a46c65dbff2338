import importlib.metadata
import os
import stat

import pytest
import torch

import helpers.env
from helpers import (
    diagnose_cuda,
    diagnose_torchvision,
    environment_report,
    expected_torchvision,
    installed_torchvision,
    read_cuda_facts,
    torchvision_matches,
)
from helpers.env import (
    nvidia_driver_version,
)


def test_cpu_wheel():
    d = diagnose_cuda(None, False, "550.54")
    assert d.case == "cpu-wheel"
    assert "550.54" in d.summary and "index-url" in d.advice


def test_cpu_wheel_without_a_driver_is_consistent():
    """A laptop, a Mac or a CI runner: no advice to reinstall a CUDA wheel (review 00 #1)."""
    d = diagnose_cuda(None, False, None)
    assert d.case == "cpu-wheel"
    assert "consistent" in d.summary and d.advice.startswith("nothing, unless")
    assert "index-url" not in d.advice and "driver first" in d.advice


def test_cuda_wheel_with_a_driver_does_not_exonerate_the_wheel_it_may_replace():
    """The advice may be a wheel for an older CUDA, so the summary must not say the wheel
    is not the problem; it names the version pair instead (review 00 #4)."""
    d = diagnose_cuda("13.0", False, "550.54")
    assert "not the problem" not in d.summary
    assert "installed correctly" in d.summary and "may not match" in d.summary
    assert "580" in d.advice and "older CUDA" in d.advice
    assert "not the problem" in diagnose_cuda("13.0", False, None).summary


def test_cuda_ready():
    assert diagnose_cuda("12.6", True, "560.35").case == "cuda-ready"


def test_cuda_wheel_without_driver():
    d = diagnose_cuda("12.6", False, None)
    assert d.case == "driver-or-device"
    assert "nvidia-smi" in d.summary and "driver" in d.advice


def test_cuda_wheel_with_old_driver_names_both_versions():
    d = diagnose_cuda("12.8", False, "470.57")
    assert d.case == "driver-or-device"
    assert "12.8" in d.advice and "470.57" in d.advice


def test_str_shows_case_and_advice():
    text = str(diagnose_cuda(None, False, None))
    assert text.startswith("[cpu-wheel]") and "what to do" in text


def test_inconsistent_facts_are_refused():
    with pytest.raises(ValueError, match="inconsistent"):
        diagnose_cuda(None, True, "550.54")


@pytest.mark.parametrize("bad", ["twelve", "", 12.4])
def test_bad_cuda_build(bad):
    with pytest.raises(ValueError, match="cuda_build"):
        diagnose_cuda(bad, False, None)


def test_bad_is_available_and_driver_types():
    with pytest.raises(TypeError, match="is_available"):
        diagnose_cuda("12.6", "False", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="driver_version"):
        diagnose_cuda("12.6", False, 550)  # type: ignore[arg-type]


def test_real_facts_match_the_installed_build():
    facts = read_cuda_facts()
    assert facts["cuda_build"] == torch.version.cuda
    assert facts["is_available"] == torch.cuda.is_available()
    diagnose_cuda(**facts)  # the real facts are always a valid input


def _fake_nvidia_smi(tmp_path, body):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


def test_driver_version_read_from_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, "echo 550.54.15"))
    assert nvidia_driver_version() == "550.54.15"


def test_failing_nvidia_smi_means_no_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, "exit 9"))
    assert nvidia_driver_version() is None


def test_missing_nvidia_smi_means_no_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert nvidia_driver_version() is None


@pytest.mark.parametrize(
    "torch_version, expected",
    [("2.0.1", "0.15"), ("2.5.1+cu124", "0.20"), ("2.14.1", "0.29"), ("1.13.1", "0.14"),
     ("1.3.0", "0.4")],
)
def test_expected_torchvision(torch_version, expected):
    assert expected_torchvision(torch_version) == expected


def test_torchvision_matches():
    assert torchvision_matches("2.5.1+cu124", "0.20.1+cu124")
    assert not torchvision_matches("2.5.1", "0.19.0")


@pytest.mark.parametrize("bad", ["latest", "", "v2.1"])
def test_bad_versions(bad):
    with pytest.raises(ValueError, match="version"):
        expected_torchvision(bad)
    with pytest.raises(ValueError, match="version"):
        torchvision_matches("2.5.1", bad)


def test_unknown_major_and_wrong_type():
    with pytest.raises(ValueError, match="no known torchvision pairing"):
        expected_torchvision("3.0.0")
    with pytest.raises(ValueError, match="no known torchvision pairing"):
        expected_torchvision("1.2.0")  # shipped with torchvision 0.4, not 0.3: no rule before 1.3
    with pytest.raises(TypeError):
        expected_torchvision(2.5)  # type: ignore[arg-type]


def test_environment_report_states_the_essentials(monkeypatch):
    monkeypatch.setenv("BOOK_DEVICE", "cpu")
    report = environment_report()
    assert report["torch"] == torch.__version__
    assert report["torch.version.cuda"] == str(torch.version.cuda)
    assert report["BOOK_DEVICE"] == "cpu"
    import torchvision  # the installed pair is reported, whether it matches or not

    installed = installed_torchvision()  # from metadata, which may omit the +cu130 tag
    assert installed and torchvision.__version__.split("+")[0] == installed.split("+")[0]
    matches = torchvision_matches(torch.__version__, installed)
    assert report["torchvision"].startswith(installed)
    assert ("(matches:" in report["torchvision"]) == matches
    assert ("(MISMATCH:" in report["torchvision"]) == (not matches)
    assert os.cpu_count() and int(report["cpu threads (torch)"]) >= 1


def test_environment_report_on_a_mismatched_pair(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.15.0")
    monkeypatch.setattr(helpers.env, "installed_torchvision", lambda: "0.29.2")
    line = environment_report()["torchvision"]
    assert line == "0.29.2 (MISMATCH: torch 2.15.0 expects torchvision 0.30.x)", line
    monkeypatch.setattr(torch, "__version__", "3.0.0")  # no known rule: reported, no error
    assert "pairing unknown" in environment_report()["torchvision"]
    monkeypatch.setattr(helpers.env, "installed_torchvision", lambda: "nightly")
    assert "pairing unknown" in environment_report()["torchvision"]  # unreadable: no error
    monkeypatch.setattr(helpers.env, "installed_torchvision", lambda: None)
    assert environment_report()["torchvision"] == "not installed"


def test_installed_torchvision_without_the_package(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert installed_torchvision() is None
    text = diagnose_torchvision("2.15.0+cu128", None)
    assert "not installed" in text and 'pip install "torch==2.15.0" "torchvision==0.30.*"' in text


def test_last_verified_line():
    from helpers import last_verified

    line = last_verified("cpu")
    assert line.startswith("Last verified: 20") and " UTC on cpu (" in line
    assert f"torch {torch.__version__}" in line and "Python 3." in line
    with pytest.raises(RuntimeError):
        last_verified("not-a-device")


NVIDIA_SMI_TWO_GPUS = """\
if [ "$1" = "--query-gpu=driver_version" ] && [ "$2" = "--format=csv,noheader" ]; then
  printf '570.124.06\\n570.124.06\\n'
else
  echo "unexpected arguments: $*" >&2; exit 2
fi"""


def test_read_cuda_facts_on_a_cuda_machine(tmp_path, monkeypatch):
    """Each fact comes from its own source: the build, the runtime check, and the first line
    of nvidia-smi's CSV answer (one line per GPU)."""
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, NVIDIA_SMI_TWO_GPUS))
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "xpu", None)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    facts = read_cuda_facts()
    assert facts == {"cuda_build": "12.8", "is_available": True, "driver_version": "570.124.06",
                     "hip_build": None, "xpu_build": None, "mps_built": False}
    assert diagnose_cuda(**facts).case == "cuda-ready"


def test_read_cuda_facts_on_a_cpu_wheel_without_a_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "xpu", None)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    facts = read_cuda_facts()
    assert facts == {"cuda_build": None, "is_available": False, "driver_version": None,
                     "hip_build": None, "xpu_build": None, "mps_built": False}
    assert diagnose_cuda(**facts).case == "cpu-wheel"


def test_read_cuda_facts_on_a_rocm_wheel(tmp_path, monkeypatch):
    """A ROCm wheel: torch.version.cuda is None, torch.version.hip is set, torch.cuda works."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi on an AMD machine
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    facts = read_cuda_facts()
    assert facts["hip_build"] == "6.2.41133"
    ready = diagnose_cuda(**facts)  # not refused as inconsistent: the CPU-wheel rule is CUDA's
    assert ready.case == "cuda-ready" and "ROCm 6.2.41133" in ready.summary
    report = environment_report()
    assert report["torch.version.hip"] == "6.2.41133"


def test_read_cuda_facts_on_an_xpu_or_mps_build(tmp_path, monkeypatch):
    """A build without CUDA is not always a CPU-only one (review 00 #9): an XPU build sets
    torch.version.xpu, a macOS build has MPS; neither is diagnosed as 'the CPU runs the code'."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "xpu", "20250101")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: False)
    facts = read_cuda_facts()
    assert facts["xpu_build"] == "20250101" and facts["mps_built"] is False
    xpu = diagnose_cuda(**facts)
    assert xpu.case == "other-accelerator" and "XPU" in xpu.summary and "xpu" in xpu.advice
    assert "CPU-only" not in xpu.summary and "the CPU runs the code" not in xpu.summary
    assert environment_report()["torch.version.xpu"] == "20250101"
    monkeypatch.setattr(torch.version, "xpu", None)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    mps = diagnose_cuda(**read_cuda_facts())
    assert mps.case == "other-accelerator" and "MPS" in mps.summary and "mps" in mps.advice
    assert diagnose_cuda(None, False, "550.54", mps_built=False).case == "cpu-wheel"
    with pytest.raises(ValueError, match="inconsistent"):
        diagnose_cuda(None, True, None, xpu_build="20250101")


def test_rocm_wheel_without_a_gpu_points_at_the_driver():
    d = diagnose_cuda(None, False, None, hip_build="6.2")
    assert d.case == "driver-or-device" and "rocm-smi" in d.advice
    with pytest.raises(ValueError, match="inconsistent"):
        diagnose_cuda("12.6", True, None, hip_build="6.2")
    with pytest.raises(ValueError, match="hip_build"):
        diagnose_cuda(None, True, None, hip_build="rocm")


def test_diagnose_torchvision_on_the_newest_torch_and_the_previous_torchvision():
    """What `pip install torch torchvision` resolved when torch 2.15.0 came before 0.30."""
    text = diagnose_torchvision("2.15.0", "0.29.2")
    assert text.startswith("MISMATCH: torch 2.15.0 with torchvision 0.29.2")
    assert "expects torchvision 0.30.x" in text
    assert "torchvision::nms" in text and "imports" in text  # honest: it may import
    assert 'pip install "torch==2.15.0" "torchvision==0.30.*"' in text  # the pairing one
    assert 'pip install "torch==2.14.*" "torchvision==0.29.*"' in text  # or the older pair


def test_diagnose_torchvision_says_when_the_import_fails_and_why():
    """A torchvision whose compiled library does not load fails at import with 'operator
    torchvision::nms does not exist' (review 00 #3): the message says so, and how to see why."""
    text = diagnose_torchvision("2.15.0", "0.29.2")
    assert "import fine and still fail, at import" not in text
    assert "fails at import" in text and "TORCHVISION_WARN_WHEN_EXTENSION_LOADING_FAILS=1" in text


def test_diagnose_torchvision_keeps_the_wheel_index():
    text = diagnose_torchvision("2.15.0+cu128", "0.29.2+cu128")
    assert text.count("--index-url https://download.pytorch.org/whl/cu128") == 2
    builds = diagnose_torchvision("2.14.1+cu130", "0.29.1+cpu")  # right versions, two indexes
    assert builds.startswith("MISMATCH") and "cu130 build" in builds and "cpu build" in builds


@pytest.mark.parametrize("torch_version, torchvision_version", [
    ("2.5.1+cu124", "0.20.1+cu124"), ("2.14.1", "0.29.1"), ("2.14.1+cpu", "0.29.1"),
    ("1.13.1", "0.14.1")])
def test_diagnose_torchvision_on_a_matching_pair(torch_version, torchvision_version):
    text = diagnose_torchvision(torch_version, torchvision_version)
    assert "they pair" in text and "MISMATCH" not in text and "pip install" not in text


def test_diagnose_torchvision_on_an_unknown_future_torch():
    text = diagnose_torchvision("3.0.0", "0.31.0")
    assert "no known pairing" in text and "MISMATCH" not in text


@pytest.mark.parametrize("bad", ["latest", "", "v2.1"])
def test_diagnose_torchvision_refuses_what_is_not_a_version(bad):
    with pytest.raises(ValueError, match="torch_version: not a version"):
        diagnose_torchvision(bad, "0.20.1")
    with pytest.raises(ValueError, match="torchvision_version: not a version"):
        diagnose_torchvision("2.5.1", bad)
    with pytest.raises(TypeError, match="torchvision_version must be a string"):
        diagnose_torchvision("2.5.1", 0.2)  # type: ignore[arg-type]


def test_environment_report_on_a_python_that_does_not_fit(monkeypatch, capsys):
    monkeypatch.setattr(helpers.env, "torch_python_metadata", lambda: (">=3.99", ("3.99",)))
    assert environment_report()["torch Requires-Python"] == ">=3.99 (does-not-fit)"
    helpers.env.print_environment()
    out = capsys.readouterr().out
    assert "[python: does-not-fit]" in out and "venv" in out
    monkeypatch.setattr(helpers.env, "torch_python_metadata", lambda: ("latest", ()))
    assert environment_report()["torch Requires-Python"] == "latest (unknown)"  # no error
    helpers.env.print_environment()
    assert "[python: unknown]" in capsys.readouterr().out


def test_last_verified_names_the_mac_for_mps(monkeypatch):
    """An MPS run names the chip and macOS, not the CPU's thread count (torch.device("mps")
    needs no Mac: the line is built from the names alone)."""
    from helpers import env

    monkeypatch.setattr(env, "apple_chip", lambda: "Apple M2 Pro")
    monkeypatch.setattr(env.platform, "mac_ver", lambda: ("14.5", ("", "", ""), "arm64"))
    line = env.last_verified("mps")
    assert " UTC on mps (Apple M2 Pro, macOS 14.5)\n" in line and "threads" not in line
    monkeypatch.setattr(env, "apple_chip", lambda: None)
    monkeypatch.setattr(env.platform, "mac_ver", lambda: ("", ("", "", ""), ""))
    assert " UTC on mps (Apple GPU, macOS ?)\n" in env.last_verified("mps")


def test_apple_chip_is_none_where_sysctl_cannot_tell(monkeypatch):
    from helpers import env

    def missing(*args, **kwargs):
        raise FileNotFoundError("sysctl")

    monkeypatch.setattr(env.subprocess, "run", missing)
    assert env.apple_chip() is None
