"""A multi-hop question file ingests as its paragraphs, deduplicated, with eval-stable ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from retrieval.connectors import load_path


def test_multihop_rows_become_one_document_per_distinct_paragraph(tmp_path: Path) -> None:
    shared = {
        "title": "Ed Wood",
        "text": "Ed Wood was an American filmmaker.",
        "is_supporting": True,
    }
    rows = [
        {
            "id": "q1",
            "question": "?",
            "answer": "yes",
            "paragraphs": [shared, {"title": "Scott Derrickson", "text": "An American director."}],
        },
        {"id": "q2", "question": "?", "answer": "no", "paragraphs": [shared]},
        {"id": "q3", "question": "?", "paragraphs": "not a list"},
    ]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = load_path(path, source="hotpot")
    titles = sorted(r.title for r in result.records)
    assert titles == ["Ed Wood", "Scott Derrickson"]
    digest = hashlib.sha1(("Ed Wood" + shared["text"]).encode()).hexdigest()[:16]
    assert f"hotpot:{digest}" in {r.doc_id for r in result.records}
    # the row without usable paragraphs is reported with its line number, not dropped silently
    assert any(":3" in where for where, _ in result.failures)
