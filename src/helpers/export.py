"""Export to ONNX with a dynamic batch, and verify the file against PyTorch (chapter 08)."""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn


def export_onnx(
    model: nn.Module, example: torch.Tensor, path: str | Path, *, max_batch: int = 4096
) -> Path:
    """Export ``model`` (one tensor in, one out) to a single ONNX file with a dynamic batch.

    Uses the current exporter (``torch.onnx.export(..., dynamo=True)``) with the first
    dimension of the input declared dynamic. The model is put in eval mode first. The
    exporter's progress messages are kept off the page; its errors are not.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(example, torch.Tensor) or example.ndim < 1:
        raise TypeError("example must be a tensor with a batch dimension")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model.eval()
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    arg_name = _first_argument_name(model)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (example,), dynamo=True, external_data=False,
                                    dynamic_shapes={arg_name: {0: batch}}, verbose=False)
    program.save(str(path))
    return path


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
    if not Path(path).is_file():
        raise FileNotFoundError(f"no ONNX file at {path}")
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def verify_onnx(
    path: str | Path, model: nn.Module, inputs: Sequence[torch.Tensor], atol: float = 1e-4
) -> list[dict[str, float]]:
    """Run each input through onnxruntime and the PyTorch model; one row per input with its
    batch size, the max abs error and whether it is within ``atol``.

    An input whose shape the ONNX file does not accept raises ``ValueError`` naming both shapes.
    """
    session = onnx_session(path)
    declared = session.get_inputs()[0]
    model.eval()
    rows = []
    for x in inputs:
        if len(declared.shape) != x.ndim or any(
            isinstance(d, int) and d != s for d, s in zip(declared.shape, x.shape, strict=True)
        ):
            raise ValueError(f"input of shape {tuple(x.shape)} does not fit the ONNX input "
                             f"{declared.name!r} of shape {declared.shape}")
        (got,) = session.run(None, {declared.name: x.cpu().numpy()})
        with torch.no_grad():
            expected = model(x)
        error = (torch.from_numpy(got) - expected.cpu()).abs().max().item()
        rows.append({"batch": x.shape[0], "max_abs_error": error, "ok": error <= atol})
    return rows
