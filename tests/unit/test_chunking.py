"""Chunking only slices the parent text; heading paths, caps and overlap hold."""

from __future__ import annotations

import math
import random

import pytest

from retrieval.chunking import (
    EmbedBudget,
    Heading,
    TokenIndex,
    bounded_prefix,
    chunk_text,
    embed_prefix,
    embed_text,
    fits_one_chunk,
    markdown_headings,
    section_cap,
    split_span,
)
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


# -- sizes in a model's tokens, prefix included --


class Trigrams:
    """A stand-in subword tokenizer: every word is cut into pieces of three characters, and
    each punctuation mark is a token of its own (as in BERT's pre-tokenizer)."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        import re

        out: list[tuple[int, int]] = []
        for m in re.finditer(r"\w+|[^\w\s]", text):
            out.extend((i, min(i + 3, m.end())) for i in range(m.start(), m.end(), 3))
        return out


TRI = Trigrams()


def _embedded_size(text: str, chunk, title: str, budget: EmbedBudget) -> int:  # type: ignore[no-untyped-def]
    return budget.count(
        embed_text(title, chunk.heading_path, text[chunk.start : chunk.end], budget)
    )


def test_token_index_counts_slices_like_tokenizing_them() -> None:
    text = _long_section(paragraphs=3)
    index = TokenIndex(text, TRI)
    rng = random.Random(3)
    cuts = [m.start() for m in _words(text, 0, len(text))] + [len(text)]
    for _ in range(200):
        a, b = sorted(rng.sample(cuts, 2))
        assert index.count(a, b) == len(TRI.spans(text[a:b]))
    assert index.count(5, 5) == 0


def test_chunks_and_their_prefix_fit_the_budget() -> None:
    text = _long_section(paragraphs=6)
    budget = EmbedBudget(TRI, 40)
    title = "Payments service handbook"
    chunks = chunk_text(text, markdown_headings(text), 256, 8, title=title, budget=budget)
    assert len(chunks) > 5
    for c in chunks:
        assert _embedded_size(text, c, title, budget) <= 40
    # The same chunking without a budget counts words and ignores the prefix.
    assert len(chunk_text(text, markdown_headings(text), 256, 8)) == 1


def test_section_cap_subtracts_the_prefix_and_a_colon() -> None:
    budget = EmbedBudget(TRI, 40)
    assert section_cap(100, "", (), budget) == 40
    # "Payments" = 3 trigrams, ":" = 1
    assert section_cap(100, "Payments", (), budget) == 36
    assert section_cap(100, "Payments", ("Payments",), budget) == 36  # not repeated
    assert section_cap(20, "Payments", (), budget) == 20
    assert section_cap(100, "Payments", ("On-call",), None) == 100
    # A prefix takes at most a quarter of the budget (it is cut to that in embed_text).
    assert section_cap(100, "x" * 300, (), budget) == 40 - 10 - 1


def test_long_prefix_is_cut_to_a_quarter_of_the_budget() -> None:
    budget = EmbedBudget(TRI, 40)
    prefix = bounded_prefix("Alpha beta gamma > delta epsilon zeta eta theta", budget)
    assert budget.count(prefix) <= 10 and "Alpha beta".startswith(prefix[:5])
    assert bounded_prefix("short", budget) == "short"
    assert budget.count(bounded_prefix("y" * 500, budget)) <= 10
    text = "Body text here."
    assert embed_text("Title", ["Head"], text, budget) == "Title > Head: Body text here."
    long_title = "word " * 40
    embedded = embed_text(long_title, [], text, budget)
    assert embedded.endswith(": " + text)
    assert budget.count(embedded) <= 10 + 1 + budget.count(text)


def test_a_word_longer_than_the_cap_is_cut_on_token_boundaries() -> None:
    text = "start " + "abcdefghij" * 30 + " end"
    index = TokenIndex(text, TRI)
    spans = split_span(text, 0, len(text), 10, 2, index=index)
    assert len(spans) >= 10
    assert all(len(TRI.spans(text[s:e])) <= 10 for s, e in spans)
    assert text[spans[0][0] :].startswith("start")
    assert text[: spans[-1][1]].endswith("end")
    covered = "".join(text[s:e] for s, e in spans)
    assert covered.count("abcdefghij") >= 30  # nothing lost (overlap may repeat)


def test_fits_one_chunk() -> None:
    budget = EmbedBudget(TRI, 12)
    assert fits_one_chunk("one two", 256, title="T", budget=budget)
    text = "one two three four five six seven"  # 11 trigrams
    assert fits_one_chunk(text, 256, budget=budget)
    assert not fits_one_chunk(text, 256, title="Title", budget=budget)  # + "Tit", "le", ":"
    assert fits_one_chunk("one two three four five", 5)  # words, no budget


def test_the_model_tokenizer_counts_what_the_model_reads() -> None:
    from retrieval.chunking import embed_budget, model_tokenizer
    from retrieval.settings import RetrievalSettings

    model = RetrievalSettings().embedding_model
    tok = model_tokenizer(model)
    if tok is None:
        pytest.skip("the bundled embedding model is not installed")
    assert (tok.max_length, tok.special_tokens, tok.text_limit) == (256, 2, 254)
    text = "Café: ERR-4012 on shared_buffers " * 60  # longer than the file's own truncation
    assert tok.count(text) == len(tok.spans(text)) + 2 > 256
    short = "Café ERR-4012"
    assert [short[s:e] for s, e in tok.spans(short)] == [
        "Café",
        "ER",
        "R",
        "-",
        "401",
        "2",
    ]
    budget = embed_budget(model)
    assert budget is not None and budget.limit == 254
    doc = "# Title\n\n" + text
    for c in chunk_text(doc, markdown_headings(doc), 256, 32, title="Title", budget=budget):
        assert tok.count(embed_text("Title", c.heading_path, doc[c.start : c.end], budget)) <= 256
    assert model_tokenizer("/nonexistent/model") is None
    assert embed_budget("/nonexistent/model") is None


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
