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
