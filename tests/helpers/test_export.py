import builtins
import warnings

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


def test_fixed_batch_model_exports_with_a_fixed_batch_and_a_warning(tmp_path):
    # the exporter itself is silent: it applies torch.export's suggested fix (batch = 4)
    with pytest.warns(UserWarning, match=r"declared dynamic, but the exported file fixes it "
                                         r"to 4"):
        path = export_onnx(FixedBatch(), torch.randn(4, 3, 2, 2), tmp_path / "fixed.onnx")
    assert onnx_session(path).get_inputs()[0].shape[0] == 4
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


class WithNorm(Flat):
    def __init__(self):
        super().__init__()
        self.norm, self.dropout = nn.BatchNorm1d(12), nn.Dropout(0.5)

    def forward(self, images):
        return self.linear(self.dropout(self.norm(images.flatten(1))))


def test_export_is_in_eval_mode_and_leaves_the_running_statistics_alone(tmp_path):
    model = WithNorm().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    path = export_onnx(model, torch.randn(4, 3, 2, 2) * 5 + 3, tmp_path / "n.onnx")
    assert not model.training
    for key, value in model.state_dict().items():  # a train-mode forward would update them
        assert torch.equal(value, before[key]), key
    x = torch.randn(8, 3, 2, 2) * 5 + 3
    session = onnx_session(path)
    (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        expected = model(x)  # dropout off, BatchNorm on its running statistics
    assert torch.allclose(torch.from_numpy(got), expected, atol=1e-4)


def test_an_example_the_model_cannot_take_fails_before_export(tmp_path):
    # before: a file was written for an int64 example into a float model; onnxruntime failed
    # only when it was used
    with pytest.raises(ValueError, match=r"fails on the example \(shape \(4, 3, 2, 2\), dtype "
                                         r"torch.int64\) in eager mode"):
        export_onnx(Flat(), torch.ones(4, 3, 2, 2, dtype=torch.int64), tmp_path / "i.onnx")
    assert not (tmp_path / "i.onnx").exists()


def test_verify_refuses_no_inputs(exported):
    model, path = exported
    with pytest.raises(ValueError, match="inputs is empty"):
        verify_onnx(path, model, [])  # before: [], which ship() counted as verified


def test_verify_refuses_outputs_of_different_shapes(exported):
    _, path = exported  # outputs (N, 3)

    class OneOutput(Flat):
        def forward(self, images):
            return self.linear(images.flatten(1))[:, :1]  # (N, 1): broadcast, it "erred" 1.6

    with pytest.raises(ValueError, match=r"ONNX output has shape \(2, 3\) but the model's has "
                                         r"shape \(2, 1\)"):
        verify_onnx(path, OneOutput(), [torch.randn(2, 3, 2, 2)])


def test_a_batch_guard_of_older_torch_is_met_by_declaring_the_batch_from_2(tmp_path,
                                                                            monkeypatch):
    """torch < 2.10 refuses a batch declared from 1 for some models ("Constraints violated
    (batch)"); the export is retried from 2, and only for that error."""
    from helpers import export as export_module

    real, calls = export_module._export, []

    def older_torch(model, example, *, min_batch, max_batch):
        calls.append(min_batch)
        if min_batch == 1:
            raise RuntimeError("Constraints violated (batch)! For more information, ...")
        return real(model, example, min_batch=min_batch, max_batch=max_batch)

    monkeypatch.setattr(export_module, "_export", older_torch)
    model = nn.Sequential(nn.Linear(4, 3)).eval()
    path = export_onnx(model, torch.randn(5, 4), tmp_path / "m.onnx")
    assert calls == [1, 2]
    assert all(r["ok"] for r in verify_onnx(path, model, [torch.randn(1, 4), torch.randn(9, 4)]))

    def broken(model, example, *, min_batch, max_batch):
        raise RuntimeError("some other export failure")

    monkeypatch.setattr(export_module, "_export", broken)
    with pytest.raises(RuntimeError, match="some other export failure"):
        export_onnx(model, torch.randn(5, 4), tmp_path / "n.onnx")


def test_a_dynamic_export_warns_nothing_and_the_exporters_warnings_reach_the_caller(
        tmp_path, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the export
        export_onnx(Flat(), torch.randn(4, 3, 2, 2), tmp_path / "quiet.onnx")
    real = torch.onnx.export

    def exporter_that_warns(*args, **kwargs):
        warnings.warn("a note from the exporter", FutureWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", exporter_that_warns)
    with pytest.warns(FutureWarning, match="a note from the exporter"):  # before: silenced
        export_onnx(Flat(), torch.randn(4, 3, 2, 2), tmp_path / "loud.onnx")


class BranchOnBatch(Flat):
    def forward(self, images):
        y = self.linear(images.flatten(1))
        if images.shape[0] > 16:  # torch.export refuses batch <= 4096; the exporter narrows it
            return y * 0.5
        return y


def test_a_narrowed_batch_range_is_reported(tmp_path):
    # before: the exporter narrowed the range to [.., 16] without a word, the file took a batch
    # of 32 and gave the outputs of the small-batch path
    with pytest.warns(UserWarning, match=r"declared dynamic from 1 to 4096, but the exporter "
                                         r"narrowed it to \[\d+, 16\]"):
        path = export_onnx(BranchOnBatch(), torch.randn(4, 3, 2, 2), tmp_path / "b.onnx")
    assert isinstance(onnx_session(path).get_inputs()[0].shape[0], str)  # still symbolic


def test_batch_range_reads_the_exported_programs_constraints(tmp_path):
    from helpers import export as export_module

    program = export_module._export(Flat().eval(), torch.randn(4, 3, 2, 2), min_batch=1,
                                    max_batch=99)
    low, high = export_module._batch_range(program)
    assert low <= 1 and high == 99
    program = export_module._export(BranchOnBatch().eval(), torch.randn(4, 3, 2, 2), min_batch=1,
                                    max_batch=16)
    assert export_module._batch_range(program)[1] == 16  # declared within the guard: no fix

    class NoProgram:
        exported_program = None

    assert export_module._batch_range(NoProgram()) is None


# ------------------------------------------------- wrapped models, modes and TF32 (review)

@pytest.mark.parametrize("wrap", ["compile", "DataParallel", "DataParallel(compile)"])
def test_a_wrapped_model_exports_and_verifies_as_the_module_inside(tmp_path, wrap):
    model = Flat()
    wrapped = {"compile": lambda m: torch.compile(m, backend="eager"),
               "DataParallel": nn.DataParallel,  # runs the module itself without GPUs
               "DataParallel(compile)": lambda m: nn.DataParallel(torch.compile(m))}[wrap](model)
    path = export_onnx(wrapped, torch.randn(4, 3, 2, 2), tmp_path / "w.onnx")
    assert not model.training and not wrapped.training
    rows = verify_onnx(path, wrapped, [torch.randn(b, 3, 2, 2) for b in (1, 5)])
    assert all(r["ok"] and r["max_abs_error"] < 1e-5 for r in rows)


def test_verify_puts_every_modules_mode_back(exported):
    model, path = exported
    for training in (True, False):
        model.train(training)
        verify_onnx(path, model, [torch.randn(2, 3, 2, 2)])
        assert model.training is training and model.linear.training is training
    mixed = WithNorm().train()
    mixed.norm.eval()  # a frozen BatchNorm in a model that trains
    seen = []
    mixed.register_forward_pre_hook(lambda m, args: seen.append(
        [x.training for x in m.modules()]))
    mixed_path = export_onnx(mixed, torch.randn(4, 3, 2, 2), path.parent / "mixed.onnx")
    mixed.train()
    mixed.norm.eval()
    seen.clear()
    verify_onnx(mixed_path, mixed, [torch.randn(2, 3, 2, 2)])
    assert seen == [[False] * 4]  # the reference ran in eval mode
    assert [x.training for x in mixed.modules()] == [True, True, False, True]


def precision_settings():
    return (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision,
            torch.backends.cudnn.rnn.fp32_precision)


def test_a_cuda_reference_is_computed_without_tf32_and_the_settings_are_put_back(
        exported, monkeypatch):
    """cuDNN convolutions may use TF32 by default (chapter 07, C84), about 1e-3 off float32: a
    GPU model's reference runs in full float32 (the settings are flags: a CPU shows them)."""
    from helpers import export

    model, path = exported
    seen = []
    handle = model.register_forward_pre_hook(lambda m, args: seen.append(precision_settings()))
    before = precision_settings()
    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    matmul.fp32_precision, conv.fp32_precision = "tf32", "tf32"  # TF32 allowed: both
    try:
        allowed = precision_settings()
        monkeypatch.setattr(export, "_on_cuda", lambda model, inputs: True)
        verify_onnx(path, model, [torch.randn(2, 3, 2, 2)])
        assert seen == [("ieee", "ieee", "ieee")] and precision_settings() == allowed
        monkeypatch.setattr(export, "_on_cuda", lambda model, inputs: False)  # a CPU model
        verify_onnx(path, model, [torch.randn(2, 3, 2, 2)])
        assert seen[1] == allowed
    finally:
        handle.remove()
        matmul.fp32_precision, conv.fp32_precision = before[:2]
    assert precision_settings() == before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_convolution_on_the_gpu_verifies_within_float32s_tolerance(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 5), nn.Conv2d(64, 64, 5), nn.Flatten()).cuda()
    x = torch.randn(4, 3, 32, 32, device="cuda")
    path = export_onnx(model, x, tmp_path / "conv.onnx")
    [row] = verify_onnx(path, model, [x])
    assert row["ok"], row
