"""API keys -> principals, and the per-key rate limit.

The key file (``WAYPOINT_AUTH_FILE``) maps each key to a principal::

    {"keys": {"<key>": {"user": "ana", "groups": ["eng"], "project": "core",
                        "webhook_secret": "whsec_...", "sync_sources": false}}}

A principal's groups become the ACL of every retrieval it causes; its project is the
default scope. ``sync_sources`` (default false) lets a key start source syncs and read
their jobs: a sync re-ingests a configured connector's data under that source's ACL, an
operator's act, not a reader's. Keys are looked up by their SHA-256 so the raw key never
sits in a dict we might log.

The file is read again while the service runs (:class:`KeyRing`): at most once a second it
is checked for a change (one ``stat``), and at once after :func:`request_reload` (what
``waypoint serve`` does on SIGHUP). A revoked key stops working at its next request, and a
running task of a changed key takes the new groups at its next step (api.tasks.workers).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph.models import Caller

log = logging.getLogger("waypoint.api.auth")


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


# Bumped by request_reload(): every key ring reads its file again at its next use. A
# plain int, so a signal handler may bump it (no lock, no I/O in the handler).
_reload_requests = 0


def request_reload() -> None:
    """Ask every key ring to read its file again at its next use (e.g. on SIGHUP)."""
    global _reload_requests
    _reload_requests += 1


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    """What says the file changed: (mtime_ns, size, inode); None if it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _load(path: Path) -> dict[str, Principal]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise AuthFileError(f"auth file {path} does not exist") from exc
    except OSError as exc:
        raise AuthFileError(f"auth file {path} cannot be read: {exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
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
    return principals


class KeyRing:
    """The keys of the auth file, kept current while the service runs.

    Every lookup first checks (at most every ``check_every_s``, one ``stat``) whether the
    file changed, and reads it again when it did or when :func:`request_reload` was
    called since the last read. A file that no longer reads (a half-written edit, bad
    JSON, deleted) leaves the keys as they were: the error is logged once per version of
    the file and kept in ``reload_error`` until a good version is read. Keeping the last
    good keys, not none, is deliberate: a typo in the file must not lock every client out;
    a revocation takes effect once the file is valid again.
    """

    def __init__(
        self,
        principals: dict[str, Principal],
        path: Path | None = None,
        check_every_s: float = 1.0,
    ) -> None:
        self._set(principals)
        self.path = path
        self.check_every_s = check_every_s
        self.reload_error: str | None = None
        self.reloads = 0  # times a changed file was read in (tests, logs)
        self._stamp = _file_stamp(path) if path is not None else None
        self._failed_stamp: tuple[int, int, int] | None = None
        self._checked = time.monotonic()
        self._seen_requests = _reload_requests
        self._lock = threading.Lock()

    def _set(self, principals: dict[str, Principal]) -> None:
        # Both maps are replaced together (one assignment each, readers never lock): a
        # reader sees the old or the new key set.
        self._by_id = {p.key_id: p for p in principals.values()}
        self._by_digest = principals

    @classmethod
    def from_file(cls, path: Path | None, check_every_s: float = 1.0) -> KeyRing:
        if path is None:
            return cls({})
        return cls(_load(Path(path)), Path(path), check_every_s)

    def reload(self) -> bool:
        """Read the file again now; True if the keys changed. A file that does not read
        keeps the current keys (logged, and kept in ``reload_error``)."""
        if self.path is None:
            return False
        with self._lock:
            self._seen_requests = _reload_requests
            self._checked = time.monotonic()
            stamp = _file_stamp(self.path)
            try:
                principals = _load(self.path)
            except AuthFileError as exc:
                if stamp != self._failed_stamp or self.reload_error is None:
                    log.error("auth file not reloaded: keeping the current keys (%s)", exc)
                self._failed_stamp, self.reload_error = stamp, str(exc)
                return False
            self._stamp, self._failed_stamp, self.reload_error = stamp, None, None
            changed = principals != self._by_digest
            if changed:
                self._set(principals)
                self.reloads += 1
                log.info("auth file reloaded", extra={"keys": len(principals)})
            return changed

    def _fresh(self) -> None:
        """Reload if asked to, or if the file changed (checked at most every
        ``check_every_s``)."""
        if self.path is None:
            return
        if self._seen_requests != _reload_requests:
            self.reload()
            return
        now = time.monotonic()
        if now - self._checked < self.check_every_s:
            return
        self._checked = now
        stamp = _file_stamp(self.path)
        if stamp != self._stamp and stamp != self._failed_stamp:
            self.reload()
        elif stamp is None and self._stamp is not None and self.reload_error is None:
            self.reload()  # deleted: say so once (the keys stay)

    def lookup(self, key: str) -> Principal | None:
        self._fresh()
        return self._by_digest.get(key_digest(key))

    def by_key_id(self, key_id: str) -> Principal | None:
        """The principal of a key known only by its id (tasks store the id, never the key);
        None once the key is gone from the file."""
        self._fresh()
        return self._by_id.get(key_id)

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
