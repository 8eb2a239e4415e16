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

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = Path(os.environ.get("WAYPOINT_PYDOCS_CORPUS") or REPO / ".waypoint" / "pydocs-corpus")
SOURCE_CANDIDATES = (
    Path("/usr/share/doc/python3/html"),
    Path("/usr/share/doc/python3.11/html"),
    Path("/usr/share/doc/python3.11-doc/html"),
)
# Folders taken whole (recursive) and single pages: the user-facing documentation.
# Left out: c-api/extending (C embedding), whatsnew (repeats the "new in version" notes of
# the library pages), distutils/install (legacy), and generated indexes (genindex, search).
FOLDERS = ("library", "reference", "tutorial", "howto", "faq", "using")
PAGES = ("glossary.html",)


def find_source(explicit: Path | None = None) -> Path:
    candidates = (explicit,) if explicit else SOURCE_CANDIDATES
    for cand in candidates:
        if cand and (cand / "library" / "functools.html").is_file():
            return cand.resolve()
    tried = ", ".join(str(c) for c in candidates if c)
    raise SystemExit(
        f"python3-doc HTML not found (tried {tried}); install it with "
        "`apt-get install -y python3-doc` or run `make pydocs`"
    )


def selected_pages(src: Path) -> list[Path]:
    """Paths, relative to ``src``, of every page of the subset, sorted."""
    pages = [Path(p) for p in PAGES if (src / p).is_file()]
    for folder in FOLDERS:
        pages += [p.relative_to(src) for p in (src / folder).rglob("*.html")]
    return sorted(set(pages))


def build(src: Path, out: Path) -> tuple[int, int]:
    """Mirror the subset into ``out``: (pages copied or refreshed, stale pages removed)."""
    wanted = selected_pages(src)
    out.mkdir(parents=True, exist_ok=True)
    copied = 0
    for rel in wanted:
        source, target = src / rel, out / rel
        st = source.stat()
        if target.is_file():
            tt = target.stat()
            if tt.st_size == st.st_size and int(tt.st_mtime) == int(st.st_mtime):
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)  # keeps the mtime: the record timestamp stays stable
        copied += 1
    keep = {str(p) for p in wanted}
    removed = 0
    for path in sorted(out.rglob("*")):
        if path.is_file() and str(path.relative_to(out)) not in keep:
            path.unlink()
            removed += 1
    return copied, removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Copy a subset of the python3-doc HTML pages into the pydocs eval corpus."
    )
    parser.add_argument("--src", type=Path, help="python3-doc HTML root (default: found)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"corpus folder (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--check", action="store_true", help="only report whether the corpus is up to date"
    )
    args = parser.parse_args(argv)
    src = find_source(args.src)
    wanted = selected_pages(src)
    if args.check:
        missing = [p for p in wanted if not (args.out / p).is_file()]
        print(f"{len(wanted)} pages selected from {src}; {len(missing)} missing in {args.out}")
        return 1 if missing else 0
    copied, removed = build(src, args.out)
    print(
        f"pydocs corpus: {len(wanted)} pages from {src} in {args.out} "
        f"({copied} copied, {removed} stale removed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
