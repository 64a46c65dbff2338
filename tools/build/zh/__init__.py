"""The Chinese edition (``book/zh/``): its command line and site (``edition``), its sources
(``sources``: the pages, their translation records, the English code copied in), their checks
(``checks``) and its glossary (``glossary``).

Imports ``tools.build``'s other modules, never the other packages of ``tools``.
"""
