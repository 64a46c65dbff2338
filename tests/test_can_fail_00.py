"""Chapter 00's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapter_code.py) evidence computed in a world without the effect, and evidence
from the real world as a positive control."""

import traceback

import pytest
import torch
from torch import nn

from helpers import diagnose_cuda, read_cuda_facts
from tests.chapter_code import chapter_function

CHAPTER = "00_setup"

# C39: eager forward runs Python control flow; a shape error names its line ---------------


class Misfit(nn.Module):
    """The chapter's MisfitNet situation: head expects 32 features, body makes 16."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.body(x))
        return self.head(h)


class Shrinking(nn.Module):
    """The chapter's TinyNet loop: halve the activations until their norm is at most 5."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 3)

    def forward(self, x: torch.Tensor, fixed_steps: int | None = None) -> torch.Tensor:
        h = torch.relu(self.body(x))
        steps = 0
        while (h.norm() > 5.0 if fixed_steps is None else steps < fixed_steps) and steps < 10:
            h = h / 2
            steps += 1
        self.last_steps = steps
        return self.head(h)


def deferred_run(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A 'build the graph, then run it' world: forward only records the ops; they run here."""
    ops = [model.body, torch.relu, model.head]  # the graph, captured before any data flows
    for op in ops:
        x = op(x)  # the error surfaces in the executor, not in a line of forward
    return x


def innermost_user_line(err: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if "/torch/" not in f.filename]
    return frames[-1].line or ""


def eager_evidence(fixed_steps: int | None = None, deferred: bool = False):
    torch.manual_seed(0)
    net = Shrinking()
    out = net(torch.randn(4, 8), fixed_steps=fixed_steps)
    small = net.last_steps
    out_big = net(100 * torch.randn(4, 8), fixed_steps=fixed_steps)
    model = Misfit()
    try:
        deferred_run(model, torch.randn(4, 8)) if deferred else model(torch.randn(4, 8))
    except RuntimeError as err:
        message, line = str(err), innermost_user_line(err)
    return (small, net.last_steps), [out.shape, out_big.shape], message, line


def test_c39_positive_control_eager():
    verdict = chapter_function(CHAPTER, "verdict_c39")
    verdict(*eager_evidence())


def test_c39_loop_count_fixed_at_capture():
    """A graph captured once replays the same number of loop steps for every input."""
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, message, line = eager_evidence(fixed_steps=2)
    assert loop_steps == (2, 2)
    with pytest.raises(AssertionError, match="not data-driven"):
        verdict(loop_steps, shapes, message, line)


def test_c39_error_raised_by_a_deferred_executor():
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, message, line = eager_evidence(deferred=True)
    assert "4x16" in message  # the same error ...
    with pytest.raises(AssertionError, match="x = op"):  # ... raised at the executor's line
        verdict(loop_steps, shapes, message, line)


def test_c39_message_without_the_shapes():
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, _, line = eager_evidence()
    with pytest.raises(AssertionError):
        verdict(loop_steps, shapes, "RuntimeError: shape mismatch", line)


# C38: the wheel decides; a CUDA build that is not available points at driver or device ----

REPORTS = [(None, False, "550.54"), ("12.6", True, "560.35"), ("12.6", False, None),
           ("12.8", False, "470.57")]  # the chapter's four reported situations


def wheel_first_diagnosis(cuda_build, is_available, driver_version):
    """A planted broken helper: whatever is not available is blamed on the wheel."""
    return diagnose_cuda(cuda_build, True, driver_version) if is_available else \
        diagnose_cuda(None, False, driver_version)


def machine_evidence():
    facts = read_cuda_facts()
    here = diagnose_cuda(**facts)
    outcome = chapter_function(CHAPTER, "try_a_cuda_kernel")()
    return (torch.version.cuda, getattr(torch.version, "hip", None),
            torch.backends.cuda.is_built(), here.case, outcome)


def test_c38_positive_control_this_machine():
    verdict = chapter_function(CHAPTER, "verdict_c38")
    diagnoses = [diagnose_cuda(*facts) for facts in REPORTS]
    verdict([d.case for d in diagnoses], diagnoses[3].advice, *machine_evidence())


def test_c38_helper_that_blames_the_wheel():
    verdict = chapter_function(CHAPTER, "verdict_c38")
    diagnoses = [wheel_first_diagnosis(*facts) for facts in REPORTS]
    assert [d.case for d in diagnoses][2:] == ["cpu-wheel", "cpu-wheel"]
    with pytest.raises(AssertionError):
        verdict([d.case for d in diagnoses], diagnoses[3].advice, *machine_evidence())


def test_c38_cuda_version_on_a_build_without_cuda():
    verdict = chapter_function(CHAPTER, "verdict_c38")
    cases = ["cpu-wheel", "cuda-ready", "driver-or-device", "driver-or-device"]
    advice = diagnose_cuda(*REPORTS[3]).advice
    with pytest.raises(AssertionError):  # a version string on a build without CUDA
        verdict(cases, advice, "12.6", None, False, "driver-or-device", "RuntimeError: ...")
    with pytest.raises(AssertionError):  # a ROCm wheel that also reports a CUDA version
        verdict(cases, advice, "12.6", "6.2", True, "cuda-ready", "ran")


def test_c38_prediction_contradicted_by_the_kernel():
    """A CPU-only wheel whose kernel ran, or a driver problem whose kernel ran: the
    diagnosis is wrong, and the verdict must say so."""
    verdict = chapter_function(CHAPTER, "verdict_c38")
    cases = ["cpu-wheel", "cuda-ready", "driver-or-device", "driver-or-device"]
    advice = diagnose_cuda(*REPORTS[3]).advice
    with pytest.raises(AssertionError):
        verdict(cases, advice, None, None, False, "cpu-wheel", "ran")
    with pytest.raises(AssertionError):
        verdict(cases, advice, "12.6", None, True, "driver-or-device", "ran")
    verdict(cases, advice, None, None, False, "cpu-wheel",  # the real CPU wheel's refusal
            "AssertionError: Torch not compiled with CUDA enabled")
