"""Tests of tools/build/zh: test_NAME.py tests tools/build/zh/NAME.py."""
