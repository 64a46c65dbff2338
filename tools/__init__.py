"""The book's own tooling (run as ``python -m tools.NAME``; the Makefile does)."""
