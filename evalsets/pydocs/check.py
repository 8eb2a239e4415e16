"""Validate ``questions.jsonl`` (and, when the corpus is built, its gold pages).

Checks: every row has the acme fields; ids are unique; refused rows have no answer and no
gold pages; answerable rows name gold pages; with the corpus built, every gold id is a
document the files connector produces and the answer (or an alias) appears literally,
case-insensitive, on word edges, in at least one gold page (yes/no answers exempt).

Usage: ``.venv/bin/python evalsets/pydocs/check.py`` (exits non-zero on problems).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions.jsonl"
FIELDS = tuple("id question answer answer_aliases type gold_docs as expect notes".split())
TYPES = ("single_hop", "multi_hop", "comparison", "identifier", "unanswerable")


def read_rows(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def row_problems(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems in the rows alone (no corpus needed)."""
    problems: list[str] = []
    ids: Counter[str] = Counter()
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
            if not re.fullmatch(r"pydocs:[\w./-]+\.html", doc):
                problems.append(f"{rid}: gold id {doc!r} is not a pydocs page id")
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


def corpus_pages(questions: Path = QUESTIONS) -> dict[str, str] | None:
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


def main() -> int:
    rows = read_rows()
    problems = row_problems(rows)
    pages = corpus_pages()
    if pages is None:
        print("corpus not built (make pydocs): gold pages and answers not checked")
    else:
        problems += corpus_problems(rows, pages)
    for p in problems:
        print(p)
    counts = Counter(str(r.get("type")) for r in rows)
    print(f"{len(rows)} questions: " + ", ".join(f"{t} {counts[t]}" for t in TYPES))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
