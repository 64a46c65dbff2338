"""helpers.random_state: every generator's state saved and restored exactly, a bad state
refused before anything is set, a state on a device, MPS's generator (chapter 08)."""

import random

import numpy as np
import pytest
import torch
from torch import nn

from helpers import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from tests.helpers.checkpoint_support import (
    generators,
    make,
    move_generators_on,
    same,
)


def test_rng_state_round_trip_alone():
    state = rng_state()
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first
    with pytest.raises(ValueError, match="lacks"):
        set_rng_state({"torch": state["torch"]})


def test_set_rng_state_refuses_before_setting_anything():
    state = rng_state()
    move_generators_on()
    before = generators()
    with pytest.raises(ValueError, match="RNG state 'torch' is not a valid torch generator"):
        set_rng_state({**state, "torch": torch.zeros(5, dtype=torch.uint8)})
    with pytest.raises(ValueError, match="RNG state 'cuda' must be a list of uint8 tensors"):
        set_rng_state({**state, "cuda": "none"})
    assert same(generators(), before)
    with pytest.raises(TypeError, match="state must be a dict returned by rng_state"):
        set_rng_state(None)


real_generator = torch.Generator


class OnDevice(torch.Tensor):
    """Stands in for a tensor that torch.load put on a GPU: numpy() refuses it as it refuses a
    CUDA tensor, and cpu() gives the plain CPU tensor."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.numpy:
            raise TypeError("can't convert cuda:0 device type tensor to numpy")
        if func is torch.Tensor.cpu:
            with torch._C.DisableTorchFunctionSubclass():
                return args[0].clone()
        return super().__torch_function__(func, types, args, kwargs or {})


def on_device(state):
    """An RNG state whose tensors are OnDevice, as torch.load(map_location="cuda") gives it."""
    name, keys, *rest = state["numpy"]
    return {**state, "numpy": (name, keys.as_subclass(OnDevice), *rest),
            "torch": state["torch"].as_subclass(OnDevice),
            "cuda": [s.as_subclass(OnDevice) for s in state["cuda"]]}


def test_an_rng_state_on_a_device_is_restored_from_the_cpu(tmp_path, monkeypatch):
    state = rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    set_rng_state(on_device(state))
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected
    model, opt, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    real_load = torch.load

    def load_to_device(*args, **kwargs):
        payload = real_load(*args, **kwargs)
        return {**payload, "rng": on_device(payload["rng"])}

    monkeypatch.setattr(torch, "load", load_to_device)
    load_checkpoint(path, model=make(1)[0])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_load_with_map_location_cuda_restores_every_generator(tmp_path):
    model, opt, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt)
    expected = (random.random(), np.random.rand(), torch.rand(1).item(),
                torch.rand(1, device="cuda").item())
    other = make(1)[0].cuda()
    load_checkpoint(path, model=other, map_location="cuda")
    assert (random.random(), np.random.rand(), torch.rand(1).item(),
            torch.rand(1, device="cuda").item()) == expected
    assert all(torch.equal(a.cpu(), b) for a, b in zip(other.parameters(), model.parameters(),
                                                       strict=True))


def generator_state(seed):
    return real_generator().manual_seed(seed).get_state()


class FakeMPS:
    """torch.mps's generator calls on a machine without MPS: one state, recorded (a CPU
    generator's, which the CPU generator standing in for an MPS one accepts)."""

    def __init__(self):
        self.state, self.set = generator_state(1), []

    def get_rng_state(self):
        return self.state.clone()

    def set_rng_state(self, state):
        self.set.append(state.clone())


def test_the_mps_generator_is_saved_and_restored_where_mps_is(tmp_path, monkeypatch):
    fake = FakeMPS()
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "get_rng_state", fake.get_rng_state)
    monkeypatch.setattr(torch.mps, "set_rng_state", fake.set_rng_state)
    monkeypatch.setattr(torch, "Generator", lambda device="cpu": real_generator())  # no MPS
    assert not torch.equal(generator_state(1), generator_state(2))
    assert torch.equal(rng_state()["mps"], fake.state)
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    assert torch.equal(torch.load(path, weights_only=True)["rng"]["mps"], fake.state)
    fake.state = generator_state(2)  # the generator moves on
    load_checkpoint(path, model=nn.Linear(2, 2))
    assert torch.equal(fake.set[0], generator_state(1))


def test_an_rng_state_without_mps_or_with_it_on_a_machine_without_mps(tmp_path):
    """Checkpoints from before the key, or from a machine without MPS, lack "mps"; a state
    saved on a Mac keeps it, and elsewhere it is checked for its type and not applied."""
    state = rng_state()
    assert ("mps" in state) == torch.backends.mps.is_available()
    state.pop("mps", None)
    expected = torch.rand(1).item()
    set_rng_state(state)
    assert torch.rand(1).item() == expected
    if not torch.backends.mps.is_available():
        set_rng_state({**state, "mps": torch.zeros(8, dtype=torch.uint8)})
        assert torch.rand(1).item() == expected
    with pytest.raises(ValueError, match=r"RNG state 'mps' must be a uint8 tensor, got list"):
        set_rng_state({**state, "mps": [1, 2]})
