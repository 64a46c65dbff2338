"""Teaching with the book: the learner's JupyterLab (``lab``, with its settings in
``lab-settings/``), the student edition (``student_edition``), the grader of one notebook
(``grade``) and of a class (``grade_class``), and the trusted run of the book's checks that
both use (``trusted_check``, with what it reads from the book in ``check_cells`` and the code
it installs in the learner's kernel in ``sandbox``), and each chapter's one run for both
editions that ``make nbmake`` makes (``chapter_run``).

May import ``tools.build``; nothing else of ``tools``.
"""
