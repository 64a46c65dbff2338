"""helpers.checkpoint_file: a truncated, corrupt or empty file is refused (CRC32s), only what
weights-only loading reads back is saved, an archive without CRC32s loads with a warning
(chapter 08)."""

import re

import numpy as np
import pytest
import torch
from torch import nn

from helpers import (
    load_checkpoint,
    save_checkpoint,
)
from tests.helpers.checkpoint_support import (
    corrupt,
    make,
    same,
    snapshot,
)


def test_truncated_file(tmp_path):
    model, opt, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a complete checkpoint"):
        load_checkpoint(path, model=make()[0])


@pytest.mark.parametrize("mode", ["flip", "zero"])
@pytest.mark.parametrize("where", ["weights", "header", "end"])
def test_corrupt_bytes_are_refused(tmp_path, where, mode):
    model, opt, sched = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched)
    data = path.read_bytes()
    weights = model[2].weight.detach().numpy().tobytes()  # 16 floats: 64 bytes
    offset = {"weights": data.find(weights), "header": 0, "end": len(data) - 64}[where]
    assert offset >= 0
    corrupt(path, offset, mode)
    other, other_opt, other_sched = make(1)
    before = snapshot(other, other_opt, other_sched)
    with pytest.raises(ValueError, match=re.escape(str(path))) as err:
        load_checkpoint(path, model=other, optimizer=other_opt, scheduler=other_sched)
    if where == "weights":
        assert re.search(r"archive member '\w+/data/\d+' fails its CRC32 check", str(err.value))
    assert same(snapshot(other, other_opt, other_sched), before)


def test_no_corruption_anywhere_loads_a_different_result(tmp_path):
    model, opt, _ = make()
    good = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt).read_bytes()
    path, offsets, refused = tmp_path / "bad.pt", range(0, len(good), 61), 0
    for offset in offsets:
        path.write_bytes(good)
        corrupt(path, offset, "flip")
        other, other_opt, _ = make(1)
        try:
            load_checkpoint(path, model=other, optimizer=other_opt, restore_rng=False)
        except ValueError:
            refused += 1
            continue
        # only bytes no reader uses (zip padding) may change and still load: the same result
        assert same(other.state_dict(), model.state_dict()), offset
        assert same(other_opt.state_dict(), opt.state_dict()), offset
    assert refused >= 0.95 * len(offsets)


def test_empty_text_and_directory_are_named(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.pt is empty \(0 bytes\); expected a checkpoint"):
        load_checkpoint(tmp_path / "empty.pt", model=nn.Linear(1, 1))
    (tmp_path / "notes.pt").write_text("epoch 3: loss 0.25\n")
    with pytest.raises(ValueError, match=r"notes\.pt is not a complete checkpoint .*not a "
                                         r"readable zip archive"):
        load_checkpoint(tmp_path / "notes.pt", model=nn.Linear(1, 1))
    (tmp_path / "dir.pt").mkdir()
    with pytest.raises(FileNotFoundError, match=r"dir\.pt: it is a directory, expected a file"):
        load_checkpoint(tmp_path / "dir.pt", model=nn.Linear(1, 1))


class Config:  # a custom object: weights_only refuses its class
    lr = 0.1


@pytest.mark.parametrize("extra, where, kind", [
    ({"config": Config()}, "extra['config']", "Config"),
    ({"mean": np.zeros(3)}, "extra['mean']", "ndarray"),
    ({"best": np.float64(0.9)}, "extra['best']", "float64"),
    ({"cfg": {"lr": 0.1, "schedule": [1, lambda e: e]}}, "extra['cfg']['schedule'][1]",
     "function"),
])
def test_extra_that_would_not_load_back_is_refused(tmp_path, extra, where, kind):
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), step=1)
    saved = path.read_bytes()
    with pytest.raises(ValueError, match=re.escape(
            f"{where} is a {kind}, which a weights-only checkpoint cannot hold")):
        save_checkpoint(path, model=nn.Linear(2, 2), step=2, extra=extra)
    assert path.read_bytes() == saved and [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_a_file_with_a_custom_object_is_refused_naming_its_class(tmp_path):
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    payload = torch.load(path, weights_only=True)
    torch.save({**payload, "extra": {"config": Config()}}, path)  # bypassing save_checkpoint
    with pytest.raises(ValueError, match=r"\(global \S*test_checkpoint_file\.Config is not "
                                         r"allowed\); refusing to unpickle it"):
        load_checkpoint(path, model=nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"refuses it \(global \S*test_checkpoint_file\.Config "
                                         r"is not allowed\)"):
        save_checkpoint(path, model=nn.Linear(2, 2), extra={"config": Config()})


def test_extra_of_plain_types_and_tensors_round_trips(tmp_path):
    extra = {"config": {"lr": 0.1, "layers": [4, 8], "name": "mlp", "flags": (True, None)},
             "tags": {"a", "b"}, "mean": torch.ones(3)}  # torch's rule: a set loads back
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), extra=extra)
    assert same(load_checkpoint(path, model=nn.Linear(2, 2))["extra"], extra)


def save_without_crcs(path, **kwargs):
    was = torch.serialization.get_crc32_options()
    torch.serialization.set_crc32_options(False)
    try:
        return save_checkpoint(path, **kwargs)
    finally:
        torch.serialization.set_crc32_options(was)


def test_an_archive_without_crcs_loads_with_a_warning(tmp_path):
    from helpers.checkpoint import UncheckedArchiveWarning

    model, _, _ = make()
    save_without_crcs(tmp_path / "c.pt", model=model, step=7)
    target = make(1)[0]
    with pytest.warns(UncheckedArchiveWarning, match="without CRC32s"):
        assert load_checkpoint(tmp_path / "c.pt", model=target)["step"] == 7
    assert same(snapshot(target), snapshot(model))


def test_an_archive_with_crcs_gives_no_warning_and_check_crc_false_skips_the_check(tmp_path):
    import warnings

    model, _, _ = make()
    save_checkpoint(tmp_path / "c.pt", model=model, step=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_checkpoint(tmp_path / "c.pt", model=make(1)[0])
    damaged = bytearray((tmp_path / "c.pt").read_bytes())
    where = damaged.find(model[0].weight.detach().numpy().tobytes())
    damaged[where + 1] ^= 0xFF
    (tmp_path / "c.pt").write_bytes(damaged)
    with pytest.raises(ValueError, match="CRC32"):
        load_checkpoint(tmp_path / "c.pt", model=make(1)[0])
    assert load_checkpoint(tmp_path / "c.pt", model=make(1)[0], check_crc=False)["step"] == 1
    with pytest.raises(TypeError, match="check_crc"):
        load_checkpoint(tmp_path / "c.pt", model=make(1)[0], check_crc="no")


def test_a_truncated_archive_without_crcs_is_still_refused(tmp_path):
    model, _, _ = make()
    path = save_without_crcs(tmp_path / "c.pt", model=model)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="not a complete checkpoint"):
        load_checkpoint(path, model=make(1)[0])
