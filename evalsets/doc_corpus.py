"""Question sets over installed documentation: copy a page subset, validate the questions.

A set such as ``evalsets/pydocs`` (Debian ``python3-doc``) or ``evalsets/sqlitedocs``
(Debian ``sqlite3-doc``) describes its pages with a :class:`DocSubset`: where the package
installs its HTML, which folders and pages are the user-facing documentation, which
generated pages to leave out. :func:`build` mirrors that subset, with modification times,
into a folder outside git that the set's ``corpus.json`` names for the loader
(:mod:`evalsets.corpus_spec`); the pages are then read through the real files connector,
as ``waypoint ingest <folder> --source <name>`` would. :func:`check_main` validates the
set's ``questions.jsonl`` in the acme format, and its gold pages once the corpus is built.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIELDS = tuple("id question answer answer_aliases type gold_docs as expect notes".split())
TYPES = ("single_hop", "multi_hop", "comparison", "identifier", "unanswerable")


@dataclass(frozen=True)
class DocSubset:
    """The pages of one documentation package that make up an evaluation corpus."""

    name: str  # the set's name, its doc-id source and its make target
    package: str  # the Debian package that installs the HTML
    candidates: tuple[Path, ...]  # where the package's HTML root may be
    probe: str  # a page that exists under a genuine root
    folders: tuple[str, ...] = ()  # folders taken whole (recursive)
    pages: tuple[str, ...] = ()  # single pages, by path relative to the root
    top_level: bool = False  # every ``*.html`` directly under the root
    skip: tuple[str, ...] = ()  # generated pages left out (indexes, cross-references)
    env: str = ""  # the environment variable that overrides the output folder

    @property
    def default_out(self) -> Path:
        default = REPO / ".waypoint" / f"{self.name}-corpus"
        return Path(os.environ.get(self.env) or default) if self.env else default

    def find_source(self, explicit: Path | None = None) -> Path:
        candidates = (explicit,) if explicit else self.candidates
        for cand in candidates:
            if cand and (cand / self.probe).is_file():
                return cand.resolve()
        tried = ", ".join(str(c) for c in candidates if c)
        raise SystemExit(
            f"{self.package} HTML not found (tried {tried}); install it with "
            f"`apt-get install -y {self.package}` or run `make {self.name}`"
        )

    def selected_pages(self, src: Path) -> list[Path]:
        """Paths, relative to ``src``, of every page of the subset, sorted."""
        pages = [Path(p) for p in self.pages if (src / p).is_file()]
        if self.top_level:
            pages += [p.relative_to(src) for p in src.glob("*.html")]
        for folder in self.folders:
            pages += [p.relative_to(src) for p in (src / folder).rglob("*.html")]
        return sorted({p for p in pages if p.as_posix() not in self.skip})


def build(subset: DocSubset, src: Path, out: Path) -> tuple[int, int]:
    """Mirror the subset into ``out``: (pages copied or refreshed, stale pages removed)."""
    wanted = subset.selected_pages(src)
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


def build_main(subset: DocSubset, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=f"Copy a subset of the {subset.package} HTML pages into the "
        f"{subset.name} eval corpus."
    )
    parser.add_argument("--src", type=Path, help=f"{subset.package} HTML root (default: found)")
    out_default = subset.default_out
    parser.add_argument(
        "--out", type=Path, default=out_default, help=f"corpus folder (default {out_default})"
    )
    parser.add_argument(
        "--check", action="store_true", help="only report whether the corpus is up to date"
    )
    args = parser.parse_args(argv)
    src = subset.find_source(args.src)
    wanted = subset.selected_pages(src)
    if args.check:
        missing = [p for p in wanted if not (args.out / p).is_file()]
        print(f"{len(wanted)} pages selected from {src}; {len(missing)} missing in {args.out}")
        return 1 if missing else 0
    copied, removed = build(subset, src, args.out)
    print(
        f"{subset.name} corpus: {len(wanted)} pages from {src} in {args.out} "
        f"({copied} copied, {removed} stale removed)"
    )
    return 0


# --- the questions ---------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def row_problems(rows: Iterable[Mapping[str, Any]], source: str) -> list[str]:
    """Problems in the rows alone (no corpus needed); gold ids must be ``source`` pages."""
    problems: list[str] = []
    ids: Counter[str] = Counter()
    page_id = re.compile(re.escape(source) + r":[\w./-]+\.html")
    for row in rows:
        rid = str(row.get("id"))
        ids[rid] += 1
        missing = [f for f in FIELDS if f not in row]
        if missing:
            problems.append(f"{rid}: missing {', '.join(missing)}")
            continue
        if row["type"] not in TYPES:
            problems.append(f"{rid}: unknown type {row['type']!r}")
        if row["as"] != {"user": "eval", "groups": []}:
            problems.append(f"{rid}: 'as' should be the eval user with no groups")
        refuse = row["expect"] == "refuse"
        if refuse != (row["type"] == "unanswerable"):
            problems.append(f"{rid}: expect {row['expect']!r} does not fit type {row['type']}")
        if refuse and (row["answer"] or row["gold_docs"]):
            problems.append(f"{rid}: a refused row has no answer and no gold pages")
        if not refuse and (not row["answer"] or not row["gold_docs"]):
            problems.append(f"{rid}: an answerable row needs an answer and gold pages")
        if not str(row["notes"]).strip():
            problems.append(f"{rid}: notes must say where the fact is stated")
        for doc in row["gold_docs"]:
            if not page_id.fullmatch(doc):
                problems.append(f"{rid}: gold id {doc!r} is not a {source} page id")
    problems += [f"{rid}: id used {n} times" for rid, n in ids.items() if n > 1]
    return problems


def _appears(answer: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(answer) + r"(?!\w)", text, re.IGNORECASE) is not None


def corpus_problems(rows: Iterable[Mapping[str, Any]], pages: Mapping[str, str]) -> list[str]:
    """Gold ids that are not documents, answers no gold page states. ``pages`` maps doc
    ids to their text (the connector's records of that document, joined)."""
    problems: list[str] = []
    for row in rows:
        rid, gold = row["id"], row["gold_docs"]
        absent = [d for d in gold if d not in pages]
        if absent:
            problems.append(f"{rid}: gold pages not in the corpus: {', '.join(absent)}")
            continue
        answers = [a for a in [row["answer"], *row["answer_aliases"]] if a]
        if not answers or row["answer"].lower() in {"yes", "no"}:
            continue
        if not any(_appears(a, pages[d]) for a in answers for d in gold):
            problems.append(f"{rid}: no gold page states {answers!r}")
    return problems


def corpus_pages(questions: Path) -> dict[str, str] | None:
    """Doc id -> text of the built corpus, read through the real connector (the loader's
    path); ``None`` when the corpus is not built."""
    from evalsets.corpus_spec import load_spec_records, read_corpus_spec

    spec = read_corpus_spec(questions)
    if spec is None or not all(s.path.is_dir() for s in spec.sources):
        return None
    records, _ = load_spec_records(spec)
    parts: dict[str, list[str]] = {}
    order = sorted(records, key=lambda r: (str(r.metadata["doc_id"]), r.metadata["chunk_index"]))
    for rec in order:
        parts.setdefault(str(rec.metadata["doc_id"]), []).append(rec.text)
    return {doc: "\n".join(texts) for doc, texts in parts.items()}


def check_main(questions: Path, source: str) -> int:
    """Print the problems of a set's questions (and gold pages, when built); 1 if any.
    Every question file beside ``questions`` (``questions*.jsonl``: the set and its fresh
    questions) is checked, their ids together."""
    files = sorted(questions.parent.glob("questions*.jsonl")) or [questions]
    rows = [row for path in files for row in read_rows(path)]
    problems = row_problems(rows, source)
    pages = corpus_pages(questions)
    if pages is None:
        print(f"corpus not built (make {source}): gold pages and answers not checked")
    else:
        problems += corpus_problems(rows, pages)
    for p in problems:
        print(p)
    for path in files:
        own = read_rows(path)
        counts = Counter(str(r.get("type")) for r in own)
        print(f"{path.name}: {len(own)} questions: " + ", ".join(f"{t} {counts[t]}" for t in TYPES))
    return 1 if problems else 0
