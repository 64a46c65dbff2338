"""Tests for helpers.quiet."""

import logging

import pytest

from helpers.quiet import quiet_logger


def test_records_below_the_level_are_dropped_and_the_level_is_restored(caplog):
    log = logging.getLogger("book.test.quiet")
    log.setLevel(logging.INFO)
    with pytest.raises(RuntimeError), quiet_logger("book.test.quiet", logging.ERROR):
        log.warning("hidden")
        log.error("shown")
        raise RuntimeError
    assert [r.getMessage() for r in caplog.records] == ["shown"]
    assert log.level == logging.INFO
