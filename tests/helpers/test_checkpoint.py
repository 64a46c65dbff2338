"""helpers.checkpoint: save_checkpoint and load_checkpoint (chapter 08): a complete round trip,
atomic saves, every part checked before anything changes, scaler, optimizer and lazy modules."""

import os
import random
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch
from torch import nn

from helpers import (
    load_checkpoint,
    save_checkpoint,
)
from tests.helpers.checkpoint_support import (
    make,
    move_generators_on,
    rewrite,
    same,
    snapshot,
)


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


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "nope.pt", model=nn.Linear(1, 1))


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
    assert [p.name for p in tmp_path.glob(f".c.pt.*.{proc.pid}.*.tmp")]  # its temporary file


# ---------------------------------------------- issue #19: never a silent wrong result


def test_snapshot_and_same_see_a_change():
    model, opt, sched = make()
    before = snapshot(model, opt, sched)
    assert same(snapshot(model, opt, sched), before)
    opt.step(), sched.step(), move_generators_on()
    after = snapshot(model, opt, sched)
    for key in before:
        assert not same(after[key], before[key]), key


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("where", ["cuda", "cuda:0", torch.device("cuda")])
def test_cuda_map_location_without_cuda(tmp_path, where):
    model = nn.Linear(2, 2)
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    before = snapshot(model)
    with pytest.raises(ValueError, match=r"CUDA is not available on this machine; load with "
                                         r"map_location='cpu'"):
        load_checkpoint(path, model=model, map_location=where)
    assert same(snapshot(model), before)


def test_map_location_must_be_a_device(tmp_path):
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"map_location='gpu' is not a device; expected e\.g\."):
        load_checkpoint(path, model=nn.Linear(2, 2), map_location="gpu")
    with pytest.raises(TypeError, match=r"map_location must be a str or torch\.device.*NoneType"):
        load_checkpoint(path, model=nn.Linear(2, 2), map_location=None)


def test_payload_missing_keys_and_wrong_types_are_named(tmp_path):
    torch.save({"format": 1, "step": 0}, tmp_path / "c.pt")
    with pytest.raises(ValueError, match=re.escape(
            "lacks the keys ['model', 'optimizer', 'scheduler', 'epoch', 'rng', 'extra']")):
        load_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    rewrite(path, lambda p: p.update(step="3"))
    with pytest.raises(ValueError, match=r"step must be a non-negative int, got '3'"):
        load_checkpoint(path, model=nn.Linear(2, 2))
    rewrite(path, lambda p: p.update(step=3, model=[1]))
    with pytest.raises(ValueError, match=r"'model' is a list, expected dict"):
        load_checkpoint(path, model=nn.Linear(2, 2))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"model": None}, TypeError, "model must be an nn.Module, got NoneType"),
    ({"optimizer": "adam"}, TypeError, "optimizer must be a torch.optim.Optimizer or None, "
                                       "got str"),
    ({"scheduler": 0.1}, TypeError, "scheduler must be a learning-rate scheduler"),
    ({"path": None}, TypeError, "path must be a str or pathlib.Path, got NoneType"),
    ({"path": 3}, TypeError, "path must be a str or pathlib.Path, got int"),
    ({"path": ""}, ValueError, "path must name a checkpoint file, got an empty string"),
])
def test_bad_arguments_of_load_and_save(tmp_path, kwargs, error, message):
    model = nn.Linear(2, 2)
    path = save_checkpoint(tmp_path / "c.pt", model=model, step=1)
    saved, before = path.read_bytes(), snapshot(model)
    args = {"path": path, "model": model, **kwargs}
    with pytest.raises(error, match=re.escape(message)):
        load_checkpoint(args["path"], **{k: v for k, v in args.items() if k != "path"})
    with pytest.raises(error, match=re.escape(message)):
        save_checkpoint(args["path"], step=2, **{k: v for k, v in args.items() if k != "path"})
    assert same(snapshot(model), before) and path.read_bytes() == saved


def test_extra_must_be_a_dict(tmp_path):
    with pytest.raises(TypeError, match=r"extra must be a dict or None, got list"):
        save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), extra=[1])
    assert not (tmp_path / "c.pt").exists()


def other_architecture(path):
    model, _, _ = make()
    save_checkpoint(path, model=model)
    wider = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    return (wider, None, None), "different architecture"


def other_parameters(path):
    model, opt, _ = make()
    save_checkpoint(path, model=model, optimizer=opt)
    other = make(1)[0]
    return ((other, torch.optim.AdamW(other[0].parameters(), lr=0.1), None),
            r"group 0 holds 4 parameters, the AdamW's holds 2")


def sgd_into_adam(path):
    model, _, _ = make()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(3, 4)).sum().backward()
    sgd.step()
    save_checkpoint(path, model=model, optimizer=sgd)
    other = make(1)[0]
    return ((other, torch.optim.Adam(other.parameters()), None),
            r"another optimizer class: parameter group 0 has hyperparameters \['dampening', "
            r"'momentum', 'nesterov'\] that Adam does not have$")


def state_of_another_shape(path):
    model, opt, _ = make()
    save_checkpoint(path, model=model, optimizer=opt)
    rewrite(path, lambda p: p["optimizer"]["state"][0].update(exp_avg=torch.zeros(3, 3)))
    other, other_opt, _ = make(1)
    return ((other, other_opt, None),
            r"optimizer state 'exp_avg' of parameter 0 has shape \(3, 3\), the parameter has "
            r"shape \(8, 4\)")


def another_scheduler(path):
    model, opt, sched = make()
    save_checkpoint(path, model=model, optimizer=opt, scheduler=sched)
    other, other_opt, _ = make(1)
    exponential = torch.optim.lr_scheduler.ExponentialLR(other_opt, gamma=0.9)
    return ((other, other_opt, exponential),
            r"another scheduler class: it has \['step_size'\] that ExponentialLR does not have")


def bad_torch_rng(path):
    model, opt, sched = make()
    save_checkpoint(path, model=model, optimizer=opt, scheduler=sched)
    rewrite(path, lambda p: p["rng"].update(torch=torch.zeros(5, dtype=torch.uint8)))
    return make(1), r"RNG state 'torch' is not a valid torch generator state"


def bad_numpy_rng(path):
    model, opt, sched = make()
    save_checkpoint(path, model=model, optimizer=opt, scheduler=sched)
    rewrite(path, lambda p: p["rng"].update(numpy=("MT19937", torch.zeros(3, dtype=torch.int64),
                                                   0, 0, 0.0)))
    return make(1), r"RNG state 'numpy' is not a valid numpy generator state"


@pytest.mark.parametrize("case", [other_architecture, other_parameters, sgd_into_adam,
                                  state_of_another_shape, another_scheduler, bad_torch_rng,
                                  bad_numpy_rng], ids=lambda f: f.__name__)
def test_a_failed_load_changes_nothing(tmp_path, case):
    path = tmp_path / "c.pt"
    (model, opt, sched), message = case(path)
    move_generators_on()
    before = snapshot(model, opt, sched)
    with pytest.raises(ValueError, match=message):
        load_checkpoint(path, model=model, optimizer=opt, scheduler=sched)
    assert same(snapshot(model, opt, sched), before)


@pytest.mark.parametrize("failing", ["scheduler", "numpy rng"])
def test_a_failure_while_applying_restores_everything(tmp_path, monkeypatch, failing):
    model, opt, sched = make(0)
    for _ in range(3):  # the saved scheduler is elsewhere than a fresh one
        opt.step()
        sched.step()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched)
    move_generators_on()
    other, other_opt, other_sched = make(1)
    before = snapshot(other, other_opt, other_sched)
    assert other_sched.state_dict() != sched.state_dict()
    calls = []

    def fails_once(real):  # applies, then raises: a failure after a change, on the first call
        def wrapper(*args, **kwargs):
            result = real(*args, **kwargs)
            calls.append(args)
            if len(calls) == 1:
                raise RuntimeError("disk on fire")
            return result
        return wrapper

    if failing == "scheduler":
        step_lr = torch.optim.lr_scheduler.StepLR
        monkeypatch.setattr(step_lr, "load_state_dict", fails_once(step_lr.load_state_dict))
    else:
        monkeypatch.setattr(np.random, "set_state", fails_once(np.random.set_state))
    with pytest.raises(RuntimeError, match="disk on fire") as err:
        load_checkpoint(path, model=other, optimizer=other_opt, scheduler=other_sched)
    assert same(snapshot(other, other_opt, other_sched), before)
    if sys.version_info >= (3, 11):
        assert any("were restored as they were" in n for n in err.value.__notes__)


posix_only = pytest.mark.skipif(os.name != "posix", reason="links, modes and PIDs of POSIX")


@posix_only
def test_a_link_planted_at_the_old_temporary_name_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"  # a file of the attacker's choosing
    victim.write_text("not yours\n")
    run = tmp_path / "run"
    run.mkdir()
    link = run / f".c.pt.tmp-{os.getpid()}"  # the name older versions wrote to
    link.symlink_to(victim)
    path = save_checkpoint(run / "c.pt", model=nn.Linear(2, 2), step=1)
    assert victim.read_text() == "not yours\n"
    assert path.is_file() and not path.is_symlink() and link.is_symlink()
    assert load_checkpoint(path, model=nn.Linear(2, 2))["step"] == 1


def test_concurrent_saves_from_threads_all_succeed(tmp_path):
    path, barrier, errors = tmp_path / "c.pt", threading.Barrier(10), []

    def save(step):
        model = nn.Linear(64, 64)
        barrier.wait()
        try:
            save_checkpoint(path, model=model, step=step)
        except Exception as err:  # collected: an exception in a thread would not fail the test
            errors.append(err)

    threads = [threading.Thread(target=save, args=(step,)) for step in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert load_checkpoint(path, model=nn.Linear(64, 64))["step"] in range(10)
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temporary file left


@posix_only
def test_a_save_killed_midway_is_cleaned_up_by_the_next(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint(path, model=nn.Linear(2, 2), step=1)
    child = textwrap.dedent(f"""
        import io, os, signal, torch
        from torch import nn
        from helpers import save_checkpoint

        real_save = torch.save

        def dying_save(obj, f, *args, **kwargs):  # writes part of the file, then is killed
            if isinstance(f, io.BytesIO):
                return real_save(obj, f, *args, **kwargs)
            f.write(b"PK\\x03\\x04 half a checkpoint")
            f.flush()
            os.kill(os.getpid(), signal.SIGKILL)

        torch.save = dying_save
        save_checkpoint({str(path)!r}, model=nn.Linear(64, 64), step=2)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child])
    assert proc.wait(timeout=120) == -signal.SIGKILL
    stale = list(tmp_path.glob(f".c.pt.*.{proc.pid}.*.tmp"))
    assert len(stale) == 1 and stale[0].read_bytes().startswith(b"PK")
    assert load_checkpoint(path, model=nn.Linear(2, 2))["step"] == 1  # the old one, intact
    old_style = tmp_path / f".c.pt.tmp-{proc.pid}"
    old_style.write_bytes(b"left by an older version")
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    keep = [tmp_path / f".c.pt.{os.getpid()}.abc123_x.tmp",  # a save in progress (alive)
            tmp_path / f".c.pt.{proc.pid}.link0000.tmp",  # a link, never followed
            tmp_path / f".d.pt.{proc.pid}.abc123_x.tmp",  # another checkpoint's file
            tmp_path / f".c.pt.other-host.{proc.pid}.abc123_x.tmp"]  # another machine's
    keep[0].write_bytes(b"in progress")
    keep[1].symlink_to(victim)
    keep[2].write_bytes(b"not ours")
    keep[3].write_bytes(b"a save running on another machine")
    save_checkpoint(path, model=nn.Linear(2, 2), step=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["c.pt", "victim.txt"] + [p.name for p in keep])
    assert victim.read_text() == "not yours\n"
    assert load_checkpoint(path, model=nn.Linear(2, 2))["step"] == 3


@posix_only
def test_permissions_are_kept_and_new_files_follow_the_umask(tmp_path):
    path = tmp_path / "c.pt"
    umask = os.umask(0o022)
    try:
        save_checkpoint(path, model=nn.Linear(2, 2))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # like open(): 0o666 & ~umask
    path.chmod(0o600)
    save_checkpoint(path, model=nn.Linear(2, 2), step=1)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# ------------------------------------------------------------------ GradScaler (chapter 08)

def float16_steps(model, opt, scaler, steps):
    """A few float16 autocast steps with a GradScaler that grows every 2 steps."""
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(torch.randn(8, 4)).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


def test_scaler_state_round_trips(tmp_path):
    model, opt, _ = make()
    scaler = torch.amp.GradScaler("cpu", growth_interval=2)
    float16_steps(model, opt, scaler, 5)
    saved = scaler.state_dict()
    assert saved["scale"] != 2.0**16  # it grew: a fresh scaler would not be the same
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scaler=scaler)
    other_model, other_opt, _ = make(1)
    fresh = torch.amp.GradScaler("cpu", growth_interval=2)
    load_checkpoint(tmp_path / "c.pt", model=other_model, optimizer=other_opt, scaler=fresh)
    assert fresh.state_dict() == saved
    assert fresh.get_scale() == saved["scale"]


def test_scaler_refusals_name_the_problem(tmp_path):
    model, _, _ = make()
    save_checkpoint(tmp_path / "none.pt", model=model)
    with pytest.raises(ValueError, match="no scaler state"):
        load_checkpoint(tmp_path / "none.pt", model=model, scaler=torch.amp.GradScaler("cpu"))
    save_checkpoint(tmp_path / "s.pt", model=model, scaler=torch.amp.GradScaler("cpu"))
    with pytest.raises(ValueError, match="disabled"):
        load_checkpoint(tmp_path / "s.pt", model=model,
                        scaler=torch.amp.GradScaler("cpu", enabled=False))
    save_checkpoint(tmp_path / "off.pt", model=model,
                    scaler=torch.amp.GradScaler("cpu", enabled=False))
    with pytest.raises(ValueError, match="disabled GradScaler"):
        load_checkpoint(tmp_path / "off.pt", model=model, scaler=torch.amp.GradScaler("cpu"))
    with pytest.raises(TypeError, match="scaler must be a torch.amp.GradScaler"):
        save_checkpoint(tmp_path / "x.pt", model=model, scaler="yes")
    with pytest.raises(TypeError, match="scaler must be a torch.amp.GradScaler"):
        load_checkpoint(tmp_path / "s.pt", model=model, scaler={"scale": 1.0})


@pytest.mark.parametrize("change, message", [
    ({"scale": float("inf")}, "positive finite"),
    ({"scale": -1.0}, "positive finite"),
    ({"_growth_tracker": -3}, "non-negative int"),
    ({"extra_key": 1}, "a GradScaler's are"),
])
def test_bad_scaler_state_is_refused_before_anything_changes(tmp_path, change, message):
    model, opt, _ = make()
    scaler = torch.amp.GradScaler("cpu")
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scaler=scaler)
    payload = torch.load(tmp_path / "c.pt", weights_only=True)
    payload["scaler"].update(change)
    torch.save(payload, tmp_path / "c.pt")
    target, target_opt, _ = make(1)
    before, fresh = snapshot(target), torch.amp.GradScaler("cpu", init_scale=8.0)
    with pytest.raises(ValueError, match=re.escape(message)):
        load_checkpoint(tmp_path / "c.pt", model=target, optimizer=target_opt, scaler=fresh)
    assert same(snapshot(target), before) and fresh.get_scale() == 8.0


def test_a_checkpoint_without_the_scaler_key_still_loads(tmp_path):
    """Checkpoints written before the scaler was saved have no "scaler" key."""
    model, _, _ = make()
    save_checkpoint(tmp_path / "c.pt", model=model, step=3)
    payload = torch.load(tmp_path / "c.pt", weights_only=True)
    del payload["scaler"]
    torch.save(payload, tmp_path / "c.pt")
    assert load_checkpoint(tmp_path / "c.pt", model=make(1)[0])["step"] == 3


def test_a_failure_while_applying_restores_the_scaler(tmp_path, monkeypatch):
    model, opt, _ = make()
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scaler=scaler)
    fresh = torch.amp.GradScaler("cpu", init_scale=4.0)

    def fails(*args, **kwargs):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(np.random, "set_state", fails)
    with pytest.raises(RuntimeError, match="planted"):
        load_checkpoint(tmp_path / "c.pt", model=make(1)[0], scaler=fresh)
    assert fresh.get_scale() == 4.0


def test_map_location_meta_is_refused(tmp_path):
    model = nn.Linear(2, 2)
    path = save_checkpoint(tmp_path / "c.pt", model=model)
    before = snapshot(model)
    with pytest.raises(ValueError, match=r"map_location='meta' keeps the shapes .* none of their "
                                         r"values"):
        load_checkpoint(path, model=model, map_location="meta")
    assert same(snapshot(model), before)


@pytest.mark.parametrize("kind, name, available", [
    ("mps", "MPS", torch.backends.mps.is_available()),
    ("xpu", "XPU", torch.xpu.is_available()),
])
def test_an_accelerator_this_machine_lacks_is_refused(tmp_path, monkeypatch, kind, name,
                                                      available):
    if available:
        pytest.skip(f"this machine has {name}")
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    with pytest.raises(ValueError, match=rf"map_location='{kind}' but {name} is not available "
                                         r"on this machine; load with map_location='cpu'"):
        load_checkpoint(path, model=nn.Linear(2, 2), map_location=kind)


def test_an_accelerator_index_beyond_the_machines_is_refused(tmp_path, monkeypatch):
    from helpers import checkpoint

    monkeypatch.setattr(checkpoint, "_accelerator_count", lambda kind: 1)
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"map_location='xpu:1' but this machine has 1 XPU "
                                         r"device\(s\); use 'xpu:0' or 'cpu'"):
        load_checkpoint(path, model=nn.Linear(2, 2), map_location="xpu:1")


# ------------------------------------------------------------ a disabled GradScaler (chapter 07)

def test_a_disabled_scaler_saves_nothing_and_loads_nothing(tmp_path):
    """Chapter 07 builds GradScaler(enabled=(dtype == torch.float16)): a bfloat16 run has a
    disabled one, which must save and resume like the float16 run's."""
    model, opt, _ = make()
    off = torch.amp.GradScaler("cpu", enabled=False)
    save_checkpoint(tmp_path / "off.pt", model=model, optimizer=opt, scaler=off, step=5)
    other, other_opt, _ = make(1)
    info = load_checkpoint(tmp_path / "off.pt", model=other, optimizer=other_opt,
                           scaler=torch.amp.GradScaler("cpu", enabled=False))
    assert info["step"] == 5 and same(other.state_dict(), model.state_dict())
    save_checkpoint(tmp_path / "none.pt", model=model)  # saved without scaler=: nothing lost
    load_checkpoint(tmp_path / "none.pt", model=other,
                    scaler=torch.amp.GradScaler("cpu", enabled=False))


# --------------------------------------------- optimizer and scheduler state of an older torch

def test_hyperparameters_an_older_torch_lacked_are_accepted(tmp_path):
    """AdamW's decoupled_weight_decay is newer than some checkpoints: such a file loads (torch's
    load_state_dict fills the key in, True for AdamW), as does a scheduler state without a key
    that a newer torch added (the scheduler keeps its own)."""
    model, opt, sched = make()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched)
    rewrite(path, lambda p: [g.pop(k) for g in p["optimizer"]["param_groups"]
                             for k in ("decoupled_weight_decay", "fused")])
    rewrite(path, lambda p: p["scheduler"].pop("_is_initial"))
    other, other_opt, other_sched = make(1)
    other_opt.param_groups[0]["lr"] = 0.5
    load_checkpoint(path, model=other, optimizer=other_opt, scheduler=other_sched)
    group = other_opt.param_groups[0]
    assert group["decoupled_weight_decay"] is True and group["lr"] == opt.param_groups[0]["lr"]
    exp_avg = opt.state_dict()["state"][0]["exp_avg"]
    assert other_opt.state_dict()["state"][0]["exp_avg"].equal(exp_avg)
    assert other_sched.last_epoch == sched.last_epoch


def test_adam_state_loads_into_adamw_keys_being_the_same(tmp_path):
    """Adam and AdamW have the same hyperparameter names: nothing in the state tells them apart,
    and the message of a refusal never claims it does."""
    model, _, _ = make()
    adam = torch.optim.Adam(model.parameters())
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=adam)
    other = make(1)[0]
    load_checkpoint(path, model=other, optimizer=torch.optim.AdamW(other.parameters()))


# --------------------------------------------------------------------------- lazy modules

def test_a_lazy_module_not_run_yet_is_refused_with_the_remedy(tmp_path):
    lazy = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    with pytest.raises(ValueError, match=r"not initialized yet \['0.weight', '0.bias', "
                                         r"'2.weight', '2.bias'\].* run one forward pass first"):
        save_checkpoint(tmp_path / "c.pt", model=lazy)
    assert not (tmp_path / "c.pt").exists()
    lazy(torch.randn(5, 4))
    path = save_checkpoint(tmp_path / "c.pt", model=lazy)
    fresh = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2))
    with pytest.raises(ValueError, match=r"run one forward pass first .*then load the checkpoint"):
        load_checkpoint(path, model=fresh)
    fresh(torch.randn(5, 4))
    load_checkpoint(path, model=fresh)
    assert same(fresh.state_dict(), lazy.state_dict())
