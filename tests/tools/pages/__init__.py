"""Tests of tools/pages: test_NAME.py tests tools/pages/NAME.py."""
