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
    assert (tmp_path / "summary.json").exists()


def test_a_failing_rank_fails_the_job(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", "-m", "helpers.ddp_train", "--out", str(tmp_path),
               "--crash-rank", "1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "failing on purpose" in result.stdout + result.stderr
    assert not (tmp_path / "summary.json").exists()
