"""Turning book/ into notebooks and sites: the chapter format (``chapter_format``), Jupyter's
markdown (``jupyter_markdown``) with the book's run's numbers (``book_run``), the one rule
for generated files (``generated``), ``make sync`` (``sync_notebooks``, with ``sync_memo``,
which skips the pages whose inputs have not changed), the executed
notebooks into the build's cache (``cache_executed``), and the Chinese edition: its command line
and site, its sources, their checks and its glossary (the package ``zh``).

Imports nothing from the other packages of ``tools``: they build on this one.
"""
