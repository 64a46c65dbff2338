"""A chapter's own verdict function, for the can-fail tests (tests/chapters/test_can_fail_NN.py).

A claim cell computes its evidence, then hands it to a small function the cell defines,
``verdict_c13(...)``, which asserts the claim on that evidence (book/README.md, "Claims").
The chapter calls it on the evidence of its run; a can-fail test calls the very same function,
compiled from the chapter's source (never a copy of it), on evidence from a world where the
claim is false, and sees it raise ``AssertionError``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tools.build.chapter_format import BOOK, code_cells
from tools.check.shift_seeds import MAGIC_RE

# What a verdict function may use without the test passing it (the chapters' imports)
BASE_NAMESPACE = {"torch": torch, "np": np, "math": math, "nn": nn, "F": F}


def _cell_sources(chapter: Path) -> list[str]:
    text = chapter.read_text(encoding="utf-8")
    return ["\n".join(cell.split("\n")[1:-1]) for cell in code_cells(text)]


@cache
def chapter_definitions(stem: str) -> dict[str, list[str]]:
    """Source of every top-level function a chapter's code cells define, by name (a list: a
    name defined twice has two)."""
    found: dict[str, list[str]] = {}
    for source in _cell_sources(BOOK / f"{stem}.md"):
        source = "\n".join(line for line in source.split("\n") if not line.startswith(":"))
        parsed = MAGIC_RE.sub(lambda m: m[1] + "pass", source)
        for node in ast.parse(parsed).body:
            if isinstance(node, ast.FunctionDef):
                found.setdefault(node.name, []).append(
                    ast.get_source_segment(parsed, node, padded=True) or "")
    return found


def chapter_function(stem: str, name: str, **names: object) -> Callable:
    """The function ``name`` exactly as chapter ``stem`` defines it, compiled alone.

    ``names`` are the chapter globals it uses beyond ``torch``, ``np``, ``math``, ``nn`` and
    ``F`` (a constant the chapter set, a function it calls).
    """
    definitions = chapter_definitions(stem)
    if name not in definitions:
        raise LookupError(f"{stem} defines no function {name!r} (it defines "
                          f"{sorted(d for d in definitions if d.startswith('verdict'))})")
    if len(definitions[name]) > 1:
        raise LookupError(f"{stem} defines {name} {len(definitions[name])} times")
    namespace: dict[str, object] = {**BASE_NAMESPACE, **names}
    exec(compile(definitions[name][0], f"book/{stem}.md:{name}", "exec"), namespace)
    return namespace[name]  # type: ignore[return-value]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """For a can-fail test module that imports it: small tensors run fastest on one thread,
    and threads that spin slow a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True, scope="module")
def parse_once():
    """For a can-fail test module that imports it: the chapter's functions are read from its
    source once for the module, not per call."""
    global chapter_definitions
    unparsed = chapter_definitions
    chapter_definitions = cache(unparsed)
    yield
    chapter_definitions = unparsed


@cache
def digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The digits split the chapters train on (seed 0): train x, y, validation x, y."""
    from helpers import digits_split

    train_set, val_set = digits_split(seed=0)
    return (*train_set.tensors, *val_set.tensors)
