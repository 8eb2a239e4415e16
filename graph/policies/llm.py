"""LLMPolicy: any OpenAI-compatible server plans, assesses and writes the answer.

Plan and verdict come back as JSON constrained by a schema; the answer streams. Every call
has a timeout and tenacity retries for transient errors. When the model fails or returns
nothing, the rule policy's decision (plan, verdict) or the extractive answer is used
instead and a warning says so: a run never ends on an LLM error.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any, Literal

import openai
from pydantic import BaseModel, Field, ValidationError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from graph.claims import neutralise_markers
from graph.extractive import CANNOT_ANSWER, extractive_answer_in_thread
from graph.policies.base import Answer, AssessStep, OnToken, PlanStep, Verdict, View
from graph.policies.ranking import rank_pool
from graph.policies.rule import RulePolicy
from graph.prompts import fence, load_prompts
from graph.settings import GraphSettings
from graph.telemetry import ChatRecord, chat_span
from tools.evidence import Evidence
from tools.executor import ToolCall

_TRANSIENT = (
    openai.APIConnectionError,  # includes APITimeoutError
    openai.RateLimitError,
    openai.InternalServerError,
)
_ARG_NAME = {
    "search_knowledge": "query",
    "lookup_entity": "name",
    "get_document": "id",
    "get_neighbors": "chunk_id",
}
MAX_CALLS = 4
_EVIDENCE_CHARS = 700  # per passage in the assess prompt: enough to judge, cheap to read

ToolName = Literal["search_knowledge", "lookup_entity", "get_document", "get_neighbors"]


class PlannedCall(BaseModel):
    # Lengths are bounded in the schema so a constrained decoder cannot ramble.
    tool: ToolName
    input: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=160)


class PlanOut(BaseModel):
    calls: list[PlannedCall] = Field(default_factory=list, max_length=MAX_CALLS)


class VerdictOut(BaseModel):
    decision: Literal["enough", "more", "next"]
    reason: str = Field(default="", max_length=200)
    missing: list[str] = Field(default_factory=list, max_length=5)
    calls: list[PlannedCall] = Field(default_factory=list, max_length=MAX_CALLS)


class LLMUnavailable(RuntimeError):
    pass


def _is_dialect_error(exc: BaseException) -> bool:
    """The server rejected the OpenAI ``json_schema`` response format (llama-cpp-python
    answers 500 with a validation error naming ``response_format``)."""
    if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
        return True
    return isinstance(exc, openai.APIStatusError) and "response_format" in str(exc)


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, _TRANSIENT) and not _is_dialect_error(exc)


def _to_calls(planned: list[PlannedCall], k: int) -> list[ToolCall]:
    out = []
    for p in planned[:MAX_CALLS]:
        args: dict[str, Any] = {_ARG_NAME[p.tool]: p.input.strip()}
        if p.tool == "search_knowledge":
            args["k"] = k
        out.append(ToolCall(tool=p.tool, args=args, reason=p.reason or "llm"))
    return out


class LLMPolicy:
    name = "llm"

    def __init__(self, settings: GraphSettings, client: Any = None) -> None:
        self.settings = settings
        self.prompts = load_prompts(settings.prompts_file)
        self.client = client or openai.AsyncOpenAI(
            base_url=settings.llm_base_url,
            api_key=settings.api_key(),
            timeout=settings.llm_timeout_s,
            max_retries=0,  # tenacity below owns retries, so they are bounded in one place
        )
        self.rules = RulePolicy()
        self._schema_style: Literal["json_schema", "json_object"] = "json_schema"

    # -- the model calls --

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            stop=stop_after_attempt(self.settings.llm_max_retries + 1),
            wait=wait_exponential(multiplier=0.3, max=3.0),
            retry=retry_if_exception(_is_transient),
            reraise=True,
        )

    def _chat_span(self, purpose: str, max_tokens: int) -> AbstractContextManager[ChatRecord]:
        return chat_span(
            purpose,
            self.settings.llm_model,
            self.settings.llm_base_url,
            max_tokens=max_tokens,
            temperature=0,
        )

    def _response_format(self, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        if self._schema_style == "json_object":  # llama-cpp-python's dialect
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    async def _structured(
        self, name: str, model: type[BaseModel], system: str, user: str
    ) -> tuple[BaseModel, int]:
        messages: list[Any] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        schema = model.model_json_schema()
        for _dialect in range(2):
            try:
                async for attempt in self._retrying():
                    with attempt, self._chat_span(name, max_tokens=700) as chat:
                        resp: Any = await self.client.chat.completions.create(  # type: ignore[call-overload]
                            model=self.settings.llm_model,
                            messages=messages,
                            response_format=self._response_format(name, schema),
                            temperature=0,
                            max_tokens=700,
                        )
                        chat.record(resp)
                break
            except openai.APIStatusError as exc:
                # A server that does not know the OpenAI json_schema format: use the
                # schema-in-json_object dialect from now on.
                if not _is_dialect_error(exc) or self._schema_style == "json_object":
                    raise
                self._schema_style = "json_object"
        content = (resp.choices[0].message.content or "").strip() if resp.choices else ""
        if not content:
            raise LLMUnavailable(f"{name}: the model returned nothing")
        tokens = getattr(resp.usage, "total_tokens", 0) or 0
        try:
            return model.model_validate(json.loads(content)), tokens
        except (json.JSONDecodeError, ValidationError) as exc:
            raise LLMUnavailable(f"{name}: unparseable output ({type(exc).__name__})") from exc

    # -- policy --

    async def plan(self, view: View) -> PlanStep:
        if view.options.mode == "hybrid":
            return await self.rules.plan(view)
        catalog = "\n".join(f"- {t['name']}: {t['description']}" for t in view.catalog.describe())
        system = self.prompts["PLAN_SYSTEM"].format(
            max_calls=MAX_CALLS, catalog=catalog, scope=view.project or "all sources in scope"
        )
        user = self.prompts["PLAN_USER"].format(question=view.question)
        try:
            out, tokens = await self._structured("plan", PlanOut, system, user)
        except (LLMUnavailable, openai.OpenAIError) as exc:
            step = await self.rules.plan(view)
            step.warnings.append(f"llm plan failed ({_why(exc)}): rule plan used")
            return step
        calls = _to_calls(out.calls, view.options.k)  # type: ignore[attr-defined]
        if not calls:  # an empty plan would end the run before it starts
            calls = [
                ToolCall(
                    tool="search_knowledge", args={"query": view.question, "k": view.options.k}
                )
            ]
        return PlanStep(calls=calls, tokens=tokens)

    async def assess(self, view: View) -> AssessStep:
        if view.options.mode == "hybrid":
            return await self.rules.assess(view)
        evidence = "\n".join(
            fence(i, e.title, e.text[:_EVIDENCE_CHARS], self.prompts["EVIDENCE_BLOCK"])
            for i, e in enumerate(view.ranked[: view.options.budget], start=1)
        )
        system = self.prompts["ASSESS_SYSTEM"].format(
            max_calls=MAX_CALLS, tools=", ".join(_ARG_NAME)
        )
        user = self.prompts["ASSESS_USER"].format(question=view.question, evidence=evidence)
        try:
            out, tokens = await self._structured("verdict", VerdictOut, system, user)
        except (LLMUnavailable, openai.OpenAIError) as exc:
            step = await self.rules.assess(view)
            step.warnings.append(f"llm assess failed ({_why(exc)}): rule verdict used")
            return step
        v: VerdictOut = out  # type: ignore[assignment]
        verdict = Verdict(
            decision=v.decision,
            reason=v.reason,
            missing=v.missing,
            next_calls=_to_calls(v.calls, view.options.k) if v.decision != "enough" else [],
        )
        return AssessStep(verdict=verdict, tokens=tokens)

    def rank(self, view: View) -> list[tuple[str, float]]:
        return rank_pool(view.question, view.ranked, view.titles, view.options.budget)

    async def synthesize(
        self, question: str, evidence: list[Evidence], on_token: OnToken
    ) -> Answer:
        if not evidence:
            return await extractive_answer_in_thread(question, evidence)
        blocks = "\n".join(
            # A "[3]" written inside a document must not read as a citation the model makes.
            fence(n, e.title, neutralise_markers(e.text), self.prompts["EVIDENCE_BLOCK"])
            for n, e in enumerate(evidence, start=1)
        )
        messages: list[Any] = [
            {"role": "system", "content": self.prompts["ANSWER_SYSTEM"]},
            {
                "role": "user",
                "content": self.prompts["ANSWER_USER"].format(evidence=blocks, question=question),
            },
        ]
        parts: list[str] = []
        try:
            async for attempt in self._retrying():
                with attempt:
                    if parts:  # a stream already started: never retry into duplicated text
                        raise LLMUnavailable("the answer stream broke mid-way")
                    max_tokens = self.settings.llm_max_answer_tokens
                    with self._chat_span("answer", max_tokens=max_tokens) as chat:
                        stream: Any = await self.client.chat.completions.create(
                            model=self.settings.llm_model,
                            messages=messages,
                            stream=True,
                            # the last chunk then carries the token usage
                            stream_options={"include_usage": True},
                            temperature=0,
                            max_tokens=max_tokens,
                        )
                        async for chunk in stream:
                            delta = chunk.choices[0].delta.content if chunk.choices else None
                            if delta:
                                parts.append(delta)
                                await on_token(delta)
                            else:  # the role, the finish reason, the usage
                                chat.record(chunk)
        except (LLMUnavailable, openai.OpenAIError) as exc:
            return await extractive_answer_in_thread(
                question, evidence, note=f"llm answer failed ({_why(exc)}): extractive answer"
            )
        text = "".join(parts).strip()
        if not text:
            return await extractive_answer_in_thread(
                question, evidence, note="llm returned an empty answer: extractive answer"
            )
        return Answer(
            text=text,
            answerable=not text.startswith(CANNOT_ANSWER),
            tokens=sum(len(p) for p in parts) // 4,  # streamed: no usage block; ~4 chars/token
            streamed=True,
        )


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
