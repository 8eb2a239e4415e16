"""Chunking only slices the parent text; heading paths, caps and overlap hold."""

from __future__ import annotations

import math
import random

import pytest

from retrieval.chunking import Heading, chunk_text, embed_prefix, markdown_headings, split_span
from retrieval.textstats import DocFreq, count_words, is_filler, terms

DOC = """Intro before any heading.

# Payments service

Authorises card payments.

## On-call

Weekly rotation.

### Escalation

Call the manager.

```
# a shell comment, not a heading
```

Setext two
----------

Body under setext.
"""


def test_markdown_headings_atx_setext_and_fences() -> None:
    headings = markdown_headings(DOC)
    assert [(h.level, h.title) for h in headings] == [
        (1, "Payments service"),
        (2, "On-call"),
        (3, "Escalation"),
        (2, "Setext two"),
    ]
    for h in headings:
        assert DOC[h.start : h.end].lstrip("# ").startswith(h.title)


def test_multi_line_paragraph_is_not_a_setext_heading() -> None:
    text = "line one\nline two\n---\n"
    assert markdown_headings(text) == []


def test_chunks_slice_the_text_and_carry_heading_paths() -> None:
    chunks = chunk_text(DOC, markdown_headings(DOC), max_tokens=256, overlap_tokens=32)
    paths = [c.heading_path for c in chunks]
    assert paths == [
        (),
        ("Payments service",),
        ("Payments service", "On-call"),
        ("Payments service", "On-call", "Escalation"),
        ("Payments service", "Setext two"),
    ]
    texts = [DOC[c.start : c.end] for c in chunks]
    assert texts[0] == "Intro before any heading."
    assert texts[2] == "## On-call\n\nWeekly rotation."
    assert texts[3].startswith("### Escalation") and texts[3].endswith("```")
    for text in texts:
        assert text == text.strip()


def test_heading_without_body_merges_into_the_next_section() -> None:
    text = "# Title\n\n## Section\n\nBody text here.\n"
    chunks = chunk_text(text, markdown_headings(text))
    assert len(chunks) == 1
    assert text[chunks[0].start : chunks[0].end] == "# Title\n\n## Section\n\nBody text here."
    assert chunks[0].heading_path == ("Title", "Section")


def test_body_start_skips_front_matter() -> None:
    text = "---\ntitle: x\n---\n# Real\n\nBody.\n"
    body = text.index("# Real")
    chunks = chunk_text(text, markdown_headings(text), body_start=body)
    assert [text[c.start : c.end] for c in chunks] == ["# Real\n\nBody."]


def _long_section(paragraphs: int = 12, sentences: int = 5) -> str:
    rng = random.Random(7)
    vocab = "alpha beta gamma delta ledger payment pool timeout shard replica cache".split()
    paras = []
    for _ in range(paragraphs):
        sents = [
            " ".join(rng.choice(vocab) for _ in range(rng.randint(4, 12))).capitalize() + "."
            for _ in range(sentences)
        ]
        paras.append(" ".join(sents))
    return "## Long\n\n" + "\n\n".join(paras) + "\n"


def test_long_section_is_capped_with_overlap_on_sentence_boundaries() -> None:
    text = _long_section()
    chunks = chunk_text(text, markdown_headings(text), max_tokens=40, overlap_tokens=8)
    assert len(chunks) > 3
    for c in chunks:
        piece = text[c.start : c.end]
        assert count_words(piece) <= 40
        assert c.heading_path == ("Long",)
        assert piece.endswith(".") or piece == "## Long"
    # Consecutive chunks overlap a little (the next starts before the previous ends)...
    overlaps = [b.start < a.end for a, b in zip(chunks, chunks[1:], strict=False)]
    assert any(overlaps)
    # ...and together they cover every word of the section.
    covered = {(m.start()) for c in chunks for m in _words(text, c.start, c.end)}
    assert covered == {m.start() for m in _words(text, 0, len(text))}


def _words(text: str, start: int, end: int):  # type: ignore[no-untyped-def]
    import re

    return re.compile(r"\S+").finditer(text, start, end)


def test_one_giant_sentence_falls_back_to_word_windows() -> None:
    text = " ".join(f"w{i}" for i in range(100))
    spans = split_span(text, 0, len(text), max_tokens=30, overlap_tokens=5)
    assert all(count_words(text[s:e]) <= 30 for s, e in spans)
    assert text[spans[0][0] : spans[0][1]].split()[0] == "w0"
    assert text[spans[-1][0] : spans[-1][1]].split()[-1] == "w99"


@pytest.mark.parametrize("cap,overlap", [(1, 0), (3, 1), (10, 5), (50, 32)])
def test_packing_always_progresses_and_respects_the_cap(cap: int, overlap: int) -> None:
    text = _long_section(paragraphs=4)
    chunks = chunk_text(text, markdown_headings(text), max_tokens=cap, overlap_tokens=overlap)
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(count_words(text[c.start : c.end]) <= cap for c in chunks)


def test_embed_prefix_does_not_repeat_the_title() -> None:
    assert embed_prefix("Payments service", ["Payments service", "On-call"]) == (
        "Payments service > On-call"
    )
    assert embed_prefix("", []) == ""


def test_heading_dataclass_offsets_are_absolute() -> None:
    text = "x\n\n# H\n\nbody"
    (h,) = markdown_headings(text)
    assert h == Heading(1, "H", 3, 6)


# -- textstats --


def test_idf_formula_with_background_prior() -> None:
    stats = DocFreq.from_texts(["pgbouncer pool", "the pool", "the cat"], prior_docs=10)
    n = 3
    assert stats.idf("pgbouncer") == pytest.approx(math.log((n + 10 + 1) / (1 + 0 + 1)) + 1)
    # "the" is a common word: the prior counts it in every background document.
    assert stats.idf("the") == pytest.approx(math.log((n + 10 + 1) / (2 + 10 + 1)) + 1)
    assert stats.idf("unseen") > stats.idf("pgbouncer") > stats.idf("pool") > stats.idf("the")


def test_terms_keep_identifiers_whole() -> None:
    assert terms("ERR-5023 on db-3.prod.internal, v2.3!") == [
        "err-5023",
        "on",
        "db-3.prod.internal",
        "v2.3",
    ]


@pytest.mark.parametrize("text", ["thanks!", "+1", "lol ok", ":tada: :tada:", "sounds good to me"])
def test_filler(text: str) -> None:
    assert is_filler(text)


@pytest.mark.parametrize(
    "text", ["pgbouncer pool exhausted on db-3", "restart the ledger-sync worker please"]
)
def test_not_filler(text: str) -> None:
    assert not is_filler(text)
