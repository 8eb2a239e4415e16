"""Auth, limits and the error shape, through the ASGI app with test doubles."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from api.auth import AuthFileError, KeyRing
from tests.unit.api.conftest import AUTH_A, AUTH_B


async def test_healthz_needs_no_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"
    assert r.headers["x-request-id"]


async def test_missing_and_unknown_keys_get_401_json(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/tasks")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    r = await client.get("/v1/tasks", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


async def test_answer_json_runs_as_the_callers_principal(client, researcher) -> None:
    r = await client.post("/v1/answers", json={"question": "who owns billing?"}, headers=AUTH_A)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answer"] == "Answer for ana [1]."
    _, caller, _ = researcher.inputs[body["run_id"]]
    assert caller.groups == ["eng"]


async def test_unknown_field_is_rejected_naming_it(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/answers", json={"question": "q", "max_round": 2}, headers=AUTH_A)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "unknown_field" and err["field"] == "max_round"


async def test_question_too_long_names_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/answers", json={"question": "x" * 201}, headers=AUTH_A)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "question"


async def test_oversized_body_is_413(client: httpx.AsyncClient) -> None:
    body = json.dumps({"question": "q", "project": "p" * 5000})
    r = await client.post(
        "/v1/answers", content=body, headers={**AUTH_A, "content-type": "application/json"}
    )
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"


async def test_malformed_json_is_400(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/answers", content=b"{not json", headers={**AUTH_A, "content-type": "application/json"}
    )
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "malformed_json"


async def test_unknown_project_is_404_on_project(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/answers", json={"question": "q", "project": "nope"}, headers=AUTH_A)
    assert r.status_code == 404
    assert r.json()["error"]["field"] == "project"


async def test_rate_limit_gives_429_with_retry_after(harness, settings) -> None:
    from tests.unit.api.conftest import _client_for

    harness.settings = settings.model_copy(
        update={"rate_limit_burst": 2, "rate_limit_per_minute": 1.0}
    )
    async for client in _client_for(harness):
        codes = [(await client.get("/v1/tasks", headers=AUTH_B)).status_code for _ in range(3)]
        assert codes[:2] == [200, 200]
        r = await client.get("/v1/tasks", headers=AUTH_B)
        assert r.status_code == 429
        assert int(r.headers["retry-after"]) >= 1
        # another key has its own bucket
        assert (await client.get("/v1/tasks", headers=AUTH_A)).status_code == 200


async def test_openapi_has_stable_operation_ids(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    ops = {op["operationId"] for path in spec["paths"].values() for op in path.values()}
    assert {
        "create_answer",
        "create_task",
        "get_task",
        "list_tasks",
        "task_events",
        "cancel_task",
        "get_run_trace",
        "list_runs",
        "search",
        "list_sources",
        "sync_source",
        "get_source_job",
        "health",
    } <= ops


async def test_search_with_every_engine_down_is_503_json_without_internals(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/v1/search", json={"query": "who owns billing?"}, headers=AUTH_A)
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"]
    err = r.json()["error"]
    assert err["code"] == "search_unavailable"
    assert "lexical" in err["message"] and "dense" in err["message"]
    assert "10.0.0.7" not in err["message"]  # engine messages stay in the log


async def test_only_keys_allowed_to_sync_may_start_or_read_source_syncs(
    client: httpx.AsyncClient,
) -> None:
    for method, path in (("POST", "/v1/sources/wiki/sync"), ("GET", "/v1/sources/jobs/job_1")):
        r = await client.request(method, path, headers=AUTH_B)
        assert r.status_code == 403, (method, path, r.text)
        error = r.json()["error"]
        assert error["code"] == "forbidden" and '"sync_sources": true' in error["message"]
    # A key with the permission gets past it: here no source is configured, no job exists.
    assert (await client.post("/v1/sources/wiki/sync", headers=AUTH_A)).status_code == 404
    assert (await client.get("/v1/sources/jobs/job_1", headers=AUTH_A)).status_code == 404
    # Listing what the index holds stays open to every key (what it shows: the next test).
    assert (await client.get("/v1/sources", headers=AUTH_B)).status_code == 200


async def test_a_reader_lists_only_the_sources_it_may_read(client: httpx.AsyncClient) -> None:
    operator = (await client.get("/v1/sources", headers=AUTH_A)).json()["items"]
    reader = (await client.get("/v1/sources", headers=AUTH_B)).json()["items"]
    # The store double holds "payroll" for the hr group only: the key that may sync sees
    # it (an operator's view), a reader outside hr does not learn its name or size.
    assert [s["name"] for s in operator] == ["payroll", "wiki"]
    assert [s["name"] for s in reader] == ["wiki"]
    # A reader gets the name and counts only: not the server's connector path, the
    # projects or the last sync, and not whether a connector is configured.
    assert reader[0]["indexed"] == {"name": "wiki", "documents": 2, "records": 3}
    assert reader[0]["configured"] is None
    wiki = next(s for s in operator if s["name"] == "wiki")
    assert wiki["indexed"]["origin"] == "/srv/connectors/wiki"
    assert wiki["indexed"]["projects"] == ["core"] and wiki["configured"] is False


def test_sync_permission_in_the_auth_file_must_be_a_real_boolean(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": {"k": {"user": "eve", "sync_sources": "yes"}}}))
    with pytest.raises(AuthFileError, match="bad entry"):
        KeyRing.from_file(path)
    path.write_text(json.dumps({"keys": {"k": {"user": "eve"}}}))
    principal = KeyRing.from_file(path).lookup("k")
    assert principal is not None and principal.sync_sources is False
