"""Run every requested mode over one evaluation set, on one index, in one process.

Modes share the index, the questions and the evidence budget B, so their figures compare
side by side:
- ``lexical`` / ``dense``: one leg of the single-round pipeline, no rerank, top B;
- ``hybrid``: the whole single-round pipeline (both legs, RRF, cap, rerank if a
  cross-encoder is configured), top B;
- ``iterative``: the research loop; its evidence is what synthesis read (capped at B),
  and it produces the answer contract: a short answer (or none), the answer text, its
  claims with their support verdicts, and citations.

Only the questions of the chosen half are asked (``EvalSet.split``); the index holds the
whole corpus either way.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsets.loaders import EvalQuestion, EvalSet
from evalsets.metrics import Outcome, summarize_with_types

SINGLE_ROUND_LEGS: dict[str, list[str]] = {
    "lexical": ["lexical"],
    "dense": ["dense"],
    "hybrid": ["lexical", "dense"],
}
MODES = ("lexical", "dense", "hybrid", "iterative")


class UnknownModeError(ValueError):
    pass


def parse_modes(spec: str, valid: Sequence[str] = MODES) -> list[str]:
    """``"lexical,hybrid"`` -> ordered, deduplicated list; ``"all"`` -> every valid mode."""
    names = [m.strip().lower() for m in spec.split(",") if m.strip()]
    if not names:
        raise UnknownModeError(f"no mode given; valid: {', '.join(valid)}, all")
    if "all" in names:
        return list(valid)
    unknown = [m for m in names if m not in valid]
    if unknown:
        raise UnknownModeError(f"unknown mode {', '.join(unknown)}; valid: {', '.join(valid)}, all")
    return list(dict.fromkeys(names))


def iterative_available() -> str | None:
    """None when the research loop can run, else why not."""
    try:
        from graph.runner import Researcher  # noqa: F401
    except ImportError as exc:
        return f"graph.runner.Researcher is not importable ({exc})"
    return None


def _hit_text(title: str, text: str) -> str:
    return f"{title}\n{text}" if title else text


def _outcome(q: EvalQuestion) -> Outcome:
    return Outcome(
        qid=q.id,
        type=q.type,
        expect=q.expect,
        gold=list(q.gold),
        answers=q.answers,
    )


@dataclass
class ModeRunner:
    """Answers one question in one mode and returns its :class:`Outcome`."""

    store: Any
    mode: str
    budget: int
    _researcher: Any = field(default=None, init=False)
    _scratch: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.mode == "iterative":
            from graph.runner import Researcher

            # Checkpoints and traces of eval runs are throwaway: keep them out of the
            # cached index home so reuse stays clean and nothing accumulates.
            self._scratch = tempfile.TemporaryDirectory(prefix="waypoint-eval-runs-")
            self._researcher = Researcher(
                self.store, checkpointer_path=Path(self._scratch.name) / "runs.sqlite"
            )

    async def aclose(self) -> None:
        if self._researcher is not None:
            # The checkpointer's connection lives on this event loop: close it here.
            aclose = getattr(self._researcher, "aclose", None)
            if aclose is not None:
                await aclose()
            else:
                self._researcher.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    async def answer(self, q: EvalQuestion) -> Outcome:
        out = _outcome(q)
        start = time.perf_counter()
        if self.mode == "iterative":
            await self._iterative(q, out)
        else:
            await self._single_round(q, out)
        out.seconds = time.perf_counter() - start
        return out

    async def _single_round(self, q: EvalQuestion, out: Outcome) -> None:
        from retrieval.pipeline import hybrid_search
        from retrieval.search_models import SearchOptions

        flt = self.store.filter_for(q.groups)
        options = SearchOptions(
            k=self.budget,
            legs=SINGLE_ROUND_LEGS[self.mode],
            rerank=self.mode == "hybrid",
            explain_depth=self.budget,  # only the hits are scored: no full ranked lists
        )
        result = await hybrid_search(self.store, q.question, flt, options)
        hits = result.hits[: self.budget]
        out.evidence_ids = [h.doc_id for h in hits]
        out.evidence_texts = [_hit_text(h.title, h.text) for h in hits]

    async def _iterative(self, q: EvalQuestion, out: Outcome) -> None:
        from graph.models import Caller, RunOptions

        result = await self._researcher.run(
            q.question,
            Caller(user=q.user, groups=list(q.groups)),
            RunOptions(mode="iterative", budget=self.budget),
        )
        evidence = result.evidence[: self.budget]
        out.evidence_ids = [e.doc_id for e in evidence]
        out.evidence_texts = [_hit_text(e.title, e.text) for e in evidence]
        out.answer = result.answer or ""
        out.short_answer = result.short_answer
        out.claims = [c.supported for c in result.claims]
        out.cited = [c.doc_id for c in result.citations]
        out.refused = not result.answerable
        out.rounds = result.rounds
        out.tool_calls = result.tool_calls


ProgressFn = Callable[[str, int], None]  # (mode, questions done so far)


async def run_mode(
    store: Any,
    mode: str,
    questions: Sequence[EvalQuestion],
    budget: int,
    on_progress: ProgressFn | None = None,
) -> tuple[list[Outcome], list[str]]:
    """Questions one after another (latency per question stays meaningful).

    A question whose run raises is recorded as a miss with its error, not dropped: the
    figures must not improve because a question crashed.
    """
    runner = ModeRunner(store, mode, budget)
    outcomes: list[Outcome] = []
    errors: list[str] = []
    try:
        for i, q in enumerate(questions, start=1):
            try:
                outcomes.append(await runner.answer(q))
            except Exception as exc:  # recorded per question, counted in "errors"
                out = _outcome(q)
                out.error = f"{type(exc).__name__}: {exc}"
                if mode == "iterative":
                    out.answer, out.cited, out.refused = "", [], False
                    out.short_answer, out.claims = None, []
                outcomes.append(out)
                errors.append(f"{mode} {q.id}: {out.error}")
            if on_progress:
                on_progress(mode, i)
    finally:
        await runner.aclose()
    return outcomes, errors


@dataclass
class EvalReport:
    dataset: str
    questions: int
    corpus_passages: int
    budget: int
    modes: dict[str, dict[str, Any]]
    skipped_rows: int
    errors: list[str] = field(default_factory=list)
    split: str = "all"  # the half of the questions asked (tune / report / all)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "questions": self.questions,
            "corpus_passages": self.corpus_passages,
            "budget": self.budget,
            "modes": self.modes,
            "skipped_rows": self.skipped_rows,
        }


async def evaluate(
    store: Any,
    evalset: EvalSet,
    modes: Sequence[str],
    budget: int,
    on_progress: ProgressFn | None = None,
) -> EvalReport:
    results: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for mode in modes:
        outcomes, mode_errors = await run_mode(store, mode, evalset.questions, budget, on_progress)
        results[mode] = summarize_with_types(outcomes)
        errors.extend(mode_errors)
    return EvalReport(
        dataset=evalset.dataset,
        questions=len(evalset.questions),
        corpus_passages=len(evalset.records),
        budget=budget,
        modes=results,
        skipped_rows=len(evalset.skipped),
        errors=errors,
        split=evalset.split,
    )


def evaluate_sync(*args: Any, **kwargs: Any) -> EvalReport:
    return asyncio.run(evaluate(*args, **kwargs))
