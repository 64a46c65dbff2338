"""The book's own tooling, run as ``python -m tools.PACKAGE.NAME`` (the Makefile does).

Four packages, by concern; an arrow is the only direction imports may go:

- ``build``: book/'s MyST (both editions) into the notebooks a learner opens, the executed
  notebooks into the build's cache, the Chinese edition's sources and site. Imports none of
  the others.
- ``pages``: what the site serves besides the chapters: the claims appendix, the vendored
  scripts and fonts, the PDFs. ``pages -> build``.
- ``teach``: what a teacher and a learner use: ``make lab``, the student edition, the graders
  and the trusted check they run. ``teach -> build``.
- ``check``: checks of the book beyond the unit tests: Colab-like runs, seed and load stress,
  prose numbers, reading measure, benchmarks, mutation report. ``check -> build, teach``.
"""
