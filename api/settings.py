"""Infrastructure settings of the service (env prefix ``WAYPOINT_``).

Per-run options (rounds, budget, mode) travel in each request as
:class:`graph.models.RunOptions`; nothing here changes what one answer means.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    home: Path = Field(default=Path(".waypoint"), description="Where embedded engines keep data")
    host: str = "127.0.0.1"
    port: int = 8000

    auth_file: Path | None = Field(
        default=None, description='JSON {"keys": {"<key>": {"user", "groups", "project"}}}'
    )
    tasks_url: str | None = Field(
        default=None,
        description="sqlite:///path (default <home>/tasks.sqlite); postgresql://... for scale",
    )
    checkpoint_path: Path | None = Field(
        default=None, description="LangGraph checkpoints (default: the research layer's)"
    )
    sources_file: Path | None = Field(
        default=None,
        description='JSON {"sources": {"<name>": {"path", "acl"?, "project"?}}} for /v1/sources',
    )

    # Limits: every one of them bounds something a client controls.
    max_body_bytes: int = Field(default=64_000, ge=1_024)
    max_question_chars: int = Field(default=2_000, ge=10)
    rate_limit_per_minute: float = Field(default=120.0, gt=0)
    rate_limit_burst: int = Field(default=30, ge=1)
    max_tasks_per_key: int = Field(
        default=8, ge=1, description="queued + running + paused for review, per key"
    )
    task_workers: int = Field(default=2, ge=1, le=64)
    task_lease_s: float = Field(
        default=30.0,
        ge=1.0,
        le=3600.0,
        description="a process's hold on its running tasks, renewed while it runs: after a "
        "crash, another process sharing a Postgres task store resumes them once it lapses",
    )
    max_concurrent_answers: int = Field(
        default=6, ge=1, le=256, description="answer runs at once; more wait their turn"
    )
    answer_timeout_s: float = Field(default=300.0, gt=0)
    sse_ping_s: float = Field(default=15.0, gt=0)
    gc_freeze: bool = Field(
        default=True,
        description="keep what start-up loaded (models, indexes) out of full GC passes",
    )
    tasks_page_max: int = 100
    retention_days: float = Field(
        default=30.0,
        ge=0,
        description="finished tasks (their events and webhook deliveries), finished runs, "
        "done idempotency keys and sync jobs older than this are deleted, checked hourly "
        "by the task workers; 0 keeps everything",
    )

    # Webhooks (Standard Webhooks signing).
    webhook_allow_private: bool = False
    webhook_timeout_s: float = Field(default=10.0, gt=0)
    webhook_max_attempts: int = Field(default=6, ge=1, le=20)
    webhook_backoff_initial_s: float = Field(default=0.5, gt=0)
    webhook_backoff_max_s: float = Field(default=60.0, gt=0)

    # MCP
    mcp_api_key: str | None = Field(default=None, description="the key whose ACL MCP tools use")

    log_level: str = "INFO"
    log_json: bool = True

    def resolved_tasks_url(self) -> str:
        return self.tasks_url or f"sqlite:///{self.home / 'tasks.sqlite'}"
