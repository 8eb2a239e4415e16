"""The HTTP service end to end: real index, real research loop, `waypoint serve` subprocess."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from api.webhooks import WebhookVerificationError, signed_headers, verify
from tests.e2e.conftest import (
    ANA,
    BOB,
    HANA,
    SECRET,
    SECRET_MARKER,
    Receiver,
    Server,
    assert_resumed_and_delivered_once,
    parse_sse_lines,
    post_tasks_and_kill_mid_run,
    restart_until_delivered,
    wait_for,
)

pytestmark = pytest.mark.e2e

SECRET_QUESTION = "What is the salary band code of the Ledger team?"


def test_health_needs_no_key_everything_else_does(http: httpx.Client) -> None:
    assert http.get("/healthz").status_code == 200
    for method, path in [
        ("GET", "/v1/tasks"),
        ("GET", "/v1/runs"),
        ("POST", "/v1/answers"),
        ("POST", "/v1/search"),
        ("GET", "/v1/sources"),
    ]:
        r = http.request(method, path, json={} if method == "POST" else None)
        assert r.status_code == 401, path
        assert r.json()["error"]["code"] == "unauthorized"


def test_sse_answer_streams_incrementally(server: Server) -> None:
    chunks: list[str] = []
    with (
        server.client() as c,
        c.stream(
            "POST",
            "/v1/answers",
            json={"question": "Who leads the team that owns the Payments Service?"},
            headers={**ANA, "Accept": "text/event-stream"},
        ) as r,
    ):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        chunks.extend(r.iter_text())
    # streamed, not buffered: the first read holds the metadata event and not the end
    assert "event: metadata" in chunks[0] and "event: done" not in chunks[0]
    assert len(chunks) > 1
    arrived = list(parse_sse_lines(iter("".join(chunks).replace("\r\n", "\n").split("\n"))))
    types = [e["event"] for e in arrived]
    assert types[0] == "metadata" and types[-1] == "done"
    assert {"plan", "tool_call", "tool_result", "evidence", "round", "token", "citation"} <= set(
        types
    )
    ids = [int(e["id"]) for e in arrived]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    done = arrived[-1]["data"]
    assert "Maria Okafor" in done["answer"] or any(
        "Ledger" in c["title"] for c in done["citations"]
    )
    run_id = arrived[0]["data"]["run_id"]
    # the run is inspectable afterwards, by its owner only
    with server.client() as c:
        trace = c.get(f"/v1/runs/{run_id}/trace", headers=ANA).json()
        assert trace["nodes"] and trace["rounds"] and trace["result"]["run_id"] == run_id
        assert any(r["run_id"] == run_id for r in c.get("/v1/runs", headers=ANA).json()["items"])
        assert c.get(f"/v1/runs/{run_id}/trace", headers=BOB).status_code == 404


def test_json_answer_and_log_lines_carry_request_and_run_ids(
    server: Server, http: httpx.Client
) -> None:
    r = http.post("/v1/answers", json={"question": "Who owns Fraud Gate?"}, headers=ANA)
    assert r.status_code == 200
    run_id = r.json()["run_id"]
    rid = r.headers["x-request-id"]
    lines = [ln for ln in server.log_lines() if ln.get("request_id") == rid]
    assert lines, "no log line with the request id"
    assert all(ln["run_id"] == run_id for ln in lines)


def test_acl_restricted_document_never_leaks(http: httpx.Client) -> None:
    # positive control: the hr user does find it, so the negative below can fail
    hana = http.post("/v1/answers", json={"question": SECRET_QUESTION}, headers=HANA).json()
    assert SECRET_MARKER in json.dumps(hana)
    for headers in (ANA, BOB):
        answer = http.post("/v1/answers", json={"question": SECRET_QUESTION}, headers=headers)
        assert answer.status_code == 200
        assert SECRET_MARKER not in answer.text
        assert all(not c["doc_id"].startswith("hr:") for c in answer.json()["citations"])
        trace = http.get(f"/v1/runs/{answer.json()['run_id']}/trace", headers=headers)
        assert trace.status_code == 200 and SECRET_MARKER not in trace.text
        assert "hr:" not in trace.text
        search = http.post(
            "/v1/search", json={"query": "salary band code compensation"}, headers=headers
        )
        assert search.status_code == 200 and SECRET_MARKER not in search.text
        task = http.post("/v1/tasks", json={"question": SECRET_QUESTION}, headers=headers).json()
        done = wait_for(
            lambda t=task, h=headers: (
                (x := http.get(f"/v1/tasks/{t['id']}", headers=h).json())["status"] == "succeeded"
                and x
            )
        )
        assert SECRET_MARKER not in json.dumps(done)
        events = http.get(f"/v1/tasks/{task['id']}/events", headers=headers)
        assert SECRET_MARKER not in events.text
    hana_search = http.post(
        "/v1/search", json={"query": "salary band code compensation"}, headers=HANA
    )
    assert SECRET_MARKER in hana_search.text
    stages = hana_search.json()
    assert {"original_query", "rewritten_query", "legs", "fused", "hits"} <= set(stages)


def test_bad_bodies_get_json_errors(http: httpx.Client) -> None:
    big = json.dumps({"question": "q" * 100_000})
    r = http.post("/v1/answers", content=big, headers={**ANA, "content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    r = http.post(
        "/v1/tasks", content=b'{"question": ', headers={**ANA, "content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
    r = http.post("/v1/answers", json={"question": "x" * 5000}, headers=ANA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "question"
    r = http.post("/v1/tasks", json={"question": "q", "priority": 1}, headers=ANA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "priority"
    r = http.post("/v1/answers", json={"question": "q", "max_rounds": 99}, headers=ANA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "max_rounds"


def test_idempotency_replay_mismatch_and_concurrent(http: httpx.Client, server: Server) -> None:
    hdr = {**ANA, "Idempotency-Key": "e2e-1"}
    first = http.post("/v1/tasks", json={"question": "Who owns Fraud Gate?"}, headers=hdr)
    assert first.status_code == 202
    replay = http.post("/v1/tasks", json={"question": "Who owns Fraud Gate?"}, headers=hdr)
    assert replay.status_code == 202 and replay.json() == first.json()
    other = http.post("/v1/tasks", json={"question": "Who owns Payments?"}, headers=hdr)
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
    # same key from several clients at once: one task; the rest replay it or get 409
    body = {"question": "Who leads the Risk team?"}

    def post(_: int) -> httpx.Response:
        with server.client() as c:
            return c.post("/v1/tasks", json=body, headers={**ANA, "Idempotency-Key": "e2e-2"})

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(post, range(8)))
    assert {r.status_code for r in responses} <= {202, 409}
    ids = {r.json()["id"] for r in responses if r.status_code == 202}
    assert len(ids) == 1
    conflicts = [r for r in responses if r.status_code == 409]
    assert all(r.json()["error"]["code"] == "idempotency_in_flight" for r in conflicts)
    tasks = http.get("/v1/tasks?limit=100", headers=ANA).json()["items"]
    assert len([t for t in tasks if t["question"] == body["question"]]) == 1


def test_tasks_are_private_and_listed_newest_first(http: httpx.Client) -> None:
    a = http.post(
        "/v1/tasks", json={"question": "Who owns the Invoice Builder?"}, headers=ANA
    ).json()
    b = http.post("/v1/tasks", json={"question": "What is the on-call policy?"}, headers=ANA).json()
    for path in (
        f"/v1/tasks/{a['id']}",
        f"/v1/tasks/{a['id']}/events",
        f"/v1/runs/{a['run_id']}/trace",
    ):
        assert http.get(path, headers=BOB).status_code == 404, path
    assert http.post(f"/v1/tasks/{a['id']}/cancel", headers=BOB).status_code == 404
    assert all(
        t["id"] not in (a["id"], b["id"])
        for t in http.get("/v1/tasks", headers=BOB).json()["items"]
    )
    page = http.get("/v1/tasks?limit=2", headers=ANA).json()
    assert [t["id"] for t in page["items"]] == [b["id"], a["id"]]
    older = http.get(f"/v1/tasks?limit=2&cursor={page['next_cursor']}", headers=ANA).json()
    assert a["id"] not in [t["id"] for t in older["items"]]
    # event stream: replay from the start, then resume after an id
    wait_for(lambda: http.get(f"/v1/tasks/{b['id']}", headers=ANA).json()["status"] == "succeeded")
    with http.stream("GET", f"/v1/tasks/{b['id']}/events", headers=ANA) as r:
        events = list(parse_sse_lines(r.iter_lines()))
    assert events[0]["event"] == "metadata" and events[-1]["event"] == "done"
    with http.stream(
        "GET", f"/v1/tasks/{b['id']}/events", headers={**ANA, "Last-Event-ID": events[3]["id"]}
    ) as r:
        rest = list(parse_sse_lines(r.iter_lines()))
    assert [e["id"] for e in rest] == [e["id"] for e in events[4:]]


def test_forged_or_stale_signature_fails_verification(receiver: Receiver) -> None:
    body = b'{"type":"task.succeeded"}'
    good = signed_headers(SECRET, "msg_ok", body)
    assert verify(SECRET, good, body) == "msg_ok"
    forged = {**good, "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}
    stale = signed_headers(SECRET, "msg_old", body, now=1_600_000_000)
    for headers in (forged, stale):
        with pytest.raises(WebhookVerificationError):
            verify(SECRET, headers, body)
        r = httpx.post(receiver.url, content=body, headers=headers)
        assert r.status_code == 400
    assert len(receiver.rejected) == 2 and receiver.processed == {}


def test_killed_server_resumes_task_and_webhook_arrives_once(
    built_index: Path, tmp_path: Path, receiver: Receiver
) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_index, home)
    srv = Server(home, tmp_path, WAYPOINT_TASK_WORKERS="1").start()
    tasks = post_tasks_and_kill_mid_run(srv, receiver)
    import sqlite3

    db = sqlite3.connect(home / "tasks.sqlite")
    interrupted = [r[0] for r in db.execute("SELECT id FROM tasks WHERE status = 'running'")]
    db.close()
    assert interrupted, "no task was running at the kill"

    final, _ = restart_until_delivered(srv, home, tmp_path, tasks, WAYPOINT_TASK_WORKERS="1")
    assert_resumed_and_delivered_once(final, tasks, interrupted, receiver)


def test_source_sync_job_indexes_a_configured_connector(http: httpx.Client) -> None:
    listed = {s["name"]: s for s in http.get("/v1/sources", headers=ANA).json()["items"]}
    assert listed["notes"]["configured"] and listed["notes"]["indexed"] is None
    assert listed["wiki"]["indexed"]["documents"] == 4
    assert listed["hr"]["indexed"]["documents"] == 1  # the key that may sync sees every source
    # A reader sees only the sources holding documents it may read: bob (no groups) not the
    # hr pages nor the unsynced connector, hana (hr) the hr pages too.
    seen = {s["name"] for s in http.get("/v1/sources", headers=BOB).json()["items"]}
    assert seen == {"wiki"}
    seen = {s["name"] for s in http.get("/v1/sources", headers=HANA).json()["items"]}
    assert seen == {"wiki", "hr"}
    assert http.post("/v1/sources/nope/sync", headers=ANA).status_code == 404
    assert http.post("/v1/sources/notes/sync", headers=BOB).status_code == 403  # a reader's key
    job = http.post("/v1/sources/notes/sync", headers=ANA)
    assert job.status_code == 202
    assert http.get(f"/v1/sources/jobs/{job.json()['id']}", headers=BOB).status_code == 403
    done = wait_for(
        lambda: (
            (j := http.get(f"/v1/sources/jobs/{job.json()['id']}", headers=ANA).json())["status"]
            in ("succeeded", "failed")
            and j
        )
    )
    assert done["status"] == "succeeded", done
    assert done["report"]["added"] == 1
    listed = {s["name"]: s for s in http.get("/v1/sources", headers=ANA).json()["items"]}
    assert listed["notes"]["indexed"]["documents"] == 1
    # indexed under its ACL and project: eng (ana) finds it in the project, bob does not
    hits = http.post(
        "/v1/search",
        json={"query": "release captain Kestrel quarter", "project": "handbook"},
        headers=ANA,
    ).json()["hits"]
    assert any("Idris Vale" in h["text"] for h in hits)
    bob = http.post(
        "/v1/search", json={"query": "release captain Kestrel quarter"}, headers=BOB
    ).json()["hits"]
    assert not any("Idris Vale" in h["text"] for h in bob)
