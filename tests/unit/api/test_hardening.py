"""Issue 26: what probing the service as an attacker or a fault injector found.

Bounded options at the edge, engine panics as JSON, the answer cap on streamed answers,
side channels (corpus sizes, project names), webhook address checks, and the small ones
(UI asset names and headers, cursors, the OpenAPI document agreeing with behaviour).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import httpx
import pytest

from api import webhooks
from api.webhooks import WebhookSender, WebhookUrlError
from tests.unit.api.conftest import AUTH_A, AUTH_B, Harness, _client_for
from tests.unit.api.test_tasks_and_streams import parse_sse

# pyo3 raises a Rust panic as pyo3_runtime.PanicException, a BaseException.
PanicException = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})


class PanickingEngine:
    def search(self, *_: Any) -> list[Any]:
        raise PanicException("capacity overflow")


def _json(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"].startswith("application/json"), r.text
    body: dict[str, Any] = r.json()
    return body


# -- 1. every numeric option bounded at the edge; engine errors as JSON -------------------


def _numeric(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The integer / number schemas of a property (through anyOf and dict values)."""
    found: list[dict[str, Any]] = []
    for option in schema.get("anyOf", [schema]):
        if option.get("type") in ("integer", "number"):
            found.append(option)
        for values in option.get("patternProperties", {}).values():
            found += _numeric(values)
        items = option.get("items")
        if isinstance(items, dict):
            found += _numeric(items)
    return found


async def test_every_numeric_request_option_documents_an_upper_bound(client) -> None:
    spec = (await client.get("/openapi.json")).json()
    models = spec["components"]["schemas"]
    checked = []
    for name in ("SearchRequest", "AnswerRequest", "TaskRequest"):
        for prop, schema in models[name]["properties"].items():
            for number in _numeric(schema):
                assert "maximum" in number or "exclusiveMaximum" in number, (name, prop)
                checked.append(f"{name}.{prop}")
    assert "SearchRequest.depth" in checked and "SearchRequest.leg_weights" in checked
    assert "AnswerRequest.max_rounds" in checked


async def test_each_search_option_is_enforced_at_its_documented_bound(client) -> None:
    spec = (await client.get("/openapi.json")).json()
    props = spec["components"]["schemas"]["SearchRequest"]["properties"]
    for prop, schema in props.items():
        for number in _numeric(schema):
            top = number["maximum"]
            for value, refused in ((top, False), (top + 1, True)):
                body = {"query": "q", prop: {"lexical": value} if prop == "leg_weights" else value}
                r = await client.post("/v1/search", json=body, headers=AUTH_A)
                if refused:
                    assert r.status_code == 422, (prop, value, r.text)
                    assert _json(r)["error"]["field"].split(".")[0] == prop
                else:  # the documented maximum itself is valid (the test engines are down)
                    assert r.status_code == 503, (prop, value, r.text)


@pytest.mark.parametrize("depth", [10**12, 2**62, 2**64])
async def test_a_huge_depth_is_refused_before_any_engine(client, depth: int) -> None:
    # 10^12 made tantivy reserve 16 TB and abort the process; 2^62 was a plain-text 500.
    r = await client.post("/v1/search", json={"query": "q", "depth": depth}, headers=AUTH_A)
    assert r.status_code == 422
    err = _json(r)["error"]
    assert err["code"] == "invalid_request" and err["field"] == "depth"


@pytest.mark.parametrize(
    ("path", "field", "literal"),
    [
        ("/v1/search", "leg_timeout_s", "NaN"),
        ("/v1/search", "idf_gate", "Infinity"),
        ("/v1/search", "age_decay_half_life_days", "1e400"),  # parsed as inf
        ("/v1/search", "leg_weights", '{"dense": NaN}'),
    ],
)
async def test_nan_and_infinity_are_refused_in_float_options(
    client, path: str, field: str, literal: str
) -> None:
    body = f'{{"query": "q", "{field}": {literal}}}'
    r = await client.post(
        path, content=body, headers={**AUTH_A, "content-type": "application/json"}
    )
    assert r.status_code == 422, r.text
    assert _json(r)["error"]["field"].split(".")[0] == field


def test_run_options_bound_time_and_tokens() -> None:
    from pydantic import ValidationError

    from graph.models import RunOptions

    for bad in ({"wall_time_s": math.inf}, {"wall_time_s": 10**9}, {"max_tokens": 10**12}):
        with pytest.raises(ValidationError):
            RunOptions(**bad)


async def test_a_panic_in_every_leg_is_a_json_503(client, harness: Harness) -> None:
    assert harness.services is not None
    harness.services.store.lexical = PanickingEngine()
    harness.services.store.dense = PanickingEngine()
    r = await client.post("/v1/search", json={"query": "q"}, headers=AUTH_A)
    assert r.status_code == 503
    assert _json(r)["error"]["code"] == "search_unavailable"


async def test_a_panic_anywhere_else_is_a_json_500(client, harness: Harness) -> None:
    assert harness.services is not None

    def panic(*_: Any, **__: Any) -> Any:
        raise PanicException("capacity overflow")

    harness.services.store.filter_for = panic
    r = await client.post("/v1/search", json={"query": "q"}, headers=AUTH_A)
    assert r.status_code == 500
    assert _json(r)["error"]["code"] == "engine_error"
    assert "capacity" not in r.text  # the engine's words stay in the log
    assert r.headers["x-request-id"]


async def test_a_panic_in_a_streamed_run_ends_the_stream_with_an_error_event(
    client, researcher
) -> None:
    researcher.fail_with = PanicException("capacity overflow")
    r = await client.post(
        "/v1/answers", json={"question": "who?"}, headers={**AUTH_A, "Accept": "text/event-stream"}
    )
    events = parse_sse(r.text)
    assert events[0]["event"] == "metadata"
    assert events[-1]["event"] == "error" and events[-1]["data"]["code"] == "engine_error"
    assert "capacity" not in r.text


async def test_a_panic_in_a_json_run_is_a_json_500(client, researcher) -> None:
    researcher.fail_with = PanicException("capacity overflow")
    r = await client.post("/v1/answers", json={"question": "who?"}, headers=AUTH_A)
    assert r.status_code == 500 and _json(r)["error"]["code"] == "engine_error"


# -- 3. streamed answers take the same slots as JSON answers ------------------------------


async def test_streamed_answers_wait_for_the_answer_cap(harness: Harness, settings) -> None:
    harness.settings = settings.model_copy(update={"max_concurrent_answers": 1})
    researcher = harness.researcher
    researcher.gate = asyncio.Event()
    sse = {**AUTH_A, "Accept": "text/event-stream"}
    async for client in _client_for(harness):
        streams = [
            asyncio.create_task(client.post("/v1/answers", json={"question": q}, headers=sse))
            for q in ("first?", "second?", "third?")
        ]
        await asyncio.wait_for(researcher.started.wait(), 5)
        await asyncio.sleep(0.3)  # time for a second run to start, were it allowed to
        assert len(researcher.inputs) == 1
        researcher.gate.set()
        responses = await asyncio.wait_for(asyncio.gather(*streams), 10)
    assert len(researcher.inputs) == 3
    for r in responses:
        assert parse_sse(r.text)[-1]["event"] == "done"


# -- 9. side channels ---------------------------------------------------------------------


async def test_healthz_tells_nothing_of_the_corpus(client) -> None:
    r = await client.get("/healthz")
    assert r.status_code == 200
    assert "index" not in r.json()["checks"]
    assert "records" not in r.text and "4" not in json.dumps(r.json()["checks"])


@pytest.mark.parametrize("route", ["/v1/search", "/v1/answers", "/v1/tasks"])
async def test_unknown_and_unreadable_projects_are_answered_alike(client, route: str) -> None:
    key = "query" if route == "/v1/search" else "question"
    answers = []
    # "people" exists but holds only hr documents: neither key may read any of it.
    for auth in (AUTH_A, AUTH_B):
        for project in ("nope", "people"):
            r = await client.post(route, json={key: "q", "project": project}, headers=auth)
            err = _json(r)["error"]
            answers.append((r.status_code, err["code"], err["field"], err["message"]))
    normalised = {
        (s, c, f, m.replace("'nope'", "P").replace("'people'", "P")) for s, c, f, m in answers
    }
    assert len(normalised) == 1
    status, code, field, _ = normalised.pop()
    assert (status, code, field) == (404, "unknown_project", "project")
    # a project the key may read is served
    r = await client.post(route, json={key: "q", "project": "core"}, headers=AUTH_B)
    assert r.status_code not in (404, 422), r.text


# -- 10. webhook destinations -------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "100.100.100.200",  # cloud metadata, in the shared 100.64.0.0/10
        "100.64.0.1",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "127.0.0.1",
        "169.254.169.254",
        "192.0.0.170",
        "198.18.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "224.0.0.1",
    ],
)
async def test_non_global_webhook_addresses_are_refused(monkeypatch, address: str) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return [address]

    monkeypatch.setattr(webhooks, "_resolve", resolve)
    with pytest.raises(WebhookUrlError, match="non-global"):
        await webhooks.check_destination("https://hooks.example.com/x", allow_private=False)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:4700:4700::1111", "2002:5db8:d822::"])
async def test_global_webhook_addresses_pass_and_are_returned(monkeypatch, address) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return [address]

    monkeypatch.setattr(webhooks, "_resolve", resolve)
    found = await webhooks.check_destination("https://hooks.example.com/x", allow_private=False)
    assert found == webhooks.Destination("https://hooks.example.com/x", address)


@pytest.mark.parametrize(
    ("url", "expect_url", "host", "sni"),
    [
        (
            "https://hooks.example.com/x?a=1",
            "https://93.184.216.34/x?a=1",
            "hooks.example.com",
            "hooks.example.com",
        ),
        (
            "http://hooks.example.com:8080/x",
            "http://93.184.216.34:8080/x",
            "hooks.example.com:8080",
            None,
        ),
        (
            "http://u:p@hooks.example.com/x",  # credentials kept, out of the Host header
            "http://u:p@93.184.216.34/x",
            "hooks.example.com",
            None,
        ),
    ],
)
async def test_delivery_connects_to_the_address_it_checked(
    monkeypatch, url: str, expect_url: str, host: str, sni: str | None
) -> None:
    # A rebinding name: public for the check, loopback for any later look-up.
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"]])
    looked_up: list[str] = []

    async def resolve(name: str, port: int) -> list[str]:
        looked_up.append(name)
        return next(answers)

    monkeypatch.setattr(webhooks, "_resolve", resolve)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    sender = WebhookSender(
        timeout_s=1,
        max_attempts=1,
        backoff_initial_s=0,
        backoff_max_s=0,
        allow_private=False,
        transport=httpx.MockTransport(handler),
    )
    attempts: list[Any] = []

    async def record(attempt: Any) -> None:
        attempts.append(attempt)

    assert await sender.deliver(url, webhooks_secret(), "msg_1", '{"a":1}', record)
    assert looked_up == ["hooks.example.com"]  # one look-up: the connection reuses it
    (request,) = seen
    assert str(request.url) == expect_url
    assert request.headers["host"] == host
    assert request.extensions.get("sni_hostname") == sni
    assert webhooks.verify(webhooks_secret(), request.headers, request.content) == "msg_1"


def webhooks_secret() -> str:
    from tests.unit.api.conftest import SECRET

    return SECRET


async def test_submission_refuses_a_shared_address_webhook(harness, settings, monkeypatch):
    async def resolve(host: str, port: int) -> list[str]:
        return ["100.100.100.200"]

    monkeypatch.setattr(webhooks, "_resolve", resolve)
    harness.settings = settings.model_copy(update={"webhook_allow_private": False})
    async for client in _client_for(harness):
        r = await client.post(
            "/v1/tasks",
            json={"question": "q", "webhook_url": "http://metadata.example/x"},
            headers=AUTH_A,
        )
        assert r.status_code == 422
        assert _json(r)["error"]["code"] == "webhook_url_refused"


# -- 12. small ones -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a%00b", "..%2fapp.js", "%2e%2e", "app.js%00.css", "app"])
async def test_odd_ui_asset_names_are_404_json(client, name: str) -> None:
    r = await client.get(f"/ui/{name}")
    assert r.status_code == 404
    assert _json(r)["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", ["/ui", "/ui/app.js", "/ui/style.css"])
async def test_ui_responses_carry_security_headers(client, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("cursor", ["inf:x", "1e400:x", "nan:x", "-inf:x", "1:"])
async def test_cursors_that_no_page_returned_are_422(client, cursor: str) -> None:
    r = await client.get("/v1/tasks", params={"cursor": cursor}, headers=AUTH_A)
    assert r.status_code == 422
    assert _json(r)["error"]["field"] == "cursor"


async def test_openapi_declares_what_the_service_refuses(client) -> None:
    spec = (await client.get("/openapi.json")).json()
    paths = spec["paths"]
    for path in ("/v1/answers", "/v1/tasks", "/v1/search"):
        assert "400" in paths[path]["post"]["responses"], path  # malformed_json
        assert "404" in paths[path]["post"]["responses"], path  # unknown_project
    legs = spec["components"]["schemas"]["SearchRequest"]["properties"]["legs"]
    assert legs["minItems"] == 1 and legs["items"]["pattern"] == "^(lexical|dense)$"
    events = paths["/v1/tasks/{task_id}/events"]["get"]
    assert "422" in events["responses"]
    (last_id,) = [p for p in events["parameters"] if p["name"].lower() == "last-event-id"]
    # a string or absent: a header is never null
    assert last_id["schema"] == {
        "type": "string",
        "pattern": "^[0-9]+$",
        "maxLength": 18,
        "title": "Last-Event-Id",
    }
    (cursor,) = [p for p in paths["/v1/tasks"]["get"]["parameters"] if p["name"] == "cursor"]
    assert "pattern" in cursor["schema"]["anyOf"][0]


async def test_schema_invalid_legs_and_event_ids_are_422(client) -> None:
    for legs in ([], ["sparse"]):
        r = await client.post("/v1/search", json={"query": "q", "legs": legs}, headers=AUTH_A)
        assert r.status_code == 422 and _json(r)["error"]["field"].startswith("legs")
    task = (await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)).json()
    for last_id in ("abc", "9" * 19):  # 19 digits: past a 64-bit integer in the store
        r = await client.get(
            f"/v1/tasks/{task['id']}/events", headers={**AUTH_A, "Last-Event-ID": last_id}
        )
        assert r.status_code == 422, last_id
        assert _json(r)["error"]["field"] == "last-event-id"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", "/v1/tasks", "GET, POST"),
        ("DELETE", "/v1/tasks", "GET, POST"),
        ("PUT", "/v1/search", "POST"),
        ("POST", "/healthz", "GET"),
    ],
)
async def test_405_names_every_method_served_at_the_path(
    client, method: str, path: str, allow: str
) -> None:
    r = await client.request(method, path, headers=AUTH_A)
    assert r.status_code == 405
    assert r.headers["allow"] == allow
    assert _json(r)["error"]["code"] == "method_not_allowed"
