"""Tests of src/helpers: tests/helpers/test_NAME.py tests helpers/NAME.py."""
