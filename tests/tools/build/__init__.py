"""Tests of tools/build: test_NAME.py tests tools/build/NAME.py."""
