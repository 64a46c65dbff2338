import random

import numpy as np
import pytest
import torch

from helpers import needs_cublas_workspace_config, set_seed


def draw():
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


def test_same_seed_same_draws_from_every_generator():
    set_seed(123)
    first = draw()
    set_seed(123)
    assert draw() == first


def test_different_seeds_differ():
    set_seed(1)
    first = draw()
    set_seed(2)
    second = draw()
    assert all(a != b for a, b in zip(first, second, strict=True))


def test_returns_the_seed_and_accepts_numpy_ints():
    assert set_seed(np.int64(7)) == 7


@pytest.mark.parametrize("bad", ["3", 3.0, None, True])
def test_non_int_seed_is_a_type_error(bad):
    with pytest.raises(TypeError, match="seed must be an int"):
        set_seed(bad)


@pytest.mark.parametrize("bad", [-1, 2**32])
def test_out_of_range_seed_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"seed must be in \[0, 4294967295\]"):
        set_seed(bad)


def test_deterministic_mode_on_and_off():
    try:
        set_seed(0, deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    finally:
        set_seed(0)
    assert not torch.are_deterministic_algorithms_enabled()
    assert not torch.backends.cudnn.deterministic


def test_deterministic_must_be_bool():
    with pytest.raises(TypeError, match="deterministic must be a bool"):
        set_seed(0, deterministic="yes")


def test_fingerprint_tells_identical_weights_apart_from_different_ones():
    from torch import nn

    from helpers import fingerprint

    torch.manual_seed(0)
    a = nn.Linear(4, 2)
    b = nn.Linear(4, 2)
    b.load_state_dict(a.state_dict())
    assert fingerprint(a) == fingerprint(b) and len(fingerprint(a)) == 16
    with torch.no_grad():
        b.bias[0] += 1e-7
    assert fingerprint(a) != fingerprint(b)


def test_fingerprint_of_a_non_module():
    from helpers import fingerprint

    with pytest.raises(TypeError, match="nn.Module"):
        fingerprint({"weight": torch.zeros(2)})


def test_fingerprint_of_bfloat16_and_of_signed_zeros():
    from torch import nn

    from helpers import fingerprint

    torch.manual_seed(0)
    a = nn.Linear(4, 2).to(torch.bfloat16)  # NumPy has no bfloat16: hashed by raw bytes
    b = nn.Linear(4, 2).to(torch.bfloat16)
    b.load_state_dict(a.state_dict())
    assert fingerprint(a) == fingerprint(b)
    with torch.no_grad():
        a.bias.zero_()
        b.bias.zero_().neg_()  # -0.0 == 0.0, but the bits differ
    assert torch.equal(a.bias, b.bias) and fingerprint(a) != fingerprint(b)


def test_fingerprint_tells_dtypes_and_shapes_apart():
    from torch import nn

    from helpers import fingerprint

    zeros32 = nn.Linear(2, 2, bias=False)
    nn.init.zeros_(zeros32.weight)
    zeros16 = nn.Linear(2, 2, bias=False).half()  # 8 bytes of zeros, as float32's first half
    nn.init.zeros_(zeros16.weight)
    flat = nn.Linear(4, 1, bias=False)  # the same 16 bytes as zeros32, another shape
    nn.init.zeros_(flat.weight)
    assert len({fingerprint(zeros32), fingerprint(zeros16), fingerprint(flat)}) == 3


def test_fingerprint_refuses_extra_state_that_is_not_a_tensor():
    from torch import nn

    from helpers import fingerprint

    class WithExtraState(nn.Linear):
        def get_extra_state(self):
            return {"note": "not a tensor"}

        def set_extra_state(self, state):
            pass

    with pytest.raises(TypeError, match="'_extra_state' is a dict"):
        fingerprint(WithExtraState(2, 2))


def test_fingerprint_of_a_wrapped_model_is_the_model_inside():
    """torch.compile prefixes the state_dict's keys with _orig_mod., DataParallel and DDP with
    module.: wrapping a model must not change its fingerprint."""
    from torch import nn

    from helpers import fingerprint

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    compiled = torch.compile(model)  # compiles at its first call: never called here
    assert next(iter(compiled.state_dict())).startswith("_orig_mod.")
    parallel = nn.DataParallel(model)  # on a CPU-only machine it wraps without a GPU
    ddp = nn.parallel.DistributedDataParallel.__new__(nn.parallel.DistributedDataParallel)
    nn.Module.__init__(ddp)  # DDP's own __init__ needs a process group: only the wrapping
    ddp.module = model
    for wrapped in (compiled, parallel, ddp, torch.compile(nn.DataParallel(model))):
        assert fingerprint(wrapped) == fingerprint(model), type(wrapped).__name__
    with torch.no_grad():
        model[0].bias[0] += 1.0
    assert fingerprint(compiled) == fingerprint(model) != fingerprint(nn.Linear(3, 2))


def test_fingerprint_hashes_persistent_buffers_only():
    """A buffer registered with persistent=False is not in the state_dict: not hashed."""
    from torch import nn

    from helpers import fingerprint

    torch.manual_seed(0)
    model = nn.Linear(2, 2)
    model.register_buffer("kept", torch.zeros(2))
    model.register_buffer("scratch", torch.zeros(2), persistent=False)
    before = fingerprint(model)
    model.scratch += 1
    assert fingerprint(model) == before
    model.kept += 1
    assert fingerprint(model) != before


@pytest.mark.parametrize("version,needed", [("2.9.1", True), ("2.9.0+cu126", True),
                                            ("2.10.0", False), ("2.14.1+cu130", False),
                                            ("3.0.0a0+git1234", False), ("1.13.1", True),
                                            ("2.10.0a0+git5ab1e2c", True),
                                            ("2.10.0.dev20250901+cu128", True),
                                            ("2.10.0rc1", True), ("2.11.0a0+gitabc", False)])
def test_cublas_workspace_config_is_needed_up_to_torch_2_9(version, needed):
    assert needs_cublas_workspace_config(version) is needed


def test_a_version_that_is_none_is_refused():
    with pytest.raises(ValueError, match="not a torch version"):
        needs_cublas_workspace_config("nightly")


@pytest.mark.parametrize("version,expected", [("2.9.1", ":4096:8"), ("2.14.1", None)])
def test_deterministic_mode_sets_the_cublas_variable_only_where_torch_needs_it(
        monkeypatch, version, expected):
    import os

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch, "__version__", version)
    try:
        set_seed(0, deterministic=True)
        assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") == expected
    finally:
        set_seed(0)
