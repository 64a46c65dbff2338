"""Pages and files the site serves besides the chapters: the claims appendix
(``claims_appendix``), the vendored scripts, styles and fonts (``vendor_assets``) and the
PDFs (``pdf``).

May import ``tools.build``; nothing else of ``tools``.
"""
