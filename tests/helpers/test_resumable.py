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


def test_final_json_records_what_each_step_used(tmp_path):
    """The learning rate and beta1 read from param_groups before each step: a resume without
    the optimizer state starts at OneCycleLR's first values, not where the schedule was."""
    train(tmp_path / "a", steps=12, every=4, print_steps=False)
    train(tmp_path / "b", steps=12, every=4, stop_after=6, print_steps=False)
    train(tmp_path / "b", steps=12, every=4, load_optimizer=False, print_steps=False)
    straight = json.loads((tmp_path / "a" / "final.json").read_text())
    resumed = json.loads((tmp_path / "b" / "final.json").read_text())
    assert straight["steps_run"] == list(range(1, 13))
    assert resumed["steps_run"] == list(range(5, 13))
    assert abs(straight["lr"][0] - 1e-2 / 25) < 1e-12  # OneCycleLR's start: max_lr / 25
    assert (resumed["lr"][0], resumed["beta1"][0]) == (straight["lr"][0], straight["beta1"][0])
    assert (straight["lr"][4], straight["beta1"][4]) != (resumed["lr"][0], resumed["beta1"][0])
    assert resumed["lr"][1:] == straight["lr"][5:]  # the scheduler sets them again from step 6
    assert "skipped" not in straight


def test_float16_final_json_records_the_skipped_steps(tmp_path):
    train(tmp_path / "a", steps=30, every=10, float16=True, print_steps=False)
    final = json.loads((tmp_path / "a" / "final.json").read_text())
    assert final["skipped"] and set(final["skipped"]) <= set(final["steps_run"])
    assert final["scale"] < 2.0**16 * 2 ** (30 // 4)  # each skip halved the scale
