"""A revocation reaches running and resumed tasks (issue 26, item 2).

A task names its key by id; the worker reads the key's groups from the current key set
when the run starts, when it resumes and at every step, never from what the run stored.
These tests run the real research loop (rule policy, in-memory store) under the real
worker pool: ``wiki:dana`` is readable by the group ``eng`` only, and the question needs
it for its second hop.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from api.auth import KeyRing, key_digest, request_reload
from api.settings import ApiSettings
from api.tasks.store import TaskStore
from api.tasks.workers import WorkerPool
from api.webhooks import WebhookSender
from graph.models import Caller, RunOptions, TraceEvent
from graph.runner import CallerRevoked, Researcher
from tests.unit.api.conftest import KEYS, Harness, _client_for
from tools.testing import LEDGER_QUESTION, MemoryStore, ledger_corpus, memory_search

ANA_KEY_ID = key_digest("keyA")[:12]
AUTH_B = {"Authorization": "Bearer keyB"}


def corpus() -> MemoryStore:
    store = ledger_corpus()
    store.records["wiki:dana#0"].metadata["acl"] = ["eng"]  # the second hop: eng only
    return store


def write_keys(path: Path, **changes: dict[str, Any] | None) -> None:
    """The auth file with ``KEYS``, each named key replaced (None: deleted)."""
    keys = {**KEYS, **changes}
    path.write_text(json.dumps({"keys": {k: v for k, v in keys.items() if v is not None}}))


def changed(name: str, **fields: Any) -> dict[str, Any]:
    """Key ``name``'s entry with ``fields`` changed."""
    entry: dict[str, Any] = json.loads(json.dumps(KEYS[name]))
    return {**entry, **fields}


class Paused(Researcher):
    """A researcher whose runs stop at the first event ``at`` picks until ``go`` is set
    (``reached`` says one got there): a process killed at that point, or a key changed
    while a run waits there."""

    def __init__(self, store: MemoryStore, home: Path, at: Callable[[TraceEvent], bool]) -> None:
        super().__init__(store, checkpointer_path=home / "runs.sqlite", search_fn=memory_search)
        self.at = at
        self.reached = asyncio.Event()
        self.go = asyncio.Event()

    def _pausing(self, on_event: Any) -> Any:
        async def hook(event: TraceEvent) -> None:
            if self.at(event) and not self.reached.is_set():
                self.reached.set()
                await self.go.wait()
            if on_event is not None:
                await on_event(event)

        return hook

    async def run(  # type: ignore[override]
        self, question: str, caller: Caller, options: RunOptions, **kw: Any
    ) -> Any:
        kw["on_event"] = self._pausing(kw.get("on_event"))
        return await super().run(question, caller, options, **kw)

    async def resume(self, run_id: str, **kw: Any) -> Any:  # type: ignore[override]
        kw["on_event"] = self._pausing(kw.get("on_event"))
        return await super().resume(run_id, **kw)


class Service:
    """One service process's task side over ``settings``' store and auth file."""

    def __init__(self, settings: ApiSettings, researcher: Researcher) -> None:
        self.store = TaskStore.open(settings.resolved_tasks_url())
        self.researcher = researcher
        sender = WebhookSender(
            timeout_s=1, max_attempts=1, backoff_initial_s=0, backoff_max_s=0, allow_private=True
        )
        # Read at start-up, as the service does: a new process sees the file as it is now.
        self.keys = KeyRing.from_file(settings.auth_file)
        self.pool = WorkerPool(self.store, researcher, sender, self.keys, 1, lease_s=3.0)

    async def __aenter__(self) -> Service:
        await self.pool.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.stop()
        self.store.close()
        await self.researcher.aclose()


async def finished(store: TaskStore, task_id: str) -> Any:
    for _ in range(1000):
        row = store.task_row(task_id)
        if row is not None and row["status"] in ("succeeded", "failed", "cancelled"):
            return row
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never finished")


def cited(row: Any) -> set[str]:
    result = json.loads(row["result"])
    return {c["doc_id"] for c in result["citations"]} | {e["doc_id"] for e in result["evidence"]}


def at_synthesis(event: TraceEvent) -> bool:
    return event.type == "node_start" and event.node == "synthesize"


async def test_a_task_resumed_after_its_keys_groups_were_revoked_cannot_cite_the_document(
    settings: ApiSettings, tmp_path: Path
) -> None:
    assert settings.auth_file is not None
    home = tmp_path / "runs"
    home.mkdir()
    store = corpus()
    # The run has found wiki:dana (both hops) and is stopped as it starts to synthesize:
    # its checkpoint holds the pool, its recorded input the caller with the group eng.
    async with Service(settings, Paused(store, home, at_synthesis)) as first:
        task = first.store.create_task("ana", ANA_KEY_ID, {"question": LEDGER_QUESTION}, None)
        first.pool.notify()
        await asyncio.wait_for(first.researcher.reached.wait(), 30)  # type: ignore[attr-defined]
        state = await (await first.researcher._graph()).aget_state(
            {"configurable": {"thread_id": task.run_id}}
        )
        assert "wiki:dana#0" in state.values["pool"]
        assert first.researcher.traces.run_input(task.run_id)["caller"]["groups"] == ["eng"]
    # The restart that applies the revocation: ana's key no longer has eng.
    write_keys(settings.auth_file, keyA=changed("keyA", groups=[]))
    researcher = Researcher(store, checkpointer_path=home / "runs.sqlite", search_fn=memory_search)
    async with Service(settings, researcher) as svc:
        row = await finished(svc.store, task.id)
    assert row["status"] == "succeeded" and row["resumed"] == 1
    assert "wiki:dana" not in cited(row)
    assert "wiki:runbook" in cited(row)  # what the key may still read is kept
    warnings = json.loads(row["result"])["warnings"]
    assert any("failed the permission re-check" in w for w in warnings)


async def test_a_task_resumed_after_its_key_was_deleted_fails_with_key_revoked(
    settings: ApiSettings, tmp_path: Path
) -> None:
    assert settings.auth_file is not None
    home = tmp_path / "runs"
    home.mkdir()
    store = corpus()
    async with Service(settings, Paused(store, home, at_synthesis)) as first:
        task = first.store.create_task("ana", ANA_KEY_ID, {"question": LEDGER_QUESTION}, None)
        first.pool.notify()
        await asyncio.wait_for(first.researcher.reached.wait(), 30)  # type: ignore[attr-defined]
    write_keys(settings.auth_file, keyA=None)
    researcher = Researcher(store, checkpointer_path=home / "runs.sqlite", search_fn=memory_search)
    async with Service(settings, researcher) as svc:
        row = await finished(svc.store, task.id)
        events = svc.store.events_after(task.id, 0)
        trace = researcher.get_trace(task.run_id)
    assert row["status"] == "failed" and row["result"] is None
    error = json.loads(row["error"])
    assert error["code"] == "key_revoked" and error["message"].startswith("key revoked")
    assert events[-1]["type"] == "error" and events[-1]["data"]["code"] == "key_revoked"
    assert trace[-1].type == "error" and "key revoked" in trace[-1].data["error"]


async def test_a_running_task_takes_its_keys_new_groups_at_its_next_round(
    settings: ApiSettings, tmp_path: Path
) -> None:
    assert settings.auth_file is not None
    store = corpus()

    def at_round_two(event: TraceEvent) -> bool:
        return event.type == "node_start" and event.node == "plan" and event.round == 2

    async with Service(settings, Paused(store, tmp_path, at_round_two)) as svc:
        task = svc.store.create_task("ana", ANA_KEY_ID, {"question": LEDGER_QUESTION}, None)
        svc.pool.notify()
        await asyncio.wait_for(svc.researcher.reached.wait(), 30)  # type: ignore[attr-defined]
        # Round one found the runbook, naming Dana Ruiz; round two would look her up.
        write_keys(settings.auth_file, keyA=changed("keyA", groups=[]))
        request_reload()  # what SIGHUP does (a changed file is also seen within a second)
        svc.researcher.go.set()  # type: ignore[attr-defined]
        row = await finished(svc.store, task.id)
        trace = svc.researcher.get_trace(task.run_id)
    assert row["status"] == "succeeded"
    assert "wiki:dana" not in cited(row)
    # Not even found: round two's lookup ran with the new groups.
    found = [r["id"] for e in trace if e.type == "tool_result" for r in e.data["results"]]
    assert any(e.type == "tool_call" and e.round == 2 for e in trace)
    assert "wiki:runbook#0" in found and "wiki:dana#0" not in found


async def test_without_a_caller_source_a_resumed_run_keeps_its_stored_caller(
    tmp_path: Path,
) -> None:
    """The CLI's runs have no key: they resume as they started. (With the worker's
    source the same run reads as the caller is now: the tests above.)"""
    store = corpus()
    groups = ["eng"]
    r = Paused(store, tmp_path, at_synthesis)
    try:
        run = asyncio.create_task(
            r.run(LEDGER_QUESTION, Caller(user="ana", groups=groups), RunOptions(), run_id="r1")
        )
        await asyncio.wait_for(r.reached.wait(), 30)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        kept = await r.resume("r1")
    finally:
        await r.aclose()
    assert "wiki:dana" in {c.doc_id for c in kept.citations}


async def test_a_run_finished_before_the_stop_is_handed_over_only_if_still_readable(
    tmp_path: Path,
) -> None:
    """Finished, then stopped before its task was: the stored answer quotes wiki:dana,
    so it goes to the key only while the key may read wiki:dana."""
    r = Researcher(corpus(), checkpointer_path=tmp_path / "runs.sqlite", search_fn=memory_search)
    try:
        done = await r.run(
            LEDGER_QUESTION, Caller(user="ana", groups=["eng"]), RunOptions(), run_id="r1"
        )
        assert "wiki:dana" in {e.doc_id for e in done.evidence}
        same = await r.resume("r1", caller_source=lambda: Caller(user="ana", groups=["eng"]))
        assert same.answer == done.answer
        with pytest.raises(CallerRevoked, match="may no longer read"):
            await r.resume("r1", caller_source=lambda: Caller(user="ana", groups=[]))
        with pytest.raises(CallerRevoked):
            await r.resume("r1", caller_source=_revoked)
    finally:
        await r.aclose()


def _revoked() -> Caller:
    raise CallerRevoked("key revoked: test")


# ------------------------------------------------------------------ key reload
def test_the_key_ring_reloads_on_request_and_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    write_keys(path)
    keys = KeyRing.from_file(path, check_every_s=3600)  # no file check due in this test
    write_keys(path, keyB=changed("keyB", groups=["hr"]), keyA=None)
    bob = keys.lookup("keyB")
    assert bob is not None and bob.groups == []  # not re-read yet
    request_reload()  # SIGHUP
    bob = keys.lookup("keyB")
    assert bob is not None and bob.groups == ["hr"]
    assert keys.lookup("keyA") is None and keys.by_key_id(ANA_KEY_ID) is None

    watched = KeyRing.from_file(path, check_every_s=0.0)  # checks the file at every use
    write_keys(path)
    assert watched.by_key_id(ANA_KEY_ID) is not None and watched.reloads == 1


def test_a_bad_auth_file_keeps_the_last_good_keys_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    write_keys(path)
    keys = KeyRing.from_file(path, check_every_s=0.0)
    path.write_text('{"keys": {"keyA": ')  # an edit caught half-written
    assert keys.lookup("keyA") is not None
    assert keys.reload_error is not None and "not valid JSON" in keys.reload_error
    write_keys(path, keyA=None)
    assert keys.lookup("keyA") is None and keys.reload_error is None


async def test_a_reload_changes_what_the_next_request_sees(
    harness: Harness, settings: ApiSettings
) -> None:
    assert settings.auth_file is not None
    async for client in _client_for(harness):
        names = {
            s["name"] for s in (await client.get("/v1/sources", headers=AUTH_B)).json()["items"]
        }
        assert names == {"wiki"}
        write_keys(settings.auth_file, keyB=changed("keyB", groups=["hr"]))
        request_reload()
        r = await client.get("/v1/sources", headers=AUTH_B)
        assert {s["name"] for s in r.json()["items"]} == {"wiki", "payroll"}
        write_keys(settings.auth_file, keyB=None)
        request_reload()
        r = await client.get("/v1/sources", headers=AUTH_B)
        assert r.status_code == 401


def test_serve_reloads_the_keys_on_sighup(
    settings: ApiSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``waypoint serve`` installs the handler (SIGHUP would otherwise end the process)."""
    import uvicorn

    import api.app
    from api.cli.serve import serve

    assert settings.auth_file is not None
    monkeypatch.setenv("WAYPOINT_AUTH_FILE", str(settings.auth_file))
    monkeypatch.setenv("WAYPOINT_HOME", str(settings.home))
    keys = KeyRing.from_file(settings.auth_file, check_every_s=3600)
    seen: list[Any] = []

    def fake_run(app: Any, **_: Any) -> None:  # the server "runs": a SIGHUP arrives
        write_keys(settings.auth_file, keyB=None)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGHUP)
        seen.append(keys.lookup("keyB"))

    monkeypatch.setattr(api.app, "create_app", lambda _settings: object())
    monkeypatch.setattr(uvicorn, "run", fake_run)
    before = signal.getsignal(signal.SIGHUP)
    try:
        serve(host=None, port=None, index=None)
    finally:
        signal.signal(signal.SIGHUP, before)
    assert seen == [None]
