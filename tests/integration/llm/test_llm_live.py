"""The LLM policy against a real llama.cpp server (SmolLM2-135M) over a real Store.

The model is too small to judge sufficiency; these tests check the protocol path:
schema-constrained plan and verdict parse, the answer streams, a dead server degrades.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph.models import Caller, RunOptions, TraceEvent
from graph.policies.llm import LLMPolicy
from graph.runner import Researcher
from graph.settings import GraphSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

QUESTION = "Which group does the author of the Ledger runbook head?"


@pytest.fixture
def corpus_store(store: Any, record_factory: Callable[..., Any]) -> Any:
    store.ingest(
        [
            record_factory(
                "runbook", "The Ledger runbook was written by Dana Ruiz.", title="Ledger runbook"
            ),
            record_factory(
                "dana", "Dana Ruiz heads the Payments Platform group.", title="Dana Ruiz"
            ),
            record_factory("cafe", "The cafeteria opens at eight.", title="Cafeteria"),
        ]
    )
    return store


def _researcher(store: Any, base_url: str, tmp_path: Path, **kw: Any) -> Researcher:
    settings = GraphSettings(
        policy="llm",
        llm_base_url=base_url,
        llm_timeout_s=kw.pop("timeout", 240),
        llm_max_retries=kw.pop("retries", 1),
        llm_max_answer_tokens=64,
    )
    policy = kw.pop("policy", None)
    return Researcher(
        store,
        settings,
        checkpointer_path=tmp_path / "runs.sqlite",
        policy=policy(settings) if policy else None,
    )


async def test_plan_and_verdict_parse_and_the_answer_streams(
    llama_server: Any, corpus_store: Any, tmp_path: Path
) -> None:
    r = _researcher(corpus_store, llama_server.base_url, tmp_path)
    assert isinstance(r.policy, LLMPolicy)
    events: list[TraceEvent] = []

    async def collect(e: TraceEvent) -> None:
        events.append(e)

    try:
        result = await r.run(
            QUESTION, Caller(), RunOptions(max_rounds=1, budget=3), on_event=collect
        )
    finally:
        await r.aclose()
    failed = [w for w in result.warnings if "llm" in w and "failed" in w]
    assert not failed, failed  # plan, verdict and answer all came from the model
    assert [e for e in events if e.type == "plan"][0].data["calls"]
    assert all(
        e.data["decision"] in ("enough", "more", "next") for e in events if e.type == "round"
    )
    tokens = [e for e in events if e.type == "token"]
    done = next(e for e in events if e.type == "done")
    assert len(tokens) > 1 and tokens[-1].seq < done.seq
    assert result.usage["tokens"] > 0


async def test_killing_the_server_mid_run_degrades_to_the_extractive_answer(
    llama_server_factory: Callable[[], Any], corpus_store: Any, tmp_path: Path
) -> None:
    server = llama_server_factory()
    r = _researcher(corpus_store, server.base_url, tmp_path, timeout=30, retries=1)

    async def kill_before_answer(e: TraceEvent) -> None:
        if e.type == "node_start" and e.node == "synthesize":
            server.kill()

    try:
        result = await r.run(
            QUESTION, Caller(), RunOptions(max_rounds=1, budget=3), on_event=kill_before_answer
        )
    finally:
        await r.aclose()
    assert any("llm answer failed" in w and "extractive" in w for w in result.warnings)
    # The fallback is the extractive synthesis over this run's evidence: grounded either as
    # cited sentences or as an explicit refusal (a 135M planner's one round may not reach
    # both hops), never an empty or uncited free-text answer.
    assert result.answer and result.evidence
    evidence_ids = {e.id for e in result.evidence}
    assert all(c.evidence_id in evidence_ids for c in result.citations)
    assert result.citations or "can't answer" in result.answer


class _FabricatingPolicy(LLMPolicy):
    """The real model's answer, then one claim quoted from a passage and one made up."""

    async def synthesize(self, question: str, evidence: list[Any], on_token: Any) -> Any:
        answer = await super().synthesize(question, evidence, on_token)
        quoted = f"{evidence[0].text} [1]"
        fabricated = "The Payments Platform group has 4210 members [1]."
        text = f"{answer.text}\n{quoted}\n{fabricated}"
        return answer.model_copy(update={"text": text, "answerable": True, "streamed": False})


async def test_a_fabricated_claim_in_the_llm_answer_is_removed_by_the_check(
    llama_server: Any, corpus_store: Any, tmp_path: Path
) -> None:
    r = _researcher(corpus_store, llama_server.base_url, tmp_path, policy=_FabricatingPolicy)
    try:
        result = await r.run(QUESTION, Caller(), RunOptions(max_rounds=1, budget=3))
    finally:
        await r.aclose()
    assert result.evidence, "the run found no passage to cite"
    made_up = [c for c in result.claims if "4210" in c.text]
    assert made_up and not made_up[0].supported
    assert "4210" in made_up[0].reason
    assert "4210" not in result.answer
    # The quoted claim stands, so the answer is the model's, not the extractive fallback.
    assert any(c.supported and result.evidence[0].text in c.text for c in result.claims)
    assert any("unsupported claim" in w for w in result.warnings)
    assert result.citations and all(c.n >= 1 for c in result.citations)
