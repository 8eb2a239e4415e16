"""The run-scoped context every node receives through LangGraph's ``Runtime``.

It is rebuilt on resume (it is not checkpointed): the store, the caller's tool context,
the policy and the event sink are live objects, not state.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.events import EventSink
from graph.policies.base import Policy
from tools.context import ToolContext
from tools.executor import ToolExecutor


@dataclass
class RunContext:
    tools: ToolContext
    executor: ToolExecutor
    policy: Policy
    sink: EventSink
