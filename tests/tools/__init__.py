"""Tests of tools/: tests/tools/PACKAGE/test_NAME.py tests tools/PACKAGE/NAME.py.
mini_chapter.py is the small synthetic chapter that the build and grader tests share."""
