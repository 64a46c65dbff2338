import copy
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
    assert [p.name for p in tmp_path.glob(f".c.pt.*.{proc.pid}.*.tmp")]  # its temporary file


# ---------------------------------------------- issue #19: never a silent wrong result


def generators():
    """Copies of the states of the global random generators."""
    return copy.deepcopy((random.getstate(), np.random.get_state(), torch.get_rng_state()))


def snapshot(model, opt=None, sched=None):
    """Deep copies of everything load_checkpoint may change."""
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": opt.state_dict() if opt is not None else None,
        "scheduler": sched.state_dict() if sched is not None else None,
    }) | {"rng": generators()}


def same(a, b):
    """Whether two nested states are equal, tensors and arrays included."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype == b.dtype and torch.equal(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return a == b


def move_generators_on():
    """Draw from every generator, so that a restored RNG state would show."""
    random.random(), np.random.rand(), torch.rand(1)


def rewrite(path, change):
    """Load a checkpoint's payload, let ``change`` edit it, and save it back (valid zip)."""
    payload = torch.load(path, weights_only=True)
    change(payload)
    torch.save(payload, path)


def corrupt(path, offset, mode):
    """Flip or zero the 64 bytes of ``path`` from ``offset``."""
    data = bytearray(path.read_bytes())
    for i in range(offset, min(offset + 64, len(data))):
        data[i] = data[i] ^ 0xFF if mode == "flip" else 0
    path.write_bytes(bytes(data))


def test_snapshot_and_same_see_a_change():
    model, opt, sched = make()
    before = snapshot(model, opt, sched)
    assert same(snapshot(model, opt, sched), before)
    opt.step(), sched.step(), move_generators_on()
    after = snapshot(model, opt, sched)
    for key in before:
        assert not same(after[key], before[key]), key


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
    with pytest.raises(ValueError, match=r"\(global \S*test_checkpoint\.Config is not allowed\); "
                                         r"refusing to unpickle it"):
        load_checkpoint(path, model=nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"refuses it \(global \S*test_checkpoint\.Config is not "
                                         r"allowed\)"):
        save_checkpoint(path, model=nn.Linear(2, 2), extra={"config": Config()})


def test_extra_of_plain_types_and_tensors_round_trips(tmp_path):
    extra = {"config": {"lr": 0.1, "layers": [4, 8], "name": "mlp", "flags": (True, None)},
             "tags": {"a", "b"}, "mean": torch.ones(3)}  # torch's rule: a set loads back
    path = save_checkpoint(tmp_path / "c.pt", model=nn.Linear(2, 2), extra=extra)
    assert same(load_checkpoint(path, model=nn.Linear(2, 2))["extra"], extra)


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


# ------------------------------------------------------------------ GradScaler (chapter 07)

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


# ------------------------------------------------------- archives without CRC32s (chapter 07)

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


# ------------------------------------------- RNG state on a device, MPS (review of chapter 07)

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


# ------------------------------------------------------------ a disabled GradScaler (chapter 06)

def test_a_disabled_scaler_saves_nothing_and_loads_nothing(tmp_path):
    """Chapter 06 builds GradScaler(enabled=(dtype == torch.float16)): a bfloat16 run has a
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


# ------------------------------------------------------- DataParallel, DDP: the module. prefix

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
