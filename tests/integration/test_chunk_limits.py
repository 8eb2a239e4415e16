"""No embedded text exceeds what the embedding model reads (issue 21 item 4).

Every connector's output on the project's own corpus (evalsets/acme/corpus) and on
synthetic long documents (Markdown, HTML, JSONL, a ticket, a Slack thread): each record
the dense leg embeds has an embed text of at most the model's max sequence length in the
model's own tokens (all-MiniLM-L6-v2: 256, [CLS] and [SEP] included), prefix included;
and each chunk's text is still a slice of its document's text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from retrieval.chunking import model_tokenizer
from retrieval.connectors import load_path
from retrieval.records import Meta, Record
from retrieval.settings import RetrievalSettings
from retrieval.store import embedding_text

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
ACME = REPO / "evalsets" / "acme" / "corpus"


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    tok = model_tokenizer(RetrievalSettings().embedding_model)
    assert tok is not None, "the bundled model ships its tokenizer"
    assert tok.max_length == 256 and tok.special_tokens == 2
    return tok


def _over_limit(records: list[Record], tokenizer) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    embedded = [r for r in records if "dense" in r.legs]
    assert embedded
    sizes = [(r.id, tokenizer.count(embedding_text(r))) for r in embedded]
    return [(rid, n) for rid, n in sizes if n > tokenizer.max_length]


def _words(rng: random.Random, n: int) -> str:
    vocab = [
        "ledger",
        "idempotency",
        "ERR-4012",
        "shared_buffers",
        "the",
        "reconciliation",
        "Übergröße",
        "payments-api",
        "v2.3.1",
        "of",
        "kubernetes",
        "2026-03-04",
    ]
    return " ".join(rng.choice(vocab) for _ in range(n))


@pytest.mark.parametrize("source", ["wiki", "slack", "tickets", "code"])
def test_acme_corpus_fits_the_model(source: str, tokenizer) -> None:  # type: ignore[no-untyped-def]
    result = load_path(ACME / source, source=source)
    assert result.records
    assert _over_limit(result.records, tokenizer) == []


def test_long_markdown_html_and_jsonl_fit_the_model(tmp_path: Path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    root = tmp_path / "docs"
    root.mkdir()
    long_heading = "A heading that goes on " + _words(rng, 90)
    sections = [
        "# Long page\n\n" + "\n\n".join(_words(rng, rng.randint(20, 400)) for _ in range(8)),
        "## One paragraph of 3000 words\n\n" + _words(rng, 3000),
        "## One word of 2000 characters\n\n" + "x" * 2000 + " tail",
        "## Lines\n\n" + "\n".join(_words(rng, 30) for _ in range(60)),
        f"## {long_heading}\n\n### {long_heading}\n\n" + _words(rng, 600),
    ]
    markdown = "\n\n".join(sections) + "\n"
    (root / "long.md").write_text(markdown, encoding="utf-8")
    paragraphs = "".join(f"<p>{_words(rng, 250)}</p>" for _ in range(6))
    (root / "long.html").write_text(
        f"<html><head><title>Long HTML</title></head><body><h1>Long HTML</h1>"
        f"<h2>Part</h2>{paragraphs}<pre>{_words(rng, 900)}</pre></body></html>",
        encoding="utf-8",
    )
    result = load_path(root, source="wiki")
    assert result.failures == []
    assert _over_limit(result.records, tokenizer) == []
    md = [r for r in result.records if r.doc_id == "wiki:long.md"]
    assert len(md) > 20
    for r in md:  # the exact-offset rule holds
        assert markdown[r.metadata[Meta.CHAR_START] : r.metadata[Meta.CHAR_END]] == r.text

    jsonl = tmp_path / "export.jsonl"
    jsonl.write_text(
        json.dumps({"id": "big", "title": "Big " + _words(rng, 5), "text": _words(rng, 2500)})
        + "\n",
        encoding="utf-8",
    )
    rows = load_path(jsonl, source="export").records
    assert len(rows) > 5
    assert _over_limit(rows, tokenizer) == []


def test_long_ticket_fits_the_model(tmp_path: Path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(11)
    path = tmp_path / "tickets.json"
    path.write_text(
        json.dumps(
            [
                {
                    "key": "OPS-900",
                    "fields": {
                        "summary": "Ledger " + _words(rng, 40),
                        "description": "\n\n".join(_words(rng, 300) for _ in range(4)),
                        "comment": {
                            "comments": [
                                {"author": {"displayName": "Dana"}, "body": _words(rng, 500)}
                            ]
                        },
                    },
                },
                {"key": "OPS-901", "fields": {"summary": "short", "description": _words(rng, 200)}},
            ]
        ),
        encoding="utf-8",
    )
    records = load_path(path, source="tickets").records
    assert {r.doc_id for r in records} == {"tickets:OPS-900", "tickets:OPS-901"}
    assert _over_limit(records, tokenizer) == []


def test_long_slack_thread_fits_the_model(tmp_path: Path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(5)
    root = tmp_path / "slack"
    (root / "incidents").mkdir(parents=True)
    (root / "channels.json").write_text(
        json.dumps([{"id": "C1", "name": "incidents", "is_private": False}]), encoding="utf-8"
    )
    (root / "users.json").write_text(json.dumps([{"id": "U1", "name": "ann"}]), encoding="utf-8")
    ts = "1770000000.000100"
    messages = [
        {
            "type": "message",
            "user": "U1",
            "ts": ts,
            "thread_ts": ts,
            "text": "Why does ledger-service return ERR-4012 after the deploy? " + _words(rng, 120),
        }
    ]
    for i in range(1, 9):  # one author's burst far longer than the model reads
        messages.append(
            {
                "type": "message",
                "user": "U1",
                "ts": f"17700000{i:02d}.000100",
                "thread_ts": ts,
                "text": "Fixed by restarting the ledger-sync worker; " + _words(rng, 150),
            }
        )
    (root / "incidents" / "2026-02-02.json").write_text(json.dumps(messages), encoding="utf-8")
    records = load_path(root, source="slack").records
    assert any(r.metadata[Meta.KIND] == "burst" for r in records)
    assert _over_limit(records, tokenizer) == []
