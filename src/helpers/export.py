"""Export to ONNX with a dynamic batch, and verify the file against PyTorch (chapter 09)."""

from __future__ import annotations

import contextlib
import io
import itertools
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from torch import nn

from .quiet import quiet_logger
from .validate import require_instance, require_int, require_iterable, require_path
from .wrappers import unwrap_model


def export_onnx(
    model: nn.Module, example: torch.Tensor, path: str | Path, *, max_batch: int = 4096
) -> Path:
    """Export ``model`` (one tensor in, one out) to a single ONNX file with a dynamic batch.

    Uses the current exporter (``torch.onnx.export(..., dynamo=True)``) with the first
    dimension of the input declared dynamic. A model wrapped by ``torch.compile``,
    ``nn.DataParallel`` or ``DistributedDataParallel`` is exported as the module inside
    (:func:`helpers.wrappers.unwrap_model`): the same computation. The model is put in eval
    mode first (and left in it: dropout off, BatchNorm on its running statistics), then run
    once eagerly on ``example``, so that an example the model cannot take (wrong dtype, wrong
    shape) fails here with PyTorch's message instead of producing a file that fails at
    inference. The exporter's progress messages are kept off the page; its errors and warnings
    are not.

    The batch is declared from 1; torch before 2.10 refuses that range for some models (the
    chapter's serving model among them), and then the export is retried with the batch
    declared from 2.

    When the file comes out with a fixed batch although the batch was declared dynamic, this
    function warns (``UserWarning``): the exporter itself says nothing, because it applies
    ``torch.export``'s suggested fix (``batch = <the example's size>``) and exports again.
    It also warns when the exporter kept the batch symbolic but narrowed its range (a Python
    branch on the batch size: ``torch.export`` refuses the declared range, the exporter applies
    the suggested ``Dim('batch', max=16)``): the exported program's ``range_constraints`` hold
    the narrowed bound, and the ONNX file cannot carry it.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(example, torch.Tensor) or example.ndim < 1:
        raise TypeError("example must be a tensor with a batch dimension")
    path = require_path("path", path)
    require_int("max_batch", max_batch, minimum=2)  # a batch of at most 1 is not dynamic
    if example.shape[0] > max_batch:
        raise ValueError(f"the example's batch ({example.shape[0]}) is larger than max_batch "
                         f"({max_batch})")
    model.eval()
    model = unwrap_model(model)
    _run_eagerly(model, example)
    path.parent.mkdir(parents=True, exist_ok=True)
    min_batch = 1
    try:
        program = _export(model, example, min_batch=1, max_batch=max_batch)
    except Exception as err:
        if "Constraints violated (batch)" not in str(err) or example.shape[0] < 2:
            raise
        # torch before 2.10 traces some models (chapter 09's serving model: uint8 NHWC images
        # permuted, then convolutions and pooling) with a guard "batch > 1" and then refuses a
        # batch declared from 1. The graph is the same for every batch, so declare it from 2:
        # the file still takes a batch of 1 (verify_onnx checks that).
        min_batch = 2
        program = _export(model, example, min_batch=2, max_batch=max_batch)
    program.save(str(path))
    fixed = _fixed_batch(program)
    narrowed = None if fixed is not None else _batch_range(program)
    if fixed is not None:
        warnings.warn(
            f"the batch was declared dynamic, but the exported file fixes it to {fixed}: the "
            "model's code ties the batch to the example's size (a literal batch in view, "
            "reshape or expand; int(x.shape[0]) ...), so the file accepts only that batch size",
            UserWarning, stacklevel=2)
    elif narrowed is not None and (narrowed[0] > min_batch or narrowed[1] < max_batch):
        narrowed = (max(narrowed[0], min_batch), min(narrowed[1], max_batch))
        warnings.warn(
            f"the batch was declared dynamic from {min_batch} to {max_batch}, but the exporter "
            f"narrowed it to [{narrowed[0]}, {narrowed[1]}]: torch.export refused the declared "
            "range (the model's code decides on the batch size, e.g. `if x.shape[0] > 16`) and "
            "the exporter applied its suggested fix. The ONNX file cannot carry that bound: it "
            "accepts every batch size, and runs the path traced for the example on all of them",
            UserWarning, stacklevel=2)
    return path


def _batch_range(program) -> tuple[int, int] | None:
    """(lower, upper) bound that the exported program keeps for the first input's batch, from
    its ``range_constraints``; None when the batch is not a symbol or the program is absent."""
    exported = getattr(program, "exported_program", None)
    if exported is None:
        return None
    name = exported.graph_signature.user_inputs[0]
    node = next((n for n in exported.graph.nodes if n.op == "placeholder" and n.name == name),
                None)
    value = None if node is None else node.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.ndim < 1:
        return None
    size = value.shape[0]
    if not isinstance(size, torch.SymInt):
        return None
    bounds = exported.range_constraints.get(size.node.expr)
    if bounds is None:
        return None
    try:
        return int(bounds.lower), int(bounds.upper)
    except (TypeError, ValueError, OverflowError):  # an unbounded side (sympy's oo)
        upper = bounds.upper
        return int(bounds.lower), (2**63 - 1 if not upper.is_finite else int(upper))


def _fixed_batch(program) -> int | None:
    """The first input's batch size if the ONNX file fixes it, else None (symbolic)."""
    dim = program.model_proto.graph.input[0].type.tensor_type.shape.dim[0]
    return dim.dim_value if dim.HasField("dim_value") else None


def _export(model: nn.Module, example: torch.Tensor, *, min_batch: int, max_batch: int):
    """``torch.onnx.export`` with a dynamic first dimension, its progress messages hidden (its
    warnings are not)."""
    batch = torch.export.Dim("batch", min=min_batch, max=max_batch)
    # torch._guards logs a traceback before the refusal that export_onnx retries
    with contextlib.redirect_stdout(io.StringIO()), quiet_logger("torch._guards"):
        return torch.onnx.export(model, (example,), dynamo=True, external_data=False,
                                 dynamic_shapes={_first_argument_name(model): {0: batch}},
                                 verbose=False)


def _run_eagerly(model: nn.Module, example: torch.Tensor) -> None:
    """Run ``model`` on ``example`` without a graph; a failure becomes a ``ValueError`` that
    names the example's shape and dtype (the exporter would trace past some of them)."""
    try:
        with torch.no_grad():
            model(example)
    except Exception as err:
        detail = (str(err).strip() or type(err).__name__).splitlines()[0]
        raise ValueError(
            f"the model fails on the example (shape {tuple(example.shape)}, dtype "
            f"{example.dtype}) in eager mode, so its export would be wrong or fail later: "
            f"{type(err).__name__}: {detail}") from err


def _first_argument_name(model: nn.Module) -> str:
    import inspect

    params = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params:
        raise TypeError("model.forward must take the input tensor as its first argument")
    return params[0].name


def onnx_session(path: str | Path):
    """An onnxruntime CPU session for ``path``, with a clear error if onnxruntime is missing."""
    try:
        import onnxruntime
    except ImportError as err:
        raise ImportError("verifying an ONNX file needs onnxruntime: pip install onnxruntime") \
            from err
    path = require_path("path", path)
    if not path.is_file():
        raise FileNotFoundError(f"no ONNX file at {path}")
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _on_cuda(model: nn.Module, inputs: Sequence[torch.Tensor]) -> bool:
    """Whether the model's parameters or buffers, or any input, are on a CUDA device."""
    tensors = itertools.chain(model.parameters(), model.buffers(), inputs)
    return any(t.device.type == "cuda" for t in tensors)


FULL_FLOAT32_SETTINGS = ("cuda.matmul", "cudnn.conv", "cudnn.rnn")


@contextlib.contextmanager
def full_float32(active: bool = True) -> Iterator[None]:
    """Inside: float32 matrix products, cuDNN convolutions and RNNs in full float32 (``"ieee"``),
    not TF32, which cuDNN convolutions may use by default (chapter 07, C84); each setting is
    put back afterwards. Set with the ``fp32_precision`` API alone (torch 2.9 on), since mixing
    it with the older ``allow_tf32`` flags makes torch raise. ``active=False`` changes nothing."""
    settings = []
    if active:
        for name in FULL_FLOAT32_SETTINGS:
            owner = torch.backends
            for part in name.split("."):
                owner = getattr(owner, part, None)
            if owner is not None and hasattr(owner, "fp32_precision"):
                settings.append((owner, owner.fp32_precision))
    try:
        for owner, _ in settings:
            owner.fp32_precision = "ieee"
        yield
    finally:
        for owner, before in reversed(settings):
            owner.fp32_precision = before


def verify_onnx(
    path: str | Path, model: nn.Module, inputs: Sequence[torch.Tensor], atol: float = 1e-4
) -> list[dict[str, float]]:
    """Run each input through onnxruntime and the PyTorch model; one row per input with its
    batch size, the max abs error and whether it is within ``atol``.

    The model runs in eval mode, and every module's mode is put back afterwards. A model on a
    GPU computes its reference in full float32 (:func:`full_float32`): TF32, which cuDNN
    convolutions may use by default, is about 1e-3 off float32, more than ``atol``'s default.
    A model wrapped by ``torch.compile``, ``nn.DataParallel`` or DDP runs as the module inside.

    An input whose shape the ONNX file does not accept raises ``ValueError`` naming both shapes;
    so do outputs of different shapes (broadcasting them would report a meaningless error),
    and so does an empty ``inputs`` (nothing verified is not verified).
    """
    require_instance("model", model, nn.Module)
    if isinstance(inputs, torch.Tensor):
        raise TypeError("inputs must be a list of input batches; wrap a single batch x as [x]")
    inputs = list(require_iterable("inputs", inputs))
    if not inputs:
        raise ValueError("inputs is empty: pass at least one input tensor to verify against")
    for i, x in enumerate(inputs):
        require_instance(f"inputs[{i}]", x, torch.Tensor)
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not atol >= 0:
        raise ValueError(f"atol must be a non-negative number, got {atol!r}")
    session = onnx_session(path)
    declared = session.get_inputs()[0]
    model = unwrap_model(model)
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        with full_float32(_on_cuda(model, inputs)):
            return _compare(session, declared, model, inputs, atol)
    finally:
        for module, training in modes:
            module.training = training


def _compare(session, declared, model: nn.Module, inputs: list[torch.Tensor],
             atol: float) -> list[dict[str, float]]:
    """The rows of :func:`verify_onnx`, for a model already in eval mode."""
    rows = []
    for x in inputs:
        if len(declared.shape) != x.ndim or any(
            isinstance(d, int) and d != s for d, s in zip(declared.shape, x.shape, strict=True)
        ):
            raise ValueError(f"input of shape {tuple(x.shape)} does not fit the ONNX input "
                             f"{declared.name!r} of shape {declared.shape}")
        (got,) = session.run(None, {declared.name: x.cpu().numpy()})
        with torch.no_grad():
            expected = model(x).cpu()
        if tuple(got.shape) != tuple(expected.shape):
            raise ValueError(f"for an input of shape {tuple(x.shape)} the ONNX output has shape "
                             f"{tuple(got.shape)} but the model's has shape "
                             f"{tuple(expected.shape)}: not the same model")
        error = (torch.from_numpy(got) - expected).abs().max().item()
        rows.append({"batch": x.shape[0], "max_abs_error": error, "ok": error <= atol})
    return rows
