"""Checks of the book beyond the unit tests: each chapter alone in a Colab-like venv
(``colab_check``), claims under load and shifted seeds (``stress_claims``, ``shift_seeds``),
numbers typed into prose (``prose_numbers``), what a chapter asks of its reader
(``readability``), timings (``bench``, ``bench_train``) and the mutation-testing table
(``mutation_report``).

May import ``tools.build`` and ``tools.teach``; nothing imports this package.
"""
