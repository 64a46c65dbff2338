import gc
import time
import weakref

import pytest
import torch
from torch import nn

from helpers import measure_memory, median_time
from helpers.measure import remeasure


def test_saved_bytes_of_an_mlp_match_the_count_by_hand():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 4))
    x = torch.randn(16, 32)
    with measure_memory("cpu", exclude=model.parameters()) as report:
        model(x).sum().backward()
    # saved: x (input of the first Linear), each ReLU output (shared with the next Linear)
    assert report.saved_bytes == (16 * 32 + 16 * 64 + 16 * 64) * 4
    assert report.peak_bytes is None and report.saved_mib == report.saved_bytes / 2**20


def test_parameters_count_unless_excluded_and_no_grad_saves_nothing():
    model = nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)  # so the weight is saved too (for x's grad)
    with measure_memory() as with_params:
        model(x)
    assert with_params.saved_bytes == (4 * 8 + 8 * 8) * 4
    with measure_memory(exclude=model.parameters()) as without_params:
        model(x)
    assert without_params.saved_bytes == 4 * 8 * 4
    with measure_memory() as nothing, torch.no_grad():
        model(x)
    assert nothing.saved_bytes == 0 and nothing.saved_tensors == 0


def test_storages_freed_in_the_block_are_not_merged_with_later_ones_at_their_address():
    """k forward and backward passes in one block save k passes' activations, although each
    backward frees them and the next forward reuses the addresses (the old count keyed on the
    address reported 1.0, 1.0, 2.0 MiB for k = 1, 2, 3)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10))
    one_pass = (128 * 1000 + 128 * 1000) * 4  # the input and the ReLU output
    for k in (1, 2, 3, 4):
        with measure_memory(exclude=model.parameters()) as report:
            for _ in range(k):
                model(torch.randn(128, 1000)).sum().backward()
        assert (report.saved_bytes, report.saved_tensors) == (k * one_pass, 2 * k), k


def test_views_of_one_storage_count_it_once_and_whole():
    """Two saved views of one storage keep that storage alive once: 3.81 MiB, not 5.72 (a
    view counted by its own elements, 1.91 MiB, beside the whole); a saved slice keeps all of
    its storage alive, and is counted so. Views of an excluded tensor are excluded too."""
    y = torch.randn(1000, 1000)
    w = torch.randn(1000, 1000, requires_grad=True)
    with measure_memory(exclude=[w]) as report:
        ((y[:, :500] * w[:, :500]).sum() + (y * w).sum()).backward()
    assert (report.saved_bytes, report.saved_tensors) == (1000 * 1000 * 4, 1)
    with measure_memory(exclude=[w]) as report:
        (y[:10] * w[:10]).sum()  # saves the slice y[:10], which keeps all of y alive
    assert report.saved_bytes == 1000 * 1000 * 4
    model = nn.Linear(8, 8)
    with measure_memory(exclude=model.parameters()) as report:  # Linear saves weight.t()
        model(torch.randn(4, 8, requires_grad=True))
    assert report.saved_bytes == 4 * 8 * 4


def test_a_saved_output_dropped_in_the_block_is_freed():
    """exp saves its own output. Had the pack hook kept that tensor itself rather than a
    detached alias, output -> grad_fn -> saved tensor -> output would be a reference cycle
    that outlives the block (torch/autograd/graph.py: the packed value must not hold the
    input tensor): a forward whose output is dropped would keep its activations forever."""
    x = torch.randn(1000, requires_grad=True)
    with measure_memory() as report:
        y = x.exp()
        saved = weakref.ref(y.untyped_storage())  # the storage exp saved for backward
        del y
    gc.collect()
    assert saved() is None, "the saved output outlived its graph"
    assert report.saved_bytes == 1000 * 4  # counted all the same
    with measure_memory() as report:  # and backward still gets the saved values
        y = x.sigmoid()
        y.sum().backward()
    s = x.detach().sigmoid()
    assert torch.allclose(x.grad, s * (1 - s)) and report.saved_bytes == 1000 * 4


def test_meta_tensors_are_told_apart_though_none_has_an_address():
    """Meta tensors have no memory (their data_ptr is 0): keyed on the storage itself, three
    saved tensors of 100 x 100 float32 count three times 40000 bytes."""
    a = torch.randn(100, 100, device="meta", requires_grad=True)
    with measure_memory("meta") as report:
        (a.exp() * a.sin()).sum()  # saves exp's result, a (for sin) and sin's result
    assert (report.saved_bytes, report.saved_tensors) == (3 * 40000, 3)
    assert report.peak_bytes is None  # off CUDA


def test_exclude_takes_tensors_only():
    with pytest.raises(TypeError, match="each tensor in exclude must be a torch.Tensor, got"):
        with measure_memory(exclude=[nn.Linear(2, 2)]):
            pass


def test_cuda_requested_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a usable CUDA device"):
        with measure_memory("cuda"):
            pass


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_peak():
    with measure_memory("cuda") as report:
        torch.empty(2**20, device="cuda")
    assert report.peak_bytes >= 2**20 * 4


def test_median_time_measures_the_call_after_warmup():
    calls = []

    def fn():
        calls.append(1)
        time.sleep(0.002 if len(calls) > 2 else 0.2)  # two slow warm-up calls

    seconds = median_time(fn, min_run_time=0.05, warmup=2)
    assert 0.0015 < seconds < 0.05, seconds
    assert len(calls) > 3


def test_median_time_keeps_the_thread_count():
    threads = []
    median_time(lambda: threads.append(torch.get_num_threads()), min_run_time=0.01)
    assert set(threads) == {torch.get_num_threads()}


@pytest.mark.parametrize("kwargs", [{"min_run_time": 0}, {"warmup": -1}, {"warmup": 2.5},
                                    {"min_run_time": True}, {"min_run_time": 100}])
def test_median_time_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        median_time(lambda: None, **kwargs)
    with pytest.raises(TypeError, match="callable"):
        median_time(42)


def test_remeasure_stops_at_the_first_result_that_holds_and_prints_every_attempt(capsys):
    results = iter([0.9, 0.95, 1.4, 2.0])
    assert remeasure(lambda: next(results), lambda r: r > 1.2, attempts=3) == 1.4
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and "1/3: 0.9 -> does not hold, measuring again" in out[0]
    assert out[2].endswith("1.4 -> holds")


def test_remeasure_returns_the_last_failure_when_the_claim_is_false(capsys):
    calls = []
    result = remeasure(lambda: calls.append(1) or len(calls), lambda r: r > 10, attempts=2,
                       show=lambda r: f"ratio {r}")
    assert result == 2 and len(calls) == 2
    assert "2/2: ratio 2 -> does not hold (last attempt)" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs", [{"attempts": 0}, {"attempts": True}])
def test_remeasure_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        remeasure(lambda: 1, lambda r: True, **kwargs)
    with pytest.raises(TypeError):
        remeasure(1, lambda r: True)


def test_importing_the_helpers_prints_nothing():
    """torch.utils.benchmark's import logs a CUDA warning on a machine with nvcc and no GPU
    (this one); it must not land in every chapter's first output."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", "import helpers"], capture_output=True,
                            text=True, check=True)
    assert result.stdout == "" and result.stderr == "", result.stderr


class ScriptedTimer:
    """Stands in for ``benchmark.Timer``: its blocks took 1, 2 and 10 ms (median 2 ms, min 1,
    mean 4.3), and it notes how many calls ran before the measurement started."""

    calls_before_timing: list[int] = []

    def __init__(self, stmt, globals, num_threads):
        self.fn = globals["fn"]

    def blocked_autorange(self, min_run_time):
        from helpers.measure import benchmark as real

        ScriptedTimer.calls_before_timing.append(len(CALLS))
        for _ in range(3):
            self.fn()
        return real.Measurement(number_per_run=1, raw_times=[0.001, 0.002, 0.010],
                                task_spec=real.TaskSpec("fn()", "pass"))


CALLS: list[int] = []


@pytest.mark.parametrize("warmup", [0, 1, 3])
def test_median_time_is_the_median_of_the_blocks_after_exactly_warmup_calls(monkeypatch, warmup):
    from helpers import measure

    monkeypatch.setattr(measure.benchmark, "Timer", ScriptedTimer)
    CALLS.clear()
    ScriptedTimer.calls_before_timing.clear()
    seconds = median_time(lambda: CALLS.append(1), min_run_time=0.05, warmup=warmup)
    assert seconds == 0.002  # not the min (0.001), not the mean, no warm-up time mixed in
    assert ScriptedTimer.calls_before_timing == [warmup] and len(CALLS) == warmup + 3
