"""Tests of tools/check: test_NAME.py tests tools/check/NAME.py."""
