"""Chapter 09's claims fail where they are false: each test feeds the chapter's own verdict
function (tests/chapters/chapter_code.py) evidence from a world without the effect, and evidence
from the world with it (computed where cheap; where it takes an ONNX export or torch.compile, which
cost seconds each, the values the chapter printed)."""

import io
import warnings

import pytest
import torch
from torch import nn

from helpers import ship
from tests.chapters.chapter_code import chapter_function

CHAPTER = "09_deployment"


def rows_against(reference: nn.Module, candidate: nn.Module, batches=(1, 7, 64, 228)):
    """verify_onnx's rows (and the chapter's `same_shape`), with `candidate` standing in for
    the onnxruntime session."""
    torch.manual_seed(0)
    rows = []
    for batch in batches:
        x = torch.randn(batch, 12)
        with torch.no_grad():
            got, expected = candidate(x), reference(x)
            error = (got - expected).abs().max().item()  # broadcasts, as the chapter's loop
        rows.append({"batch": batch, "max_abs_error": error, "ok": error <= 1e-4,
                     "same_shape": got.shape == expected.shape})
    return rows


class FirstRowOnly(nn.Module):
    """A file that returns one row whatever the batch: its (1, 4) output broadcasts against
    PyTorch's (N, 4), so a max abs error alone misses it when the rows happen to agree."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)[:1]


def stale_copy(model: nn.Linear, shift: float) -> nn.Linear:
    """The same layer with its bias moved: a stale weight file, a wrong conversion."""
    other = nn.Linear(model.in_features, model.out_features)
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        other.bias += shift
    return other


# --- C29: ONNX with a dynamic batch matches PyTorch within 1e-4 at every batch tried --------

def test_c29_fixed_batch_or_drifted_outputs_fail():
    verdict = chapter_function(CHAPTER, "verdict_c29")
    torch.manual_seed(0)
    model = nn.Linear(12, 4)
    exact = rows_against(model, stale_copy(model, 0.0))
    verdict("batch", exact)  # the world of the claim: a symbolic batch, within tolerance
    with pytest.raises(AssertionError):  # an export whose batch was fixed to the example's 7
        verdict(7, exact)
    with pytest.raises(AssertionError):  # outputs off by 1e-3 (float16 weights, say)
        verdict("batch", rows_against(model, stale_copy(model, 1e-3)))
    with pytest.raises(AssertionError):  # batch 1 never tried
        verdict("batch", rows_against(model, stale_copy(model, 0.0), batches=(7, 64, 228)))
    constant = nn.Linear(12, 4)
    with torch.no_grad():  # every row of its output is the bias: broadcasting hides a shape
        constant.weight.zero_()
    one_row = rows_against(constant, FirstRowOnly(constant))  # (1, 4) against (N, 4)
    assert all(r["max_abs_error"] <= 1e-4 for r in one_row)  # the error alone passes ...
    with pytest.raises(AssertionError, match="another shape"):  # ... the shape does not
        verdict("batch", one_row)


# --- C30: preprocessing inside the graph, the file takes uint8 -----------------------------

class ForgetsNormalisation(nn.Module):
    """A serving wrapper that scales to [0, 1] but leaves out the training normalisation."""

    def __init__(self, serving: ship.ServingModel) -> None:
        super().__init__()
        self.classifier = serving.classifier

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classifier(images.permute(0, 3, 1, 2).float() / 255)


# The chapter's file: its operators (its run printed those before the first Conv; an export
# costs seconds)
FILE_OPS = ["Shape", "Squeeze", "Transpose", "Cast", "Div", "Sub", "Div", "Conv", "Relu",
            "MaxPool", "Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"]
# An export of the bare classifier: float input, no conversion in the graph
BARE_OPS = ["Conv", "Relu", "MaxPool", "Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"]


def chapter02_path(classifier: nn.Module, images: torch.Tensor, mean: torch.Tensor,
                   std: torch.Tensor) -> torch.Tensor:
    """Chapter 02's training path: its `preprocess` with the training statistics (given here,
    never read from a wrapper's buffers), then the classifier."""
    x = images.permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        return classifier((x - mean[:, None, None]) / std[:, None, None])


def test_c30_serving_without_normalisation_wrong_statistics_or_a_float_file_fails():
    verdict = chapter_function(CHAPTER, "verdict_c30")
    torch.manual_seed(0)
    mean, std = torch.tensor([0.4, 0.5, 0.6]), torch.tensor([0.2, 0.25, 0.3])
    classifier = ship.make_classifier().eval()
    serving = ship.ServingModel(classifier, mean, std).eval()
    images = torch.randint(0, 256, (5, 16, 16, 3), dtype=torch.uint8)
    train_path = chapter02_path(classifier, images, mean, std)
    with torch.no_grad():
        serve_path = serving(images)
        forgot = ForgetsNormalisation(serving)(images)
        # the wrapper built with the statistics on the 0-255 scale: inputs 1/255 of the truth
        wrong_scale = ship.ServingModel(classifier, mean * 255, std * 255).eval()(images)
    verdict(train_path, serve_path, "UINT8", FILE_OPS)
    with pytest.raises(AssertionError):  # the serving side converts differently
        verdict(train_path, forgot, "UINT8", FILE_OPS)
    with pytest.raises(AssertionError):  # the wrapper holds statistics of the wrong scale
        verdict(train_path, wrong_scale, "UINT8", FILE_OPS)
    with pytest.raises(AssertionError):  # the preprocessing stayed outside the file
        verdict(train_path, serve_path, "FLOAT", BARE_OPS)
    with pytest.raises(AssertionError):  # a file that converts after the first convolution
        verdict(train_path, serve_path, "UINT8", BARE_OPS + ["Transpose", "Cast", "Sub", "Div"])


# --- C31: hard-coded shapes specialise or silently break a dynamic export ------------------

def frozen_branch_errors(traced_branch: bool) -> dict[int, float]:
    """Max abs error of BatchBranch's export at batches 8, 3, 32, computed in PyTorch: the
    exported graph is the path taken for the example's batch of 8 (a frozen Python branch), or,
    in the world without the pitfall, the branch itself (as torch.cond would keep it)."""
    torch.manual_seed(0)
    linear = nn.Linear(48, 4)

    def eager(x):
        y = linear(x.flatten(1))
        return y * 0.5 if x.shape[0] > 16 else y

    def exported(x):
        return eager(x) if traced_branch else linear(x.flatten(1))  # the batch-8 path

    errors = {}
    with torch.no_grad():
        for batch in (8, 3, 32):
            x = torch.randn(batch, 3, 4, 4)
            errors[batch] = (exported(x) - eager(x)).abs().max().item()
    return errors


SPECIALISED = "the batch was declared dynamic, but the exported file fixes it to 8: ..."
NARROWED = ("the batch was declared dynamic from 1 to 4096, but the exporter narrowed it to "
            "[1, 16]: ...")
REFUSED = "refused: [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimen"


def outcomes_of(view_specialises: bool = True, branch_frozen: bool = True) -> dict:
    fixed = {"declared": ["batch", 3, 4, 4], "warnings": [], 8: 1e-7, 3: 1e-7, 32: 1e-7}
    fixed_view = ({"declared": [8, 3, 4, 4], "warnings": [SPECIALISED], 8: 1e-7, 3: REFUSED,
                   32: REFUSED} if view_specialises else dict(fixed))
    branch = {"declared": ["batch", 3, 4, 4],
              "warnings": [NARROWED] if branch_frozen else [],
              **frozen_branch_errors(traced_branch=not branch_frozen)}
    return {"FixedView": fixed_view, "BatchBranch": branch, "Fixed": fixed}


def test_c31_an_exporter_without_the_pitfalls_fails():
    verdict = chapter_function(CHAPTER, "verdict_c31")
    verdict([8, 3, 4, 4], outcomes_of())  # the world of the claim
    with pytest.raises(AssertionError):  # an exporter that keeps the hard-coded view dynamic
        verdict(["batch", 3, 4, 4], outcomes_of(view_specialises=False))
    with pytest.raises(AssertionError):  # a branch traced as a branch: right at every batch
        verdict([8, 3, 4, 4], outcomes_of(branch_frozen=False))
    quiet = outcomes_of()
    quiet["BatchBranch"]["warnings"] = []
    with pytest.raises(AssertionError):  # a frozen branch that export_onnx does not report
        verdict([8, 3, 4, 4], quiet)
    blamed = outcomes_of()
    blamed["Fixed"]["warnings"] = [NARROWED]
    with pytest.raises(AssertionError):  # a warning on the model without the pitfall
        verdict([8, 3, 4, 4], blamed)


# --- C32: torch.compile: compile time, fusion pays on pointwise chains, not on one matmul --

# Seconds from one run of the chapter on a busy 2-core CPU (torch.compile costs seconds here)
POINTWISE = {"first": 19.30, "new_shape": 1.71, "eager": 0.316, "compiled": 0.00612,
             "third_shape": 0.0152, "new_shape_graphs": 1, "third_shape_graphs": 0}
MATMUL = {"first": 0.17, "new_shape": 0.21, "eager": 0.0262, "compiled": 0.0299}


def eager_seconds(model: nn.Module, x: torch.Tensor, calls: int = 5) -> float:
    import time

    times = []
    with torch.inference_mode():
        for _ in range(calls):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def test_c32_a_compile_that_does_nothing_fails():
    verdict = chapter_function(CHAPTER, "verdict_c32")
    verdict(POINTWISE, MATMUL)
    # torch.compile replaced by the identity: every call of the "compiled" model is an eager
    # call, the first one and the new shape included (measured, small tensors)
    pointwise = nn.Sequential(*[nn.ReLU() for _ in range(10)])
    x = torch.randn(256, 256)
    per_call = eager_seconds(pointwise, x)  # the eager and the "compiled" model: one function
    seconds = {"first": eager_seconds(pointwise, x, calls=1),
               "new_shape": eager_seconds(pointwise, x[:129], calls=1),
               "third_shape": eager_seconds(pointwise, x[:64], calls=1),
               "eager": per_call, "compiled": per_call,
               "new_shape_graphs": 0, "third_shape_graphs": 0}  # Dynamo compiled nothing
    with pytest.raises(AssertionError):
        verdict(seconds, MATMUL)
    # a new shape that is slow without a recompilation (a cold kernel, say)
    with pytest.raises(AssertionError, match="a new batch size compiled"):
        verdict({**POINTWISE, "new_shape_graphs": 0}, MATMUL)
    # a batch never marked dynamic: a graph for every shape
    with pytest.raises(AssertionError, match="a third batch size compiled"):
        verdict({**POINTWISE, "third_shape_graphs": 1}, MATMUL)
    compiled = POINTWISE["compiled"]
    for field, value in (("first", 20 * compiled), ("eager", 1.1 * compiled),
                         ("new_shape", 5 * compiled)):
        with pytest.raises(AssertionError):  # cheap compile / no fusion gain / no recompile
            verdict({**POINTWISE, field: value}, MATMUL)
    with pytest.raises(AssertionError):  # a world where compiling the big matmul pays 3x
        verdict(POINTWISE, {**MATMUL, "compiled": MATMUL["eager"] / 3})


# --- C33: int8 shrinks the model and can cost accuracy ------------------------------------

def fake_int8(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Symmetric int8 rounding with one scale per slice along `dim` (dynamic quantization's
    per-row activation scale and per-output-row weight scale)."""
    scale = x.abs().amax(dim=dim, keepdim=True).clamp_min(1e-12) / 127
    return (x / scale).round().clamp(-127, 127) * scale


def int8_bytes(weight: torch.Tensor) -> int:
    """Bytes of the weight stored as int8 with one float32 scale per row."""
    scale = weight.abs().amax(dim=1, keepdim=True) / 127
    buffer = io.BytesIO()
    torch.save({"w": (weight / scale).round().to(torch.int8), "scale": scale}, buffer)
    return buffer.getbuffer().nbytes


def fp32_bytes(weight: torch.Tensor) -> int:
    buffer = io.BytesIO()
    torch.save({"w": weight}, buffer)
    return buffer.getbuffer().nbytes


def quantization_evidence(quantize: bool = True, outlier_aware: bool = False) -> tuple:
    """(size_fp32, size_int8, acc_fp32, acc_int8, acc_outlier_fp32, acc_outlier_int8) of a
    nearest-centroid linear classifier (10 classes, 64 features) on Gaussian blobs, rounded
    with fake int8, and of the same function with one outlier input feature (x10000, its
    weights /10000). ``outlier_aware`` rescales the outlier before rounding (and back)."""
    g = torch.Generator().manual_seed(0)
    centroids = torch.randn(10, 64, generator=g) * 2
    labels = torch.randint(0, 10, (500,), generator=g)
    x = centroids[labels] + torch.randn(500, 64, generator=g)
    weight = torch.cat([centroids, torch.zeros(502, 64)])  # 512 rows, as the chapter's layer
    bias = torch.cat([-0.5 * (centroids ** 2).sum(1), torch.full((502,), -1e4)])
    scale = torch.ones(64)
    scale[36] = 10_000.0

    def accuracy(w, inputs, q, undo=None):
        if q and undo is not None:  # round in the well-scaled units, then scale back exactly
            w, inputs = fake_int8(w * undo, 1) / undo, fake_int8(inputs / undo, 1) * undo
        elif q:
            w, inputs = fake_int8(w, 1), fake_int8(inputs, 1)
        return ((inputs @ w.T + bias).argmax(1) == labels).float().mean().item()

    w_out, x_out = weight / scale, x * scale
    return (fp32_bytes(weight), int8_bytes(weight) if quantize else fp32_bytes(weight),
            accuracy(weight, x, False), accuracy(weight, x, quantize),
            accuracy(w_out, x_out, False),
            accuracy(w_out, x_out, quantize, undo=scale if outlier_aware else None))


def test_c33_no_quantization_or_an_outlier_aware_one_fails():
    verdict = chapter_function(CHAPTER, "verdict_c33")
    verdict(*quantization_evidence())  # the world of the claim, computed
    with pytest.raises(AssertionError):  # the quantization step left out: nothing shrinks
        verdict(*quantization_evidence(quantize=False))
    with pytest.raises(AssertionError):  # the outlier rescaled before rounding: nothing lost
        verdict(*quantization_evidence(outlier_aware=True))


# --- C34: verify every artifact before shipping; the check can fail ------------------------

def table_of(onnx_error: float = 5.72e-6, same_argmax: float = 1.0, amortised: bool = True,
             int8_accuracy: float = 0.9722):
    """The chapter's table (one run on a busy 2-core CPU), with one thing changed."""
    def row(error, latency, per_sample, same=1.0, accuracy=0.9722):
        return {"max_abs_error": error, "same_argmax": same, "latency_ms": latency,
                "per_sample_b64_ms": per_sample, "accuracy": accuracy}

    return {"eager": row(0.0, 0.154, 0.0194),
            "onnxruntime": row(onnx_error, 0.289, 0.0317 if amortised else 0.4),
            "torch.compile": row(0.0, 0.242, 0.0298),
            "int8": row(7.16e-2, 2.701, 0.4116, same_argmax, int8_accuracy)}


REPORT = {"verified": True, "latency_ms": {"eager b=1": 1.027, "onnx b=1": 0.353,
                                           "eager b=64": 5.148, "onnx b=64": 3.640}}


def test_c34_a_check_that_cannot_fail_or_a_drifted_artifact_fails():
    verdict = chapter_function(CHAPTER, "verdict_c34")
    torch.manual_seed(0)
    model = nn.Linear(12, 4)
    broken = rows_against(model, stale_copy(model, 0.5), batches=(256,))  # the planted break
    verdict(table_of(), broken, 0, REPORT)
    with pytest.raises(AssertionError):  # a check that compares the file with itself
        verdict(table_of(), rows_against(model, model, batches=(256,)), 0, REPORT)
    with pytest.raises(AssertionError):  # an ONNX file off by 1e-3
        verdict(table_of(onnx_error=1e-3), broken, 0, REPORT)
    with pytest.raises(AssertionError):  # an int8 model that changes many decisions
        verdict(table_of(same_argmax=0.8), broken, 0, REPORT)
    with pytest.raises(AssertionError):  # the one command failed its verification
        verdict(table_of(), broken, 1, {**REPORT, "verified": False})
    with pytest.raises(AssertionError):  # batching that does not amortise the per-call cost
        verdict(table_of(amortised=False), broken, 0, REPORT)
    with pytest.raises(AssertionError):  # a report that measured no latency
        verdict(table_of(), broken, 0, {**REPORT, "latency_ms": {}})
    with pytest.raises(AssertionError):  # a latency that is not a time
        verdict(table_of(), broken, 0, {**REPORT, "latency_ms": {**REPORT["latency_ms"],
                                                                 "onnx b=64": float("nan")}})
    with pytest.raises(AssertionError):  # same classes on the fixed set, 5 points lost end to end
        verdict(table_of(int8_accuracy=0.9222), broken, 0, REPORT)


# --- C92: the torch.export round trip is exact -----------------------------------------

def test_c92_a_round_trip_that_changes_the_outputs_fails(tmp_path):
    verdict = chapter_function(CHAPTER, "verdict_c92")
    torch.manual_seed(0)
    linear, x = nn.Linear(4, 2).eval(), torch.randn(3, 4)
    program = torch.export.export(linear, (x,))
    torch.export.save(program, tmp_path / "linear.pt2")
    reloaded = torch.export.load(tmp_path / "linear.pt2").module()
    with torch.no_grad():
        verdict(linear(x), reloaded(x))  # the world of the claim, computed
        with pytest.raises(AssertionError):  # a stale file: the bias moved by 1e-6
            verdict(linear(x), stale_copy(linear, 1e-6)(x))
        with pytest.raises(AssertionError):  # a reload in another precision
            verdict(linear(x), reloaded(x).half().float())
        with pytest.raises(AssertionError):  # a program traced for one row only
            verdict(linear(x), reloaded(x)[:1])


# --- C113: bfloat16 autocast at inference keeps every prediction the rounding cannot reach --

def trained_digits_mlp(epochs: int) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    """A small MLP on the chapter's digits, trained for `epochs` full-batch Adam epochs (0:
    untrained, logits with small margins), and the validation set."""
    from helpers import digits_split

    train_set, val_set = digits_split(seed=0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x_train, y_train = train_set.tensors
    for _ in range(epochs):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x_train), y_train).backward()
        optimizer.step()
    return model.eval(), *val_set.tensors


def e4m3_forward(model: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """The model with its inputs, weights and outputs rounded to float8 e4m3 (4 significant
    bits), as an autocast to that format would run it."""
    def e4m3(t: torch.Tensor) -> torch.Tensor:
        return t.to(torch.float8_e4m3fn).float()

    a = e4m3(x)
    for layer in model:
        if isinstance(layer, nn.Linear):
            a = e4m3(a @ e4m3(layer.weight).T + e4m3(layer.bias))
        else:
            a = layer(a)
    return a


def bf16_evidence(model: nn.Sequential, x: torch.Tensor, dtype=torch.bfloat16,
                  autocast_device: str = "cpu") -> tuple:
    bound_of = chapter_function(CHAPTER, "rounding_bound")
    with torch.inference_mode():
        logits = model(x)
        with torch.autocast(autocast_device, dtype=dtype):
            low = model(x)
    return logits, low, bound_of(model, x, torch.finfo(dtype).eps / 2)


def test_c113_a_flip_beyond_the_bound_fewer_bits_or_small_margins():
    safe_samples = chapter_function(CHAPTER, "safe_samples")
    verdict = chapter_function(CHAPTER, "verdict_c113", safe_samples=safe_samples)
    model, x, y = trained_digits_mlp(epochs=60)
    logits, low, bound = bf16_evidence(model, x)
    verdict(logits, low, bound, y, torch.bfloat16)  # the world of the claim: real autocast
    # a "bfloat16" run that changed the class of the safe sample with the largest lead
    planted = low.clone()
    lead = logits.topk(2, 1).values.diff(dim=1).neg()[:, 0]
    sample = int(torch.where(safe_samples(logits, bound), lead, -1.0).argmax())
    planted[sample] = planted[sample].roll(1)
    with pytest.raises(AssertionError):
        verdict(logits, planted, bound, y, torch.bfloat16)
    # a format with 4 significant bits (float8 e4m3), with its own bound: too few safe samples
    with torch.inference_mode():
        e4m3_logits = e4m3_forward(model, x)
    bound_of = chapter_function(CHAPTER, "rounding_bound")
    with pytest.raises(AssertionError):
        verdict(logits, e4m3_logits, bound_of(model, x, 2.0 ** -4), y, torch.float32)
    # an untrained model: its logits barely differ, so few samples are safe
    with pytest.raises(AssertionError):
        verdict(*bf16_evidence(*trained_digits_mlp(epochs=0)[:2]), y, torch.bfloat16)
    # a bfloat16 run judged with float16's unit roundoff (2**-11): its logits move beyond
    # that bound (about 1.6 times it), which the direct check of the bound catches
    with pytest.raises(AssertionError, match="beyond their bound"):
        verdict(logits, low, bound_of(model, x, torch.finfo(torch.float16).eps / 2), y,
                torch.bfloat16)


def test_c113_an_autocast_that_did_not_run_fails():
    """autocast for another device than the tensors' (CUDA autocast around CPU tensors; on a
    machine without CUDA it also warns and disables itself) changes nothing: the logits stay
    float32, unchanged, and every other part of the claim holds trivially."""
    safe_samples = chapter_function(CHAPTER, "safe_samples")
    verdict = chapter_function(CHAPTER, "verdict_c113", safe_samples=safe_samples)
    model, x, y = trained_digits_mlp(epochs=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CUDA is not available ... Disabling autocast"
        logits, low, bound = bf16_evidence(model, x, autocast_device="cuda")
    assert low.dtype == torch.float32 and torch.equal(low, logits)  # autocast did nothing
    with pytest.raises(AssertionError, match="autocast gave"):
        verdict(logits, low, bound, y, torch.bfloat16)
    rounded = logits.bfloat16()  # the right type, but the same values as the reference
    with pytest.raises(AssertionError, match="changed no logit"):
        verdict(rounded.float(), rounded, bound, y, torch.bfloat16)


def test_c113_rounding_bound_refuses_a_layer_it_does_not_model():
    bound_of = chapter_function(CHAPTER, "rounding_bound")
    model, x, _ = trained_digits_mlp(epochs=0)
    assert bound_of(model, x, 2.0 ** -8).shape == (len(x), 10)
    with pytest.raises(TypeError, match="Linear and ReLU"):  # GELU: its slope exceeds 1
        bound_of(nn.Sequential(model[0], nn.GELU(), *model[2:]), x, 2.0 ** -8)
