"""The wrappers that put a prefix before every key of a model's state (taught in chapter 08).

``torch.compile`` keeps the original module as ``_orig_mod`` and prefixes its keys with
``_orig_mod.``; ``nn.DataParallel`` and ``DistributedDataParallel`` (chapter 10) keep it as
``module`` and prefix ``module.``. Checkpoints and ONNX exports are made of the module inside
(:func:`unwrap_model`), and a state saved from a wrapper loads into the plain model once its
prefixes are taken off (:func:`strip_compile_prefix`; ``helpers.checkpoint`` does it when it
loads).
"""

from __future__ import annotations

from typing import Any

from torch import nn

COMPILE_PREFIX = "_orig_mod."
# What torch.compile, nn.DataParallel and DistributedDataParallel put before every key.
WRAPPER_PREFIXES = (COMPILE_PREFIX, "module.")


def unwrap_compiled(model: nn.Module) -> nn.Module:
    """The original module behind ``torch.compile`` (chapter 08, C28), or the model itself."""
    return getattr(model, "_orig_mod", model)


def unwrap_model(model: nn.Module) -> nn.Module:
    """The module inside every wrapper that adds a prefix to its keys (chapter 08): the
    original behind ``torch.compile`` (``_orig_mod.``) and the module inside ``nn.DataParallel``
    or ``DistributedDataParallel`` (``module.``, chapter 10), nested in any order; the model
    itself when it is not wrapped. What checkpoints and ONNX exports are made of."""
    while True:
        if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            model = model.module
        elif unwrap_compiled(model) is not model:
            model = unwrap_compiled(model)
        else:
            return model


def strip_compile_prefix(state_dict: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``state_dict`` without the ``_orig_mod.`` prefix that ``torch.compile`` adds."""
    return {k.removeprefix(COMPILE_PREFIX): v for k, v in state_dict.items()}


def _without_wrapper_prefixes(state: dict[str, Any], expected: dict[str, Any]
                              ) -> tuple[dict[str, Any], list[str]]:
    """``state`` without the prefixes that wrappers put before every key (``module.`` of
    ``nn.DataParallel``/DDP, ``_orig_mod.`` of ``torch.compile``), removed while its keys are
    not the expected ones and every one of them has a prefix that the expected keys do not
    all have; and the prefixes removed."""
    removed = []
    while set(state) != set(expected):
        prefix = next((p for p in WRAPPER_PREFIXES
                       if state and all(k.startswith(p) for k in state)
                       and not all(k.startswith(p) for k in expected)), None)
        if prefix is None:
            break
        state = {k.removeprefix(prefix): v for k, v in state.items()}
        removed.append(prefix)
    return state, removed
