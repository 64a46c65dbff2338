"""Chapter 05's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapters/chapter_code.py) evidence computed in a world without the effect, and
evidence from the real world as a positive control."""

import math
import warnings
from functools import cache

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers import GradNormRecorder, fit
from tests.chapters.chapter_code import (  # noqa: F401 (autouse fixtures)
    chapter_function,
    digits,
    one_thread,
    parse_once,
)

CHAPTER = "05_debugging"
CPU = torch.device("cpu")
CHANCE = math.log(10)




@cache
def chapter(name: str, **names):
    """A function of chapter 05 with the chapter's globals it needs, on the CPU (the digits
    only for the functions that train or evaluate on them)."""
    if name in ("batch_noise_run", "first_grad_norm", "first_loss", "per_sample_run",
                "train_curve", "early_stopping_run"):
        x_train, y_train, x_val, y_val = digits()
        names = {"x_train": x_train, "y_train": y_train, "x_val": x_val, "y_val": y_val,
                 **names}
    tail = chapter_function(CHAPTER, "tail")
    roughness = chapter_function(CHAPTER, "roughness")
    rougher = chapter_function(CHAPTER, "rougher", roughness=roughness)
    base = {"device": CPU, "tail": tail, "roughness": roughness, "rougher": rougher,
            "warnings": warnings, "fit": fit, "DataLoader": DataLoader,
            "TensorDataset": TensorDataset}
    return chapter_function(CHAPTER, name, **{**base, **names})


# C17: overfit one batch ------------------------------------------------------------------

def batch_loss(memorised: bool, labels: torch.Tensor) -> tuple[float, float]:
    """Loss and accuracy of logits that memorised `labels` (margin 20) or know nothing."""
    logits = 20.0 * F.one_hot(labels, 10).float() if memorised else torch.zeros(len(labels), 10)
    return (F.cross_entropy(logits, labels).item(),
            (logits.argmax(1) == labels).float().mean().item())


def test_c17_broken_pipeline_that_still_memorises_or_fixed_labels_caught():
    verdict = chapter("verdict_c17")
    labels = torch.arange(32) % 10
    memorised, chance = batch_loss(True, labels), batch_loss(False, labels)
    verdict(memorised, chance[0], chance[0], memorised[0], chance[0], CHANCE)  # the chapter's
    assert chance[0] == pytest.approx(CHANCE)
    with pytest.raises(AssertionError):  # pairs that change every epoch were learned anyway
        verdict(memorised, memorised[0], chance[0], memorised[0], chance[0], CHANCE)
    with pytest.raises(AssertionError):  # the optimizer of another model trained it anyway
        verdict(memorised, chance[0], memorised[0], memorised[0], chance[0], CHANCE)
    with pytest.raises(AssertionError):  # the test also caught labels wrong in a fixed way
        verdict(memorised, chance[0], chance[0], chance[0], chance[0], CHANCE)
    with pytest.raises(AssertionError):  # the healthy model could not memorise its batch
        verdict(chance, chance[0], chance[0], memorised[0], chance[0], CHANCE)


@cache
def overfit_lr_run(lr: float) -> tuple[float, float]:
    """The chapter's bug-free overfit-one-batch run (its make_mlp, overfit and healthy
    batches) with Adam at `lr`: the final loss and accuracy."""
    x_train, y_train = digits()[:2]
    few_x, few_y = x_train[:32], y_train[:32]
    make_mlp = chapter("make_mlp")
    healthy_batches = chapter("healthy_batches", few_x=few_x, few_y=few_y)
    overfit = chapter("overfit", few_x=few_x, few_y=few_y)
    model = make_mlp()
    return overfit(healthy_batches, model, torch.optim.Adam(model.parameters(), lr))[:2]


def test_c17_a_failure_that_only_bugs_cause():
    """The claim that a failed test is not always a bug: a world where the bug-free pipeline
    memorises its batch at the learning rate far too high (only bugs fail) must not pass, and
    neither must the real evidence of that run taken as a healthy one."""
    verdict = chapter("verdict_c17")
    labels = torch.arange(32) % 10
    memorised, chance = batch_loss(True, labels), batch_loss(False, labels)
    too_high, working = overfit_lr_run(1.0), overfit_lr_run(1e-2)
    verdict(working, chance[0], chance[0], memorised[0], too_high[0], CHANCE)  # the real runs
    with pytest.raises(AssertionError, match="high learning rate memorised"):
        verdict(working, chance[0], chance[0], memorised[0], working[0], CHANCE)
    with pytest.raises(AssertionError):  # the lr-1.0 run is no healthy run
        verdict(too_high, chance[0], chance[0], memorised[0], too_high[0], CHANCE)


# C18: curve shapes -----------------------------------------------------------------------

def curve(start: float, end: float, steps: int = 200, rate: float = 0.05) -> list[float]:
    """A loss curve that decays from `start` towards `end`."""
    t = np.arange(steps)
    return list(end + (start - end) * np.exp(-rate * t))


def shape_curves() -> dict[str, list[float]]:
    """Curves with the features of each planted fault (the chapter trains them)."""
    return {
        "healthy": curve(CHANCE, 0.05), "healthy_val": curve(CHANCE, 0.2, steps=5, rate=1.0),
        "too_high": [CHANCE] + [3 * CHANCE] * 9 + [CHANCE] * 190,  # thrown up, then stuck
        "too_low": curve(CHANCE, 0.97 * CHANCE, rate=0.01),
        "unnormalised": [40 * CHANCE] * 10 + [CHANCE] * 190,
        "overfit_train": curve(CHANCE, 1e-3),
        "overfit_val": [2.0, 1.0, 0.8, 1.0, 1.3, 1.6],
    }


def test_c18_shapes_fault_curves_like_the_healthy_one():
    verdict = chapter("verdict_c18_shapes")
    curves = shape_curves()
    verdict(**curves, chance=CHANCE)
    for fault in ("too_high", "too_low", "unnormalised", "overfit_train"):
        with pytest.raises(AssertionError):  # the fault leaves the healthy curve
            verdict(**{**curves, fault: curves["healthy"]}, chance=CHANCE)
    with pytest.raises(AssertionError):  # overfitting without a rising validation loss
        verdict(**{**curves, "overfit_val": curves["healthy_val"]}, chance=CHANCE)
    with pytest.raises(AssertionError):  # a "healthy" run that is only slow
        verdict(**{**curves, "healthy": curves["too_low"]}, chance=CHANCE)
    with pytest.raises(AssertionError):  # "too high" that never moved (lr 0, a stray optimizer)
        verdict(**{**curves, "too_high": [CHANCE] * 200}, chance=CHANCE)
    recovers = [40 * CHANCE] * 10 + curve(CHANCE, 0.05)[10:]  # a huge start that then trains
    with pytest.raises(AssertionError):
        verdict(**{**curves, "unnormalised": recovers}, chance=CHANCE)


def one_trajectory(lr: float, steps: int, sizes: tuple[int, int]) -> dict[int, tuple]:
    """ONE model trained with batches of sizes[1], its per-step loss measured on independent
    random batches of each size: curves that differ by sampling noise alone."""
    x_train, y_train, x_val, y_val = digits()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    picks = torch.Generator().manual_seed(0)
    per_step = {size: [] for size in sizes}
    fixed = []
    for _ in range(steps):
        for size in sizes:
            idx = torch.randint(0, len(x_train), (size,), generator=picks)
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            per_step[size].append(loss.item())
        opt.zero_grad()
        loss.backward()  # the last size's batch trains the model
        opt.step()
        with torch.no_grad():
            fixed.append(F.cross_entropy(model(x_val[:64]), y_val[:64]).item())
    return {size: (per_step[size], fixed) for size in sizes}


def test_c18_batch_curves_that_differ_only_by_sampling_noise():
    verdict = chapter("verdict_c18_batch")
    run = chapter("batch_noise_run", x_val=digits()[2][:64], y_val=digits()[3][:64])
    steps, settled = 200, slice(80, None)

    def settle(curves):
        return tuple(c[settled] for c in curves)

    still_2, still_32 = run(2, 0.0, 120)[0][20:], run(32, 0.0, 120)[0][20:]  # the model stays
    real_2, real_32 = settle(run(2, 0.03, steps)), settle(run(32, 0.03, steps))
    verdict(real_2, real_32, still_2, still_32)  # the real world: trained with each size
    same = one_trajectory(0.03, steps, (2, 32))
    only_sampling_2, only_sampling_32 = settle(same[2]), settle(same[32])
    with pytest.raises(AssertionError, match="fixed-set"):  # the old evidence, 4x from sampling
        verdict(only_sampling_2, only_sampling_32, still_2, still_32)
    with pytest.raises(AssertionError, match="sampling"):  # model jitter without per-step excess
        verdict((only_sampling_2[0], real_2[1]), (only_sampling_32[0], real_32[1]),
                still_2, still_32)
    with pytest.raises(AssertionError, match="sampling alone"):  # lr-0 curves of one size
        verdict(real_2, real_32, still_32, still_32)


# C19: loss and final activation ----------------------------------------------------------

def grad_norm_at_init(final: nn.Module) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), final)
    return chapter("first_grad_norm")(model)


def bce_floor(sigmoid_first: bool) -> float:
    """BCEWithLogitsLoss of perfectly confident predictions, with or without a sigmoid first."""
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0])
    scores = 30 * (2 * labels - 1)
    return F.binary_cross_entropy_with_logits(
        torch.sigmoid(scores) if sigmoid_first else scores, labels).item()


def test_c19_softmax_or_sigmoid_removed():
    verdict = chapter("verdict_c19")
    norm_ok, norm_bad = grad_norm_at_init(nn.Identity()), grad_norm_at_init(nn.Softmax(dim=1))
    logits_run, sigmoid_run = (bce_floor(False), 0.93), (bce_floor(True), 0.56)
    verdict((norm_ok, 0.9), (norm_bad, 0.5), logits_run, sigmoid_run)
    with pytest.raises(AssertionError):  # no softmax in the second model: same gradient
        verdict((norm_ok, 0.9), (grad_norm_at_init(nn.Identity()), 0.5), logits_run,
                sigmoid_run)
    with pytest.raises(AssertionError):  # a softmax that does not slow training
        verdict((norm_ok, 0.9), (norm_bad, 0.9), logits_run, sigmoid_run)
    with pytest.raises(AssertionError):  # no sigmoid before BCEWithLogitsLoss
        verdict((norm_ok, 0.9), (norm_bad, 0.5), logits_run, (bce_floor(False), 0.56))
    # the floor alone: a sigmoid model as accurate as the logits one (only its loss floored)
    with pytest.raises(AssertionError, match="did not slow"):
        verdict((norm_ok, 0.9), (norm_bad, 0.5), (bce_floor(False), 0.9), (bce_floor(True), 0.9))


# C20: gradient norms per layer -----------------------------------------------------------

class Branches(nn.Module):
    def __init__(self, detach: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.detach = detach
        self.pixels, self.profile, self.head = nn.Linear(8, 4), nn.Linear(8, 4), nn.Linear(8, 3)

    def forward(self, x):
        b = torch.relu(self.profile(x))
        return self.head(torch.cat([torch.relu(self.pixels(x)), b.detach() if self.detach
                                    else b], dim=1))


def layer_norms(detach: bool) -> dict[str, list[float]]:
    model = Branches(detach)
    recorder = GradNormRecorder(model, only_weights=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(torch.randn(16, 8, generator=gen)),
                        torch.randint(0, 3, (16,), generator=gen)).backward()
        recorder()
        opt.step()
    return recorder.norms


def regression(lr: float, nan_at: int | None = None, steps: int = 40):
    """Per-step loss and total gradient norm of SGD on a linear regression; `nan_at` plants
    a NaN in that step's inputs (a NaN that no growing norm announces)."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    layer = nn.Linear(8, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=lr)
    losses, norms = [], []
    for step in range(steps):
        inputs = x.clone()
        if step == nan_at:
            inputs[0, 0] = float("nan")
        opt.zero_grad()
        loss = F.mse_loss(layer(inputs * 10), y)
        loss.backward()
        norms.append(math.sqrt(sum(p.grad.norm() ** 2 for p in layer.parameters())))
        opt.step()
        losses.append(loss.item())
    return losses, norms


def test_c20_no_detached_branch():
    verdict = chapter("verdict_c20")
    exploding = regression(lr=0.03)  # a learning rate too large: grows, then overflows
    assert not np.isfinite(exploding[0]).all()
    verdict(layer_norms(detach=True), "profile.weight", *exploding)
    with pytest.raises(AssertionError, match="zero gradient"):
        verdict(layer_norms(detach=False), "profile.weight", *exploding)


def test_c20_nan_without_exploding_norm_first():
    verdict = chapter("verdict_c20")
    with pytest.raises(AssertionError):  # a NaN from the data: the norm did not grow before
        verdict(layer_norms(detach=True), "profile.weight", *regression(lr=1e-3, nan_at=20))
    with pytest.raises(AssertionError, match="never stopped"):  # a small lr: no divergence
        verdict(layer_norms(detach=True), "profile.weight", *regression(lr=1e-3))


@cache
def diverging_run(activation: type[nn.Module]) -> tuple[dict, dict, list[float]]:
    """The chapter's diverging regression (two hidden layers, SGD with lr 0.05 and momentum
    0.9, one epoch) with another activation: each weight's gradient norm per step, each
    activation layer's share of outputs within 0.01 of -1 or 1 per step, the step losses."""
    x_train, y_train, _, _ = digits()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 64), activation(), nn.Linear(64, 64), activation(),
                        nn.Linear(64, 1))
    saturated: dict[str, list[float]] = {"1": [], "3": []}

    def record(name: str):
        def hook(module, inputs, out) -> None:
            saturated[name].append((out.detach().abs() > 0.99).float().mean().item())
        return hook

    for name in saturated:
        net[int(name)].register_forward_hook(record(name))
    norms = GradNormRecorder(net, only_weights=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # fit's warning of the non-finite loss
        history = fit(net, DataLoader(TensorDataset(x_train, y_train.float()[:, None]),
                                      batch_size=32, shuffle=True,
                                      generator=torch.Generator().manual_seed(0)),
                      None, F.mse_loss,
                      torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9), epochs=1,
                      progress=False, on_step=norms)
    return norms.norms, saturated, history.step_loss


def test_c20_first_layers_without_saturating_units():
    """No tanh: the same network with identity activations diverges too, and its first
    layers' gradients explode with the last one's instead of vanishing."""
    verdict = chapter("verdict_c20_saturation")
    layers = (["0.weight", "2.weight"], "4.weight")
    verdict(*diverging_run(nn.Tanh), *layers)  # positive control: the chapter's network
    norms, saturated, losses = diverging_run(nn.Identity)
    assert not np.isfinite(losses).all()
    with pytest.raises(AssertionError, match="did not vanish"):
        verdict(norms, saturated, losses, *layers)


def test_c20_vanishing_without_saturation():
    """The same norms, with tanh units that stayed in their linear range (the shares of the
    first step): the vanishing gradients must not be put down to saturation."""
    verdict = chapter("verdict_c20_saturation")
    norms, saturated, losses = diverging_run(nn.Tanh)
    unsaturated = {name: [shares[0]] * len(shares) for name, shares in saturated.items()}
    assert max(shares[0] for shares in saturated.values()) < 0.1
    with pytest.raises(AssertionError, match="saturated"):
        verdict(norms, unsaturated, losses, ["0.weight", "2.weight"], "4.weight")
    with pytest.raises(AssertionError, match="never stopped"):  # a run that does not diverge
        verdict(norms, saturated, [1.0] * len(losses), ["0.weight", "2.weight"], "4.weight")


# C41: one table per parameter ------------------------------------------------------------

class ThreeFaults(nn.Module):
    """The chapter's model, small, with each planted fault switchable."""

    def __init__(self, detach: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.detach = detach
        self.stem, self.pixels = nn.Linear(8, 8), nn.Linear(8, 4)
        self.side, self.dead, self.after_dead = nn.Linear(8, 4), nn.Linear(8, 4), nn.Linear(4, 4)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        b = torch.relu(self.side(h))
        return self.head(torch.cat([torch.relu(self.pixels(h)), b.detach() if self.detach else b,
                                    self.after_dead(torch.relu(self.dead(h)))], dim=1))


def table_of(freeze: bool = True, detach: bool = True, dead_bias: float = -100.0):
    model = ThreeFaults(detach)
    model.stem.requires_grad_(not freeze)
    x, y = torch.randn(32, 8, generator=torch.Generator().manual_seed(0)), torch.arange(32) % 3
    with torch.no_grad():
        model.dead.bias.fill_(dead_bias)
        dead_max = model.dead(torch.relu(model.stem(x))).max().item()
    return chapter("gradient_table")(model, x, y), dead_max


NONE = ["stem.weight", "stem.bias", "side.weight", "side.bias"]
ZERO = ["dead.weight", "dead.bias", "after_dead.weight"]
HEALTHY = ["pixels.weight", "pixels.bias", "after_dead.bias", "head.weight", "head.bias"]


def test_c41_faults_not_planted():
    verdict = chapter("verdict_c41")
    verdict(*table_of()[:1], NONE, ZERO, HEALTHY, table_of()[1])
    for world in ({"freeze": False}, {"detach": False}, {"dead_bias": 0.0}):
        table, dead_max = table_of(**world)
        with pytest.raises(AssertionError):  # a layer without its fault has a gradient
            verdict(table, NONE, ZERO, HEALTHY, dead_max)


# C48, C49, C83: the lowered learning rate, sigmoid before cross-entropy, the first loss -----

def test_c48_lower_lr_that_does_not_train():
    verdict = chapter("verdict_c48")
    stuck = [2.3] + [7.0] * 9 + [2.44] * 40  # thrown up, then stuck at chance
    trained = list(np.linspace(2.3, 0.1, 40)) + [0.1] * 10
    verdict(stuck, trained, CHANCE)
    with pytest.raises(AssertionError):  # the lowered run stays at chance too
        verdict(stuck, stuck, CHANCE)
    with pytest.raises(AssertionError):  # the lowered run still diverges
        verdict(stuck, [*trained[:-1], math.nan], CHANCE)
    with pytest.raises(AssertionError):  # the "too high" run was not stuck
        verdict(trained, trained, CHANCE)
    with pytest.raises(AssertionError, match="throw"):  # stuck, never thrown up: lr 0, not high
        verdict([2.44] * 50, trained, CHANCE)


def best_case_loss(sigmoid: bool) -> float:
    """Cross-entropy of perfectly confident scores (+-50) for 20 examples, through a sigmoid
    (the best a sigmoid can hand the loss) or as logits."""
    labels = torch.arange(20) % 10
    scores = 50 * (2 * F.one_hot(labels, 10) - 1).float()
    return F.cross_entropy(torch.sigmoid(scores) if sigmoid else scores, labels).item()


def test_c49_sigmoid_removed():
    verdict = chapter("verdict_c49")
    floor = math.log(1 + 9 / math.e)
    best = best_case_loss(sigmoid=True)
    verdict((0.3, 0.88), (0.076, 0.63, 2.25), best, 10)
    with pytest.raises(AssertionError):  # no sigmoid: the same gradient and accuracy
        verdict((0.3, 0.88), (0.3, 0.88, 0.79), best, 10)
    with pytest.raises(AssertionError):  # a loss below the floor cannot come from sigmoids
        verdict((0.3, 0.88), (0.076, 0.63, floor - 0.1), best, 10)
    with pytest.raises(AssertionError, match="perfect sigmoid outputs"):  # no floor: logits
        verdict((0.3, 0.88), (0.076, 0.63, 2.25), best_case_loss(sigmoid=False), 10)
    with pytest.raises(AssertionError, match="perfect sigmoid outputs"):  # another C's floor
        verdict((0.3, 0.88), (0.076, 0.63, 2.25), best, 5)


def test_c83_wrong_shape_or_an_overconfident_start():
    verdict, first_loss = chapter("verdict_c83"), chapter("first_loss")
    n = len(digits()[0])
    shape, loss = first_loss()
    verdict(shape, loss, n, 10)
    with pytest.raises(AssertionError):  # an overconfident last layer
        verdict(*first_loss(last_layer_scale=50.0), n, 10)
    with pytest.raises(AssertionError):  # one output too few
        verdict((n, 9), loss, n, 10)


# C40: class imbalance --------------------------------------------------------------------

@cache
def imbalanced_labels() -> torch.Tensor:
    return (torch.rand(2000, generator=torch.Generator().manual_seed(0)) < 0.05).float()


def epoch_record(logits: torch.Tensor, labels: torch.Tensor) -> dict:
    rates = chapter("rates")
    loss = F.binary_cross_entropy_with_logits(logits, labels).item()
    return {"train_loss": loss, "val_loss": loss, **rates(logits, labels)}


def lazy_history(labels: torch.Tensor) -> list[dict]:
    """A model that learns the base rate: constant logits from 0 towards logit(share), always
    below 0.5: the loss falls, every answer stays 'negative'."""
    share = labels.mean().item()
    return [epoch_record(torch.full_like(labels, c), labels)
            for c in np.linspace(0.0, math.log(share / (1 - share)), 10)]


def informative(labels: torch.Tensor, strength: float) -> torch.Tensor:
    noise = torch.randn(len(labels), generator=torch.Generator().manual_seed(1))
    return strength * (2 * labels - 1) + noise - 1.0


def test_c40_accuracy_that_moves_or_fixes_that_do_not_fix():
    verdict, rates = chapter("verdict_c40"), chapter("rates")
    labels = imbalanced_labels()
    majority = 1 - labels.mean().item()
    history = lazy_history(labels)
    plain = history[-1]
    shy = informative(labels, 2.0) - 3.0  # informative, but rarely above 0.5
    fixes = [rates(informative(labels, 2.0), labels), rates(shy, labels, threshold=0.05)]
    verdict(history, majority, plain, fixes)
    with pytest.raises(AssertionError):  # the model finds the positives: accuracy moves
        verdict([*history[:-1], epoch_record(informative(labels, 3.0), labels)], majority,
                plain, fixes)
    with pytest.raises(AssertionError):  # a moved threshold that does not help
        verdict(history, majority, plain, [fixes[0], rates(shy, labels, threshold=0.5)])
    with pytest.raises(AssertionError):  # losses that do not fall
        verdict([history[-1]] * 10, majority, plain, fixes)


# C107: a few corrupted samples make the spikes; per-sample losses name them -------------

PLANTED = torch.tensor([11, 222, 777, 1333])


def corrupted(scale: float = 100.0) -> tuple[torch.Tensor, torch.Tensor]:
    """The digits with the chapter's corruption at PLANTED: features x `scale`, wrong labels
    (scale 1: only the labels are wrong)."""
    x_train, y_train = digits()[:2]
    x, y = x_train.clone(), y_train.clone()
    x[PLANTED] *= scale
    y[PLANTED] = (y[PLANTED] + torch.tensor([1, 3, 5, 7])) % 10
    return x, y


@cache
def spike_evidence(world: str) -> tuple[list[float], list[bool], list[int], int, list[int]]:
    """The chapter's per-sample run on a world's data: step losses, which steps hold a PLANTED
    sample, the worst sample of each step, the steps of an epoch, the first sample of each
    step's batch."""
    x_train, y_train = digits()[:2]
    x, y = {"corrupted": corrupted, "labels only": lambda: corrupted(scale=1.0),
            "clean": lambda: (x_train, y_train)}[world]()
    steps, per_epoch = chapter("per_sample_run")(x, y)
    return ([loss for loss, _, _ in steps],
            [bool(torch.isin(index, PLANTED).any()) for _, index, _ in steps],
            [index[per_sample.argmax()].item() for _, index, per_sample in steps], per_epoch,
            [index[0].item() for _, index, _ in steps])


def test_c107_no_corruption_or_suspects_that_miss_the_planted():
    verdict = chapter("verdict_c107")
    planted = PLANTED.tolist()
    losses, held, worst, per_epoch, first_of_batch = spike_evidence("corrupted")
    verdict(losses, held, worst, planted, per_epoch)  # the chapter's world
    # the same samples, clean: no step spikes, so there are no suspects either
    with pytest.raises(AssertionError, match="planted sample"):
        verdict(*spike_evidence("clean")[:3], planted, per_epoch)
    with pytest.raises(AssertionError, match="planted sample"):  # wrong labels, normal scale
        verdict(*spike_evidence("labels only")[:3], planted, per_epoch)
    # a "suspect" that ignores the losses: the first sample of each batch, almost always clean
    assert not set(first_of_batch) <= set(planted)
    with pytest.raises(AssertionError, match="clean samples among the suspects"):
        verdict(losses, held, first_of_batch, planted, per_epoch)
    # the loss-based suspects with one clean sample (0) named at the highest spike
    highest = max(range(per_epoch, len(losses)), key=losses.__getitem__)
    one_clean = [0 if step == highest else w for step, w in enumerate(worst)]
    with pytest.raises(AssertionError, match="clean samples among the suspects"):
        verdict(losses, held, one_clean, planted, per_epoch)


# C108: an evaluation bug gives chance-level accuracy while the loss falls ----------------

@cache
def eval_history(lr: float, reported_from_loader: bool) -> list[tuple[float, float, float]]:
    """The chapter's evaluation experiment: (validation loss, accuracy as reported, accuracy
    with each batch's labels) before training and after each of 5 epochs at `lr`."""
    x_train, y_train, x_val, y_val = digits()
    evaluate = chapter("val_loss_and_accuracy", y_val=y_val)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    train = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True,
                       generator=torch.Generator().manual_seed(0))
    val = DataLoader(TensorDataset(x_val, y_val), batch_size=64, shuffle=True,
                     generator=torch.Generator().manual_seed(1))
    history = []
    for epoch in range(6):
        if epoch > 0:
            fit(model, train, None, F.cross_entropy, opt, epochs=1, progress=False)
        loss, reported = evaluate(model, val, labels_from_loader=reported_from_loader)
        history.append((loss, reported, evaluate(model, val, labels_from_loader=True)[1]))
    return history


def test_c108_a_correct_evaluation_or_a_model_that_does_not_learn():
    verdict = chapter("verdict_c108")
    verdict(eval_history(0.03, False), 10)  # the chapter's world: the bug
    with pytest.raises(AssertionError, match="left chance"):  # the evaluation without the bug
        verdict(eval_history(0.03, True), 10)
    with pytest.raises(AssertionError, match="did not fall"):  # a model that does not learn
        verdict(eval_history(0.0, False), 10)
    falls = [(2.3, 0.1, 0.1), (1.0, 0.1, 0.7), (0.57, 0.19, 0.9)]  # bound 1 - 0.57 / ln 2
    with pytest.raises(AssertionError, match="does not rule out"):  # 0.18: allows the 0.19
        verdict(falls, 10)
    with pytest.raises(AssertionError, match="bound failed"):  # a "fixed" metric under it
        verdict([*falls[:2], (0.05, 0.1, 0.9)], 10)  # 0.9 < 1 - 0.05 / ln 2


# C109, C110: remedies for overfitting ----------------------------------------------------

@cache
def overfitting_run(subset: int, epochs: int, copies: bool = False):
    """The chapter's train_curve for the gallery's overfitting model; with `copies`, its
    training set is the first 60 samples repeated (`subset` samples that add nothing new)."""
    x_train, y_train = digits()[:2]
    if copies:
        repeats = -(-subset // 60)
        x_train, y_train = x_train[:60].repeat(repeats, 1), y_train[:60].repeat(repeats)
    run = chapter("train_curve") if not copies else chapter(
        "train_curve", x_train=x_train, y_train=y_train, x_val=digits()[2], y_val=digits()[3])
    return run(lr=1e-2, subset=subset, hidden=256, epochs=epochs, adam=True)


def test_c109_more_data_that_is_only_copies():
    verdict = chapter("verdict_c109")
    small, large = overfitting_run(60, 200), overfitting_run(640, 20)
    verdict(small.epoch_val_loss, small.epoch_val_metric[-1], large.epoch_val_loss,
            large.epoch_val_metric[-1])  # the chapter's world
    copied = overfitting_run(640, 20, copies=True)  # over ten times the samples, all repeats
    with pytest.raises(AssertionError):
        verdict(small.epoch_val_loss, small.epoch_val_metric[-1], copied.epoch_val_loss,
                copied.epoch_val_metric[-1])


def test_c110_no_overfitting_or_weights_not_loaded_back():
    verdict = chapter("verdict_c110")
    x_val, y_val = digits()[2:]
    model, val_losses, best_epoch = chapter("early_stopping_run")(10, 200)
    with torch.no_grad():
        restored = F.cross_entropy(model(x_val), y_val).item()
    full_last = overfitting_run(60, 200).epoch_val_loss[-1]
    verdict(val_losses, best_epoch, restored, 10, 200, full_last)  # the chapter's world
    with pytest.raises(AssertionError, match="not the best epoch"):  # the last weights kept
        verdict(val_losses, best_epoch, val_losses[-1], 10, 200, full_last)
    with pytest.raises(AssertionError):  # a full run that does not overfit: nothing to gain
        verdict(val_losses, best_epoch, restored, 10, 200, min(val_losses))
    falling = list(np.linspace(2.0, 0.5, 200))  # no minimum before the end: never stops
    with pytest.raises(AssertionError):
        verdict(falling, 199, 0.5, 10, 200, 0.5)
