"""The whole research graph, built in one place.

START -> plan -> execute -> fuse -> rerank -> assess -> plan ... -> synthesize -> END
             \\-> synthesize (nothing left to call)      \\-> synthesize (enough / bound)
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph import nodes
from graph.context import RunContext
from graph.state import InputState, OutputState, ResearchState


def build_graph(
    checkpointer: Any = None,
) -> CompiledStateGraph[ResearchState, RunContext, InputState, OutputState]:
    g = StateGraph(
        ResearchState,
        context_schema=RunContext,
        input_schema=InputState,
        output_schema=OutputState,
    )
    # plan and assess branch by returning a Command (their routers: nodes.route_after_*);
    # ``destinations`` declares where they can go.
    g.add_node("plan", nodes.plan, destinations=("execute", "synthesize"))  # type: ignore[call-overload]
    g.add_node("execute", nodes.execute)  # type: ignore[call-overload]
    g.add_node("fuse", nodes.fuse)  # type: ignore[call-overload]
    g.add_node("rerank", nodes.rerank)  # type: ignore[call-overload]
    g.add_node("assess", nodes.assess, destinations=("plan", "synthesize"))  # type: ignore[call-overload]
    g.add_node("synthesize", nodes.synthesize)  # type: ignore[call-overload]

    g.add_edge(START, "plan")
    g.add_edge("execute", "fuse")
    g.add_edge("fuse", "rerank")
    g.add_edge("rerank", "assess")
    g.add_edge("synthesize", END)
    return g.compile(checkpointer=checkpointer, name="waypoint-research")


def make_graph() -> CompiledStateGraph[ResearchState, RunContext, InputState, OutputState]:
    """Factory for ``langgraph.json`` (LangGraph tooling supplies its own checkpointer;
    the run context - store, caller scope, policy - is passed at invocation)."""
    return build_graph()
