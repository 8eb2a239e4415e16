"""Researcher: run, resume and inspect research runs (the API others code against)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from graph import nodes
from graph.builder import build_graph
from graph.checkpoints import Checkpoints
from graph.context import RunContext
from graph.events import EventSink, OnEvent
from graph.models import Caller, ResearchResult, RunOptions, TraceEvent
from graph.policies.base import Policy
from graph.settings import GraphSettings
from graph.trace_store import TraceStore
from tools.context import ToolContext
from tools.executor import ToolExecutor

_RECURSION_LIMIT = 200  # super-steps; the loop's own bounds stop far earlier


def make_policy(settings: GraphSettings) -> Policy:
    if settings.policy == "llm":
        from graph.policies.llm import LLMPolicy

        return LLMPolicy(settings)
    from graph.policies.rule import RulePolicy

    return RulePolicy()


class UnknownRun(KeyError):
    pass


class Researcher:
    def __init__(
        self,
        store: Any,
        settings: GraphSettings | None = None,
        checkpointer_path: Path | None = None,
        policy: Policy | None = None,
        search_fn: Any = None,
    ) -> None:
        self.store = store
        self.settings = settings or GraphSettings()
        home = Path(getattr(getattr(store, "settings", None), "home", None) or ".waypoint")
        self.checkpoint_path = checkpointer_path or home / "runs.sqlite"
        self.traces = TraceStore(self.checkpoint_path.with_name("traces.sqlite"))
        # One saver per event loop, shared by every run on it (opened on first use).
        self.checkpoints = Checkpoints(
            self.checkpoint_path,
            self.settings.checkpoint_url,
            every=self.settings.checkpoint_every,
        )
        self._graph_cache: Any = None  # the graph compiled against the latest saver
        self.policy = policy or make_policy(self.settings)
        self.search_fn = search_fn  # None: retrieval.pipeline.hybrid_search
        self.executor = ToolExecutor(
            max_concurrency=self.settings.max_concurrency,
            timeout_s=self.settings.tool_timeout_s,
            max_retries=self.settings.tool_max_retries,
        )

    async def aclose(self) -> None:
        """Close the checkpointer (awaiting its connection) and the trace store."""
        await self.checkpoints.aclose()
        self._graph_cache = None
        self.traces.close()

    def close(self) -> None:
        """Synchronous close (no loop needed): stops the checkpointer connections."""
        self.checkpoints.close()
        self._graph_cache = None
        self.traces.close()

    # -- running --

    async def run(
        self,
        question: str,
        caller: Caller,
        options: RunOptions,
        run_id: str | None = None,
        on_event: OnEvent | None = None,
    ) -> ResearchResult:
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        run_id = run_id or uuid.uuid4().hex
        run_input = {
            "run_id": run_id,
            "question": question,
            "caller": caller.model_dump(),
            "options": options.model_dump(),
        }
        self.traces.create_run(run_id, caller.user, question, run_input)
        sink = EventSink(run_id, self.traces, on_event)
        await sink.emit(
            "metadata",
            question=question,
            user=caller.user,
            project=caller.project,
            mode=options.mode,
            options=options.model_dump(),
            policy=self.policy.name,
        )
        sink.flush()
        return await self._drive(run_input, run_input, sink)

    async def resume(self, run_id: str, on_event: OnEvent | None = None) -> ResearchResult:
        """Continue a run from its last checkpoint (pool intact, no finished round repeated;
        with ``checkpoint_every="round"`` an unfinished round's retrieval runs again)."""
        run_input = self.traces.run_input(run_id)
        if run_input is None:
            raise UnknownRun(run_id)
        done = self.get_result(run_id)
        if done is not None:
            return done
        sink = EventSink(run_id, self.traces, on_event)
        await sink.emit("metadata", resumed=True, question=run_input["question"])
        sink.flush()
        return await self._drive(None, run_input, sink)

    async def _drive(
        self, graph_input: dict[str, Any] | None, run_input: dict[str, Any], sink: EventSink
    ) -> ResearchResult:
        run_id = run_input["run_id"]
        caller = Caller.model_validate(run_input["caller"])
        options = RunOptions.model_validate(run_input["options"])
        tools = ToolContext.for_caller(
            self.store, caller.groups, caller.project, default_k=options.k
        )
        tools.search_fn = self.search_fn
        context = RunContext(tools=tools, executor=self.executor, policy=self.policy, sink=sink)
        config: RunnableConfig = {
            "configurable": {"thread_id": run_id},
            "recursion_limit": _RECURSION_LIMIT,
        }
        failed_in: dict[str, Any] = {}  # where an error is reported in the trace
        try:
            if graph_input is not None:  # a new run: round one's queries embed from here
                failed_in = {"node": "plan", "round": 1}  # the plan node's work, done early
                await nodes.plan_ahead(context, graph_input)
                failed_in = {}
            graph = await self._graph()
            if graph_input is None:
                snapshot = await graph.aget_state(config)
                if not snapshot.values:  # killed before the first checkpoint
                    graph_input = {
                        k: run_input[k] for k in ("run_id", "question", "caller", "options")
                    }
            out = await graph.ainvoke(
                graph_input, config=config, context=context, durability="sync"
            )
            result = ResearchResult.model_validate(out["result"])
        except Exception as exc:
            await sink.emit("error", **failed_in, error=f"{type(exc).__name__}: {exc}")
            sink.flush()
            self.traces.set_status(run_id, "failed")
            raise
        finally:
            sink.flush()  # whatever a failed or cancelled node emitted
        self.traces.finish_run(run_id, "done", result.model_dump(mode="json"))
        return result

    async def _graph(self) -> Any:
        saver = await self.checkpoints.saver()
        graph = self._graph_cache
        if graph is None or graph.checkpointer is not saver:
            graph = self._graph_cache = build_graph(saver)
        return graph

    # -- inspecting --

    def get_trace(self, run_id: str) -> list[TraceEvent]:
        return self.traces.events(run_id)

    def list_runs(self, user: str) -> list[dict[str, Any]]:
        return self.traces.list_runs(user)

    def get_result(self, run_id: str) -> ResearchResult | None:
        data = self.traces.result(run_id)
        return ResearchResult.model_validate(data) if data else None
