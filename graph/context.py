"""What a run is asked to do: the ``Runtime.context`` every node receives.

Plain data, so LangGraph tooling can build it from JSON (``langgraph dev``, the SDK's
``context=``): the question, the caller it acts for and the run's options. It is not
checkpointed; a resumed run is handed it again. The live objects a run uses (store,
executor, policy, the caller's tool context) are found from it: :mod:`graph.resources`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.models import Caller, RunOptions

DEFAULT_SERVICES = "default"
ReviewPoint = Literal["plan"]  # where a run may pause for a person's decision


class RunContext(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1)
    caller: Caller = Field(default_factory=Caller)
    options: RunOptions = Field(default_factory=RunOptions)
    run_id: str = Field(default="", description="the run's id; empty: its thread's id")
    review: list[ReviewPoint] = Field(
        default_factory=list, description="where the run pauses for a person's decision"
    )
    services: str = Field(
        default=DEFAULT_SERVICES,
        description="the registered services to run with (graph.resources); "
        "'default': those built from WAYPOINT_* settings",
    )
