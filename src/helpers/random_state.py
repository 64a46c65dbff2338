"""Every random generator's state, saved and restored exactly (taught in chapter 08).

A resumed run continues as if it never stopped only if its draws after the resume (dropout
masks, shuffling, augmentation) are the ones it would have made. :func:`rng_state` takes the
state of every generator a training script draws from (Python's, NumPy's, torch's CPU
generator, each GPU's, MPS's where available) in the types ``torch.load(weights_only=True)``
reads; :func:`set_rng_state` puts it back after :func:`check_rng_state` has tried every entry
on a throwaway generator, so a bad state changes nothing. ``helpers.checkpoint`` saves it with
the rest of the run.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from .validate import first_line as _first_line

# Every RNG state has these; "mps" is there only where MPS is available (and never in older
# checkpoints).
RNG_KEYS = ("python", "numpy", "torch", "cuda")


def rng_state() -> dict[str, Any]:
    """The state of every generator a training script draws from, in weights-only types: Python's,
    NumPy's, torch's CPU generator, each GPU's, and the MPS generator where MPS is available.

    These are the generators of this process: in a run of several processes (DDP, chapter 10)
    each rank has its own, and a state saved by one rank is that rank's only.
    """
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    if torch.backends.mps.is_available():
        state["mps"] = torch.mps.get_rng_state()
    return state


def _on_cpu(entry: Any) -> Any:
    """A tensor entry of an RNG state on the CPU, where every generator's ``set_state`` and
    NumPy want it (``torch.load(map_location="cuda")`` moves it to the GPU); else as is."""
    return entry.cpu() if isinstance(entry, torch.Tensor) else entry


def _python_state(entry: Any) -> tuple:
    """The ``"python"`` entry of an RNG state as :func:`random.setstate` takes it."""
    version, internal, gauss = entry
    return (version, tuple(internal), gauss)


def _numpy_state(entry: Any) -> tuple:
    """The ``"numpy"`` entry of an RNG state as :func:`numpy.random.set_state` takes it."""
    name, keys, pos, has_gauss, cached = entry
    return (name, _on_cpu(keys).numpy().astype(np.uint32), pos, has_gauss, cached)


def _is_byte_tensor(value: Any) -> bool:
    """Whether ``value`` is a uint8 tensor, the type of a generator's state."""
    return isinstance(value, torch.Tensor) and value.dtype == torch.uint8


def check_rng_state(state: Any) -> None:
    """Raise ``ValueError`` unless :func:`set_rng_state` can restore ``state`` completely.

    Each entry is tried on a throwaway generator of its kind, so the rule is the library's
    own, and no global generator changes. The ``"mps"`` entry is optional (saved where MPS is
    available); where this machine has no MPS (or no CUDA) those entries are checked for
    their type and not applied.
    """
    if not isinstance(state, dict):
        raise ValueError(f"RNG state must be a dict with keys {list(RNG_KEYS)}, "
                         f"got {type(state).__name__}")
    missing = [k for k in RNG_KEYS if k not in state]
    if missing:
        raise ValueError(f"RNG state lacks {missing}; expected the keys {list(RNG_KEYS)}")
    trials = (("python", lambda e: random.Random().setstate(_python_state(e))),
              ("numpy", lambda e: np.random.RandomState().set_state(_numpy_state(e))),
              ("torch", lambda e: torch.Generator().set_state(_on_cpu(e))))
    for key, trial in trials:
        try:
            trial(state[key])
        except Exception as err:  # noqa: BLE001 - a throwaway generator refused it: invalid
            raise ValueError(f"RNG state {key!r} is not a valid {key} generator state: "
                             f"{_first_line(err)}") from err
    cuda = state["cuda"]
    if not isinstance(cuda, (list, tuple)) or not all(_is_byte_tensor(s) for s in cuda):
        raise ValueError("RNG state 'cuda' must be a list of uint8 tensors (one per GPU), "
                         f"got {type(cuda).__name__}")
    if cuda and torch.cuda.is_available() and len(cuda) > torch.cuda.device_count():
        raise ValueError(f"RNG state 'cuda' holds {len(cuda)} GPU states but this machine has "
                         f"{torch.cuda.device_count()} GPU(s)")
    if "mps" in state:
        if not _is_byte_tensor(state["mps"]):
            raise ValueError("RNG state 'mps' must be a uint8 tensor, got "
                             f"{type(state['mps']).__name__}")
        if torch.backends.mps.is_available():
            try:
                torch.Generator(device="mps").set_state(_on_cpu(state["mps"]))
            except Exception as err:  # noqa: BLE001 - a throwaway generator refused it
                raise ValueError("RNG state 'mps' is not a valid MPS generator state: "
                                 f"{_first_line(err)}") from err


def _apply_rng_state(state: dict[str, Any]) -> None:
    """Set every global generator from a state that :func:`check_rng_state` accepted."""
    random.setstate(_python_state(state["python"]))
    np.random.set_state(_numpy_state(state["numpy"]))
    torch.set_rng_state(_on_cpu(state["torch"]))
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([_on_cpu(s) for s in state["cuda"]])
    if "mps" in state and torch.backends.mps.is_available():
        torch.mps.set_rng_state(_on_cpu(state["mps"]))


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned; a bad state is refused before anything is set."""
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict returned by rng_state(), got {type(state).__name__}")
    check_rng_state(state)
    _apply_rng_state(state)
