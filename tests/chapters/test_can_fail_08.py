"""Chapter 08's claims can fail: each verdict, compiled from the chapter
(tests/chapters/chapter_code.py), raises on evidence from a world where its claim is false and
passes on the real thing.

The evidence is computed here for real, with the mechanism removed or broken: a weight kept
outside the state_dict, a loader that hides what it skipped, a loader that checks everything
before it copies anything, a resume that forgets the random generators, an optimizer without
state, a compile without the wrapper, an older torch's default of full unpickling, a float16
resume that forgets its scaler, a loader that trusts torch.load, a load that copies, a buffer
that is saved after all or never re-created, a pickled model whose class never moved.
"""

import copy
import functools
import io
import os
import pickle

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


def fitting_only(model: nn.Module, state: dict, strict: bool = False):
    """A loader that drops what does not fit before loading: nothing to report, nothing raised."""
    own = model.state_dict()
    return model.load_state_dict({k: v for k, v in state.items()
                                  if k in own and v.shape == own[k].shape}, strict=strict)


def all_or_nothing(model: nn.Module, state: dict) -> None:
    """A strict loader that tries a copy of the model first: it raises with the model untouched."""
    copy.deepcopy(model).load_state_dict(state)
    model.load_state_dict(state)


def state_dict_evidence(weight_outside: bool = False, loader=None, strict_loader=None) -> tuple:
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
    return (same_outputs, report.missing_keys, report.unexpected_keys, body_loaded, shape_message,
            copied_anyway)


def test_c26_weight_outside_state_dict_or_a_silent_loader():
    verdict = chapter_function(CHAPTER, "verdict_c26")
    verdict(*state_dict_evidence())
    with pytest.raises(AssertionError):  # a weight the state_dict does not hold
        verdict(*state_dict_evidence(weight_outside=True))
    with pytest.raises(AssertionError):  # a loader that drops what does not fit, silently
        verdict(*state_dict_evidence(loader=fitting_only))
    same, missing, unexpected, _, message, copied = state_dict_evidence()
    with pytest.raises(AssertionError):  # strict=False that loads nothing
        verdict(same, missing, unexpected, False, message, copied)
    with pytest.raises(AssertionError):  # a strict load that raises before copying anything
        verdict(*state_dict_evidence(strict_loader=all_or_nothing))


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


def resume_evidence(out) -> tuple:
    straight = resumable.train(out / "straight", **RUN)
    resumed = interrupted(out / "resumed")
    no_optimizer = interrupted(out / "no_optimizer", load_optimizer=False)
    drift = max((a - b).abs().max().item()
                for a, b in zip(straight.parameters(), no_optimizer.parameters(), strict=True))
    return fingerprint(straight), fingerprint(resumed), fingerprint(no_optimizer), drift


def test_c27_resume_without_rng_or_optimizer_without_state(tmp_path, monkeypatch):
    verdict = chapter_function(CHAPTER, "verdict_c27")
    straight, resumed, no_optimizer, drift = resume_evidence(tmp_path / "real")
    verdict(straight, resumed, no_optimizer, drift)
    with monkeypatch.context() as patch:  # a resume that forgets the random generators
        patch.setattr(resumable, "load_checkpoint",
                      functools.partial(load_checkpoint, restore_rng=False))
        forgot_rng = fingerprint(interrupted(tmp_path / "no_rng"))
    with pytest.raises(AssertionError):
        verdict(straight, forgot_rng, no_optimizer, drift)
    with monkeypatch.context() as patch:  # an optimizer with no state: nothing to lose
        patch.setattr(resumable, "build", stateless_build)
        stateless = resume_evidence(tmp_path / "sgd")
    with pytest.raises(AssertionError):
        verdict(*stateless)


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


def payload_evidence(path, default_weights_only: bool = True, harmless: bool = False) -> tuple:
    """What the chapter's cell computes, with torch.load's default as given (False before 2.6)."""
    torch.save({"extra": {"lr": 0.1} if harmless else Payload()}, path)
    os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None)
    refusal = ""
    try:
        torch.load(path, weights_only=default_weights_only)
    except pickle.UnpicklingError as err:
        refusal = str(err)
    refused_by_default = "TEST_CAN_FAIL_07_PAYLOAD" not in os.environ
    os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None)
    torch.load(path, weights_only=False)
    payload_ran = os.environ.pop("TEST_CAN_FAIL_07_PAYLOAD", None) == "ran"
    return refused_by_default, refusal, payload_ran


def test_c37_old_default_or_a_payload_that_cannot_run(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c37")
    verdict(*payload_evidence(tmp_path / "a.pt"))
    with pytest.raises(AssertionError):  # torch < 2.6: full unpickling by default
        verdict(*payload_evidence(tmp_path / "b.pt", default_weights_only=False))
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
    return (fingerprint(straight), fingerprint(resumed), fingerprint(no_scaler), saved,
            resumable.make_scaler().state_dict())


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


# C89: a flipped byte, a file without CRC32s, and what the check reads

def crc_evidence(tmp_path, flip_in_crc_checked: bool = True, crc_off: bool = True,
                 read_fraction: float = 1.0) -> tuple:
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
    size = (tmp_path / "ok.pt").stat().st_size / 2**20
    return changed, refusal, stored, unchecked, step, size, size * read_fraction


def test_c89_no_crc_check_or_a_check_that_reads_part(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c89")
    verdict(*crc_evidence(tmp_path))
    with pytest.raises(AssertionError):  # a loader that trusts torch.load: no refusal
        verdict(*crc_evidence(tmp_path, flip_in_crc_checked=False))
    with pytest.raises(AssertionError):  # CRC32s written: nothing unchecked to warn about
        verdict(*crc_evidence(tmp_path, crc_off=False))
    with pytest.raises(AssertionError):  # a check that reads only the directory
        verdict(*crc_evidence(tmp_path, read_fraction=0.01))


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

def mmap_evidence(tmp_path, assign: bool = True, mmap: bool = True,
                  assign_first: bool = False) -> tuple:
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
    if assign:
        skeleton.load_state_dict(loaded, assign=True)
    else:  # a copy into materialised parameters
        skeleton = skeleton.to_empty(device="cpu")
        skeleton.load_state_dict(loaded)
    weight = skeleton[2].weight
    same_storage = weight.data_ptr() == loaded["2.weight"].data_ptr()
    probe = torch.randn(8, 16)
    return (still_meta, warning, same_storage, None, isinstance(weight, nn.Parameter),
            torch.equal(skeleton(probe), net(probe)))


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
    on_meta = [n for n, b in skeleton.named_buffers() if b.is_meta]
    x = torch.randn(6, 16)
    meta_error = ""
    try:
        skeleton(x)
    except RuntimeError as err:
        meta_error = str(err)
    if recreate is not None:
        skeleton.inv_freq = recreate(16)
    after = [n for n, b in skeleton.named_buffers() if b.is_meta]
    same = not after and torch.equal(skeleton(x), rotary(x))
    return (saved_keys, report.missing_keys, report.unexpected_keys, on_meta, meta_error, after,
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
