"""Chapter 08's claims can fail: each verdict, compiled from the chapter
(tests/chapters/chapter_code.py), raises on evidence from a world where its claim is false and
passes on the real thing.

The evidence is computed here for real, with the mechanism removed or broken: a weight kept
outside the state_dict, a loader that hides what it skipped, a loader that checks everything
before it copies anything, a resume that forgets the random generators, an optimizer without
state, a resume that puts the learning rate back, a compile without the wrapper, an older
torch's default of full unpickling, a float16 resume that forgets its scaler, a loader that
trusts torch.load or reads the file three times, a load that copies or keeps the old
Parameter, a file that is not mapped, a buffer that is saved after all or never re-created, a
pickled model whose class never moved.
"""

import copy
import functools
import io
import json
import os
import pickle
from pathlib import Path
from unittest import mock

import pytest
import torch
from torch import nn

from helpers import fingerprint, load_checkpoint, resumable, save_checkpoint, strip_compile_prefix
from tests.chapters.chapter_code import chapter_function

CHAPTER = "08_checkpoints"


# C26: the chapter's two architectures (the verdict names their keys)

class Net(nn.Module):
    def __init__(self, hidden: int = 32, weight_outside: bool = False) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 4)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        # a plain tensor attribute: not in the state_dict, so not saved
        self.scale = torch.randn(4) if weight_outside else torch.ones(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)) * self.scale


class NetWithDropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1))
        self.classifier = nn.Linear(32, 4)


class NetWithActivation(Net):
    """The chapter's NetWithGELU, with the activation (and optionally the head's name) given."""

    def __init__(self, activation: type = nn.GELU, rename_head: bool = False) -> None:
        super().__init__()
        self.body[1] = activation()
        if rename_head:
            self.classifier = self.head
            del self.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        head = self.classifier if hasattr(self, "classifier") else self.head
        return head(self.body(x)) * self.scale


def fitting_only(model: nn.Module, state: dict, strict: bool = False):
    """A loader that drops what does not fit before loading: nothing to report, nothing raised."""
    own = model.state_dict()
    return model.load_state_dict({k: v for k, v in state.items()
                                  if k in own and v.shape == own[k].shape}, strict=strict)


def all_or_nothing(model: nn.Module, state: dict) -> None:
    """A strict loader that tries a copy of the model first: it raises with the model untouched."""
    copy.deepcopy(model).load_state_dict(state)
    model.load_state_dict(state)


def state_dict_evidence(weight_outside: bool = False, loader=None, strict_loader=None,
                        activation: type = nn.GELU, rename_head: bool = False) -> tuple:
    loader = loader or (lambda model, state: model.load_state_dict(state, strict=False))
    strict_loader = strict_loader or (lambda model, state: model.load_state_dict(state))
    torch.manual_seed(0)
    net = Net(weight_outside=weight_outside)
    buffer = io.BytesIO()
    torch.save(net.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer)
    restored = Net(weight_outside=weight_outside)
    restored.load_state_dict(state)
    probe = torch.randn(8, 16)
    same_outputs = torch.equal(net(probe), restored(probe))
    partial = NetWithDropout()
    report = loader(partial, state)
    body_loaded = torch.equal(partial.body[0].weight, state["body.0.weight"])
    shape_message = ""
    try:
        loader(Net(hidden=64), state)
    except RuntimeError as err:
        shape_message = str(err)
    half_loaded = NetWithDropout()
    try:
        strict_loader(half_loaded, state)
    except RuntimeError:
        pass
    copied_anyway = torch.equal(half_loaded.body[0].weight, state["body.0.weight"])
    variant = NetWithActivation(activation, rename_head)
    variant_report = variant.load_state_dict(state, strict=False)
    return (same_outputs, report.missing_keys, report.unexpected_keys, body_loaded, shape_message,
            copied_anyway, variant_report.missing_keys + variant_report.unexpected_keys,
            torch.equal(variant(probe), net(probe)))


def test_c26_weight_outside_state_dict_or_a_silent_loader():
    verdict = chapter_function(CHAPTER, "verdict_c26")
    verdict(*state_dict_evidence())
    with pytest.raises(AssertionError):  # a weight the state_dict does not hold
        verdict(*state_dict_evidence(weight_outside=True))
    with pytest.raises(AssertionError):  # a loader that drops what does not fit, silently
        verdict(*state_dict_evidence(loader=fitting_only))
    same, missing, unexpected, _, message, copied, silent, silent_same = state_dict_evidence()
    with pytest.raises(AssertionError):  # strict=False that loads nothing
        verdict(same, missing, unexpected, False, message, copied, silent, silent_same)
    with pytest.raises(AssertionError):  # a strict load that raises before copying anything
        verdict(*state_dict_evidence(strict_loader=all_or_nothing))


def test_c26_a_change_that_is_reported_or_changes_nothing():
    """A change that keeps names and shapes loads silently and computes something else."""
    verdict = chapter_function(CHAPTER, "verdict_c26")
    verdict(*state_dict_evidence())
    with pytest.raises(AssertionError):  # the "change" keeps ReLU: same outputs
        verdict(*state_dict_evidence(activation=nn.ReLU))
    with pytest.raises(AssertionError):  # the variant also renames its head: reported
        verdict(*state_dict_evidence(rename_head=True))


# C27: resumable.train, for a few steps

RUN = {"steps": 8, "every": 4, "print_steps": False}


def interrupted(out, **options) -> nn.Module:
    """resumable.train stopped after step 6, then resumed from its step-4 checkpoint."""
    resumable.train(out, stop_after=6, **RUN)
    return resumable.train(out, **RUN, **options)


def stateless_build(seed: int, total_steps: int):
    """resumable.build with plain SGD and a constant learning rate: no optimizer state."""
    resumable.set_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)


def first_used_after_resume(out) -> dict[str, tuple]:
    """(learning rate, beta1) each run used at the first step after the resume (step 5)."""
    used = {}
    for name, folder in [("straight", "straight"), ("resumed", "resumed"),
                         ("no optimizer", "no_optimizer")]:
        final = json.loads((out / folder / "final.json").read_text())
        used[name] = dict(zip(final["steps_run"], zip(final["lr"], final["beta1"], strict=True),
                              strict=True))[5]
    return used


def resume_evidence(out) -> tuple:
    straight = resumable.train(out / "straight", **RUN)
    resumed = interrupted(out / "resumed")
    no_optimizer = interrupted(out / "no_optimizer", load_optimizer=False)
    drift = max((a - b).abs().max().item()
                for a, b in zip(straight.parameters(), no_optimizer.parameters(), strict=True))
    return (fingerprint(straight), fingerprint(resumed), fingerprint(no_optimizer), drift,
            first_used_after_resume(out))


def lr_restoring_load(path, **kwargs):
    """load_checkpoint, then the saved learning rate and betas put back into the optimizer's
    param_groups even when its state (the moments) was not loaded."""
    info = load_checkpoint(path, **kwargs)
    saved = torch.load(path, weights_only=True)["optimizer"]["param_groups"]
    for group, saved_group in zip(kwargs["scheduler"].optimizer.param_groups, saved, strict=True):
        group["lr"], group["betas"] = saved_group["lr"], tuple(saved_group["betas"])
    return info


def test_c27_resume_without_rng_or_optimizer_without_state(tmp_path, monkeypatch):
    verdict = chapter_function(CHAPTER, "verdict_c27")
    straight, resumed, no_optimizer, drift, used = resume_evidence(tmp_path / "real")
    verdict(straight, resumed, no_optimizer, drift, used)
    with monkeypatch.context() as patch:  # a resume that forgets the random generators
        patch.setattr(resumable, "load_checkpoint",
                      functools.partial(load_checkpoint, restore_rng=False))
        forgot_rng = fingerprint(interrupted(tmp_path / "no_rng"))
    with pytest.raises(AssertionError):
        verdict(straight, forgot_rng, no_optimizer, drift, used)
    with monkeypatch.context() as patch:  # an optimizer with no state: nothing to lose
        patch.setattr(resumable, "build", stateless_build)
        stateless = resume_evidence(tmp_path / "sgd")
    with pytest.raises(AssertionError):
        verdict(*stateless)


def test_c27_a_resume_that_loses_only_the_moments(tmp_path, monkeypatch):
    """The learning rate and beta1 put back: the run still departs (the moments), and the
    verdict, which names both causes, fails on the one that is gone."""
    verdict = chapter_function(CHAPTER, "verdict_c27")
    verdict(*resume_evidence(tmp_path / "real"))
    with monkeypatch.context() as patch:
        patch.setattr(resumable, "load_checkpoint", lr_restoring_load)
        moments_only = resume_evidence(tmp_path / "moments_only")
    assert moments_only[2] != moments_only[0]  # it departs all the same
    with pytest.raises(AssertionError):
        verdict(*moments_only)


# C28: a compiled model's keys, and what was saved from it

def compile_evidence(tmp_path, compile_in_place: bool = False, save_wrapper: bool = False,
                     strip: bool = True) -> tuple:
    torch.manual_seed(0)
    net = Net()
    if compile_in_place:  # no wrapper, so no prefix
        compiled = Net()
        compiled.load_state_dict(net.state_dict())
        compiled.compile()
    else:
        compiled = torch.compile(net)
    from_compiled = compiled.state_dict()
    plain_model = Net()
    if strip:
        plain_model.load_state_dict(strip_compile_prefix(from_compiled))
    else:  # strict=False without stripping: loads nothing
        plain_model.load_state_dict(from_compiled, strict=False)
    other = torch.compile(Net())
    other._orig_mod.load_state_dict(net.state_dict())
    if save_wrapper:
        torch.save({"model": from_compiled}, tmp_path / "compiled.pt")
    else:
        save_checkpoint(tmp_path / "compiled.pt", model=compiled)
    saved_keys = list(torch.load(tmp_path / "compiled.pt", weights_only=True)["model"])
    probe = torch.randn(8, 16)
    return (list(from_compiled), list(net.state_dict()), saved_keys, plain_model(probe),
            net(probe), list(other._orig_mod.parameters()), list(net.parameters()))


def test_c28_compile_without_wrapper_or_saving_the_wrapper(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c28")
    verdict(*compile_evidence(tmp_path))
    with pytest.raises(AssertionError):  # compiled in place: no prefix to see
        verdict(*compile_evidence(tmp_path, compile_in_place=True))
    with pytest.raises(AssertionError):  # the wrapper's state_dict saved as it is
        verdict(*compile_evidence(tmp_path, save_wrapper=True))
    with pytest.raises(AssertionError):  # the prefix not stripped: nothing loaded
        verdict(*compile_evidence(tmp_path, strip=False))


# C37: a payload that runs when unpickled

class Payload:
    def __reduce__(self):
        return (exec, ("import os; os.environ['TEST_CAN_FAIL_07_PAYLOAD'] = 'ran'",))


def payload_evidence(path, weights_only: bool = True, harmless: bool = False) -> tuple:
    """What the chapter's cell computes, with the load it checks given (full unpickling: what
    the default was before torch 2.6, or what TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 makes it)."""
    torch.save({"extra": {"lr": 0.1} if harmless else Payload()}, path)
    os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None)
    refusal = ""
    try:
        torch.load(path, weights_only=weights_only)
    except pickle.UnpicklingError as err:
        refusal = str(err)
    refused = "TEST_CAN_FAIL_07_PAYLOAD" not in os.environ
    os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None)
    torch.load(path, weights_only=False)
    payload_ran = os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None) == "ran"
    return refused, refusal, payload_ran


def test_c37_old_default_or_a_payload_that_cannot_run(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c37")
    verdict(*payload_evidence(tmp_path / "a.pt"))
    with pytest.raises(AssertionError):  # full unpickling (torch < 2.6's default)
        verdict(*payload_evidence(tmp_path / "b.pt", weights_only=False))
    with pytest.raises(AssertionError):  # a file with nothing to run proves nothing
        verdict(*payload_evidence(tmp_path / "c.pt", harmless=True))


# C88: a float16 run's GradScaler, for a few steps

HALF = {"steps": 30, "every": 10, "print_steps": False, "float16": True}


def float16_evidence(out) -> tuple:
    straight = resumable.train(out / "straight", **HALF)
    resumable.train(out / "resumed", stop_after=17, **HALF)
    saved = torch.load(out / "resumed" / "checkpoint.pt", weights_only=True)["scaler"]
    resumed = resumable.train(out / "resumed", **HALF)
    resumable.train(out / "no_scaler", stop_after=17, **HALF)
    no_scaler = resumable.train(out / "no_scaler", load_scaler=False, **HALF)
    skipped = {name: [s for s in json.loads((out / folder / "final.json").read_text())["skipped"]
                      if s > 10]  # after the step-10 checkpoint the resumes start from
               for name, folder in [("straight", "straight"), ("resumed", "resumed"),
                                    ("no scaler", "no_scaler")]}
    return (fingerprint(straight), fingerprint(resumed), fingerprint(no_scaler), saved,
            resumable.make_scaler().state_dict(), skipped)


def test_c88_a_scaler_forgotten_or_one_that_never_changes(tmp_path, monkeypatch):
    verdict = chapter_function(CHAPTER, "verdict_c88")
    verdict(*float16_evidence(tmp_path / "real"))
    with monkeypatch.context() as patch:  # a resume that drops the scaler state it was given
        def forgetting_load(path, *, scaler=None, **kwargs):
            return load_checkpoint(path, **kwargs)
        patch.setattr(resumable, "load_checkpoint", forgetting_load)
        forgot = float16_evidence(tmp_path / "forgot")
    with pytest.raises(AssertionError):
        verdict(*forgot)
    with monkeypatch.context() as patch:  # a scale that never moves: nothing to lose
        patch.setattr(resumable, "make_scaler",
                      lambda: torch.amp.GradScaler("cpu", init_scale=2.0**16,
                                                   growth_interval=10**6))
        constant = float16_evidence(tmp_path / "constant")
    with pytest.raises(AssertionError):
        verdict(*constant)


def test_c88_other_weights_with_the_same_skipped_steps(tmp_path):
    """Final weights that differ while the same steps were skipped (a difference of rounding,
    not of the scale) do not make the claim: the skipped steps must differ."""
    verdict = chapter_function(CHAPTER, "verdict_c88")
    *fingerprints, saved, fresh, skipped = float16_evidence(tmp_path / "real")
    verdict(*fingerprints, saved, fresh, skipped)
    with pytest.raises(AssertionError):
        verdict(*fingerprints, saved, fresh, {**skipped, "no scaler": skipped["straight"]})


# C89: a flipped byte, a file without CRC32s, and what the check reads

class CountingFile(io.FileIO):
    """The chapter's file that counts the bytes read from it."""
    bytes_read = 0

    def read(self, size=-1):
        data = super().read(size)
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer):
        count = super().readinto(buffer)
        self.bytes_read += count or 0
        return count


def mb_read_by(load, path: Path, **options) -> float:
    """MB that ``load(path, ...)`` reads through the files helpers.checkpoint_file opens."""
    from helpers import checkpoint_file

    opened = []

    def counting_open(name, mode="r", *args, **kwargs):
        opened.append(CountingFile(name, mode.replace("b", "")))
        return opened[-1]

    with mock.patch.object(checkpoint_file, "open", counting_open, create=True):
        load(path, **options)
    return sum(f.bytes_read for f in opened) / 2**20


def crc_evidence(tmp_path, flip_in_crc_checked: bool = True, crc_off: bool = True,
                 load=load_checkpoint) -> tuple:
    import warnings
    import zipfile

    from helpers.checkpoint import UncheckedArchiveWarning

    model = Net()
    save_checkpoint(tmp_path / "ok.pt", model=model, step=4)
    damaged = bytearray((tmp_path / "ok.pt").read_bytes())
    where = damaged.find(model.head.weight.detach().numpy().tobytes())
    damaged[where + 5] ^= 0xFF
    (tmp_path / "damaged.pt").write_bytes(damaged)
    silent = torch.load(tmp_path / "damaged.pt", weights_only=True)["model"]["head.weight"]
    changed = (silent != model.head.weight.detach()).sum().item()
    refusal = ""
    try:
        if flip_in_crc_checked:
            load_checkpoint(tmp_path / "damaged.pt", model=Net())
        else:  # a loader that trusts torch.load
            torch.load(tmp_path / "damaged.pt", weights_only=True)
    except ValueError as err:
        refusal = str(err)
    was = torch.serialization.get_crc32_options()
    torch.serialization.set_crc32_options(not crc_off)
    try:
        save_checkpoint(tmp_path / "no_crc.pt", model=model, step=4)
    finally:
        torch.serialization.set_crc32_options(was)
    with zipfile.ZipFile(tmp_path / "no_crc.pt") as archive:
        stored = {info.CRC for info in archive.infolist()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step = load_checkpoint(tmp_path / "no_crc.pt", model=Net())["step"]
    unchecked = [str(w.message) for w in caught if w.category is UncheckedArchiveWarning]
    save_checkpoint(tmp_path / "big.pt", model=nn.Linear(512, 512))
    size = (tmp_path / "big.pt").stat().st_size / 2**20
    big = nn.Linear(512, 512)
    extra = (mb_read_by(load, tmp_path / "big.pt", model=big, check_crc=True)
             - mb_read_by(load_checkpoint, tmp_path / "big.pt", model=big, check_crc=False))
    return changed, refusal, stored, unchecked, step, size, extra


def never_checking(path, *, check_crc: bool = True, **options):
    """A load_checkpoint whose CRC check reads nothing (it trusts torch.load)."""
    return load_checkpoint(path, check_crc=False, **options)


def checking_thrice(path, **options):
    """A load_checkpoint that runs its CRC check three times: three more reads of the file."""
    from helpers import checkpoint_file

    check = checkpoint_file._check_archive

    def three_times(*args):
        for _ in range(3):
            args[1].seek(0)
            check(*args)

    with mock.patch.object(checkpoint_file, "_check_archive", three_times):
        return load_checkpoint(path, **options)


def test_c89_no_crc_check_or_a_check_that_reads_part(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c89")
    verdict(*crc_evidence(tmp_path))
    with pytest.raises(AssertionError):  # a loader that trusts torch.load: no refusal
        verdict(*crc_evidence(tmp_path, flip_in_crc_checked=False))
    with pytest.raises(AssertionError):  # CRC32s written: nothing unchecked to warn about
        verdict(*crc_evidence(tmp_path, crc_off=False))
    with pytest.raises(AssertionError):  # a load whose check reads nothing
        verdict(*crc_evidence(tmp_path, load=never_checking))
    with pytest.raises(AssertionError):  # a load that reads the file three times more
        verdict(*crc_evidence(tmp_path, load=checking_thrice))


def test_c89_a_check_that_rejects_files_without_crcs(tmp_path, monkeypatch):
    """The helper before this fix: every archive without CRC32s refused as corrupt."""
    import zipfile

    from helpers import checkpoint_file

    monkeypatch.setattr(checkpoint_file, "_written_without_crcs", lambda archive: False)
    model = Net()
    was = torch.serialization.get_crc32_options()
    torch.serialization.set_crc32_options(False)
    try:
        save_checkpoint(tmp_path / "no_crc.pt", model=model, step=4)
    finally:
        torch.serialization.set_crc32_options(was)
    with pytest.raises(ValueError, match="CRC32"):
        load_checkpoint(tmp_path / "no_crc.pt", model=Net())
    assert {i.CRC for i in zipfile.ZipFile(tmp_path / "no_crc.pt").infolist()} == {0}


# C90: a meta-built model loaded from an mmap'd file

def in_file_mapping(pointer: int, path: Path) -> bool | None:
    """Whether ``pointer`` lies in a memory mapping of ``path`` (None off Linux)."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return None
    for line in maps.read_text().splitlines():
        fields = line.split(maxsplit=5)
        low, high = (int(part, 16) for part in fields[0].split("-"))
        if low <= pointer < high and len(fields) == 6 and fields[5].strip() == str(path.resolve()):
            return True
    return False


def mmap_evidence(tmp_path, assign: bool = True, mmap: bool = True,
                  assign_first: bool = False, keep_parameter: bool = False) -> tuple:
    import warnings

    def build():  # no plain tensor attribute: under torch.device("meta") it would be meta too
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    torch.manual_seed(0)
    net = build()
    torch.save(net.state_dict(), tmp_path / "weights.pt")
    with torch.device("meta"):
        skeleton = build()
    loaded = torch.load(tmp_path / "weights.pt", mmap=mmap, weights_only=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if assign_first:  # a world where the plain load already works: a model on the CPU
            skeleton = build()
        skeleton.load_state_dict(loaded)
    warning = next((str(w.message) for w in caught if "no-op" in str(w.message)), "")
    still_meta = skeleton[2].weight.is_meta
    if keep_parameter:  # the tensors adopted into the existing Parameters: no new objects
        skeleton = skeleton.to_empty(device="cpu")
        before = skeleton[2].weight
        with torch.no_grad():
            for name, parameter in skeleton.named_parameters():
                parameter.data = loaded[name]
    elif assign:
        before = skeleton[2].weight
        skeleton.load_state_dict(loaded, assign=True)
    else:  # a copy into materialised parameters
        skeleton = skeleton.to_empty(device="cpu")
        before = skeleton[2].weight
        skeleton.load_state_dict(loaded)
    weight = skeleton[2].weight
    same_storage = weight.data_ptr() == loaded["2.weight"].data_ptr()
    probe = torch.randn(8, 16)
    return (still_meta, warning, same_storage,
            in_file_mapping(weight.data_ptr(), tmp_path / "weights.pt"),
            isinstance(weight, nn.Parameter), torch.equal(skeleton(probe), net(probe)),
            weight is not before)


def test_c90_a_copy_or_a_load_into_real_parameters(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c90")
    verdict(*mmap_evidence(tmp_path))
    with pytest.raises(AssertionError):  # to_empty + load_state_dict: copied, not adopted
        verdict(*mmap_evidence(tmp_path, assign=False))
    with pytest.raises(AssertionError):  # the model built on the CPU: nothing to warn about
        verdict(*mmap_evidence(tmp_path, assign_first=True))
    evidence = list(mmap_evidence(tmp_path))
    evidence[3] = False  # the address outside the file's mapping (a read into new memory)
    with pytest.raises(AssertionError):
        verdict(*evidence)
    evidence[3] = None  # off Linux the chapter skips the claim: None is not evidence
    with pytest.raises(AssertionError):
        verdict(*evidence)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps (Linux)")
def test_c90_a_load_without_mmap(tmp_path):
    """assign=True adopts the loaded tensors with or without mmap: only the mapping tells."""
    verdict = chapter_function(CHAPTER, "verdict_c90")
    evidence = mmap_evidence(tmp_path)
    assert evidence[3] is True
    verdict(*evidence)
    without = mmap_evidence(tmp_path, mmap=False)
    assert without[2] and without[3] is False  # same storage, but not the file's
    with pytest.raises(AssertionError):
        verdict(*without)


def test_c90_the_old_parameter_kept(tmp_path):
    """What the chapter once said assign=True does (keep the model's Parameter objects)."""
    verdict = chapter_function(CHAPTER, "verdict_c90")
    verdict(*mmap_evidence(tmp_path))
    kept = mmap_evidence(tmp_path, keep_parameter=True)
    assert kept[2] and kept[5]  # the file's tensors, the saved outputs: only the object is old
    with pytest.raises(AssertionError):
        verdict(*kept)


class Rotary(nn.Module):
    """The chapter's stand-in for a RoPE layer, with its buffer's persistence as an option."""

    def __init__(self, dim: int = 16, persistent: bool = False) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("inv_freq", self.frequencies(dim), persistent=persistent)

    @staticmethod
    def frequencies(dim: int) -> torch.Tensor:
        return 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angles = torch.arange(x.shape[0]).float()[:, None] * self.inv_freq
        return self.proj(x) * torch.cat([angles.cos(), angles.sin()], dim=-1)


def buffer_evidence(tmp_path, persistent: bool = False, recreate=Rotary.frequencies) -> tuple:
    torch.manual_seed(0)
    rotary = Rotary(persistent=persistent)
    torch.save(rotary.state_dict(), tmp_path / "rotary.pt")
    saved_keys = list(torch.load(tmp_path / "rotary.pt", weights_only=True))
    with torch.device("meta"):
        skeleton = Rotary(persistent=persistent)
    report = skeleton.load_state_dict(
        torch.load(tmp_path / "rotary.pt", mmap=True, weights_only=True), assign=True)
    on_meta = chapter_function(CHAPTER, "on_meta")
    left = on_meta(skeleton)
    x = torch.randn(6, 16)
    meta_error = ""
    try:
        skeleton(x)
    except RuntimeError as err:
        meta_error = str(err)
    if recreate is not None:
        skeleton.inv_freq = recreate(16)
    after = on_meta(skeleton)
    same = not after and torch.equal(skeleton(x), rotary(x))
    return (saved_keys, report.missing_keys, report.unexpected_keys, left, meta_error, after,
            same)


def test_c90_a_saved_buffer_or_one_never_recreated(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c90_buffers")
    verdict(*buffer_evidence(tmp_path))
    with pytest.raises(AssertionError):  # a persistent buffer: saved, loaded, nothing on meta
        verdict(*buffer_evidence(tmp_path, persistent=True))
    with pytest.raises(AssertionError):  # the check skipped: the buffer stays on meta
        verdict(*buffer_evidence(tmp_path, recreate=None))
    with pytest.raises(AssertionError):  # re-created with other values
        verdict(*buffer_evidence(tmp_path, recreate=lambda dim: torch.ones(dim // 2)))
    evidence = list(buffer_evidence(tmp_path))
    evidence[1] = ["inv_freq"]  # a strict load that reports the buffer it left on meta
    with pytest.raises(AssertionError):
        verdict(*evidence)


def test_c90_on_meta_finds_what_a_buffer_check_misses(tmp_path):
    """The chapter's on_meta: a plain tensor attribute made in __init__ and a parameter a
    strict=False load left behind are on meta too; named_buffers() sees neither."""
    on_meta = chapter_function(CHAPTER, "on_meta")

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj, self.extra = nn.Linear(4, 4), nn.Linear(4, 4)
            self.scale = torch.ones(4) * 2  # a plain attribute: never in a state_dict

    torch.save({k: v for k, v in Scaled().state_dict().items() if not k.startswith("extra")},
               tmp_path / "scaled.pt")
    with torch.device("meta"):
        model = Scaled()
    model.load_state_dict(torch.load(tmp_path / "scaled.pt"), assign=True, strict=False)
    assert [n for n, b in model.named_buffers() if b.is_meta] == []
    assert on_meta(model) == ["scale", "extra.weight", "extra.bias"]
    model.scale = torch.ones(4) * 2
    model.extra = nn.Linear(4, 4)
    assert on_meta(model) == []


# C91: a pickled whole model

def whole_model_evidence(tmp_path, default_weights_only: bool = True,
                         module_removed: bool = True) -> tuple:
    import importlib
    import shutil
    import sys

    code = tmp_path / "code"
    code.mkdir(parents=True)
    (code / "chapter07_models.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.body = nn.Sequential(nn.Linear(16, 32), "
        "nn.ReLU())\n        self.head = nn.Linear(32, 4)\n\n    def forward(self, x):\n"
        "        return self.head(self.body(x))\n")
    sys.path.insert(0, str(code))
    sys.modules.pop("chapter07_models", None)
    try:
        old = importlib.import_module("chapter07_models").Net()
        torch.save(old, tmp_path / "whole.pt")
        torch.save(old.state_dict(), tmp_path / "state.pt")
        refusal = ""
        try:
            torch.load(tmp_path / "whole.pt", weights_only=default_weights_only)
        except pickle.UnpicklingError as err:
            refusal = str(err)
        if module_removed:
            sys.path.remove(str(code))
            del sys.modules["chapter07_models"]
            shutil.rmtree(code)
        missing = ""
        try:
            torch.load(tmp_path / "whole.pt", weights_only=False)
        except ModuleNotFoundError as err:
            missing = f"{type(err).__name__}: {err}"
    finally:
        if str(code) in sys.path:
            sys.path.remove(str(code))
        sys.modules.pop("chapter07_models", None)

    class Elsewhere(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
            self.head = nn.Linear(32, 4)

        def forward(self, x):
            return self.head(self.body(x))

    fresh = Elsewhere()
    fresh.load_state_dict(torch.load(tmp_path / "state.pt"))
    probe = torch.randn(8, 16)
    return refusal, missing, torch.equal(fresh(probe), old(probe))


def test_c91_old_default_or_the_class_still_importable(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c91")
    verdict(*whole_model_evidence(tmp_path / "a"))
    with pytest.raises(AssertionError):  # torch < 2.6: the default load unpickles it
        verdict(*whole_model_evidence(tmp_path / "b", default_weights_only=False))
    with pytest.raises(AssertionError):  # the class never moved: the pickle loads
        verdict(*whole_model_evidence(tmp_path / "c", module_removed=False))
