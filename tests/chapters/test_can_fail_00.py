"""Chapter 00's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapters/chapter_code.py) evidence computed in a world without the effect, and
evidence from the real world as a positive control."""

import os
import platform
import re
import traceback

import pytest
import torch
from torch import nn

from helpers import diagnose_cuda, diagnose_python, read_cuda_facts, torch_python_metadata
from tests.chapters.chapter_code import chapter_function

CHAPTER = "00_setup"

# C39: eager forward runs Python control flow; a shape error names its line ---------------


class Misfit(nn.Module):
    """The chapter's MisfitNet situation: head expects 32 features, body makes 16."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.body(x))
        logits = self.head(h)
        return logits


class DeferredMisfit(Misfit):
    """A world that records the ops in forward and runs them when forward returns (deferred
    execution flushed at the module boundary): the same error, raised at the return line."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = (torch.relu, self.body)  # recorded, not run
        logits = (self.head, h)
        return run_recorded(logits, x)


def run_recorded(op, x: torch.Tensor) -> torch.Tensor:
    if isinstance(op, tuple):
        outer, inner = op
        return outer(run_recorded(inner, x))
    return op(x)


class Shrinking(nn.Module):
    """The chapter's TinyNet loop: halve the activations until their norm is at most 5."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 3)

    def forward(self, x: torch.Tensor, fixed_steps: int | None = None,
                verbose: bool = False) -> torch.Tensor:
        h = torch.relu(self.body(x))
        if verbose:
            print("after body:", tuple(h.shape))
        steps = 0
        while (h.norm() > 5.0 if fixed_steps is None else steps < fixed_steps) and steps < 10:
            h = h / 2
            steps += 1
        self.last_steps = steps
        return self.head(h)


def innermost_user_line(err: BaseException) -> str:
    torch_dir = os.path.dirname(torch.__file__) + os.sep  # portable, and a checkout under a
    frames = [f for f in traceback.extract_tb(err.__traceback__)  # .../torch/... path is ours
              if not os.path.abspath(f.filename).startswith(torch_dir)]
    return frames[-1].line or ""


def trace_stop_line(model: nn.Module, **concrete) -> str | None:
    """Where torch.fx.symbolic_trace stops in forward, or None when it traces the module."""
    try:
        torch.fx.symbolic_trace(model, concrete_args=concrete)
    except torch.fx.proxy.TraceError as err:
        return innermost_user_line(err)
    return None


def frame_in_forward():
    """The chapter's own function that names the line of forward a traceback points at."""
    return chapter_function(CHAPTER, "frame_in_forward", os=os, traceback=traceback)


def eager_evidence(fixed_steps: int | None = None, deferred: bool = False):
    torch.manual_seed(0)
    net = Shrinking()
    out = net(torch.randn(4, 8), fixed_steps=fixed_steps)
    small = net.last_steps
    out_big = net(100 * torch.randn(4, 8), fixed_steps=fixed_steps)
    model = DeferredMisfit() if deferred else Misfit()
    try:
        model(torch.randn(4, 8))
    except RuntimeError as err:
        message, line = str(err), frame_in_forward()(err).line
    trace_line = trace_stop_line(Shrinking(), fixed_steps=fixed_steps, verbose=False)
    return (small, net.last_steps), [out.shape, out_big.shape], message, line, trace_line


def test_c39_positive_control_eager():
    verdict = chapter_function(CHAPTER, "verdict_c39")
    evidence = eager_evidence()
    assert evidence[-1].strip().startswith("while")  # the tracer stops at the loop
    verdict(*evidence)


def test_c39_innermost_user_line_under_a_torch_named_folder(tmp_path):
    """A checkout under .../torch/... keeps its own frames (review 00 #5)."""
    cell = tmp_path / "torch" / "book" / "cell.py"
    cell.parent.mkdir(parents=True)
    cell.write_text("raise RuntimeError('shape mismatch')\n")
    with pytest.raises(RuntimeError) as caught:
        exec(compile(cell.read_text(), str(cell), "exec"), {})
    assert innermost_user_line(caught.value) == "raise RuntimeError('shape mismatch')"


def test_c39_tracer_without_a_data_dependent_stop():
    """A tracer that records the loop (its count fixed), or stops at the verbose flag instead
    of the loop: the captured-graph half of the claim is not shown."""
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, message, line, _ = eager_evidence()
    fixed = trace_stop_line(Shrinking(), fixed_steps=2, verbose=False)
    assert fixed is None  # traced: the loop count was fixed at capture
    with pytest.raises(AssertionError, match="did not stop at the loop"):
        verdict(loop_steps, shapes, message, line, fixed)
    at_flag = trace_stop_line(Shrinking())  # verbose left symbolic: stops at `if verbose:`
    assert at_flag.strip() == "if verbose:"
    with pytest.raises(AssertionError, match="did not stop at the loop"):
        verdict(loop_steps, shapes, message, line, at_flag)


def test_c39_loop_count_fixed_at_capture():
    """A graph captured once replays the same number of loop steps for every input."""
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, message, line, trace_line = eager_evidence(fixed_steps=2)
    assert loop_steps == (2, 2)
    with pytest.raises(AssertionError, match="not data-driven"):
        verdict(loop_steps, shapes, message, line, trace_line)


def test_c39_error_raised_by_a_deferred_executor():
    """Ops recorded in forward and run when it returns: the same error, named at forward's last
    line, which is not the line that caused it (review 00 #15)."""
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, message, line, trace_line = eager_evidence(deferred=True)
    assert "4x16" in message  # the same error ...
    assert line.strip() == "return run_recorded(logits, x)"  # ... at the return line
    with pytest.raises(AssertionError, match="return run_recorded"):
        verdict(loop_steps, shapes, message, line, trace_line)


def test_c39_message_without_the_shapes():
    verdict = chapter_function(CHAPTER, "verdict_c39")
    loop_steps, shapes, _, line, trace_line = eager_evidence()
    with pytest.raises(AssertionError):
        verdict(loop_steps, shapes, "RuntimeError: shape mismatch", line, trace_line)


# C38: the wheel decides; a CUDA build that is not available points at driver or device ----

REPORTS = [(None, False, "550.54"), ("12.6", True, "560.35"), ("12.6", False, None),
           ("12.8", False, "470.57")]  # the chapter's four reported situations


def wheel_first_diagnosis(cuda_build, is_available, driver_version):
    """A planted broken helper: whatever is not available is blamed on the wheel."""
    return diagnose_cuda(cuda_build, True, driver_version) if is_available else \
        diagnose_cuda(None, False, driver_version)


def machine_evidence():
    facts = read_cuda_facts()  # on this machine; the chapter's cell reads the same
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


def test_c38_old_driver_advice_without_the_minimum_driver():
    """The old driver's advice swapped for the no-driver advice: both mention 'driver', only
    one names the minimum (525 for CUDA 12.x) that the chapter states (review 00 #13)."""
    verdict = chapter_function(CHAPTER, "verdict_c38")
    cases = ["cpu-wheel", "cuda-ready", "driver-or-device", "driver-or-device"]
    no_driver = diagnose_cuda("12.8", False, None).advice
    assert "driver" in no_driver and "525" not in no_driver
    with pytest.raises(AssertionError):
        verdict(cases, no_driver, *machine_evidence())
    verdict(cases, diagnose_cuda(*REPORTS[3]).advice, *machine_evidence())  # the control


def test_c38_driver_case_whose_kernel_says_not_compiled():
    """A 'driver-or-device' diagnosis on a CUDA build whose kernel says the build has no CUDA:
    exactly what the claim says cannot happen (review 00 #13)."""
    verdict = chapter_function(CHAPTER, "verdict_c38")
    cases = ["cpu-wheel", "cuda-ready", "driver-or-device", "driver-or-device"]
    advice = diagnose_cuda(*REPORTS[3]).advice
    with pytest.raises(AssertionError):
        verdict(cases, advice, "13.0", None, True, "driver-or-device",
                "AssertionError: Torch not compiled with CUDA enabled")
    verdict(cases, advice, "13.0", None, True, "driver-or-device",  # no driver: the control
            "RuntimeError: Found no NVIDIA driver on your system.")
    verdict(cases, advice, None, None, False, "other-accelerator",  # an XPU or MPS build
            "AssertionError: Torch not compiled with CUDA enabled")


# C46: the check tells the Python cases apart and reads torch's own metadata ---------------

PYTHON_REPORTS = [("3.12.3", ">=3.10", ("3.10", "3.11", "3.12", "3.13")),
                  ("3.9.18", ">=3.10", ("3.10", "3.11", "3.12", "3.13")),
                  ("3.15.0", ">=3.10", ("3.10", "3.11", "3.12", "3.13")),
                  ("3.12.3", None, ())]  # the chapter's four reported situations


def python_evidence(check=diagnose_python):
    diagnoses = [check(*facts) for facts in PYTHON_REPORTS]
    return [d.case for d in diagnoses], diagnoses[1].advice


LISTED = ("3.10", "3.11", "3.12", "3.13", "3.14")


def test_c46_positive_control():
    verdict = chapter_function(CHAPTER, "verdict_c46")
    cases, advice = python_evidence()
    requires, listed = torch_python_metadata()
    here = diagnose_python(platform.python_version(), requires, listed)
    verdict(cases, advice, requires, listed, platform.python_version(), here.case)
    verdict(cases, advice, None, (), "3.12.3", "unknown")  # no Requires-Python
    verdict(cases, advice, ">=3.10", LISTED, "3.15.0", "not-listed")  # newer than the release


def major_only(python, requires, listed=()):
    """A planted broken check: compares the major version only, so 3.9 'meets' >=3.10."""
    return diagnose_python(python, None if requires is None else ">=3", listed)


def lower_bound_only(python, requires, listed=()):
    """A planted broken check: reads Requires-Python and ignores the Pythons the release names."""
    return diagnose_python(python, requires, ())


def missing_means_fits(python, requires, listed=()):
    """A planted broken check: no Requires-Python is taken as 'any Python fits'."""
    return diagnose_python(python, ">=0" if requires is None else requires, listed)


@pytest.mark.parametrize("broken", [major_only, lower_bound_only, missing_means_fits])
def test_c46_a_check_that_misses_a_case(broken):
    verdict = chapter_function(CHAPTER, "verdict_c46")
    cases, advice = python_evidence(broken)
    assert cases != ["fits", "does-not-fit", "not-listed", "unknown"]
    with pytest.raises(AssertionError):
        verdict(cases, advice, ">=3.10", LISTED, "3.12.3", "fits")


def test_c46_classifiers_never_read():
    """A metadata reader that drops the classifiers: Python 3.15 diagnosed as fitting, where the
    release names 3.10 to 3.14 (review 00 #14)."""
    verdict = chapter_function(CHAPTER, "verdict_c46")
    cases, advice = python_evidence()
    unread = diagnose_python("3.15.0", ">=3.10", ())
    assert unread.case == "fits"
    with pytest.raises(AssertionError, match="no Python classifiers"):
        verdict(cases, advice, ">=3.10", (), "3.15.0", unread.case)
    with pytest.raises(AssertionError):  # classifiers read, but the case ignores them
        verdict(cases, advice, ">=3.10", LISTED, "3.15.0", "fits")
    with pytest.raises(AssertionError):  # a named Python called not-listed
        verdict(cases, advice, ">=3.10", LISTED, "3.12.3", "not-listed")
    read = diagnose_python("3.15.0", ">=3.10", LISTED)
    verdict(cases, advice, ">=3.10", LISTED, "3.15.0", read.case)  # the control


def test_c46_here_guessed_or_not_read():
    """Metadata without Requires-Python diagnosed as fitting, or a readable one ignored."""
    verdict = chapter_function(CHAPTER, "verdict_c46")
    cases, advice = python_evidence()
    with pytest.raises(AssertionError):
        verdict(cases, advice, None, (), "3.12.3", "fits")
    with pytest.raises(AssertionError):
        verdict(cases, advice, ">=3.10", LISTED, "3.12.3", "unknown")
    with pytest.raises(AssertionError):  # advice that does not say what to do
        verdict(cases, "upgrade", ">=3.10", LISTED, "3.12.3", "fits")


# C47: a wheel's +suffix agrees with torch.version; Linux x86-64 / Windows wheels carry it ----

def c47_verdict():
    return chapter_function(CHAPTER, "verdict_c47", re=re)


def test_c47_positive_control_this_wheel_and_others():
    verdict = c47_verdict()
    import importlib.metadata
    verdict(torch.__version__, importlib.metadata.version("torch"), torch.version.cuda,
            getattr(torch.version, "hip", None), getattr(torch.version, "xpu", None), False)
    verdict("2.14.1+cu130", "2.14.1", "13.0", None, None, True)  # PyPI's Linux wheel
    verdict("2.11.0+cu128", "2.11.0+cu128", "12.8", None, None, True)  # download.pytorch.org
    verdict("2.14.1+cpu", "2.14.1+cpu", None, None, None, True)
    verdict("2.3.0+cpu.cxx11.abi", "2.3.0+cpu.cxx11.abi", None, None, None, True)
    verdict("2.9.1+rocm6.4", "2.9.1+rocm6.4", None, "6.4.43482-0f2d60242", None, True)
    verdict("2.6.0+rocm6.2.4", "2.6.0+rocm6.2.4", None, "6.2.41134-65d174c3e", None, True)
    verdict("2.14.1+xpu", "2.14.1+xpu", None, None, "20250101", True)
    verdict("2.14.1", "2.14.1", None, None, None, False)  # a macOS wheel: no suffix
    verdict("2.15.0a0+git1a2b3c4", "2.15.0a0+git1a2b3c4", "13.0", None, None, True)  # source


@pytest.mark.parametrize("version, dist, cuda, hip, xpu", [
    ("2.14.1+cu130", "2.14.1", None, None, None),  # a suffix that promises CUDA, none there
    ("2.14.1+cu128", "2.14.1", "13.0", None, None),  # the suffix names another CUDA
    ("2.14.1+cpu", "2.14.1", "12.8", None, None),  # a +cpu wheel that reports CUDA
    ("2.9.1+rocm6.4", "2.9.1", None, "6.2.41133", None),  # the suffix names another ROCm
    ("2.9.1+rocm6.4", "2.9.1", None, None, None),
    ("2.9.1+rocm6.4", "2.9.1", None, "6.41.0", None),  # equal only as a string prefix
    ("2.14.1+xpu", "2.14.1", None, None, None),  # +xpu on a build without XPU
    ("2.14.1+cu130", "2.14.1+cu128", "13.0", None, None),  # pip's suffix differs
])
def test_c47_suffix_and_build_disagree(version, dist, cuda, hip, xpu):
    verdict = c47_verdict()
    with pytest.raises(AssertionError):
        verdict(version, dist, cuda, hip, xpu, True)


def test_c47_linux_wheel_without_a_suffix():
    """The chapter's old statement, 'PyPI's wheels carry no suffix': a pip-installed Linux
    x86-64 release whose torch.__version__ has none (review 00 #1, #12)."""
    verdict = c47_verdict()
    with pytest.raises(AssertionError, match="without a suffix"):
        verdict("2.14.1", "2.14.1", "13.0", None, None, True)
    verdict("2.14.1+cu130", "2.14.1", "13.0", None, None, True)  # what PyPI's wheel has


# ex00-2: the probe sees the mode predict leaves the model in ---------------------------------

def always_train_predict(model, x):
    """A planted wrong answer: evaluation mode inside, training mode after, whatever it was."""
    model.eval()
    with torch.no_grad():
        out = model(x.to(next(model.parameters()).device)).argmax(dim=1).cpu().numpy()
    model.train()
    return out


def test_ex00_2_probe_sees_an_eval_model_left_training():
    solution = chapter_function(CHAPTER, "predict")
    for predict, left_eval in ((always_train_predict, False), (solution, True)):
        probe = chapter_function(CHAPTER, "probe_ex00_2", predict=predict)
        seen = probe(torch.randn(16, 8))
        assert seen["left_training"] and seen["tracked"] == [False]
        assert seen["left_eval"] is left_eval, (predict.__name__, seen)
