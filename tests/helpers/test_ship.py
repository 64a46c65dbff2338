import json
import subprocess
import sys

import torch

from helpers.ship import ServingModel, fixed_inputs, make_classifier


def test_serving_model_equals_preprocess_then_classifier():
    torch.manual_seed(0)
    classifier = make_classifier().eval()
    mean, std = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.5, 0.4, 0.3])
    serving = ServingModel(classifier, mean, std).eval()
    images = fixed_inputs()[1]
    by_hand = (images.permute(0, 3, 1, 2).float() / 255 - mean[:, None, None]) / std[:, None, None]
    assert torch.allclose(serving(images), classifier(by_hand), atol=1e-6)


def test_ship_command_verifies_and_reports(tmp_path):
    result = subprocess.run([sys.executable, "-m", "helpers.ship", "--out", str(tmp_path),
                             "--epochs", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "VERIFIED" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verified"] and len(report["verification"]) == 4
    assert set(report["latency_ms"]) == {"eager b=1", "onnx b=1", "eager b=64", "onnx b=64"}
    assert (tmp_path / "model.onnx").exists()


def test_ship_command_rejects_bad_epochs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "helpers.ship", "--out", str(tmp_path),
                             "--epochs", "0"], capture_output=True, text=True)
    assert result.returncode != 0 and "must be positive" in result.stderr
