"""Build the pydocs corpus: a chosen subset of the Python 3.11 HTML documentation.

The pages come from the Debian package ``python3-doc`` (HTML under
``/usr/share/doc/python3/html``, a link to ``python3.11-doc/html``). They are copied,
with their modification times, into a folder outside git (default
``.waypoint/pydocs-corpus``) that the eval loader reads through the real files connector,
as ``waypoint ingest <folder> --source pydocs`` would. Doc ids are therefore
``pydocs:<path relative to the folder>``, e.g. ``pydocs:library/functools.html``.

Usage: ``python evalsets/pydocs/build.py [--src DIR] [--out DIR] [--check]``.
The package itself is installed by ``make pydocs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalsets.doc_corpus import DocSubset, build_main  # noqa: E402

# Folders taken whole (recursive) and single pages: the user-facing documentation.
# Left out: c-api/extending (C embedding), whatsnew (repeats the "new in version" notes of
# the library pages), distutils/install (legacy), and generated indexes (genindex, search).
SUBSET = DocSubset(
    name="pydocs",
    package="python3-doc",
    candidates=(
        Path("/usr/share/doc/python3/html"),
        Path("/usr/share/doc/python3.11/html"),
        Path("/usr/share/doc/python3.11-doc/html"),
    ),
    probe="library/functools.html",
    folders=("library", "reference", "tutorial", "howto", "faq", "using"),
    pages=("glossary.html",),
    env="WAYPOINT_PYDOCS_CORPUS",
)

if __name__ == "__main__":
    sys.exit(build_main(SUBSET))
