"""What the OpenAPI document says beyond the routes: the event streams' models and the
webhooks the service sends.

FastAPI lists in ``components`` only the models of bodies and JSON responses; a stream's
``itemSchema`` names its event models by reference (api.event_models), so they are added
here. The webhooks are operations of ``app.webhooks``: the request the service makes to a
task's ``webhook_url``, with the Standard Webhooks headers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Header
from pydantic.json_schema import models_json_schema

from api.event_models import STREAM_MODELS
from api.schemas import WebhookEvent
from api.settings import ApiSettings

_WEBHOOK_HEADERS = {
    "webhook_id": "the message id: the same on every retry of one result (deduplicate on it)",
    "webhook_timestamp": "epoch seconds of this attempt (refuse one far from now: replays)",
    "webhook_signature": "space-separated `v1,<base64 HMAC-SHA256>` of "
    "`{webhook-id}.{webhook-timestamp}.{body}` under the key's webhook_secret",
}


def _task_finished(
    body: WebhookEvent,
    webhook_id: Annotated[str, Header(description=_WEBHOOK_HEADERS["webhook_id"])],
    webhook_timestamp: Annotated[str, Header(description=_WEBHOOK_HEADERS["webhook_timestamp"])],
    webhook_signature: Annotated[str, Header(description=_WEBHOOK_HEADERS["webhook_signature"])],
) -> None:
    """A task with a `webhook_url` ended (succeeded, failed or was cancelled), or paused
    for review (`task.input_required`, its own webhook-id): the
    service POSTs its state there, signed per Standard Webhooks
    (https://www.standardwebhooks.com): verify the signature and the timestamp, then
    deduplicate on `webhook-id`."""


# What the service makes of a receiver's answer (FastAPI would document the receiver as
# one of its own routes: a JSON 200 and a 422).
_RECEIVER_RESPONSES = {
    "2XX": {"description": "Received: the delivery is done"},
    "default": {
        "description": "Anything else, or no answer within the timeout: sent again with "
        "backoff, same webhook-id, until the attempts run out"
    },
}
_ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
# What every route that needs a key may answer, besides its own responses.
_KEYED = {
    "401": "No key, or a key the auth file does not hold",
    "429": "Too many requests for this key (the per-key rate limit); retry after Retry-After",
}


def _keyed_errors(document: dict[str, Any]) -> None:
    """Every error is the one JSON error body (FastAPI documents its own 422 shape, which
    this API never sends), and every keyed route says it may answer 401 and 429."""
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for response in responses.values():
                json_content = response.get("content", {}).get("application/json", {})
                if json_content.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError"):
                    response["content"] = _ERROR_BODY
            if not operation.get("security"):
                continue
            for status, description in _KEYED.items():
                responses.setdefault(status, {"content": _ERROR_BODY})
                responses[status]["description"] = description
            responses["429"]["headers"] = {
                "Retry-After": {
                    "description": "seconds to wait",
                    "schema": {"type": "integer", "minimum": 1},
                }
            }
            operation["responses"] = dict(sorted(responses.items()))


def _text_limits(schemas: dict[str, Any], max_chars: int) -> None:
    """The question and query length limit is a setting: the document states this
    server's (a longer one is refused, 422)."""
    for model, field in (("AnswerRequest", "question"), ("TaskRequest", "question")):
        schemas[model]["properties"][field]["maxLength"] = max_chars
    schemas["SearchRequest"]["properties"]["query"]["maxLength"] = max_chars


def install_openapi(app: FastAPI, settings: ApiSettings) -> None:
    """Document the webhooks and list the stream event models in ``components``."""
    app.webhooks.add_api_route(
        "task.finished",
        _task_finished,
        methods=["POST"],
        operation_id="task_finished",
        summary="A task ended",
    )
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = generate()
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        _, defs = models_json_schema(
            [(model, "serialization") for model in STREAM_MODELS],
            ref_template="#/components/schemas/{model}",
        )
        for name, schema in defs.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        _keyed_errors(document)
        _text_limits(schemas, settings.max_question_chars)
        for path_item in document.get("webhooks", {}).values():
            for operation in path_item.values():
                operation["responses"] = dict(_RECEIVER_RESPONSES)
        for name in ("HTTPValidationError", "ValidationError"):  # replaced by ErrorBody
            schemas.pop(name, None)
        document["components"]["schemas"] = dict(sorted(schemas.items()))
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
