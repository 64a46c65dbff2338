import os
import random
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch import nn

from helpers import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    strip_compile_prefix,
    unwrap_compiled,
)


def make(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    sched.step()
    return model, opt, sched


def test_round_trip_restores_everything(tmp_path):
    model, opt, sched = make(0)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched,
                           step=7, epoch=1, extra={"note": "hi"})
    expected_draws = (random.random(), np.random.rand(), torch.rand(1).item())
    other, other_opt, other_sched = make(1)
    info = load_checkpoint(path, model=other, optimizer=other_opt, scheduler=other_sched)
    assert info == {"step": 7, "epoch": 1, "extra": {"note": "hi"}}
    pairs = zip(model.parameters(), other.parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    exp_avg = opt.state_dict()["state"][0]["exp_avg"]
    assert other_opt.state_dict()["state"][0]["exp_avg"].equal(exp_avg)
    assert other_sched.state_dict() == sched.state_dict()
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected_draws
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temporary file left


def test_rng_state_round_trip_alone():
    state = rng_state()
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first
    with pytest.raises(ValueError, match="lacks"):
        set_rng_state({"torch": state["torch"]})


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "nope.pt", model=nn.Linear(1, 1))


def test_truncated_file(tmp_path):
    model, opt, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a complete checkpoint"):
        load_checkpoint(path, model=make()[0])


def test_other_architecture_names_the_keys(tmp_path):
    model, _, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    wider = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    with pytest.raises(ValueError, match=r"shape mismatches \['0.bias', '0.weight', '2.weight'\]"):
        load_checkpoint(path, model=wider)
    deeper = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"missing keys \['3.bias', '3.weight'\]"):
        load_checkpoint(path, model=deeper)


def test_not_our_format_and_unsafe_payload(tmp_path):
    torch.save({"weights": torch.ones(2)}, tmp_path / "plain.pt")
    with pytest.raises(ValueError, match="not written by save_checkpoint"):
        load_checkpoint(tmp_path / "plain.pt", model=nn.Linear(1, 1))

    torch.save({"format": 1, "thing": random.Random(0)}, tmp_path / "unsafe.pt")
    with pytest.raises(ValueError, match="refusing to unpickle"):
        load_checkpoint(tmp_path / "unsafe.pt", model=nn.Linear(1, 1))


def test_missing_optimizer_state(tmp_path):
    model, opt, _ = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    with pytest.raises(ValueError, match="no optimizer state"):
        load_checkpoint(path, model=make()[0], optimizer=opt)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="nn.Module"):
        save_checkpoint(tmp_path / "c.pt", model={"w": torch.ones(1)})
    with pytest.raises(ValueError, match="step must be a non-negative int"):
        save_checkpoint(tmp_path / "c.pt", model=nn.Linear(1, 1), step=-1)


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


def test_kill_during_save_leaves_the_previous_checkpoint(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint(path, model=nn.Linear(2, 2), step=1)
    child = textwrap.dedent(f"""
        import os, time
        from torch import nn
        from helpers import save_checkpoint

        def stalling_fsync(fd):  # data written, rename not yet done: kill it here
            print("stalled", flush=True)
            time.sleep(60)

        os.fsync = stalling_fsync
        save_checkpoint({str(path)!r}, model=nn.Linear(64, 64), step=2)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "stalled"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert load_checkpoint(path, model=nn.Linear(2, 2))["step"] == 1  # the old one, intact
    assert any(p.name.startswith(".c.pt.tmp-") for p in tmp_path.iterdir())
