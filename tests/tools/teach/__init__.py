"""Tests of tools/teach: test_NAME.py tests tools/teach/NAME.py."""
