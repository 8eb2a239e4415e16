"""apachedocs: an evaluation set over the Apache HTTP Server 2.4 manual (Debian apache2-doc).

``build.py`` copies the English pages into a folder outside git, ``corpus.json`` names
that folder for the loader (:mod:`evalsets.corpus_spec`), ``check.py`` validates the
questions against the built corpus. See README.md.
"""
