"""Infrastructure settings of the research loop (env prefix ``WAYPOINT_``).

Per-run knobs (mode, rounds, budget) are :class:`graph.models.RunOptions`, not settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

# Local OpenAI-compatible servers (llama.cpp, vLLM, Ollama) ignore the key but the client
# requires one; this placeholder is accepted only in development.
_DEV_PLACEHOLDER_KEY = "sk-local-development"


class GraphSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WAYPOINT_", extra="ignore")

    env: Literal["development", "production"] = "development"
    policy: Literal["rule", "llm"] = "rule"
    llm_base_url: str = "http://127.0.0.1:8080/v1"
    llm_model: str = "local"
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_max_answer_tokens: int = Field(default=512, ge=16)
    checkpoint_url: str | None = Field(
        default=None, description="postgresql://... for the Postgres checkpointer"
    )
    max_concurrency: int = Field(default=4, ge=1, le=64, description="tool fan-out bound")
    tool_timeout_s: float = Field(default=30.0, gt=0)
    tool_max_retries: int = Field(default=2, ge=0, le=10)
    prompts_file: Path | None = Field(
        default=None, description="JSON object overriding named prompts of graph.prompts"
    )
    users_file: Path | None = Field(default=None, description="JSON users -> groups/project")

    def api_key(self) -> str:
        """The key to send, or a clear error when one is required and missing."""
        key = self.llm_api_key.get_secret_value() if self.llm_api_key else ""
        if key.strip():
            return key
        if self.env == "development":
            return _DEV_PLACEHOLDER_KEY
        raise ValueError("WAYPOINT_LLM_API_KEY is required for the llm policy outside development")
