"""sqlitedocs: an evaluation set over the SQLite 3.40 HTML documentation (Debian sqlite3-doc).

``build.py`` copies the pages into a folder outside git, ``corpus.json`` names that folder
for the loader (:mod:`evalsets.corpus_spec`), ``check.py`` validates the questions against
the built corpus. See README.md.
"""
