import builtins

import pytest
import torch
from torch import nn

from helpers import export_onnx, onnx_session, verify_onnx


class Flat(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(12, 3)

    def forward(self, images):
        return self.linear(images.flatten(1))


class FixedBatch(Flat):
    def forward(self, images):
        return self.linear(images.view(4, -1))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = Flat()
    path = export_onnx(model, torch.randn(4, 3, 2, 2), tmp_path_factory.mktemp("x") / "m.onnx")
    return model, path


def test_export_is_one_file_with_a_dynamic_batch(exported):
    _, path = exported
    assert [p.name for p in path.parent.iterdir()] == ["m.onnx"]
    shape = onnx_session(path).get_inputs()[0].shape
    assert isinstance(shape[0], str) and shape[1:] == [3, 2, 2]


def test_verify_reports_errors_per_batch(exported):
    model, path = exported
    rows = verify_onnx(path, model, [torch.randn(b, 3, 2, 2) for b in (1, 4, 33)])
    assert [r["batch"] for r in rows] == [1, 4, 33]
    assert all(r["ok"] and r["max_abs_error"] < 1e-5 for r in rows)


def test_verify_detects_a_different_model(exported):
    _, path = exported
    other = Flat()
    with torch.no_grad():
        other.linear.bias += 1.0
    [row] = verify_onnx(path, other, [torch.randn(2, 3, 2, 2)])
    assert not row["ok"] and row["max_abs_error"] == pytest.approx(1.0, abs=1e-5)


def test_wrong_input_shape_is_a_clear_error(exported):
    model, path = exported
    with pytest.raises(ValueError, match=r"does not fit the ONNX input 'images'"):
        verify_onnx(path, model, [torch.randn(2, 3, 5, 5)])


def test_fixed_batch_model_exports_with_a_fixed_batch(tmp_path):
    path = export_onnx(FixedBatch(), torch.randn(4, 3, 2, 2), tmp_path / "fixed.onnx")
    assert onnx_session(path).get_inputs()[0].shape[0] == 4  # specialised, silently
    with pytest.raises(ValueError, match="does not fit"):
        verify_onnx(path, FixedBatch(), [torch.randn(2, 3, 2, 2)])


def test_missing_onnxruntime_and_file(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="no ONNX file"):
        onnx_session(tmp_path / "none.onnx")
    real_import = builtins.__import__

    def no_ort(name, *args, **kwargs):
        if name == "onnxruntime":
            raise ImportError("no module")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        onnx_session(tmp_path / "none.onnx")


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="nn.Module"):
        export_onnx(lambda x: x, torch.ones(1), tmp_path / "a.onnx")
    with pytest.raises(TypeError, match="batch dimension"):
        export_onnx(Flat(), torch.tensor(1.0), tmp_path / "a.onnx")
