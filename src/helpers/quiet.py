"""Keeping torch's own log lines off the chapters' pages where they say nothing to a reader
(used by ``helpers.measure`` and ``helpers.export``, chapters 07 and 09)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_logger(name: str, level: int = logging.CRITICAL) -> Iterator[None]:
    """Inside the block, the logger ``name`` drops records below ``level``; its own level is
    put back afterwards, even when the block raises."""
    log = logging.getLogger(name)
    before = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(before)
