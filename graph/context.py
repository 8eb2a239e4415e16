"""The run-scoped context every node receives through LangGraph's ``Runtime``.

It is rebuilt on resume (it is not checkpointed): the store, the caller's tool context,
the policy and the event sink are live objects, not state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graph.events import EventSink
from graph.policies.base import PlanStep, Policy
from tools.context import ToolContext
from tools.evidence import Evidence
from tools.executor import ToolExecutor


@dataclass
class RunContext:
    tools: ToolContext
    executor: ToolExecutor
    policy: Policy
    sink: EventSink
    # Pool items already validated into Evidence, by id: (the state's dict, its Evidence).
    # Reused while the state holds that very dict (an item found again is a new dict).
    evidence: dict[str, tuple[dict[str, Any], Evidence]] = field(default_factory=dict)
    # Round one's plan, made as the run started (graph.nodes.plan_ahead); the plan node
    # uses it instead of planning again. None on a resumed run or for an LLM policy.
    first_plan: PlanStep | None = None
    first_plan_s: float = 0.0  # what making it took: counted as the plan node's time
