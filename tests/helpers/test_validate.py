"""The shared argument checks (helpers.validate), and the helpers' use of them: flags given as
strings or numbers are refused, never read as truthy; a None or wrongly typed argument is named
in a TypeError/ValueError instead of failing deep inside."""

from dataclasses import dataclass

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers import (
    GradNormRecorder,
    NaNGuard,
    RunLogger,
    SequenceDataset,
    accuracy,
    create_run_dir,
    evaluate,
    export_onnx,
    fit,
    load_checkpoint,
    load_config,
    numerical_grad,
    onnx_session,
    pad_collate,
    read_metrics,
    save_checkpoint,
    save_config,
    start_run,
    train_one_epoch,
    verify_onnx,
)
from helpers.ship import ServingModel, make_classifier, ship
from helpers.validate import (
    require_bool,
    require_callable,
    require_device,
    require_instance,
    require_int,
    require_iterable,
    require_loader,
    require_path,
)


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_passes(value):
    assert require_bool("flag", value) is value


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
def test_anything_else_is_refused_with_the_name(value):
    with pytest.raises(TypeError, match=r"flag must be True or False"):
        require_bool("flag", value)


def test_overwrite_no_keeps_the_run(tmp_path):
    run = create_run_dir(tmp_path, "run1")
    (run / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(TypeError, match="overwrite must be True or False, got 'no'"):
        create_run_dir(tmp_path, "run1", overwrite="no")
    assert (run / "metrics.jsonl").exists()


def test_other_flags_of_the_helpers(tmp_path):
    model = nn.Linear(2, 2)
    loader = DataLoader(TensorDataset(torch.randn(4, 2), torch.tensor([0, 1, 0, 1])),
                        batch_size=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="only_weights"):
        GradNormRecorder(model, only_weights="yes")
    with pytest.raises(TypeError, match="progress"):
        fit(model, loader, None, nn.functional.cross_entropy, opt, epochs=1, progress="no")
    with pytest.raises(TypeError, match="progress"):
        train_one_epoch(model, loader, nn.functional.cross_entropy, opt, progress="no")
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, step=0, epoch=0)
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(TypeError, match="restore_rng"):
        load_checkpoint(path, model=model, restore_rng="no")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


# --- the other shared checks ------------------------------------------------------------------

def test_require_int():
    assert require_int("n", 3, minimum=1) == 3
    for bad in (3.0, "3", True, None):
        with pytest.raises(TypeError, match="n must be an int"):
            require_int("n", bad)
    with pytest.raises(ValueError, match="n must be at least 1, got 0"):
        require_int("n", 0, minimum=1)


def test_require_instance_callable_iterable_and_path(tmp_path):
    model = nn.Linear(1, 1)
    assert require_instance("model", model, nn.Module) is model
    with pytest.raises(TypeError, match="model must be a nn.Module, got NoneType"):
        require_instance("model", None, nn.Module)
    with pytest.raises(TypeError, match="x must be a torch.Tensor or int, got str"):
        require_instance("x", "1", (torch.Tensor, int))
    with pytest.raises(TypeError, match="fn must be callable, got int"):
        require_callable("fn", 3)
    with pytest.raises(TypeError, match="loader must be iterable"):
        require_iterable("loader", None)
    assert require_path("out", str(tmp_path)) == tmp_path
    with pytest.raises(TypeError, match="out must be a path"):
        require_path("out", None)


def test_require_loader_refuses_a_dataset_and_names_the_fix():
    data = TensorDataset(torch.zeros(4, 2), torch.zeros(4))
    loader = DataLoader(data, batch_size=2)
    assert require_loader("loader", loader) is loader
    batches = [(torch.zeros(2, 2), torch.zeros(2))]
    assert require_loader("loader", batches) is batches
    with pytest.raises(TypeError, match=r"train_loader is a TensorDataset, a Dataset: .*"
                                        r"DataLoader\(dataset, batch_size=\.\.\.\)"):
        require_loader("train_loader", data)
    with pytest.raises(TypeError, match="loader must be iterable"):
        require_loader("loader", None)


def test_require_device(monkeypatch):
    assert require_device("device", "cpu") == torch.device("cpu")
    assert require_device("device", torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(TypeError, match="device must be a torch.device or a string"):
        require_device("device", 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no usable CUDA device"):
        require_device("device", "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert require_device("device", "cuda:0") == torch.device("cuda", 0)
    with pytest.raises(ValueError, match=r"only 1 CUDA device\(s\) \(cuda:0 to cuda:0\)"):
        require_device("device", "cuda:1")


# --- None or a wrong type for each argument of the public helpers --------------------------------
# Each call below used to end in an AttributeError/RuntimeError deep inside (or in an error that
# did not name the argument, or in no error at all); now the error names the argument.

@dataclass
class _Config:
    lr: float = 0.1
    seed: int = 0


def _model():
    torch.manual_seed(0)
    return nn.Linear(2, 2)


def _loader():
    return DataLoader(TensorDataset(torch.randn(4, 2), torch.tensor([0, 1, 0, 1])), batch_size=2)


def _train(**changes):
    model = _model()
    args = {"model": model, "loader": _loader(), "loss_fn": nn.functional.cross_entropy,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
    return lambda: train_one_epoch(**{**args, **changes})


def _fit(**changes):
    model = _model()
    args = {"model": model, "train_loader": _loader(), "val_loader": None,
            "loss_fn": nn.functional.cross_entropy,
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1), "epochs": 1,
            "progress": False}
    return lambda: fit(**{**args, **changes})


def _logger(tmp_path):
    return RunLogger(create_run_dir(tmp_path, "run"), tensorboard=False)


WRONG = object()
PROBES = [
    ("accuracy(logits=None)", lambda t: lambda: accuracy(None, torch.tensor([0])), "logits"),
    ("accuracy(targets=[0])", lambda t: lambda: accuracy(torch.ones(1, 2), [0]), "targets"),
    ("pad_collate(None)", lambda t: lambda: pad_collate(None), "batch must be a list"),
    ("pad_collate(sequence=None)", lambda t: lambda: pad_collate([(None, 0)]), "sequence 0"),
    ("pad_collate(label=None)", lambda t: lambda: pad_collate([(torch.ones(2, 3), None)]),
     "label 0"),
    ("SequenceDataset(seed=None)", lambda t: lambda: SequenceDataset(4, seed=None), "seed"),
    ("train_one_epoch(model=None)", lambda t: _train(model=None), "model must be a nn.Module"),
    ("train_one_epoch(loader=None)", lambda t: _train(loader=None), "loader must be iterable"),
    ("train_one_epoch(loss_fn=None)", lambda t: _train(loss_fn=None), "loss_fn must be callable"),
    ("train_one_epoch(optimizer=None)", lambda t: _train(optimizer=None), "optimizer must be"),
    ("train_one_epoch(scheduler=wrong)", lambda t: _train(scheduler=WRONG), "scheduler must be"),
    ("train_one_epoch(history=wrong)", lambda t: _train(history=WRONG), "history must be"),
    ("train_one_epoch(epoch=None)", lambda t: _train(epoch=None), "epoch must be an int"),
    ("train_one_epoch(on_step=wrong)", lambda t: _train(on_step=WRONG), "on_step must be"),
    ("evaluate(model=None)", lambda t: lambda: evaluate(None, _loader(), nn.functional.mse_loss),
     "model must be a nn.Module"),
    ("evaluate(metric=None)", lambda t: lambda: evaluate(_model(), _loader(),
                                                         nn.functional.cross_entropy, None),
     "metric must be callable"),
    ("fit(model=None)", lambda t: _fit(model=None), "model must be a nn.Module"),
    ("fit(optimizer=wrong)", lambda t: _fit(optimizer=WRONG), "optimizer must be"),
    ("fit(val_loader=wrong)", lambda t: _fit(val_loader=WRONG), "val_loader must be iterable"),
    ("numerical_grad(dtype=wrong)",
     lambda t: lambda: numerical_grad(lambda x: x.sum(), torch.ones(2), dtype=WRONG),
     "dtype must be a torch.dtype"),
    ("numerical_grad(fn=None)", lambda t: lambda: numerical_grad(None, torch.ones(2)),
     "fn must be callable"),
    ("export_onnx(path=None)", lambda t: lambda: export_onnx(_model(), torch.ones(2, 2), None),
     "path must be a path"),
    ("export_onnx(max_batch=None)",
     lambda t: lambda: export_onnx(_model(), torch.ones(2, 2), t / "m.onnx", max_batch=None),
     "max_batch must be an int"),
    ("export_onnx(max_batch=1)",
     lambda t: lambda: export_onnx(_model(), torch.ones(2, 2), t / "m.onnx", max_batch=1),
     "max_batch must be at least 2"),
    ("export_onnx(example batch > max_batch)",
     lambda t: lambda: export_onnx(_model(), torch.ones(8, 2), t / "m.onnx", max_batch=4),
     r"example's batch \(8\) is larger than max_batch \(4\)"),
    ("onnx_session(None)", lambda t: lambda: onnx_session(None), "path must be a path"),
    ("verify_onnx(model=None)", lambda t: lambda: verify_onnx(t / "m.onnx", None, []),
     "model must be a nn.Module"),
    ("verify_onnx(inputs=[None])",
     lambda t: lambda: verify_onnx(t / "m.onnx", _model(), [None]), r"inputs\[0\] must be"),
    ("verify_onnx(inputs=tensor)",
     lambda t: lambda: verify_onnx(t / "m.onnx", _model(), torch.ones(3, 2)),
     r"wrap a single batch x as \[x\]"),
    ("verify_onnx(atol=None)",
     lambda t: lambda: verify_onnx(t / "m.onnx", _model(), [torch.ones(1, 2)], atol=None),
     "atol must be"),
    ("save_config(path=None)", lambda t: lambda: save_config(_Config(), None),
     "path must be a path"),
    ("load_config(path=None)", lambda t: lambda: load_config(_Config, None),
     "path must be a path"),
    ("create_run_dir(overwrite=None)", lambda t: lambda: create_run_dir(t, "x", overwrite=None),
     "overwrite must be True or False"),
    ("create_run_dir(root=None)", lambda t: lambda: create_run_dir(None, "x"),
     "root must be a path"),
    ("start_run(overwrite=None)",
     lambda t: lambda: start_run(t, "x", _Config(), overwrite=None, tensorboard=False),
     "overwrite must be True or False"),
    ("RunLogger(run_dir=None)", lambda t: lambda: RunLogger(None), "run_dir must be a path"),
    ("RunLogger(tensorboard='no')",
     lambda t: lambda: RunLogger(create_run_dir(t, "r"), tensorboard="no"),
     "tensorboard must be True or False"),
    ("RunLogger.log(loss=None)", lambda t: lambda: _logger(t).log(0, loss=None),
     "scalar 'loss' must be a number"),
    ("RunLogger.on_step(None)", lambda t: lambda: _logger(t).on_step(None),
     "info must be a StepInfo"),
    ("read_metrics(None)", lambda t: lambda: read_metrics(None), "run_dir must be a path"),
    ("ServingModel(classifier=None)",
     lambda t: lambda: ServingModel(None, torch.zeros(3), torch.ones(3)), "classifier must be"),
    ("ServingModel(mean=None)",
     lambda t: lambda: ServingModel(make_classifier(), None, torch.ones(3)), "mean must be"),
    ("ServingModel(std=(1, 3))",
     lambda t: lambda: ServingModel(make_classifier(), torch.zeros(3), torch.ones(1)),
     "std must hold one value per RGB channel"),
    ("ship(out=None)", lambda t: lambda: ship(None), "out must be a path"),
    ("NaNGuard()(None)", lambda t: lambda: NaNGuard()(None), "info must be a StepInfo"),
    ("GradNormRecorder()(wrong)", lambda t: lambda: GradNormRecorder(_model())(WRONG),
     "info must be a StepInfo"),
]


@pytest.mark.parametrize("make_call, message", [pytest.param(make, msg, id=name)
                                                for name, make, msg in PROBES])
def test_a_wrong_argument_is_named_in_a_type_or_value_error(tmp_path, make_call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make_call(tmp_path)()
