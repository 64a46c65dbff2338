"""Tests of the Sphinx extensions in book/_ext: test_NAME.py tests book/_ext/NAME.py."""
