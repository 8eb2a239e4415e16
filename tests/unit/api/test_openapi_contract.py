"""The OpenAPI document is the contract: auth, streams, webhooks, examples, errors; and a
change to it is a visible diff against the committed snapshot.

After an intended change to the API, review the diff the snapshot test prints, then
rewrite the snapshot with ``WAYPOINT_UPDATE_OPENAPI_SNAPSHOT=1`` and commit it with the
change.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from api.app import create_app
from api.event_models import ANSWER_STREAM, TASK_STREAM
from api.schemas import AnswerRequest, ReviewInput, SearchRequest, TaskRequest, is_blank
from api.settings import ApiSettings
from api.webhooks import WebhookUrlError, check_destination
from tests.unit.api.conftest import AUTH_A
from tests.unit.api.test_tasks_and_streams import parse_sse

SNAPSHOT = Path(__file__).with_name("openapi.snapshot.json")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(ApiSettings(), start_up_findings=[]).openapi()


def _contract(document: dict[str, Any]) -> dict[str, Any]:
    """The document less what changes with every release (the version)."""
    return {**document, "info": {k: v for k, v in document["info"].items() if k != "version"}}


def test_the_contract_matches_its_snapshot(document: dict[str, Any]) -> None:
    now = json.dumps(_contract(document), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("WAYPOINT_UPDATE_OPENAPI_SNAPSHOT") == "1":
        SNAPSHOT.write_text(now, encoding="utf-8")
    before = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else "{}"
    if json.loads(before) != json.loads(now):
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                now.splitlines(keepends=True),
                "openapi.snapshot.json",
                "the app's document",
                n=2,
            )
        )
        pytest.fail(
            "the API contract changed; if intended, rewrite the snapshot "
            f"(WAYPOINT_UPDATE_OPENAPI_SNAPSHOT=1) and commit it:\n{diff[:6000]}"
        )


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def test_every_keyed_route_declares_the_bearer_scheme(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for method, path, operation in _operations(document):
        if path == "/healthz":
            assert "security" not in operation  # needs no key
            continue
        assert operation.get("security") == [{"ApiKey": []}], (method, path)
        assert {"401", "429"} <= set(operation["responses"]), (method, path)


def test_every_error_is_the_error_body(document: dict[str, Any]) -> None:
    for method, path, operation in _operations(document):
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")) and path != "/healthz":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [
            *([node["$ref"]] if isinstance(node.get("$ref"), str) else []),
            *(r for v in node.values() for r in _refs(v)),
        ]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_reference_resolves(document: dict[str, Any]) -> None:
    names = set(document["components"]["schemas"])
    for ref in _refs(document):
        assert ref.removeprefix("#/components/schemas/") in names, ref


@pytest.mark.parametrize(
    ("path", "method", "stream"),
    [("/v1/answers", "post", ANSWER_STREAM), ("/v1/tasks/{task_id}/events", "get", TASK_STREAM)],
)
def test_each_stream_documents_its_events(
    document: dict[str, Any], path: str, method: str, stream: dict[str, type[BaseModel]]
) -> None:
    content = document["paths"][path][method]["responses"]["200"]["content"]
    variants = content["text/event-stream"]["itemSchema"]["oneOf"]
    documented = {
        v["properties"]["event"]["const"]: v["properties"]["data"]["contentSchema"]["$ref"]
        for v in variants
    }
    assert documented == {
        name: f"#/components/schemas/{model.__name__}" for name, model in stream.items()
    }


def test_the_webhook_is_documented(document: dict[str, Any]) -> None:
    hook = document["webhooks"]["task.finished"]["post"]
    body = hook["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/WebhookEvent"}
    headers = {p["name"] for p in hook["parameters"] if p["in"] == "header"}
    assert headers == {"webhook-id", "webhook-timestamp", "webhook-signature"}


@pytest.mark.parametrize("model", [AnswerRequest, TaskRequest, SearchRequest])
def test_request_examples_are_valid_requests(
    document: dict[str, Any], model: type[BaseModel]
) -> None:
    examples = document["components"]["schemas"][model.__name__]["examples"]
    assert examples
    for example in examples:
        model.model_validate(example)


# -- what schemathesis found: schema-valid requests refused, or schema-invalid ones served
@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/search", {"query": "q", "time_to": 0}, "time_to"),  # a number is no date-time
        ("/v1/search", {"query": "q", "time_from": "2026-01-01"}, "time_from"),  # no time
        ("/v1/search", {"query": "q", "time_from": "2026-01-01T09:00:00"}, "time_from"),
        ("/v1/search", {"query": "q", "leg_timeout_s": 0.01}, "leg_timeout_s"),
        ("/v1/search", {"query": "\u00a0"}, "query"),  # blank, as the pattern says
        ("/v1/answers", {"question": "\u3000\ufeff"}, "question"),  # JSON Schema's \s
        ("/v1/search", {"query": "q", "rewrite": 0}, "rewrite"),  # 0 is no boolean
        ("/v1/search", {"query": "q", "rerank": "true"}, "rerank"),
        ("/v1/search", {"query": "q", "k": "10"}, "k"),  # a string is no number
        ("/v1/search", {"query": "q", "idf_gate": True}, "idf_gate"),
        ("/v1/answers", {"question": "q", "max_rounds": "2"}, "max_rounds"),
        ("/v1/tasks", {"question": "q", "webhook_url": ""}, "webhook_url"),
        ("/v1/tasks", {"question": "q", "webhook_url": "ftp://x/y"}, "webhook_url"),
    ],
)
async def test_what_the_schema_refuses_is_refused(
    client: httpx.AsyncClient, route: str, body: dict[str, Any], field: str
) -> None:
    r = await client.post(route, json=body, headers=AUTH_A)
    assert r.status_code == 422, r.text
    assert r.json()["error"].get("field") == field, r.text


@pytest.mark.parametrize("status", ["400", "413"])
def test_every_route_with_a_json_body_declares_what_a_bad_body_gets(
    document: dict[str, Any], status: str
) -> None:
    # Wherever a body is read: not JSON is a 400 malformed_json, too long a 413.
    missing = [
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method, op in item.items()
        if "application/json" in op.get("requestBody", {}).get("content", {})
        and status not in op["responses"]
    ]
    assert not missing


def _validator(document: dict[str, Any], model: str) -> Any:
    from jsonschema import Draft202012Validator

    schema = {"$ref": f"#/components/schemas/{model}", "components": document["components"]}
    return Draft202012Validator(schema)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"action": "approve", "pin": ["wiki:a"], "exclude": ["payroll"]},
        {"action": "edit", "calls": [{"tool": "search_knowledge", "args": {"query": "q"}}]},
        {"action": "edit", "calls": [{"tool": "get_links", "args": {"x": 1}}]},  # runs, fails
        {"action": "edit"},  # an edit gives its calls
        {"action": "edit", "calls": []},
        {"action": "approve", "calls": [{"tool": "search_knowledge"}]},  # edit only
        {"calls": [{"tool": "lookup_entity"}]},  # approve by default: no calls
        {"action": "edit", "calls": [{"tool": "rm_rf"}]},
        {"action": "edit", "calls": [{"tool": "search_knowledge"}, {"tool": "NaN"}]},
    ],
)
def test_the_review_schema_accepts_exactly_what_the_run_takes(
    document: dict[str, Any], body: dict[str, Any]
) -> None:
    """A decision the schema allows is one the run can take (schemathesis posted unknown
    tools the schema allowed: 422 invalid_review), and one it refuses is refused."""
    from graph.review import InvalidReview, checked
    from tools.catalog import Catalog

    schema_valid = _validator(document, "ReviewInput").is_valid(body)
    try:
        checked({**ReviewInput.model_validate(body).model_dump(mode="json")}, Catalog())
        taken = True
    except InvalidReview:
        taken = False
    assert schema_valid == taken, (body, schema_valid, taken)


@pytest.mark.parametrize("url", ["http://a\uff03b/", "http://[::1/"])
async def test_a_url_the_parser_refuses_is_a_refused_destination(url: str) -> None:
    # urlsplit raises ValueError on these (a full-width '#' normalises to '#' in the host;
    # an unclosed bracket); the schema's pattern refuses them first, this is the check's
    # own guard (a ValueError escaping it was a 500).
    with pytest.raises(WebhookUrlError):
        await check_destination(url, allow_private=True)


async def test_a_numeric_last_event_id_is_a_string_header(
    client: httpx.AsyncClient, document: dict[str, Any]
) -> None:
    (param,) = [
        p
        for p in document["paths"]["/v1/tasks/{task_id}/events"]["get"]["parameters"]
        if p["name"] == "last-event-id"
    ]
    assert param["schema"]["type"] == "string"  # never null: a header is a string or absent
    r = await client.get("/v1/tasks/t/events", headers={**AUTH_A, "Last-Event-ID": "null"})
    assert r.status_code == 422  # not a number: refused, as the pattern says


async def test_an_rfc3339_time_filter_is_read(client: httpx.AsyncClient) -> None:
    # Past validation: the test store's engines are down, so the search itself is a 503.
    body = {
        "query": "q",
        "time_from": "2026-01-01T09:00:00Z",
        "time_to": "2026-02-01T00:00:00+01:00",
    }
    r = await client.post("/v1/search", json=body, headers=AUTH_A)
    assert r.status_code == 503, r.text


async def test_an_integral_float_is_an_integer(client: httpx.AsyncClient) -> None:
    # JSON Schema counts 2.0 as an integer: the schema allows it, so the service does.
    r = await client.post("/v1/answers", json={"question": "q", "max_rounds": 2.0}, headers=AUTH_A)
    assert r.status_code == 200, r.text


def _check_documented(model: type[BaseModel], data: dict[str, Any]) -> None:
    """``data`` is an instance of ``model``, with no field the model does not document."""
    model.model_validate(data)
    assert set(data) <= set(model.model_fields), (
        model.__name__,
        set(data) - set(model.model_fields),
    )


async def test_the_answer_stream_sends_what_its_models_say(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v1/answers", json={"question": "q"}, headers={**AUTH_A, "Accept": "text/event-stream"}
    )
    events = parse_sse(r.text)
    assert {e["event"] for e in events} >= {"metadata", "tool_call", "token", "citation", "done"}
    for event in events:
        _check_documented(ANSWER_STREAM[event["event"]], event["data"])


async def test_the_task_stream_sends_what_its_models_say(client: httpx.AsyncClient) -> None:
    task = (await client.post("/v1/tasks", json={"question": "q"}, headers=AUTH_A)).json()
    r = await client.get(f"/v1/tasks/{task['id']}/events", headers=AUTH_A)
    events = parse_sse(r.text)
    assert events[0]["event"] == "metadata" and events[-1]["event"] == "done"
    for event in events:
        _check_documented(TASK_STREAM[event["event"]], event["data"])


def test_the_length_limit_in_the_document_is_the_servers() -> None:
    schemas = create_app(ApiSettings(max_question_chars=50), start_up_findings=[]).openapi()[
        "components"
    ]["schemas"]
    assert schemas["AnswerRequest"]["properties"]["question"]["maxLength"] == 50
    assert schemas["TaskRequest"]["properties"]["question"]["maxLength"] == 50
    assert schemas["SearchRequest"]["properties"]["query"]["maxLength"] == 50


@pytest.mark.parametrize("text", ["\x1c", "\x85", "a"])
def test_blank_is_what_the_schema_pattern_says(text: str) -> None:
    # Not white space to ECMA-262 (JSON Schema's patterns), though str.isspace says so for
    # the first two: accepted, as a generated schema-valid request expects.
    AnswerRequest.model_validate({"question": text})
    assert not is_blank(text)
