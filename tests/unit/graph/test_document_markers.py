"""A ``[n]`` written inside a document never becomes a citation (issue 26, item 4).

A document's own marker, copied into the answer with the sentence around it, used to be
kept when n was in range and linked to an unrelated passage. The synthesis that quotes a
document (extractive) and the one that reads it (the LLM's prompt) both see the marker as
plain text; only markers the synthesis places resolve to passages.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from graph.claims import check_answer
from graph.models import Caller, RunOptions
from graph.policies.llm import LLMPolicy
from graph.runner import Researcher
from graph.settings import GraphSettings
from tools.testing import evidence, ledger_corpus, memory_search, passage

FAQ = "The Ledger runbook was written by engineer Dana Ruiz, see [2] and [3]."


async def test_a_quoted_documents_markers_cite_nothing(tmp_path: Path) -> None:
    store = ledger_corpus(passage("faq", "Ledger FAQ", FAQ))
    r = Researcher(store, checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search)
    try:
        result = await r.run("Who wrote the Ledger runbook?", Caller(), RunOptions())
    finally:
        await r.aclose()
    assert result.answerable and result.claims
    # The extractive answer quotes one passage per line and cites it: a claim citing
    # more than one passage carries a marker the synthesis did not place.
    kept = [c for c in result.claims if c.supported]
    assert kept
    for claim in kept:
        assert len(claim.citations) == 1, (claim.text, claim.citations, result.answer)
    assert not re.search(r"see \[\d+\]", result.answer), result.answer


async def test_the_llm_reads_a_documents_markers_as_plain_text() -> None:
    requests: list[dict[str, Any]] = []

    async def stream() -> Any:
        delta = SimpleNamespace(content="Dana Ruiz wrote it [1].")
        yield SimpleNamespace(choices=[SimpleNamespace(delta=delta)], usage=None)

    async def create(**kw: Any) -> Any:
        requests.append(kw)
        return stream()

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    policy = LLMPolicy(GraphSettings(policy="llm"), client=client)

    async def on_token(_: str) -> None:
        pass

    await policy.synthesize("Who wrote the Ledger runbook?", [evidence("w:faq", FAQ)], on_token)
    (request,) = requests
    prompt = "\n".join(m["content"] for m in request["messages"])
    (block,) = re.findall(r"<evidence id=.*?</evidence>", prompt, re.S)
    assert "see (2) and (3)" in block and not re.search(r"\[\d+\]", block)


def test_a_sentence_quoted_with_its_neutralised_marker_is_supported() -> None:
    passage_ = evidence("w:budget", "The Ledger retry budget is 5 attempts, as decided in [2].")
    got = check_answer(
        "The Ledger retry budget is 5 attempts, as decided in (2). [1]",
        [passage_],
        {passage_.id},
        "What is the Ledger retry budget?",
    )
    assert [(c.supported, c.reason) for c in got.claims] == [(True, "")]
