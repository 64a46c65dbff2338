import pytest
import torch

from helpers import digits_split


def test_split_sizes_types_and_ranges():
    train, val = digits_split(0.2, seed=0)
    assert len(train) + len(val) == 1797 and len(val) == round(1797 * 0.2)
    x, y = train.tensors
    assert x.shape == (len(train), 64) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and set(y.unique().tolist()) == set(range(10))
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_split_is_seeded_and_disjoint():
    a_train, a_val = digits_split(seed=3)
    b_train, b_val = digits_split(seed=3)
    c_train, _ = digits_split(seed=4)
    assert torch.equal(a_val.tensors[0], b_val.tensors[0])
    assert not torch.equal(a_train.tensors[0], c_train.tensors[0])
    train_rows = {tuple(r.tolist()) for r in a_train.tensors[0]}
    val_rows = {tuple(r.tolist()) for r in a_val.tensors[0]}
    # digits has a few duplicate images; the split itself is disjoint by index
    assert len(train_rows & val_rows) < 5


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5])
def test_bad_fraction(bad):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        digits_split(bad)


@pytest.mark.parametrize("fraction, sizes", [(0.0002, "1797 for training and 0 for validation"),
                                             (0.9998, "0 for training and 1797 for validation")])
def test_a_fraction_that_empties_a_split_is_refused(fraction, sizes):
    with pytest.raises(ValueError, match=f"{sizes}; each split needs at least one sample"):
        digits_split(fraction)


def test_bad_types():
    with pytest.raises(TypeError, match="val_fraction"):
        digits_split("0.2")
    with pytest.raises(TypeError, match="seed"):
        digits_split(0.2, seed=1.0)


from helpers import COLOR_NAMES, SequenceDataset, make_color_images, pad_collate  # noqa: E402


def test_color_images_shape_dtype_and_seed():
    x, y = make_color_images(64, size=12, seed=1)
    assert x.shape == (64, 12, 12, 3) and x.dtype == torch.uint8
    assert y.dtype == torch.int64 and y.max() < len(COLOR_NAMES)
    x2, y2 = make_color_images(64, size=12, seed=1)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, make_color_images(64, size=12, seed=2)[0])


def test_color_images_colour_identifies_the_class():
    x, y = make_color_images(200, seed=0)
    brightest = x.float().amax(dim=(1, 2))  # per image, per channel
    red, blue = y == COLOR_NAMES.index("red"), y == COLOR_NAMES.index("blue")
    assert (brightest[red, 0] > brightest[red, 2]).all()
    assert (brightest[blue, 2] > brightest[blue, 0]).all()


def test_color_images_bad_arguments():
    with pytest.raises(ValueError, match="n must be at least 1"):
        make_color_images(0)
    with pytest.raises(ValueError, match="size must be at least 8"):
        make_color_images(4, size=4)
    with pytest.raises(TypeError, match="seed"):
        make_color_images(4, seed="0")


def test_sequences_lengths_labels_and_seed():
    data = SequenceDataset(300, min_len=3, max_len=50, features=4, seed=0)
    assert len(data) == 300
    seq, label = data[5]
    assert seq.shape == (data.lengths[5], 4) and label.item() == int(seq[:, 0].sum() > 0)
    assert min(data.lengths) >= 3 and max(data.lengths) <= 50
    assert len(set(data.lengths)) > 10  # really variable
    assert data.lengths == SequenceDataset(300, 3, 50, 4, seed=0).lengths


def test_sequences_bad_arguments():
    with pytest.raises(ValueError, match="max_len"):
        SequenceDataset(10, min_len=20, max_len=10)
    with pytest.raises(TypeError, match="features"):
        SequenceDataset(10, features=2.0)


def test_pad_collate_pads_to_the_batch_maximum():
    batch = [(torch.ones(2, 3), torch.tensor(0)), (torch.ones(5, 3), torch.tensor(1))]
    padded, lengths, labels = pad_collate(batch)
    assert padded.shape == (2, 5, 3) and lengths.tolist() == [2, 5]
    assert labels.tolist() == [0, 1]
    assert padded[0, 2:].abs().sum() == 0 and padded[0, :2].sum() == 6


def test_pad_collate_bad_batches():
    with pytest.raises(ValueError, match="empty batch"):
        pad_collate([])
    with pytest.raises(ValueError, match="one feature size"):
        pad_collate([(torch.ones(2, 3), 0), (torch.ones(2, 4), 1)])
    with pytest.raises(TypeError, match="pairs"):
        pad_collate([torch.ones(2, 3)])


def test_pad_collate_refuses_sequences_of_different_dtypes():
    batch = [(torch.tensor([[1], [2]]), 0), (torch.tensor([[0.7]]), 1)]  # int64, then float32
    with pytest.raises(TypeError, match=r"different dtypes in one batch \(torch.float32, "
                                        r"torch.int64\)"):
        pad_collate(batch)
    padded, _, _ = pad_collate([(s.float(), label) for s, label in batch])  # the fix it names
    assert padded[1, 0, 0].item() == pytest.approx(0.7)


def test_digits_are_scaled_to_the_unit_interval_and_split_reproducibly():
    train, val = digits_split()
    x = torch.cat([train.tensors[0], val.tensors[0]])
    assert x.dtype == torch.float32 and x.min() == 0.0 and x.max() == 1.0  # 0..16 / 16
    assert len(val) == round(1797 * 0.2) and len(train) + len(val) == 1797
    image, label = val[0]  # items are (image, label) pairs in both splits
    assert image.shape == (64,) and label.dtype == torch.int64
    assert torch.equal(digits_split(seed=0)[1].tensors[0], val.tensors[0])  # the default seed
    assert not torch.equal(digits_split(seed=1)[1].tensors[0], val.tensors[0])
    assert len(digits_split(val_fraction=1 / 1797)[1]) == 1  # the smallest split allowed


def test_color_images_hold_every_class_a_noisy_background_and_one_blob():
    images, labels = make_color_images(400, seed=0)
    assert set(labels.tolist()) == set(range(len(COLOR_NAMES)))
    size, sides = images.shape[1], []
    for image, label in zip(images[:80], labels[:80], strict=True):
        rgb = torch.tensor([[220, 40, 40], [40, 200, 60], [50, 70, 230], [225, 210, 40]])[label]
        blob = (image.long() - (rgb * 0.7).long() >= 0).all(-1) & (image.long() <= rgb).all(-1)
        rows, cols = blob.any(1).nonzero(), blob.any(0).nonzero()
        side = len(rows)
        assert len(cols) == side  # one square blob
        sides.append(side)
        background = image[~blob]
        assert background.max() < 60  # dark noise, below every colour's channels
    assert min(sides) == size // 4 and max(sides) == size // 2
    assert images[..., 0].min() == 0 and images.amax() >= 200
    first_rows = torch.stack([(images[i].max(-1).values > 60).any(1).nonzero()[0]
                              for i in range(200)]).flatten()
    assert first_rows.min() == 0  # a blob can touch the top edge


def test_sequence_lengths_are_long_tailed_around_20_and_labels_follow_the_first_feature():
    data = SequenceDataset(2000)
    lengths = torch.tensor(data.lengths, dtype=torch.float32)
    assert 4 <= lengths.min() and lengths.max() <= 256
    assert 16 <= lengths.median() <= 25  # log-normal: median e^3 ≈ 20
    assert (lengths > 100).float().mean() < 0.06  # a long tail, not a wide one
    assert data.sequences[0].shape[1] == 8
    assert data.labels == [int(s[:, 0].sum() > 0) for s in data.sequences]
    assert torch.equal(SequenceDataset(5)[3][0], SequenceDataset(5, seed=0)[3][0])


def test_worker_context_is_fork_for_workers_where_fork_is_the_default(monkeypatch):
    from helpers import data as data_module
    from helpers import worker_context

    assert worker_context(0) is None  # a DataLoader refuses a context without workers
    expected = "fork" if data_module._default_start_method() == "fork" else None
    assert worker_context(2) == expected
    monkeypatch.setattr(data_module.torch.multiprocessing, "get_all_start_methods",
                        lambda: ["spawn"])  # Windows
    assert worker_context(2) is None
    with pytest.raises(ValueError, match="num_workers"):
        worker_context(-1)
    with pytest.raises(TypeError, match="num_workers"):
        worker_context(True)


def test_worker_context_lets_a_loader_use_a_class_defined_in_main():
    """What the notebook needs: fork workers see __main__'s classes as they are."""
    from torch.utils.data import DataLoader

    from helpers import worker_context

    if worker_context(2) is None:
        pytest.skip("no fork on this platform")
    loader = DataLoader(list(range(8)), batch_size=4, num_workers=2,
                        multiprocessing_context=worker_context(2))
    assert loader.multiprocessing_context.get_start_method() == "fork"
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


@pytest.mark.parametrize(("platform", "version", "method"), [
    ("linux", (3, 11), "fork"), ("linux", (3, 13), "fork"), ("linux", (3, 14), "forkserver"),
    ("darwin", (3, 11), "spawn"), ("win32", (3, 13), "spawn"), ("freebsd14", (3, 12), "fork")])
def test_default_start_method_follows_python(platform, version, method):
    from helpers.data import _default_start_method

    assert _default_start_method(platform, version) == method
    with pytest.raises(TypeError, match="version"):
        _default_start_method("linux", (3, "14"))
    with pytest.raises(TypeError, match="platform"):
        _default_start_method(3, (3, 14))


@pytest.mark.parametrize(("platform", "version"), [("darwin", (3, 11)), ("linux", (3, 14)),
                                                   ("win32", (3, 12))])
def test_worker_context_never_forks_where_python_does_not_default_to_fork(
        monkeypatch, platform, version):
    from helpers import data as data_module
    from helpers import worker_context

    monkeypatch.setattr(data_module, "_default_start_method", lambda: {
        "darwin": "spawn", "win32": "spawn", "linux": "forkserver"}[platform])
    assert worker_context(2) is None  # macOS: fork is unsafe; 3.14: forkserver
    monkeypatch.setattr(data_module, "_default_start_method", lambda: "fork")
    monkeypatch.setattr(data_module.torch.multiprocessing, "get_all_start_methods",
                        lambda: ["fork", "spawn", "forkserver"])
    assert worker_context(2) == "fork" and worker_context(0) is None


def test_range_stream_in_the_main_process_and_its_arguments():
    from helpers import RangeStream

    assert list(RangeStream(5)) == [0, 1, 2, 3, 4] == list(RangeStream(5, shard=False))
    assert list(RangeStream(0)) == []
    with pytest.raises(TypeError, match="shard"):
        RangeStream(5, shard="no")
    with pytest.raises(ValueError, match="n must be at least 0"):
        RangeStream(-1)


@pytest.mark.parametrize("workers", [2, 3])
def test_range_stream_sharded_yields_each_number_once_unsharded_once_per_worker(workers):
    from collections import Counter

    from torch.utils.data import DataLoader

    from helpers import RangeStream, worker_context

    def counts(shard: bool) -> Counter:
        loader = DataLoader(RangeStream(10, shard=shard), batch_size=2, num_workers=workers,
                            multiprocessing_context=worker_context(workers))
        return Counter(int(v) for batch in loader for v in batch)

    assert counts(True) == Counter(range(10))
    assert counts(False) == Counter({i: workers for i in range(10)})


def test_range_stream_works_in_spawn_workers():
    """The point of defining it in a module: a fresh interpreter can import it."""
    from torch.utils.data import DataLoader

    from helpers import RangeStream

    loader = DataLoader(RangeStream(6), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    assert sorted(int(v) for v in loader) == list(range(6))
