import json
import math
import subprocess
import sys

import torch


def test_two_rank_run_keeps_replicas_identical(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", "-m", "helpers.ddp_train", "--out", str(tmp_path),
               "--epochs", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    first = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert not set(first[0]["indices"].tolist()) & set(first[1]["indices"].tolist())
    finals = [torch.load(tmp_path / f"final{r}.pt") for r in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(*finals, strict=True))
    summary = json.loads((tmp_path / "summary.json").read_text())
    losses = summary["loss_per_step"]  # one loss per step, averaged over the ranks
    assert len(losses) == summary["steps"] and all(math.isfinite(v) for v in losses)
    assert losses[0] == (first[0]["loss"] + first[1]["loss"]) / 2
    assert losses[-1] < losses[0]  # it trained


def test_a_failing_rank_fails_the_job(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", "-m", "helpers.ddp_train", "--out", str(tmp_path),
               "--crash-rank", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "failing on purpose" in result.stdout + result.stderr
    assert not (tmp_path / "summary.json").exists()
