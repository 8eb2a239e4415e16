"""Human review of a run's first plan: what a reviewer may decide, checked before the run
resumes with it (an invalid decision leaves the run paused), and applied by the review
node (``graph.nodes.review``) after LangGraph's ``interrupt`` hands it back.

approve: the proposed calls run as they are; edit: ``calls`` run instead. Either may pin
documents (their passages the caller may read enter the evidence pool) and exclude
sources or documents (nothing of them ever enters the pool).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.catalog import Catalog
from tools.executor import ToolCall

ReviewPoint = Literal["plan"]


class InvalidReview(ValueError):
    """A decision the run cannot take (unknown tool, edit without calls, ...)."""


class ReviewDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "edit"] = "approve"
    calls: list[ToolCall] = Field(default_factory=list)  # edit: the calls to run instead
    pin: list[str] = Field(default_factory=list)  # document ids
    exclude: list[str] = Field(default_factory=list)  # sources or document ids
    by: str = ""  # who decided (the API sets the caller's user)

    @model_validator(mode="after")
    def _calls_only_for_edit(self) -> ReviewDecision:
        if self.action == "edit" and not self.calls:
            raise ValueError("an edit gives the calls to run")
        if self.action == "approve" and self.calls:
            raise ValueError("calls are given with action 'edit' only")
        return self


def checked(decision: dict[str, Any] | ReviewDecision, catalog: Catalog) -> ReviewDecision:
    """The decision, validated against the tools the run may call (InvalidReview if not)."""
    try:
        found = ReviewDecision.model_validate(decision)
    except ValueError as exc:
        raise InvalidReview(str(exc)) from exc
    unknown = sorted({c.tool for c in found.calls} - set(catalog.names()))
    if unknown:
        raise InvalidReview(f"unknown tool(s): {', '.join(unknown)}")
    return found


def excluded(item: dict[str, Any], exclude: list[str]) -> bool:
    """Whether a pool item (an Evidence dump) comes from an excluded source or document."""
    return item.get("source") in exclude or item.get("doc_id") in exclude
