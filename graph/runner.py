"""Researcher: run, resume and inspect research runs (the API others code against)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from graph import nodes
from graph.builder import build_graph
from graph.context import ReviewPoint, RunContext
from graph.events import EventSink, OnEvent
from graph.models import Caller, ResearchResult, RunOptions, TraceEvent
from graph.policies.base import Policy
from graph.resources import REGISTRY, RunScope, Services, make_executor, make_policy
from graph.review import ReviewDecision, checked
from graph.savers import Savers
from graph.settings import GraphSettings
from graph.trace_store import TraceStore
from retrieval.placement import engine_call
from tools.context import ToolContext

_RECURSION_LIMIT = 200  # super-steps; the loop's own bounds stop far earlier

# The run's caller as it is now (e.g. its API key's current groups), or CallerRevoked.
CallerSource = Callable[[], Caller]


class CallerRevoked(PermissionError):
    """The caller a run acts for may no longer run it (its API key was deleted): the run
    fails with this reason rather than go on with permissions nobody holds any more."""


class _FollowedTools:
    """A run's tool context that follows its caller: the scope is re-resolved from
    ``source`` every time a node reads it, and rebuilt when the groups or project changed.

    Every read a run makes goes through this context's filter: the tool calls of a round
    (taken as the round's execute step starts), the titles the planner may name and the
    permission re-check before synthesis. So a run resumed after a revocation, or running
    while one is applied, reads with the groups the key has now, from its next step on;
    what its pool already holds is re-checked before synthesis as before.
    """

    def __init__(self, tools: ToolContext, caller: Caller, source: CallerSource) -> None:
        self.tools = tools
        self.scope = (tuple(caller.groups), caller.project)
        self.source = source

    def current(self) -> ToolContext:
        caller = self.source()  # CallerRevoked propagates: the node, then the run, fails
        scope = (tuple(caller.groups), caller.project)
        if scope != self.scope:
            flt = self.tools.store.filter_for(list(caller.groups), caller.project)
            # The title index was listed under the old filter: dropped, listed again on
            # demand. Vectors embedded ahead depend on text only and are kept; the dense-leg
            # cache is keyed by the filter, so the old scope's rankings never match.
            self.tools = dataclasses.replace(self.tools, flt=flt, _titles=None)
            self.scope = scope
        return self.tools


class UnknownRun(KeyError):
    pass


class ReviewRequired(Exception):  # noqa: N818 - a pause, not an error
    """The run paused for a person's decision (``asked``: the point, round and proposed
    calls); ``Researcher.resume(run_id, decision=...)`` continues it."""

    def __init__(self, run_id: str, asked: dict[str, Any]) -> None:
        super().__init__(f"run {run_id} waits for a review of its {asked.get('point')}")
        self.run_id = run_id
        self.asked = asked


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
        self.savers = Savers(self.checkpoint_path, self.settings.checkpoint_url)
        self._graph_cache: Any = None  # the graph compiled against the latest saver
        self.policy = policy or make_policy(self.settings)
        self.search_fn = search_fn  # None: retrieval.pipeline.hybrid_search
        self.executor = make_executor(self.settings)
        # The key its runs' contexts name for the services above (graph.resources).
        self.services_key = f"researcher-{uuid.uuid4().hex}"

    async def aclose(self) -> None:
        """Close the checkpointer (awaiting its connection) and the trace store."""
        await self.savers.aclose()
        self._graph_cache = None
        REGISTRY.unregister(self.services_key)
        self.traces.close()

    def close(self) -> None:
        """Synchronous close (no loop needed): stops the checkpointer connections."""
        self.savers.close()
        self._graph_cache = None
        REGISTRY.unregister(self.services_key)
        self.traces.close()

    async def prune(self, before: float) -> int:
        """Delete the traces and checkpoints of runs created before ``before`` (epoch
        seconds), except runs paused for review; the number of runs deleted. The
        checkpoints go first: a run whose trace survives a failed pass is tried again."""
        run_ids = await asyncio.to_thread(self.traces.ended_before, before)
        if not run_ids:
            return 0
        saver = await self.savers.saver()
        for run_id in run_ids:
            await saver.adelete_thread(run_id)
        return await asyncio.to_thread(self.traces.delete_runs, run_ids)

    # -- running --

    async def run(
        self,
        question: str,
        caller: Caller,
        options: RunOptions,
        run_id: str | None = None,
        on_event: OnEvent | None = None,
        caller_source: CallerSource | None = None,
        review: list[ReviewPoint] | None = None,
    ) -> ResearchResult:
        """Run the loop for ``caller``. With ``caller_source`` the run follows the caller as
        it changes (see :class:`_FollowedTools`): its groups are read again at every step,
        and a revoked caller fails the run. With ``review=["plan"]`` the run pauses after
        its first plan: :class:`ReviewRequired`, until ``resume`` with a decision."""
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        run_id = run_id or uuid.uuid4().hex
        run_input = {
            "run_id": run_id,
            "question": question,
            "caller": caller.model_dump(),
            "options": options.model_dump(),
            "review": list(review or []),
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
        return await self._drive(True, run_input, sink, caller_source)

    async def resume(
        self,
        run_id: str,
        on_event: OnEvent | None = None,
        caller_source: CallerSource | None = None,
        decision: ReviewDecision | dict[str, Any] | None = None,
    ) -> ResearchResult:
        """Continue a run from its last checkpoint (pool intact, no finished step repeated);
        a run paused for review goes on with ``decision`` (without one it pauses again).

        The caller stored with the run is what it was when the run started. With
        ``caller_source`` the resumed run reads as the caller is now (a revocation applied
        by the restart that resumes it holds at once) and follows it from step to step;
        without, it keeps the stored caller (the CLI's runs, which have no key)."""
        run_input = self.traces.run_input(run_id)
        if run_input is None:
            raise UnknownRun(run_id)
        done = self.get_result(run_id)
        if done is not None:
            if caller_source is not None:  # finished before the stop: is it still theirs?
                await self._still_readable(done, caller_source())
            return done
        resume_with = self.check_review(decision) if decision is not None else None
        sink = EventSink(run_id, self.traces, on_event)
        extra: dict[str, Any] = {}
        if resume_with is not None:  # who decided what: in the trace
            extra["review"] = resume_with.model_dump(mode="json")
        resumed = await sink.emit("metadata", resumed=True, question=run_input["question"], **extra)
        sink.flush()
        sink.redo_before = resumed.seq
        return await self._drive(False, run_input, sink, caller_source, resume_with)

    def check_review(self, decision: ReviewDecision | dict[str, Any]) -> ReviewDecision:
        """A review decision as the run would take it, or InvalidReview (the run stays
        paused: check before resuming)."""
        return checked(decision, self.executor.catalog)

    async def _drive(
        self,
        new: bool,
        run_input: dict[str, Any],
        sink: EventSink,
        caller_source: CallerSource | None = None,
        decision: ReviewDecision | None = None,
    ) -> ResearchResult:
        run_id = run_input["run_id"]
        context = RunContext(
            question=run_input["question"],
            caller=Caller.model_validate(run_input["caller"]),
            options=RunOptions.model_validate(run_input["options"]),
            run_id=run_id,
            services=self.services_key,
            review=run_input.get("review") or [],
        )
        config: RunnableConfig = {
            "configurable": {"thread_id": run_id},
            "recursion_limit": _RECURSION_LIMIT,
        }
        services = Services(self.store, self.executor, self.policy, self.search_fn)
        REGISTRY.register(self.services_key, services)
        failed_in: dict[str, Any] = {}  # where an error is reported in the trace
        result: dict[str, Any] | None = None
        asked: list[Any] = []  # what the run pauses for (interrupts)
        try:
            scope = self._scope(context, caller_source)
            REGISTRY.open_run(run_id, scope)
            if new:  # round one's queries embed from here
                failed_in = {"node": "plan", "round": 1}  # the plan node's work, done early
                run = nodes.Run(context, services, scope, run_id, _unheard)
                await nodes.plan_ahead(run)
                failed_in = {}
            graph = await self._graph()
            graph_input: dict[str, Any] | Command[Any] | None = None
            if new or not (await graph.aget_state(config)).values:
                graph_input = {}  # new, or killed before its first checkpoint
            elif decision is not None:
                graph_input = Command(resume=decision.model_dump(mode="json"))
            async for namespace, mode, chunk in graph.astream(
                graph_input,
                config=config,
                context=context,
                stream_mode=["custom", "updates"],
                subgraphs=True,
                durability="sync",
            ):
                if mode == "custom":
                    await sink.add(chunk)
                    if chunk.get("type") == "node_end":
                        # A node's events in one transaction, before its update is kept
                        # (the node waits for this event to be handled).
                        sink.flush()
                    scope.handled_one()
                    continue
                sink.flush()  # whatever was emitted outside a node's start and end
                if not namespace and "synthesize" in chunk:
                    result = chunk["synthesize"]["result"]
                if not namespace and "__interrupt__" in chunk:
                    asked += [i.value for i in chunk["__interrupt__"]]
            if asked:
                self.traces.set_status(run_id, "input_required")
                raise ReviewRequired(run_id, asked[0])
            if result is None:
                raise RuntimeError("the research graph ended without a result")
            answer = ResearchResult.model_validate(result)
        except ReviewRequired:
            raise
        except Exception as exc:
            await sink.emit("error", **failed_in, error=f"{type(exc).__name__}: {exc}")
            sink.flush()
            self.traces.set_status(run_id, "failed")
            raise
        finally:
            REGISTRY.close_run(run_id)
            sink.flush()  # whatever a failed or cancelled node emitted
        self.traces.finish_run(run_id, "done", answer.model_dump(mode="json"))
        return answer

    def _scope(self, context: RunContext, caller_source: CallerSource | None) -> RunScope:
        """The run's scope: its tool context, following the caller with ``caller_source``."""
        caller = caller_source() if caller_source is not None else context.caller
        tools = ToolContext.for_caller(
            self.store, caller.groups, caller.project, default_k=context.options.k
        )
        tools.search_fn = self.search_fn
        if caller_source is None:
            return RunScope(tools_of=lambda: tools, paced=True)
        return RunScope(tools_of=_FollowedTools(tools, caller, caller_source).current, paced=True)

    async def _still_readable(self, result: ResearchResult, caller: Caller) -> None:
        """A result finished before a stop is handed over only if the caller may still read
        every passage it used (its answer quotes them): else CallerRevoked, as a run of a
        revoked key fails."""
        ids = [e.id for e in result.evidence]
        if not ids:
            return
        flt = self.store.filter_for(list(caller.groups), caller.project)
        readable = await engine_call(self.store, "get_records", self.store.get_records, ids, flt)
        lost = len(set(ids) - {r.id for r in readable})
        if lost:
            raise CallerRevoked(
                f"key revoked: the answer, finished before a restart, uses {lost} passage(s) "
                "this key may no longer read"
            )

    async def _graph(self) -> Any:
        saver = await self.savers.saver()
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


def _unheard(_: Any) -> None:
    """The stream writer of work done before the graph runs (it emits nothing)."""
