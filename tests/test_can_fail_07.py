"""Chapter 07's claims can fail: each verdict, compiled from the chapter (tests/chapter_code.py),
raises on evidence from a world where its claim is false and passes on the real thing.

The evidence is computed here for real, with the mechanism removed or broken: a weight kept
outside the state_dict, a loader that hides what it skipped, a resume that forgets the random
generators, an optimizer without state, a compile without the wrapper, an older torch's
default of full unpickling.
"""

import functools
import io
import os
import pickle

import pytest
import torch
from torch import nn

from helpers import fingerprint, load_checkpoint, resumable, save_checkpoint, strip_compile_prefix
from tests.chapter_code import chapter_function

CHAPTER = "07_checkpoints"


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


def state_dict_evidence(weight_outside: bool = False, loader=None) -> tuple:
    loader = loader or (lambda model, state: model.load_state_dict(state, strict=False))
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
    return same_outputs, report.missing_keys, report.unexpected_keys, body_loaded, shape_message


def test_c26_weight_outside_state_dict_or_a_silent_loader():
    verdict = chapter_function(CHAPTER, "verdict_c26")
    verdict(*state_dict_evidence())
    with pytest.raises(AssertionError):  # a weight the state_dict does not hold
        verdict(*state_dict_evidence(weight_outside=True))
    with pytest.raises(AssertionError):  # a loader that drops what does not fit, silently
        verdict(*state_dict_evidence(loader=fitting_only))
    same, missing, unexpected, _, message = state_dict_evidence()
    with pytest.raises(AssertionError):  # strict=False that loads nothing
        verdict(same, missing, unexpected, False, message)


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
