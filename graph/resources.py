"""The live objects runs use, found from their plain-data context (``graph.context``).

``Services`` are shared by every run of a process: the store, the tool executor, the
policy. A :class:`graph.runner.Researcher` registers its own under a key it names in each
run's context; a run whose context names ``"default"`` (``langgraph dev``, the SDK) gets
services built once from the ``WAYPOINT_*`` settings.

A ``RunScope`` is one run's: the caller's tool context (its ACL filter, the titles it may
read, the queries embedded ahead), the evidence validated so far and round one's plan if
it was made ahead. The runner opens it before the run and closes it after; a node of a
run nobody opened (a run started by LangGraph tooling) gets one made from its context.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graph.context import DEFAULT_SERVICES, RunContext
from graph.policies.base import PlanStep, Policy
from graph.settings import GraphSettings
from tools.context import ToolContext
from tools.evidence import Evidence
from tools.executor import ToolExecutor

_MADE_BY_NODES = 256  # run scopes made by nodes for runs nobody opened, kept at once


@dataclass
class Services:
    store: Any
    executor: ToolExecutor
    policy: Policy
    search_fn: Any = None  # None: retrieval.pipeline.hybrid_search


@dataclass
class RunScope:
    tools_of: Callable[[], ToolContext]  # the caller's tool context, as it is now
    # Pool items already validated into Evidence, by id: (the state's dict, its Evidence).
    # Reused while the state holds that very dict (an item found again is a new dict).
    evidence: dict[str, tuple[dict[str, Any], Evidence]] = field(default_factory=dict)
    # Round one's plan, made as the run started (graph.nodes.plan_ahead), and what making
    # it took; None on a resumed run or for a policy that does not plan offline.
    first_plan: PlanStep | None = None
    first_plan_s: float = 0.0
    # Paced (the runner's runs): a node starts its work once the consumer of the run's
    # stream has handled its node_start event, so a consumer that waits there (a pause, a
    # change of the caller's key) holds the node, as it would hold a synchronous caller;
    # and its update is kept (checkpointed) once the consumer has handled all it emitted.
    paced: bool = False
    emitted: int = 0
    handled: int = 0
    _progress: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def tools(self) -> ToolContext:
        return self.tools_of()

    def handled_one(self) -> None:
        self.handled += 1
        self._progress.set()

    async def delivered(self) -> None:
        """Until every event emitted so far was handled (at once when not paced)."""
        while self.paced and self.handled < self.emitted:
            self._progress.clear()
            await self._progress.wait()


def make_policy(settings: GraphSettings) -> Policy:
    if settings.policy == "llm":
        from graph.policies.llm import LLMPolicy

        return LLMPolicy(settings)
    from graph.policies.rule import RulePolicy

    return RulePolicy()


def make_executor(settings: GraphSettings) -> ToolExecutor:
    return ToolExecutor(
        max_concurrency=settings.max_concurrency,
        timeout_s=settings.tool_timeout_s,
        max_retries=settings.tool_max_retries,
    )


def tools_for(services: Services, ctx: RunContext) -> ToolContext:
    tools = ToolContext.for_caller(
        services.store, ctx.caller.groups, ctx.caller.project, default_k=ctx.options.k
    )
    tools.search_fn = services.search_fn
    return tools


class Registry:
    def __init__(self) -> None:
        self._services: dict[str, Services] = {}
        self._opened: dict[str, RunScope] = {}  # by the runner, until it closes them
        # by nodes, bounded; each with the context it was made for
        self._made: OrderedDict[str, tuple[RunContext, RunScope]] = OrderedDict()
        self._lock = threading.Lock()  # the default services are built once

    def register(self, key: str, services: Services) -> None:
        self._services[key] = services

    def unregister(self, key: str) -> None:
        self._services.pop(key, None)

    def services(self, ctx: RunContext) -> Services:
        found = self._services.get(ctx.services)
        if found is not None:
            return found
        if ctx.services != DEFAULT_SERVICES:
            raise LookupError(f"no services registered as {ctx.services!r}")
        with self._lock:
            if DEFAULT_SERVICES not in self._services:
                self._services[DEFAULT_SERVICES] = _services_from_settings()
            return self._services[DEFAULT_SERVICES]

    def open_run(self, run_key: str, scope: RunScope) -> None:
        self._opened[run_key] = scope

    def close_run(self, run_key: str) -> None:
        self._opened.pop(run_key, None)
        self._made.pop(run_key, None)

    def run_scope(self, run_key: str, ctx: RunContext) -> RunScope:
        """The runner's scope for this run, else one made for this very context: a thread
        run again for another caller (or with other options) never reads with the last
        one's tool context."""
        opened = self._opened.get(run_key)
        if opened is not None:
            return opened
        made = self._made.get(run_key)
        if made is not None and made[0] == ctx:
            return made[1]
        tools = tools_for(self.services(ctx), ctx)
        scope = RunScope(tools_of=lambda: tools)
        self._made[run_key] = (ctx, scope)
        while len(self._made) > _MADE_BY_NODES:
            self._made.popitem(last=False)  # the oldest
        return scope


def _services_from_settings() -> Services:
    from retrieval.store import Store

    settings = GraphSettings()
    return Services(
        store=Store.open(), executor=make_executor(settings), policy=make_policy(settings)
    )


REGISTRY = Registry()
