"""Build the sqlitedocs corpus: the SQLite 3.40 HTML documentation, less generated pages.

The pages come from the Debian package ``sqlite3-doc`` (HTML under
``/usr/share/doc/sqlite3``). They are copied, with their modification times, into a
folder outside git (default ``.waypoint/sqlitedocs-corpus``) that the eval loader reads
through the real files connector, as ``waypoint ingest <folder> --source sqlitedocs``
would. Doc ids are ``sqlitedocs:<path relative to the folder>``, e.g.
``sqlitedocs:pragma.html``, ``sqlitedocs:c3ref/busy_timeout.html``.

Usage: ``python evalsets/sqlitedocs/build.py [--src DIR] [--out DIR] [--check]``.
The package itself is installed by ``make sqlitedocs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalsets.doc_corpus import DocSubset, build_main  # noqa: E402

# Every top-level page and the C API reference (one page per interface). Left out: the
# generated pages (the cross-reference and keyword indexes, the sitemap, the list of
# requirements, the syntax-diagram collection), capi3ref.html (c3ref/ again, on one
# page), and the per-release notes (releaselog/: changes.html holds them all).
SUBSET = DocSubset(
    name="sqlitedocs",
    package="sqlite3-doc",
    candidates=(Path("/usr/share/doc/sqlite3"), Path("/usr/share/doc/sqlite3-doc")),
    probe="pragma.html",
    folders=("c3ref",),
    top_level=True,
    skip=(
        "capi3ref.html",
        "doc_backlink_crossref.html",
        "doc_keyword_crossref.html",
        "doc_pagelink_crossref.html",
        "doc_target_crossref.html",
        "keyword_index.html",
        "requirements.html",
        "sitemap.html",
        "syntaxdiagrams.html",
    ),
    env="WAYPOINT_SQLITEDOCS_CORPUS",
)

if __name__ == "__main__":
    sys.exit(build_main(SUBSET))
