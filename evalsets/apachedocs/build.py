"""Build the apachedocs corpus: the Apache HTTP Server 2.4 manual, English pages.

The pages come from the Debian package ``apache2-doc`` (HTML under
``/usr/share/doc/apache2-doc/manual/en``). Every English page is taken, the generated
indexes included (module and directive lists, the quick reference, the sitemap): a team
that points Waypoint at a manual does not curate it first. They are copied, with their
modification times, into a folder outside git (default ``.waypoint/apachedocs-corpus``)
that the eval loader reads through the real files connector, as ``waypoint ingest
<folder> --source apachedocs`` would. Doc ids are ``apachedocs:<path relative to the
folder>``, e.g. ``apachedocs:mod/core.html``, ``apachedocs:howto/cgi.html``.

Usage: ``python evalsets/apachedocs/build.py [--src DIR] [--out DIR] [--check]``.
The package itself is installed by ``make apachedocs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evalsets.doc_corpus import DocSubset, build_main  # noqa: E402

ROOT = Path("/usr/share/doc/apache2-doc/manual/en")
SUBSET = DocSubset(
    name="apachedocs",
    package="apache2-doc",
    candidates=(ROOT,),
    probe="mod/core.html",
    folders=tuple("developer faq howto misc mod platform programs rewrite ssl vhosts".split()),
    top_level=True,
    env="WAYPOINT_APACHEDOCS_CORPUS",
)

if __name__ == "__main__":
    sys.exit(build_main(SUBSET))
