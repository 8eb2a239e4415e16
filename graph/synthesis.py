"""The answer's node (``graph.builder``): one synthesis over the whole evidence pool, its
claims checked against the passages they cite (``graph.claims``), then the result."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.claims import StreamedFenceFilter, check_answer
from graph.context import RunContext
from graph.extractive import CANNOT_ANSWER, NO_SUPPORTED_CLAIM, extractive_answer_in_thread
from graph.nodes import Run, Step, pool_ranked, timed
from graph.state import ResearchState
from retrieval.placement import engine_call


async def synthesize(state: ResearchState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    return await timed("synthesize", state, runtime, _synthesize)


async def _synthesize(state: ResearchState, run: Run) -> Step:
    opts = run.ctx.options
    question = run.ctx.question
    policy = run.services.policy
    chosen = pool_ranked(state, run.scope.evidence)[: opts.budget]
    # Permission is checked again here: nothing unauthorised reaches synthesis or a citation.
    tools = run.scope.tools
    store = tools.store
    allowed = await engine_call(
        store, "get_records", store.get_records, [e.id for e in chosen], tools.flt
    )
    allowed_ids = {r.id for r in allowed}
    warnings: list[str] = []
    if len(allowed_ids) < len(chosen):
        warnings.append(
            f"{len(chosen) - len(allowed_ids)} evidence item(s) failed the permission re-check"
        )
    evidence = [e for e in chosen if e.id in allowed_ids]

    # Streamed tokens carry no prompt structure an LLM echoes ("</evidence>"): clients of
    # the token stream see what the checked answer would show.
    fence = StreamedFenceFilter()

    async def on_token(delta: str) -> None:
        text = fence.feed(delta)
        if text:
            run.emit("token", node="synthesize", round=state.get("round", 0), text=text)

    try:
        answer = await policy.synthesize(question, evidence, on_token)
    except Exception as exc:  # noqa: BLE001 - any policy failure falls back, and says so
        answer = await extractive_answer_in_thread(
            question, evidence, note=f"synthesis failed ({type(exc).__name__}): extractive answer"
        )
    if not answer.streamed:
        for line in answer.text.splitlines(keepends=True):
            await on_token(line)
    if rest := fence.flush():
        run.emit("token", node="synthesize", round=state.get("round", 0), text=rest)
    checked = check_answer(answer.text, evidence, allowed_ids, question)
    if answer.answerable and not answer.extractive and not any(c.supported for c in checked.claims):
        # An LLM answer none of whose claims its passages support is not an answer.
        answer = await extractive_answer_in_thread(
            question, evidence, note="no claim of the llm answer is supported: extractive answer"
        )
        checked = check_answer(answer.text, evidence, allowed_ids, question)
    if checked.removed_markers:
        warnings.append(
            f"removed {len(checked.removed_markers)} unresolvable citation(s): "
            + " ".join(checked.removed_markers)
        )
    dropped = [c for c in checked.claims if not c.supported]
    if dropped and answer.answerable:
        warnings.append(f"removed {len(dropped)} unsupported claim(s)")
    answerable = answer.answerable and any(c.supported for c in checked.claims)
    short = answer.short_answer if answerable else None
    if answerable:
        text = f"{short}\n\n{checked.text}" if short else checked.text
    else:
        text = answer.text if not answer.answerable else f"{CANNOT_ANSWER} {NO_SUPPORTED_CLAIM}"
    citations = checked.citations if answerable else []
    for c in citations:
        run.emit("citation", node="synthesize", n=c.n, evidence_id=c.evidence_id, title=c.title)
    for claim in checked.claims if answer.answerable else []:
        run.emit("claim", node="synthesize", **claim.model_dump(mode="json"))
    all_warnings = [*(state.get("warnings") or []), *answer.warnings, *warnings]
    result = {
        "run_id": run.run_id,
        "question": question,
        "mode": opts.mode,
        "short_answer": short,
        "answer": text,
        "answerable": answerable,
        "claims": [c.model_dump(mode="json") for c in checked.claims] if answer.answerable else [],
        "citations": [c.model_dump(mode="json") for c in citations],
        "evidence": [e.model_dump(mode="json") for e in evidence],
        "removed_citations": checked.removed_markers,
        "warnings": list(dict.fromkeys(all_warnings)),
        "bound_hit": state.get("bound_hit"),
        "rounds": state.get("round", 0),
        "tool_calls": state.get("tool_calls", 0),
        "usage": {
            "tokens": state.get("tokens", 0) + answer.tokens,
            "elapsed_s": round(state.get("elapsed_s", 0.0), 3),
            "pool_size": len(state.get("pool") or {}),
            "policy": policy.name,
        },
    }
    run.emit(
        "done",
        node="synthesize",
        round=state.get("round", 0),
        answerable=answerable,
        short_answer=short,
        bound_hit=state.get("bound_hit"),
        citations=len(citations),
        warnings=result["warnings"],
    )
    update = {"result": result, "warnings": answer.warnings + warnings}
    return Step(update, {"evidence": len(evidence), "citations": len(citations)})
