"""Webhooks as a receiver sees them: signed per Standard Webhooks (checked with the spec's
reference verifier, both ways), shaped as the OpenAPI document's ``task.finished`` says,
and sent to the address that was checked, with no second DNS look-up."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import standardwebhooks

from api import webhooks
from api.schemas import WebhookEvent
from api.webhooks import WebhookSender
from tests.unit.api.conftest import SECRET, Harness
from tests.unit.api.test_tasks_and_streams import Receiver, webhook_sent


async def test_a_delivered_webhook_verifies_with_the_reference_library(harness: Harness) -> None:
    receiver = Receiver()
    task = await webhook_sent(harness, receiver)
    assert task["webhook"]["state"] == "delivered"
    ((headers, content),) = receiver.calls
    payload = standardwebhooks.Webhook(SECRET).verify(content, headers)
    # The body is what the OpenAPI webhook says it is.
    event = WebhookEvent.model_validate(payload)
    assert event.type == "task.succeeded" and event.data.id == task["id"]
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(SECRET).verify(content.replace(b"q", b"Q"), headers)


def test_signatures_agree_with_the_reference_library_both_ways() -> None:
    body = json.dumps({"type": "task.failed", "data": {"id": "task_1"}})
    ours = webhooks.signed_headers(SECRET, "msg_1", body)
    assert standardwebhooks.Webhook(SECRET).verify(body, ours) == json.loads(body)
    reference = standardwebhooks.Webhook(SECRET)
    theirs = {
        "webhook-id": "msg_2",
        "webhook-timestamp": ours["webhook-timestamp"],
        "webhook-signature": reference.sign(
            "msg_2", datetime.fromtimestamp(int(ours["webhook-timestamp"]), UTC), body
        ),
    }
    assert webhooks.verify(SECRET, theirs, body) == "msg_2"


async def test_delivery_connects_to_the_checked_address_without_a_second_look_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real connection: the name never resolves (.invalid), so the webhook arrives only if
    the connection goes to the address the check resolved, not to a new look-up."""
    seen: list[tuple[str, bytes]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await reader.readexactly(length)
        host = next(
            line.split(b":", 1)[1].strip().decode()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"host:")
        )
        seen.append((host, body))
        writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    looked_up: list[str] = []

    async def resolve(host: str, _port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    # The check resolves through the stub and lets loopback through (the test's server);
    # everything after it uses the real network stack.
    monkeypatch.setattr(webhooks, "_resolve", resolve)
    monkeypatch.setattr(webhooks, "_address_is_refused", lambda _addr: False)
    sender = WebhookSender(
        timeout_s=5, max_attempts=1, backoff_initial_s=0, backoff_max_s=0, allow_private=False
    )
    outcomes: list[Any] = []

    async def record(attempt: Any) -> None:
        outcomes.append(attempt)

    url = f"http://hooks.rebind.invalid:{port}/hook"
    async with server:
        ok = await sender.deliver(url, SECRET, "msg_1", '{"a":1}', record)
    assert ok, outcomes
    assert looked_up == ["hooks.rebind.invalid"]
    assert seen == [(f"hooks.rebind.invalid:{port}", b'{"a":1}')]
