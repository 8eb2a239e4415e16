"""API keys -> principals, and the per-key rate limit.

The key file (``WAYPOINT_AUTH_FILE``) maps each key to a principal::

    {"keys": {"<key>": {"user": "ana", "groups": ["eng"], "project": "core",
                        "webhook_secret": "whsec_...", "sync_sources": false}}}

A principal's groups become the ACL of every retrieval it causes; its project is the
default scope. ``sync_sources`` (default false) lets a key start source syncs and read
their jobs: a sync re-ingests a configured connector's data under that source's ACL, an
operator's act, not a reader's. Keys are looked up by their SHA-256 so the raw key never
sits in a dict we might log.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph.models import Caller


class Principal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1)
    groups: list[str] = Field(default_factory=list)
    project: str | None = None
    webhook_secret: str | None = None
    # May start source syncs and read their jobs. Strict: a permission is true or false in
    # the file, never "yes" or 1 read as true.
    sync_sources: bool = Field(default=False, strict=True)
    key_id: str = ""  # sha256 prefix of the key: safe to log, stable per key

    def caller(self, project: str | None = None) -> Caller:
        return Caller(user=self.user, groups=list(self.groups), project=project or self.project)


class AuthFileError(ValueError):
    """The auth file is missing or malformed (raised at startup, never per request)."""


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyRing:
    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_digest = principals

    @classmethod
    def from_file(cls, path: Path | None) -> KeyRing:
        if path is None:
            return cls({})
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise AuthFileError(f"auth file {path} does not exist") from exc
        except json.JSONDecodeError as exc:
            raise AuthFileError(f"auth file {path} is not valid JSON: {exc}") from exc
        keys = raw.get("keys") if isinstance(raw, dict) else None
        if not isinstance(keys, dict):
            raise AuthFileError(f'auth file {path} must be {{"keys": {{"<key>": {{...}}}}}}')
        principals: dict[str, Principal] = {}
        for key, spec in keys.items():
            digest = key_digest(key)
            try:
                principals[digest] = Principal.model_validate({**spec, "key_id": digest[:12]})
            except (ValidationError, TypeError) as exc:
                raise AuthFileError(f"auth file {path}: bad entry for a key: {exc}") from exc
            secret = principals[digest].webhook_secret
            if secret is not None and not secret.startswith("whsec_"):
                raise AuthFileError(f"auth file {path}: webhook_secret must start with whsec_")
        return cls(principals)

    def lookup(self, key: str) -> Principal | None:
        return self._by_digest.get(key_digest(key))

    def by_key_id(self, key_id: str) -> Principal | None:
        """The principal of a key known only by its id (tasks store the id, never the key)."""
        for principal in self._by_digest.values():
            if principal.key_id == key_id:
                return principal
        return None

    def __len__(self) -> int:
        return len(self._by_digest)


class RateLimiter:
    """A token bucket per key: ``burst`` requests at once, refilled at ``per_minute``."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, key_id: str) -> float | None:
        """Take one token; return None if allowed, else the seconds until one is free."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return None
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / self.rate


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
