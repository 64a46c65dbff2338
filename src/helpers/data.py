"""Small offline data sets for the chapters (taught in chapter 02)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import torch
import torch.multiprocessing
from torch.utils.data import TensorDataset, get_worker_info

from .validate import require_bool, require_int


def _default_start_method(platform: str | None = None,
                         version: tuple[int, int] | None = None) -> str:
    """Python's default ``multiprocessing`` start method on ``platform`` (``sys.platform``) and
    Python ``version`` (``sys.version_info[:2]``), both those of this process by default:
    ``"spawn"`` on macOS and Windows, ``"fork"`` elsewhere up to Python 3.13 and
    ``"forkserver"`` from 3.14. Taught in chapter 02, "Worker start-up and persistent_workers"."""
    platform = sys.platform if platform is None else platform
    version = tuple(sys.version_info[:2]) if version is None else version
    if not isinstance(platform, str):
        raise TypeError(f"platform must be a string such as 'linux', got {platform!r}")
    if (not isinstance(version, tuple) or len(version) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in version)):
        raise TypeError(f"version must be (major, minor), two ints, got {version!r}")
    if platform in ("darwin", "win32"):
        return "spawn"
    return "fork" if version < (3, 14) else "forkserver"


def worker_context(num_workers: int) -> str | None:
    """The ``multiprocessing_context`` for a ``DataLoader`` with ``num_workers`` workers:
    ``"fork"`` only where fork is the platform's default start method (Linux and other POSIX
    systems up to Python 3.13), so that workers inherit a notebook's ``Dataset`` classes even
    if a library changed the start method; ``None`` (the default start method) without workers
    and everywhere else. It never asks for fork where Python does not default to it: on macOS
    fork is unsafe (system libraries start threads), and Python 3.14 moved Linux to forkserver
    because forking a process that runs threads can deadlock. There a ``Dataset`` a worker uses
    must live in an importable module, like the ones of this module. Taught in chapter 02,
    "Worker start-up and persistent_workers"."""
    require_int("num_workers", num_workers, minimum=0)
    if num_workers == 0 or _default_start_method() != "fork":
        return None
    if "fork" not in torch.multiprocessing.get_all_start_methods():
        return None
    return "fork"


class RangeStream(torch.utils.data.IterableDataset):
    """A stream of the integers ``0 … n-1``, as an ``IterableDataset`` (chapter 02, "Streaming
    data"). Each ``DataLoader`` worker runs ``__iter__`` on its own copy of the dataset; with
    ``shard=True`` worker ``k`` of ``w`` yields ``k, k + w, k + 2w, …``, so that the workers
    together yield every number once. ``shard=False`` is the mistake the chapter shows: every
    worker yields the whole stream. Defined in a module, so that spawn and forkserver workers
    can import it."""

    def __init__(self, n: int, shard: bool = True) -> None:
        require_int("n", n, minimum=0)
        require_bool("shard", shard)
        self.n, self.shard = n, shard

    def __iter__(self) -> Iterator[int]:
        info = get_worker_info()  # None in the main process (num_workers=0)
        start, step = (0, 1) if info is None or not self.shard else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def digits_split(
    val_fraction: float = 0.2, seed: int = 0
) -> tuple[TensorDataset, TensorDataset]:
    """scikit-learn's bundled handwritten digits as (train, validation) tensor data sets.

    1,797 images of 8×8 pixels, flattened to 64 float32 features scaled to [0, 1], with int64
    labels 0–9. The split is a seeded permutation, so it is the same on every machine and
    needs no download.
    """
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)):
        raise TypeError(f"val_fraction must be a number, got {val_fraction!r}")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be strictly between 0 and 1, got {val_fraction}")
    require_int("seed", seed)
    from sklearn.datasets import load_digits  # imported here: only this helper needs it

    images, labels = load_digits(return_X_y=True)
    x = torch.tensor(images / 16.0, dtype=torch.float32)
    y = torch.tensor(labels, dtype=torch.int64)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_val = round(len(x) * val_fraction)
    if n_val < 1 or n_val > len(x) - 1:
        raise ValueError(
            f"val_fraction={val_fraction} splits the {len(x)} samples into {len(x) - n_val} "
            f"for training and {n_val} for validation; each split needs at least one sample "
            f"(use a fraction between {1 / len(x):.5f} and {1 - 1 / len(x):.5f})")
    val_idx, train_idx = order[:n_val], order[n_val:]
    return TensorDataset(x[train_idx], y[train_idx]), TensorDataset(x[val_idx], y[val_idx])


COLOR_NAMES = ("red", "green", "blue", "yellow")
_COLOR_RGB = torch.tensor([[220, 40, 40], [40, 200, 60], [50, 70, 230], [225, 210, 40]])


def make_color_images(
    n: int, size: int = 16, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generated RGB images whose class is the colour of a square blob (chapter 02, C10).

    Returns ``(images, labels)``: uint8 images of shape ``(n, size, size, 3)`` in RGB order,
    height × width × channels like a decoded image file, and int64 labels indexing
    :data:`COLOR_NAMES`. Blob position, size and brightness and the background noise vary,
    so only the colour tells the classes apart.
    """
    require_int("n", n, minimum=1)
    require_int("size", size, minimum=8)
    require_int("seed", seed)
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, len(COLOR_NAMES), (n,), generator=gen)
    images = torch.randint(0, 60, (n, size, size, 3), generator=gen)
    side = torch.randint(size // 4, size // 2 + 1, (n,), generator=gen)
    brightness = 0.7 + 0.3 * torch.rand(n, generator=gen)
    for i in range(n):
        s = int(side[i])
        top, left = (int(v) for v in torch.randint(0, size - s + 1, (2,), generator=gen))
        images[i, top : top + s, left : left + s] = (_COLOR_RGB[labels[i]] * brightness[i]).long()
    return images.to(torch.uint8), labels


class SequenceDataset(torch.utils.data.Dataset):
    """Generated variable-length sequences (chapter 02, C06).

    Item ``i`` is ``(sequence, label)``: a float32 tensor of shape ``(length_i, features)``
    and the int64 label ``1`` when the sequence's first feature sums to more than zero.
    Lengths are drawn from a long-tailed (log-normal) distribution between ``min_len`` and
    ``max_len``, as text and audio lengths usually are.
    """

    def __init__(
        self, n: int, min_len: int = 4, max_len: int = 256, features: int = 8, seed: int = 0
    ) -> None:
        require_int("n", n, minimum=1)
        require_int("min_len", min_len, minimum=1)
        require_int("features", features, minimum=1)
        require_int("max_len", max_len, minimum=1)
        require_int("seed", seed)
        if max_len < min_len:
            raise ValueError(f"max_len ({max_len}) must be at least min_len ({min_len})")
        gen = torch.Generator().manual_seed(seed)
        raw = torch.exp(torch.randn(n, generator=gen) * 0.8 + 3.0)
        self.lengths = raw.round().long().clamp(min_len, max_len).tolist()
        self.sequences = [torch.randn(length, features, generator=gen) for length in self.lengths]
        self.labels = [int(s[:, 0].sum() > 0) for s in self.sequences]

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.sequences[index], torch.tensor(self.labels[index])


def pad_collate(
    batch: list[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad a batch of ``(sequence, label)`` pairs to the batch's own longest sequence.

    Returns ``(padded, lengths, labels)``: ``padded`` is ``(batch, longest, features)`` with
    zeros after each sequence's end, ``lengths`` the true lengths. Chapter 02 writes it out.
    Sequences of different dtypes are refused: padding would cast them all to the first
    one's dtype (a float 0.7 after an int sequence would become 0).
    """
    if not isinstance(batch, (list, tuple)):
        raise TypeError(f"batch must be a list of (sequence, label) pairs, got "
                        f"{type(batch).__name__}")
    if not batch:
        raise ValueError("cannot collate an empty batch")
    if any(not isinstance(item, (tuple, list)) or len(item) != 2 for item in batch):
        raise TypeError("pad_collate expects (sequence, label) pairs")
    sequences, labels = zip(*batch, strict=True)
    _check_sequences(sequences)
    label_tensors = [_label_tensor(i, label) for i, label in enumerate(labels)]
    lengths = torch.tensor([len(s) for s in sequences])
    padded = torch.nn.utils.rnn.pad_sequence(list(sequences), batch_first=True)
    return padded, lengths, torch.stack(label_tensors)


def _check_sequences(sequences: tuple[object, ...]) -> None:
    """Every sequence a (length, features) tensor, with one feature size and one dtype."""
    for i, s in enumerate(sequences):
        if not isinstance(s, torch.Tensor):
            raise TypeError(f"sequence {i} of the batch must be a tensor, got {type(s).__name__}")
    if any(s.ndim != 2 for s in sequences) or len({s.shape[1] for s in sequences}) != 1:
        shapes = sorted({tuple(s.shape) for s in sequences})[:3]
        raise ValueError(
            f"sequences must be (length, features) with one feature size, got e.g. {shapes}"
        )
    dtypes = sorted({str(s.dtype) for s in sequences})
    if len(dtypes) > 1:
        raise TypeError(f"sequences of different dtypes in one batch ({', '.join(dtypes)}): "
                        "padding would cast them to one dtype; convert them first, e.g. "
                        ".float() in the dataset")


def _label_tensor(index: int, label: object) -> torch.Tensor:
    """``label`` as a tensor; a ``TypeError`` naming its place in the batch if it is not a
    number, a tensor or an array."""
    try:
        return torch.as_tensor(label)
    except (TypeError, RuntimeError, ValueError) as err:
        raise TypeError(f"label {index} of the batch must be a number or a tensor, got "
                        f"{type(label).__name__}") from err
