"""One command from training to a verified, benchmarked ONNX file (chapter 09).

``python -m helpers.ship --out DIR`` trains the chapter's colour classifier, wraps it with
its preprocessing, exports it to ``DIR/model.onnx`` with a dynamic batch, checks the ONNX
outputs against PyTorch on a fixed set of inputs, measures latency of both, prints the table
and writes ``DIR/report.json``. It exits with status 1 if the verification fails, so it can
gate a release. Measure latency again on the machine that will serve the model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .data import COLOR_NAMES, make_color_images
from .export import export_onnx, onnx_session, verify_onnx
from .measure import median_time
from .seed import set_seed
from .train import fit
from .validate import require_instance, require_int, require_path

ATOL = 1e-4


class ServingModel(nn.Module):
    """What the service calls: uint8 images (N, H, W, 3) in RGB, as decoded from files, in;
    logits out. The conversion and the training normalization are part of the model, so
    the serving code cannot forget or reorder them (chapter 09, C30)."""

    def __init__(self, classifier: nn.Module, mean: torch.Tensor, std: torch.Tensor) -> None:
        super().__init__()
        require_instance("classifier", classifier, nn.Module)
        for name, value in (("mean", mean), ("std", std)):
            require_instance(name, value, torch.Tensor)
            if value.numel() != 3:
                raise ValueError(f"{name} must hold one value per RGB channel (3), got shape "
                                 f"{tuple(value.shape)}")
        self.classifier = classifier
        self.register_buffer("mean", mean.reshape(1, 3, 1, 1).float())
        self.register_buffer("std", std.reshape(1, 3, 1, 1).float())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float() / 255.0
        return self.classifier((x - self.mean) / self.std)


def make_classifier() -> nn.Module:
    """The small CNN of chapter 02, for 16×16 colour images and 4 classes."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(32, len(COLOR_NAMES)))


def train_serving_model(epochs: int = 3, seed: int = 0) -> tuple[ServingModel, float]:
    """Train on generated images; return the wrapped model and its validation accuracy."""
    set_seed(seed)
    train_images, train_labels = make_color_images(2000, seed=seed)
    val_images, val_labels = make_color_images(500, seed=seed + 1)
    pixels = train_images.permute(0, 3, 1, 2).float() / 255.0
    mean, std = pixels.mean(dim=(0, 2, 3)), pixels.std(dim=(0, 2, 3))
    model = ServingModel(make_classifier(), mean, std)
    loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    fit(model, loader, None, nn.functional.cross_entropy,
        torch.optim.Adam(model.parameters(), lr=3e-3), epochs=epochs, progress=False)
    model.eval()
    with torch.no_grad():
        accuracy = (model(val_images).argmax(1) == val_labels).float().mean().item()
    return model, accuracy


def fixed_inputs(seed: int = 123) -> list[torch.Tensor]:
    """The verification set: the same images every time, at several batch sizes."""
    images, _ = make_color_images(300, seed=seed)
    return [images[:1], images[1:8], images[8:72], images[72:300]]


def ship(out: Path, epochs: int = 3) -> dict:
    """Train, export, verify and time the serving model; write and return the report."""
    out = require_path("out", out)
    require_int("epochs", epochs, minimum=1)
    out.mkdir(parents=True, exist_ok=True)
    model, accuracy = train_serving_model(epochs)
    torch.save(model.state_dict(), out / "model.pt")
    path = export_onnx(model, fixed_inputs()[1], out / "model.onnx")
    rows = verify_onnx(path, model, fixed_inputs(), atol=ATOL)
    session = onnx_session(path)
    name = session.get_inputs()[0].name
    latency = {}
    for batch in (1, 64):
        x = make_color_images(batch, seed=7)[0]
        with torch.inference_mode():
            latency[f"eager b={batch}"] = median_time(lambda x=x: model(x), min_run_time=0.1)
        latency[f"onnx b={batch}"] = median_time(
            lambda x=x: session.run(None, {name: x.numpy()}), min_run_time=0.1)
    report = {"val_accuracy": accuracy, "verification": rows,
              "verified": all(r["ok"] for r in rows), "latency_ms":
              {k: round(v * 1000, 3) for k, v in latency.items()}, "atol": ATOL}
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be positive")
    report = ship(args.out, args.epochs)
    print(f"trained: validation accuracy {report['val_accuracy']:.1%}")
    print(f"{'batch':>6} {'max abs error':>14}  within {ATOL:g}")
    for row in report["verification"]:
        print(f"{row['batch']:>6} {row['max_abs_error']:>14.2e}  {row['ok']}")
    for key, ms in report["latency_ms"].items():
        print(f"latency {key:<12} {ms:8.3f} ms (median, this machine)")
    print("VERIFIED" if report["verified"] else "VERIFICATION FAILED")
    return 0 if report["verified"] else 1


if __name__ == "__main__":
    sys.exit(main())
