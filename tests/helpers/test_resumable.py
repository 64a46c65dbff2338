import json
import subprocess
import sys

from helpers import fingerprint
from helpers.resumable import train


def test_stop_and_resume_equals_straight_run(tmp_path):
    straight = train(tmp_path / "a", steps=30, every=10)
    train(tmp_path / "b", steps=30, every=10, stop_after=17)
    resumed = train(tmp_path / "b", steps=30, every=10)
    assert fingerprint(resumed) == fingerprint(straight)
    assert json.loads((tmp_path / "b" / "final.json").read_text())["resumed_from"] == 10


def test_resume_without_optimizer_state_differs(tmp_path):
    straight = train(tmp_path / "a", steps=30, every=10)
    train(tmp_path / "c", steps=30, every=10, stop_after=20)
    fresh_optimizer = train(tmp_path / "c", steps=30, every=10, load_optimizer=False)
    assert fingerprint(fresh_optimizer) != fingerprint(straight)


def test_command_line_rejects_bad_arguments(tmp_path):
    result = subprocess.run([sys.executable, "-m", "helpers.resumable", "--out", str(tmp_path),
                             "--steps", "0"], capture_output=True, text=True)
    assert result.returncode != 0 and "must be positive" in result.stderr


def test_float16_resume_needs_the_scaler_state(tmp_path):
    straight = train(tmp_path / "a", steps=30, every=10, float16=True, print_steps=False)
    train(tmp_path / "b", steps=30, every=10, stop_after=17, float16=True, print_steps=False)
    resumed = train(tmp_path / "b", steps=30, every=10, float16=True, print_steps=False)
    train(tmp_path / "c", steps=30, every=10, stop_after=17, float16=True, print_steps=False)
    fresh_scaler = train(tmp_path / "c", steps=30, every=10, float16=True, load_scaler=False,
                         print_steps=False)
    assert fingerprint(resumed) == fingerprint(straight)
    assert fingerprint(fresh_scaler) != fingerprint(straight)
    final = json.loads((tmp_path / "b" / "final.json").read_text())
    assert final["scale"] == json.loads((tmp_path / "a" / "final.json").read_text())["scale"]
