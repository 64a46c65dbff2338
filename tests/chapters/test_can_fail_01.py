"""Chapter 01's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapters/chapter_code.py) evidence computed in a world without the effect, and
evidence from the real world as a positive control."""

import contextlib
import inspect
import linecache
import traceback
import weakref
from functools import cache

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

from tests.chapters.chapter_code import chapter_definitions, chapter_function

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
    usable = [i for i, step in enumerate(steps) if 1e-7 * 0.999 <= step <= 1e-4 * 1.001]
    gradcheck_eps = inspect.signature(torch.autograd.gradcheck).parameters["eps"].default
    return best, theory, sweeps, usable, gradcheck_eps


def test_c01_positive_control():
    chapter_function(CHAPTER, "verdict_c01")(*gradient_evidence(), *sweep_evidence())


def test_c01_usable_steps_err_too_much():
    """A world where a step in 1e-7..1e-4 erred by 1e-5 (a function with a far larger third
    derivative would): the claim that any such step is good enough must fail."""
    verdict = chapter_function(CHAPTER, "verdict_c01")
    best, theory, sweeps, usable, gradcheck_eps = sweep_evidence()
    central64 = sweeps["central", torch.float64].copy()
    central64[usable[-1]] = 1e-5  # h = 1e-4: the best step elsewhere stays where it was
    sweeps = {**sweeps, ("central", torch.float64): central64}
    with pytest.raises(AssertionError):
        verdict(*gradient_evidence(), best, theory, sweeps, usable, gradcheck_eps)


def test_c01_gradcheck_default_step_other():
    """A torch whose gradcheck defaulted to another step: the prose's 1e-6 must be checked."""
    verdict = chapter_function(CHAPTER, "verdict_c01")
    best, theory, sweeps, usable, _ = sweep_evidence()
    with pytest.raises(AssertionError):
        verdict(*gradient_evidence(), best, theory, sweeps, usable, 1e-3)


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
    diff64, losses64, params64, _ = train_both(torch.float64, steps=steps, lr=lr)
    diff32, _, _, flips32 = train_both(torch.float32, steps=steps, lr=lr)
    W1, b1, W2, b2 = params64
    accuracy = ((torch.relu(X_all.double() @ W1 + b1) @ W2 + b2).argmax(1) == y_all)
    param_scale = max(p.abs().max().item() for p in params64)
    return losses64, accuracy.float().mean().item(), diff64, diff32, param_scale, flips32


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


def bias_one_percent_off(params, X, y, lr):
    """A planted small bug: the chapter's backward pass with db2 1 % too large."""
    W1, b1, W2, b2 = params
    z1 = X @ W1 + b1
    a1 = z1.clamp_min(0)
    dz2 = (torch.softmax(a1 @ W2 + b2, dim=1) - F.one_hot(y, 10).to(X.dtype)) / len(X)
    dz1 = (dz2 @ W2.T) * (z1 > 0)
    grads = (X.T @ dz1, dz1.sum(0), a1.T @ dz2, 1.01 * dz2.sum(0))
    return [p - lr * d for p, d in zip(params, grads, strict=True)]


@pytest.mark.parametrize("manual_step", [sum_instead_of_mean, bias_one_percent_off])
def test_c02_wrong_backward(manual_step):
    """The network trains in this world too (the verdict's first assert holds), so only the
    comparison with autograd can reject it: in float64, whatever float32 shows (a 1 % bug in
    one bias stays below the float32 bound)."""
    verdict = chapter_function(CHAPTER, "verdict_c02")
    evidence = training_evidence(manual_step=manual_step)
    losses64, accuracy, diff64 = evidence[:3]
    assert losses64[-1] < 0.5 * losses64[0] and accuracy > 0.9, (losses64[-1], accuracy)
    assert diff64.max() > 1e-10, diff64.max()
    with pytest.raises(AssertionError, match=r"^\d"):  # the float64 assert: a bare number
        verdict(*evidence)


def test_c02_float32_gap_jumps_without_a_kink_crossing():
    """A planted world where float32's gap left rounding level (1e-4 at step 3) while both
    runs still agreed on every ReLU sign: the dropdown's mechanism must fail there."""
    verdict = chapter_function(CHAPTER, "verdict_c02")
    losses64, accuracy, diff64, diff32, param_scale, flips32 = training_evidence()
    diff32 = diff32.copy()
    diff32[3] = 1e-4  # under the overall bound, 1e-3 of the largest parameter
    assert diff32.max() < 1e-3 * param_scale
    with pytest.raises(AssertionError):
        verdict(losses64, accuracy, diff64, diff32, param_scale, np.zeros_like(flips32))


def test_c02_nothing_trained():
    """lr = 0: both 'trainings' stay at the initial weights and agree trivially."""
    verdict = chapter_function(CHAPTER, "verdict_c02")
    evidence = training_evidence(lr=0.0, steps=5)
    assert evidence[2].max() == 0.0  # identical, because nothing moved
    with pytest.raises(AssertionError):
        verdict(*evidence)


# C03: requires_grad propagates; detach and no_grad stop it ---------------------------------


def no_gradient_results(hidden):
    return {"hidden > 0": hidden > 0, "hidden.argmax()": hidden.argmax(),
            "hidden.long()": hidden.long()}


def autograd_evidence(detach=lambda t: t.detach(), use_no_grad: bool = True,
                      w_requires_grad: bool = True, no_gradient=no_gradient_results,
                      zero_gradient=lambda h: h.round()):
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
    return (w, data, hidden, loss, chain(loss), detached, detached * 2, in_no_grad,
            no_gradient(hidden), zero_gradient(hidden))


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
                                           "saved_out_of_place", "saved_view_in_place")]


def test_c04_positive_control():
    leaf_in_place, saved_in_place, saved_out_of_place, saved_view_in_place = c04_real()
    verdict = chapter_function(CHAPTER, "verdict_c04")
    verdict(error_of()(leaf_in_place), error_of()(saved_in_place), saved_out_of_place(),
            error_of()(saved_view_in_place))


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


def view_with_own_counter():  # a world where a view had a version counter of its own
    a = torch.randn(3, requires_grad=True)
    s = a.sigmoid()
    s.data[:2].zero_()  # .data's view: s's counter stays at 0, nothing is detected
    s.sum().backward()


def wrong_fix():  # "fixed" by detaching: no error, but no gradient reaches a
    a = torch.randn(3, requires_grad=True)
    assert not (a.sigmoid().detach() * 2).requires_grad  # nothing to call backward() on
    return a.detach(), a.grad


@pytest.mark.parametrize("broken", ["leaf", "saved", "at_once", "fix", "view"])
def test_c04_error_missing_or_at_the_wrong_line(broken):
    real_leaf, real_saved, real_fix, real_view = c04_real()
    leaf = error_of()(leaf_in_place if broken == "leaf" else real_leaf)
    saved = error_of()({"saved": saved_in_place, "at_once": saved_refused_at_once}.get(
        broken, real_saved))
    fixed = wrong_fix() if broken == "fix" else real_fix()
    through_view = error_of()(view_with_own_counter if broken == "view" else real_view)
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c04")(leaf, saved, fixed, through_view)


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
    return chapter_function(CHAPTER, "train_line_with_sgd")(model)[0]


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


# C03 (corrected): results without a gradient stay outside the graph ------------------------


@pytest.mark.parametrize("world", [
    dict(no_gradient=lambda h: {"hidden > 0": h * 1.0}),  # a "comparison" that stays float
    dict(no_gradient=lambda h: {"hidden.long()": h.double()}),  # a "cast" that keeps history
    dict(zero_gradient=lambda h: h.round().detach()),  # a zero gradient taken for none
    dict(zero_gradient=lambda h: h + (h.round() - h).detach()),  # round passing gradients on
])
def test_c03_results_without_gradient_in_the_graph(world):
    verdict = chapter_function(CHAPTER, "verdict_c03")
    with pytest.raises(AssertionError):
        verdict(*autograd_evidence(**world))


# C50: in-place operations are recorded; on a leaf that requires grad, refused ---------------


def in_place_evidence(change=lambda y: y.mul_(3), leaf_update=None):
    """history, x, x.grad, the leaf's refusal, the updated leaf (as the chapter's cell)."""
    x = torch.randn(3, requires_grad=True)
    y = x.sin()
    history = [(type(y.grad_fn).__name__, y._version, y.is_leaf)]
    change(y)
    history.append((type(y.grad_fn).__name__, y._version, y.is_leaf))
    y.sum().backward()
    weights = torch.ones(3, requires_grad=True)
    if leaf_update is None:
        with torch.no_grad():
            weights += 0.1
    else:
        weights = leaf_update(weights)
    try:
        weights.mul_(2)
        refusal = "no error"
    except RuntimeError as err:
        refusal = str(err)
    return history, x.detach(), x.grad, refusal, weights


def test_c50_positive_control():
    chapter_function(CHAPTER, "verdict_c50")(*in_place_evidence())


def test_c50_in_place_not_recorded():
    """The world where autograd ignored in-place changes: through .data, nothing is recorded,
    and the gradient is cos(x), not 3 cos(x)."""
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c50")(*in_place_evidence(lambda y: y.data.mul_(3)))


def test_c50_leaf_not_refused_or_no_longer_a_leaf():
    verdict = chapter_function(CHAPTER, "verdict_c50")
    history, x, grad, _, weights = in_place_evidence()
    with pytest.raises(AssertionError):  # a world that allowed the in-place change
        verdict(history, x, grad, "no error", weights)
    became_result = in_place_evidence(leaf_update=lambda w: w * 1.0)  # got a grad_fn
    with pytest.raises(AssertionError):
        verdict(*became_result)


# C51: the message names whose output the tensor is; anomaly mode names the saver ----------


def anomaly_evidence():
    action = with_source_lines("saved_input_changed")
    run_error = error_of()
    with_anomaly = chapter_function(CHAPTER, "with_anomaly_mode", error_of=run_error,
                                    warnings=__import__("warnings"))
    plain_message, _ = run_error(action)
    return plain_message, *with_anomaly(action)


def test_c51_positive_control():
    chapter_function(CHAPTER, "verdict_c51")(*anomaly_evidence())


def test_c51_message_names_the_saver():
    """The world the old prose described: the message names the operation that saved h."""
    verdict = chapter_function(CHAPTER, "verdict_c51")
    message, anomaly_message, warnings_text = anomaly_evidence()
    with pytest.raises(AssertionError):
        verdict(message.replace("output 0 of Add", "output 0 of SinBackward0"), anomaly_message,
                warnings_text)


def test_c51_anomaly_mode_silent():
    """Without anomaly mode (or a mode that names no line), the saver stays unknown."""
    verdict = chapter_function(CHAPTER, "verdict_c51")
    message, anomaly_message, warnings_text = anomaly_evidence()
    with pytest.raises(AssertionError):
        verdict(message, message, "")
    with pytest.raises(AssertionError):
        verdict(message, anomaly_message, warnings_text.replace("t = h.sin()", "<unknown>"))


# C52: plain lists and dicts register nothing; the nn containers do ------------------------


class Stack(nn.Module):
    """The chapter's Stack (a class, so not compiled from the page): the same containers.
    `plain_registered` plants a world where a plain tensor attribute were registered."""

    def __init__(self, registered: bool, plain_registered: bool = False) -> None:
        super().__init__()
        layers = [nn.Linear(4, 4), nn.Linear(4, 4)]
        heads = {"left": nn.Linear(4, 1), "right": nn.Linear(4, 1)}
        scales = [nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(4))]
        self.layers = nn.ModuleList(layers) if registered else layers
        self.heads = nn.ModuleDict(heads) if registered else heads
        self.scales = nn.ParameterList(scales) if registered else scales
        self.register_buffer("mask", torch.ones(4))
        if plain_registered:
            self.register_buffer("plain_tensor", torch.ones(4))
        else:
            self.plain_tensor = torch.ones(4)


def module_views(**kwargs):
    see = chapter_function(CHAPTER, "what_the_module_sees")
    return see(Stack(False, **kwargs)), see(Stack(True, **kwargs))


def test_c52_positive_control():
    chapter_function(CHAPTER, "verdict_c52")(*module_views())


def test_c52_plain_containers_registered_or_containers_not():
    verdict = chapter_function(CHAPTER, "verdict_c52")
    plain, containers = module_views()
    with pytest.raises(AssertionError):  # a world where a plain list registered its layers
        verdict(containers, containers)
    with pytest.raises(AssertionError):  # a world where nn.ModuleList registered nothing
        verdict(plain, plain)


def test_c52_plain_tensor_registered():
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c52")(*module_views(plain_registered=True))


# C53: a second backward needs retain_graph=True --------------------------------------------


def additions_only(p: torch.Tensor) -> torch.Tensor:
    return (p + 1).sum()  # add and sum save nothing for backward


def times_two(p: torch.Tensor) -> torch.Tensor:
    return (p * 2).sum()  # mul saves the 2 (as a 0-d tensor) for p's gradient


def test_c53_positive_control():
    backward_twice = chapter_function(CHAPTER, "backward_twice")
    chapter_function(CHAPTER, "verdict_c53")(backward_twice(False), backward_twice(True),
                                             backward_twice(False, additions_only),
                                             backward_twice(False, times_two))


def test_c53_times_two_runs_twice():
    """A world where x * 2 saved nothing (as x + 1): the prose's 'even x * 2 does' must fail."""
    backward_twice = chapter_function(CHAPTER, "backward_twice")
    nothing_saved = backward_twice(False, additions_only)
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c53")(backward_twice(False), backward_twice(True),
                                                 nothing_saved, nothing_saved)


def test_c53_graph_kept_or_retain_graph_useless():
    backward_twice = chapter_function(CHAPTER, "backward_twice")
    verdict = chapter_function(CHAPTER, "verdict_c53")
    nothing_saved = backward_twice(False, additions_only)
    doubled = backward_twice(False, times_two)
    with pytest.raises(AssertionError):  # a world where backward() freed nothing
        verdict(backward_twice(True), backward_twice(True), nothing_saved, doubled)
    with pytest.raises(AssertionError):  # a world where retain_graph kept nothing
        verdict(backward_twice(False), backward_twice(False), nothing_saved, doubled)


def test_c53_second_backward_replaces_instead_of_adding():
    backward_twice = chapter_function(CHAPTER, "backward_twice")
    message, first, _ = backward_twice(True)
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c53")(backward_twice(False), (message, first, first),
                                                 backward_twice(False, additions_only),
                                                 backward_twice(False, times_two))


def test_c53_graph_that_saved_nothing_refused():
    """A world where every graph refused a second backward, even one that saved nothing."""
    backward_twice = chapter_function(CHAPTER, "backward_twice")
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c53")(backward_twice(False), backward_twice(True),
                                                 backward_twice(False), backward_twice(False))


# C54: an undetached target holds its branch's saved tensors until backward() --------------


def td_world(detach=lambda t: t.detach(), target_in_no_grad: bool = True,
             activation=lambda t: t, saved_bytes=None):
    """The chapter's TD losses (no detach, detach, no_grad target) on the same shapes;
    `detach` and `target_in_no_grad` plant a world without the effect; `activation` goes
    after the target network's matrix product (torch.relu: a branch that saves an output)."""
    gen = torch.Generator().manual_seed(1)
    states, next_states = torch.randn(8, 4, generator=gen), torch.randn(8, 4, generator=gen)
    actions = torch.randint(0, 2, (8,), generator=gen)
    rewards = torch.randn(8, generator=gen)
    q_weights = torch.randn(4, 2, generator=gen).requires_grad_()
    target_weights = torch.randn(4, 2, generator=gen).requires_grad_()

    def loss(mode: str) -> torch.Tensor:
        q_taken = (states @ q_weights)[torch.arange(8), actions]
        if mode == "no_grad" and target_in_no_grad:
            with torch.no_grad():
                target = rewards + 0.9 * activation(next_states @ target_weights).max(dim=1).values
        else:
            target = rewards + 0.9 * activation(next_states @ target_weights).max(dim=1).values
            if mode != "plain":
                target = detach(target)
        return ((q_taken - target) ** 2).mean()

    saved_bytes = saved_bytes or chapter_function(CHAPTER, "saved_bytes", weakref=weakref)
    return {"no detach": saved_bytes(lambda: loss("plain")),
            ".detach()": saved_bytes(lambda: loss("detach")),
            "no_grad()": saved_bytes(lambda: loss("no_grad"))}


def test_c54_positive_control():
    chapter_function(CHAPTER, "verdict_c54")(td_world())


def test_c54_positive_control_branch_saving_an_output():
    """relu saves its output: the chapter's saved_bytes must not keep it through a cycle (a
    pack that kept the tensor itself reported the detached branch as held after backward)."""
    chapter_function(CHAPTER, "verdict_c54")(td_world(activation=torch.relu))


def saved_bytes_keeping_the_tensor(build_loss):
    """The chapter's saved_bytes before the fix: pack kept the tensor, not a detached alias."""
    class Saved:
        def __init__(self, tensor):
            self.tensor = tensor

    records = []

    def pack(tensor):
        saved = Saved(tensor)
        records.append((weakref.ref(saved), tensor.nelement() * tensor.element_size()))
        return saved

    def held():
        return sum(size for alive, size in records if alive() is not None)

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda saved: saved.tensor):
        loss = build_loss()
    held_before = held()
    loss.backward()
    return sum(size for _, size in records), held_before, held()


def test_c54_measurement_that_keeps_an_output_alive():
    """The verdict rejects what the cycle-making measurement reports for a relu branch."""
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c54")(
            td_world(activation=torch.relu, saved_bytes=saved_bytes_keeping_the_tensor))


def test_c54_detach_that_keeps_the_branch():
    """A 'detach' that keeps the history (view_as): the branch stays held."""
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c54")(td_world(detach=lambda t: t.view_as(t)))


def test_c54_no_grad_that_records():
    """A world where no_grad recorded anyway (the target detached, not computed in no_grad)."""
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c54")(td_world(target_in_no_grad=False))


def test_c54_backward_that_frees_nothing():
    memory = {name: (saved, held, held) for name, (saved, held, _) in td_world().items()}
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c54")(memory)


# C55: a change through .data is invisible; through .detach() it raises --------------------


def sigmoid_output_changed_through():
    return chapter_function(CHAPTER, "sigmoid_output_changed_through", contextlib=contextlib)


def test_c55_positive_control():
    change = sigmoid_output_changed_through()
    chapter_function(CHAPTER, "verdict_c55")(change("data"), change("detach"),
                                             change("detach", hooks=True))


def test_c55_data_tracked_or_detach_untracked():
    change = sigmoid_output_changed_through()
    verdict = chapter_function(CHAPTER, "verdict_c55")
    under_hooks = change("detach", hooks=True)
    with pytest.raises(AssertionError):  # a world where .data shared the version counter
        verdict(change("detach"), change("detach"), under_hooks)
    with pytest.raises(AssertionError):  # a world where .detach() had its own counter
        verdict(change("data"), change("data"), under_hooks)


def test_c55_hooks_keep_the_version_check():
    """A world where saved-tensor hooks kept the version check (the change raises as without
    hooks): the claim that they switch it off must fail."""
    change = sigmoid_output_changed_through()
    with pytest.raises(AssertionError):
        chapter_function(CHAPTER, "verdict_c55")(change("data"), change("detach"),
                                                 change("detach"))
