"""Flags given as strings or numbers are refused, never read as truthy (helpers.validate)."""

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers import (
    GradNormRecorder,
    create_run_dir,
    fit,
    load_checkpoint,
    save_checkpoint,
    train_one_epoch,
)
from helpers.validate import require_bool


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_passes(value):
    assert require_bool("flag", value) is value


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
def test_anything_else_is_refused_with_the_name(value):
    with pytest.raises(TypeError, match=r"flag must be True or False"):
        require_bool("flag", value)


def test_overwrite_no_keeps_the_run(tmp_path):
    run = create_run_dir(tmp_path, "run1")
    (run / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(TypeError, match="overwrite must be True or False, got 'no'"):
        create_run_dir(tmp_path, "run1", overwrite="no")
    assert (run / "metrics.jsonl").exists()


def test_other_flags_of_the_helpers(tmp_path):
    model = nn.Linear(2, 2)
    loader = DataLoader(TensorDataset(torch.randn(4, 2), torch.tensor([0, 1, 0, 1])),
                        batch_size=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="only_weights"):
        GradNormRecorder(model, only_weights="yes")
    with pytest.raises(TypeError, match="progress"):
        fit(model, loader, None, nn.functional.cross_entropy, opt, epochs=1, progress="no")
    with pytest.raises(TypeError, match="progress"):
        train_one_epoch(model, loader, nn.functional.cross_entropy, opt, progress="no")
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, step=0, epoch=0)
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(TypeError, match="restore_rng"):
        load_checkpoint(path, model=model, restore_rng="no")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
