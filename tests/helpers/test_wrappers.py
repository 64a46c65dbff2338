"""helpers.wrappers: the prefixes of torch.compile (``_orig_mod.``) and DataParallel/DDP
(``module.``) are taken off when a checkpoint is saved and loaded (chapter 08)."""


import pytest
import torch
from torch import nn

from helpers import (
    load_checkpoint,
    save_checkpoint,
    strip_compile_prefix,
    unwrap_compiled,
)
from tests.helpers.checkpoint_support import (
    make,
    rewrite,
    same,
)


def test_compile_prefix_is_stripped_both_ways(tmp_path):
    model, _, _ = make()
    compiled = torch.compile(model)  # not called: nothing is compiled
    assert all(k.startswith("_orig_mod.") for k in compiled.state_dict())
    assert unwrap_compiled(compiled) is model
    assert list(strip_compile_prefix(compiled.state_dict())) == list(model.state_dict())
    path = save_checkpoint(tmp_path / "c.pt", model=compiled)
    fresh = make(1)[0]
    load_checkpoint(path, model=fresh)
    pairs = zip(model.parameters(), fresh.parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    # an old checkpoint saved with the prefix loads too
    torch.save({**torch.load(path, weights_only=True), "model": compiled.state_dict()}, path)
    load_checkpoint(path, model=torch.compile(make(2)[0]))


def test_a_model_wrapped_in_data_parallel_saves_and_loads_as_the_plain_model(tmp_path):
    model, opt, _ = make()
    wrapped = nn.DataParallel(model)  # on a machine without GPUs it runs the module itself
    assert all(k.startswith("module.") for k in wrapped.state_dict())
    path = save_checkpoint(tmp_path / "c.pt", model=wrapped, optimizer=opt)
    assert list(torch.load(path, weights_only=True)["model"]) == list(model.state_dict())
    plain = make(1)[0]
    load_checkpoint(path, model=plain)
    assert same(plain.state_dict(), model.state_dict())
    again = nn.DataParallel(torch.compile(make(2)[0]))
    load_checkpoint(path, model=again)
    assert same(again.module._orig_mod.state_dict(), model.state_dict())


def test_keys_saved_with_the_module_prefix_load_into_the_plain_model(tmp_path):
    """A file from an older save_checkpoint, or built from a DataParallel's state_dict: every
    key starts with module. (and _orig_mod. when compiled too)."""
    model, _, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    for wrapped in (nn.DataParallel(model), nn.DataParallel(torch.compile(model)),
                    torch.compile(nn.DataParallel(model))):
        rewrite(path, lambda p, w=wrapped: p.update(model=w.state_dict()))
        plain = make(1)[0]
        load_checkpoint(path, model=plain)
        assert same(plain.state_dict(), model.state_dict())
    wider = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    rewrite(path, lambda p: p.update(model=nn.DataParallel(model).state_dict()))
    with pytest.raises(ValueError, match=r"shape mismatches \['0.bias', '0.weight', '2.weight'\] "
                                         r"\(compared without the prefix 'module.' that a "
                                         r"wrapper put before every saved key\)"):
        load_checkpoint(path, model=wider)


def test_a_model_whose_own_child_is_named_module_keeps_its_keys(tmp_path):
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = nn.Linear(2, 2)

    model = Holder()
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    assert list(torch.load(path, weights_only=True)["model"]) == ["module.weight", "module.bias"]
    other = Holder()
    load_checkpoint(path, model=other)
    assert same(other.state_dict(), model.state_dict())
    with pytest.raises(ValueError, match=r"unexpected keys \['module.bias', 'module.weight'\], "
                                         r"shape mismatches \[\]$"):
        load_checkpoint(path, model=nn.Sequential())  # nothing to compare: no stripping
