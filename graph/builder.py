"""The whole research graph, built in one place.

    START -> round -> (round | synthesize) -> END

    round:  START -> plan -> [review] -> execute -> fuse -> rerank -> assess -> END
                        \\-> END (nothing left to call)

A round is a subgraph, so the parent stores one checkpoint per round (the subgraph's own
steps are checkpointed in its namespace while it runs: a run stopped mid-round resumes
inside it). What the run was asked is the context (``graph.context.RunContext``); the
state holds what changes (``graph.state.ResearchState``).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph import nodes, review, synthesis
from graph.context import RunContext
from graph.state import OutputState, ResearchState

Graph = CompiledStateGraph[ResearchState, RunContext, ResearchState, Any]


def build_round() -> Graph:
    g = StateGraph(ResearchState, context_schema=RunContext)
    g.add_node("plan", nodes.plan)  # -> review | execute | END, from its Command's type
    g.add_node("review", review.review)  # a person's decision on the first plan, if asked
    g.add_node("execute", nodes.execute)
    g.add_node("fuse", nodes.fuse)
    g.add_node("rerank", nodes.rerank)
    g.add_node("assess", nodes.assess)
    g.add_edge(START, "plan")
    g.add_edge("execute", "fuse")
    g.add_edge("fuse", "rerank")
    g.add_edge("rerank", "assess")
    g.add_edge("assess", END)
    return g.compile(name="round")


def build_graph(checkpointer: Any = None) -> CompiledStateGraph[Any, RunContext, Any, Any]:
    g = StateGraph(ResearchState, context_schema=RunContext, output_schema=OutputState)
    g.add_node("round", build_round())
    g.add_node("synthesize", synthesis.synthesize)
    g.add_edge(START, "round")
    g.add_conditional_edges("round", nodes.route_after_round)
    g.add_edge("synthesize", END)
    return g.compile(checkpointer=checkpointer, name="waypoint-research")


def make_graph() -> CompiledStateGraph[Any, RunContext, Any, Any]:
    """Factory for ``langgraph.json``: LangGraph tooling supplies the checkpointer and the
    run's context as JSON (``{"question": ..., "caller": ..., "options": ...}``)."""
    return build_graph()
