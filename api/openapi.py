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
    """A task with a ``webhook_url`` ended (succeeded, failed or was cancelled): the
    service POSTs its final state there, signed per Standard Webhooks
    (https://www.standardwebhooks.com). Answer 2xx to acknowledge; anything else, or no
    answer within the timeout, is retried with backoff under the same ``webhook-id``."""


def install_openapi(app: FastAPI) -> None:
    """Document the webhooks and list the stream event models in ``components``."""
    app.webhooks.add_api_route(
        "task.finished",
        _task_finished,
        methods=["POST"],
        operation_id="task_finished",
        summary="A task ended",
        status_code=200,
        responses={200: {"description": "Received (any 2xx)"}},
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
        document["components"]["schemas"] = dict(sorted(schemas.items()))
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
