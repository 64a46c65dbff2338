"""Chapter 01's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapter_code.py) evidence computed in a world without the effect, and evidence
from the real world as a positive control."""

import linecache
import traceback
from functools import cache

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

from tests.chapter_code import chapter_definitions, chapter_function

CHAPTER = "01_autograd"
X0, Y0 = 3.0, -2.0


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread is as fast, and no thread waits on a core kept busy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

# C01: backward() exact, central difference close, truncation against rounding -------------


def f_and_g():
    return chapter_function(CHAPTER, "f"), chapter_function(CHAPTER, "g")


def gradient_evidence(f_for_backward=None):
    """The chapter's three gradients of f at (3, -2), in float64 for the numerical one."""
    f, _ = f_and_g()
    analytic = torch.tensor([2 * X0, 2 * Y0], dtype=torch.float64)
    h = 1e-6
    xd, yd = torch.tensor(X0, dtype=torch.float64), torch.tensor(Y0, dtype=torch.float64)
    numeric = torch.stack([(f(xd + h, yd) - f(xd - h, yd)) / (2 * h),
                           (f(xd, yd + h) - f(xd, yd - h)) / (2 * h)])
    x, y = torch.tensor(X0, requires_grad=True), torch.tensor(Y0, requires_grad=True)
    (f_for_backward or f)(x, y).backward()
    return torch.stack([x.grad, y.grad]).double(), analytic, numeric


def sweep_evidence(dtypes=(torch.float32, torch.float64)):
    """Error against step h for each method; `dtypes` are what is really computed in place of
    float32 and float64 (the counterfactual computes both in float32)."""
    f, g = f_and_g()
    steps = torch.logspace(-14, 0, 57, dtype=torch.float64).tolist()
    difference_errors = chapter_function(CHAPTER, "difference_errors", steps=steps, x0=X0, y0=Y0)
    eps = {torch.float32: torch.finfo(torch.float32).eps,
           torch.float64: torch.finfo(torch.float64).eps}
    sweeps = {}
    for label, real in zip((torch.float32, torch.float64), dtypes, strict=True):
        sweeps["forward", label] = difference_errors(f, 2 * X0, real, central=False)
        sweeps["central", label] = difference_errors(g, 3 * X0**2, real, central=True)
    theory = {("forward", dt): 2 * np.sqrt(e * abs(X0**2 + Y0**2) / 2.0) for dt, e in eps.items()}
    theory |= {("central", dt): (3 * e * abs(X0**3 + Y0**3) / 6.0) ** (1 / 3)
               for dt, e in eps.items()}
    best = {key: steps[int(np.argmin(err))] for key, err in sweeps.items()}
    return best, theory, sweeps


def test_c01_positive_control():
    chapter_function(CHAPTER, "verdict_c01")(*gradient_evidence(), *sweep_evidence())


def test_c01_float64_removed():
    """Everything computed in float32: the numerical error does not get small."""
    verdict = chapter_function(CHAPTER, "verdict_c01")
    with pytest.raises(AssertionError):
        verdict(*gradient_evidence(), *sweep_evidence((torch.float32, torch.float32)))


def test_c01_broken_backward():
    """A planted bug: half of each square is detached, so backward() gives (x, y)."""
    verdict = chapter_function(CHAPTER, "verdict_c01")
    evidence = gradient_evidence(lambda x, y: x * x.detach() + y * y.detach())
    with pytest.raises(AssertionError):
        verdict(*evidence, *sweep_evidence())


def test_c01_numeric_estimate_in_float32():
    verdict = chapter_function(CHAPTER, "verdict_c01")
    from_backward, analytic, _ = gradient_evidence()
    f, _ = f_and_g()
    h = 1e-3
    x, y = torch.tensor(X0), torch.tensor(Y0)  # float32: rounding swamps the estimate
    numeric = torch.stack([(f(x + h, y) - f(x - h, y)) / (2 * h),
                           (f(x, y + h) - f(x, y - h)) / (2 * h)]).double()
    with pytest.raises(AssertionError):
        verdict(from_backward, analytic, numeric, *sweep_evidence())


# C02: hand-written backprop tracks autograd -----------------------------------------------


@cache
def digits_subset(n: int = 600):
    features, labels = load_digits(return_X_y=True)
    return (torch.tensor(features[:n] / 16.0, dtype=torch.float32), torch.tensor(labels[:n]))


def training_evidence(manual_step=None, lr: float = 0.5, steps: int = 40):
    X_all, y_all = digits_subset()
    init_params = chapter_function(CHAPTER, "init_params")
    manual = manual_step or chapter_function(CHAPTER, "manual_step")
    train_both = chapter_function(
        CHAPTER, "train_both", X_all=X_all, y_all=y_all, init_params=init_params,
        manual_step=manual, autograd_step=chapter_function(CHAPTER, "autograd_step"))
    diff64, losses64, params64 = train_both(torch.float64, steps=steps, lr=lr)
    diff32, _, _ = train_both(torch.float32, steps=steps, lr=lr)
    W1, b1, W2, b2 = params64
    accuracy = ((torch.relu(X_all.double() @ W1 + b1) @ W2 + b2).argmax(1) == y_all)
    param_scale = max(p.abs().max().item() for p in params64)
    return losses64, accuracy.float().mean().item(), diff64, diff32, param_scale


def sum_instead_of_mean(params, X, y, lr):
    """A planted bug: the backward pass of the summed loss (no division by N)."""
    W1, b1, W2, b2 = params
    z1 = X @ W1 + b1
    a1 = z1.clamp_min(0)
    dz2 = torch.softmax(a1 @ W2 + b2, dim=1) - F.one_hot(y, 10).to(X.dtype)
    dz1 = (dz2 @ W2.T) * (z1 > 0)
    grads = (X.T @ dz1, dz1.sum(0), a1.T @ dz2, dz2.sum(0))
    return [p - lr * d / 8 for p, d in zip(params, grads, strict=True)]  # 8, not N: wrong scale


def test_c02_positive_control():
    chapter_function(CHAPTER, "verdict_c02")(*training_evidence())


def test_c02_wrong_backward():
    verdict = chapter_function(CHAPTER, "verdict_c02")
    with pytest.raises(AssertionError):
        verdict(*training_evidence(manual_step=sum_instead_of_mean, steps=20))


def test_c02_nothing_trained():
    """lr = 0: both 'trainings' stay at the initial weights and agree trivially."""
    verdict = chapter_function(CHAPTER, "verdict_c02")
    evidence = training_evidence(lr=0.0, steps=5)
    assert evidence[2].max() == 0.0  # identical, because nothing moved
    with pytest.raises(AssertionError):
        verdict(*evidence)


# C03: requires_grad propagates; detach and no_grad stop it ---------------------------------


def autograd_evidence(detach=lambda t: t.detach(), use_no_grad: bool = True,
                      w_requires_grad: bool = True):
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=w_requires_grad)
    data = torch.randn(3)
    hidden = (w * data).sin()
    loss = hidden.sum()
    detached = detach(hidden)
    if use_no_grad:
        with torch.no_grad():
            in_no_grad = (w * data).sin()
    else:
        in_no_grad = (w * data).sin()
    chain = chapter_function(CHAPTER, "chain")
    return w, data, hidden, loss, chain(loss), detached, detached * 2, in_no_grad


def test_c03_positive_control():
    chapter_function(CHAPTER, "verdict_c03")(*autograd_evidence())


@pytest.mark.parametrize("world", [
    dict(detach=lambda t: t.view_as(t)),  # "detach" that keeps the history
    dict(use_no_grad=False),  # no_grad removed
    dict(w_requires_grad=False),  # nothing to propagate
])
def test_c03_recording_not_stopped_or_not_started(world):
    verdict = chapter_function(CHAPTER, "verdict_c03")
    with pytest.raises(AssertionError):
        verdict(*autograd_evidence(**world))


# C04: the two in-place errors, each at its line --------------------------------------------


def error_of():
    return chapter_function(CHAPTER, "error_of", traceback=traceback)


def with_source_lines(name: str):
    """The chapter's function, its source registered for tracebacks (as Jupyter does for a
    cell), so that error_of can read the line an error was raised at."""
    source = chapter_definitions(CHAPTER)[name][0]
    filename = f"book/{CHAPTER}.md:{name}"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return chapter_function(CHAPTER, name)


def c04_real():
    return [with_source_lines(n) for n in ("leaf_in_place", "saved_in_place",
                                           "saved_out_of_place")]


def test_c04_positive_control():
    leaf_in_place, saved_in_place, saved_out_of_place = c04_real()
    verdict = chapter_function(CHAPTER, "verdict_c04")
    verdict(error_of()(leaf_in_place), error_of()(saved_in_place), saved_out_of_place())


def leaf_in_place():  # the world without the leaf check: the same update under no_grad
    leaf = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        leaf.add_(0.1)


def saved_in_place():  # in place on a tensor nobody saved: no version check fires
    a = torch.randn(3, requires_grad=True)
    s = a * 2
    s.add_(1)
    s.sum().backward()


def saved_refused_at_once():  # a world that refuses the in-place change at once
    a = torch.randn(3, requires_grad=True)
    s = a.sigmoid().detach().requires_grad_()
    s.mul_(2)
    s.sum().backward()


def wrong_fix():  # "fixed" by detaching: no error, but no gradient reaches a
    a = torch.randn(3, requires_grad=True)
    assert not (a.sigmoid().detach() * 2).requires_grad  # nothing to call backward() on
    return a.detach(), a.grad


@pytest.mark.parametrize("broken", ["leaf", "saved", "at_once", "fix"])
def test_c04_error_missing_or_at_the_wrong_line(broken):
    real_leaf, real_saved, real_fix = c04_real()
    leaf = error_of()(leaf_in_place if broken == "leaf" else real_leaf)
    saved = error_of()({"saved": saved_in_place, "at_once": saved_refused_at_once}.get(
        broken, real_saved))
    fixed = wrong_fix() if broken == "fix" else real_fix()
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c04")(leaf, saved, fixed)


# C05: a plain tensor attribute is never trained; nn.Parameter is ---------------------------


class PlainSlope(nn.Module):
    def __init__(self, register: bool = False) -> None:
        super().__init__()
        slope = torch.ones(1, requires_grad=True)
        self.slope = nn.Parameter(slope) if register else slope
        self.intercept = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.slope * x + self.intercept


def trained(model: nn.Module) -> nn.Module:
    return chapter_function(CHAPTER, "train_line_with_sgd")(model)


def test_c05_positive_control():
    chapter_function(CHAPTER, "verdict_c05")(trained(PlainSlope()), trained(PlainSlope(True)))


def test_c05_plain_tensor_registered():
    """The world where a plain tensor attribute were registered: it trains like the other."""
    verdict = chapter_function(CHAPTER, "verdict_c05")
    with pytest.raises(AssertionError):
        verdict(trained(PlainSlope(register=True)), trained(PlainSlope(True)))


def test_c05_parameter_not_trained():
    """The world where nn.Parameter did not help: the 'proper' slope is frozen at 1."""
    verdict = chapter_function(CHAPTER, "verdict_c05")
    frozen = PlainSlope(True)
    frozen.slope.requires_grad_(False)
    with pytest.raises(AssertionError):
        verdict(trained(PlainSlope()), trained(frozen))
