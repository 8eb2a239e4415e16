"""Standard Webhooks: signing, verification, destination checks and delivery with retries.

Signature: ``webhook-signature: v1,<base64(HMAC-SHA256(key, f"{id}.{timestamp}.{body}"))>``
where ``key`` is the base64-decoded part of the secret after ``whsec_``, computed by the
spec's reference library (``standardwebhooks``), so any receiver using it verifies ours.
The id stays the same on every retry and after a restart, so a receiver that deduplicates
on ``webhook-id`` processes each result exactly once.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from standardwebhooks import Webhook
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from api.schemas import WebhookDelivery

log = logging.getLogger("waypoint.api.webhooks")

# Records one attempt's outcome (the task store, in a thread).
_AttemptLog = Callable[[WebhookDelivery], Awaitable[None]]


class WebhookVerificationError(ValueError):
    """The signature, timestamp or headers of a received webhook are not acceptable."""


class WebhookUrlError(ValueError):
    """A webhook destination the service refuses to call."""


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes | str) -> str:
    """``v1,<signature>`` of the body as sent, by the Standard Webhooks reference library."""
    if not secret.startswith("whsec_"):
        raise ValueError("a webhook secret starts with whsec_")
    payload = body.decode("utf-8") if isinstance(body, bytes) else body
    return str(Webhook(secret).sign(webhook_id, datetime.fromtimestamp(timestamp, UTC), payload))


def signed_headers(
    secret: str, webhook_id: str, body: bytes | str, now: float | None = None
) -> dict[str, str]:
    timestamp = int(time.time() if now is None else now)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, webhook_id, timestamp, body),
        "content-type": "application/json",
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    tolerance_s: float = 300.0,
    now: float | None = None,
) -> str:
    """Check a received webhook; return its ``webhook-id`` or raise WebhookVerificationError.

    The timestamp must be within ``tolerance_s`` of now (replay protection); any of the
    space-separated ``v1,`` signatures may match (secret rotation).
    """
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        webhook_id = lower["webhook-id"]
        ts_raw = lower["webhook-timestamp"]
        sig_header = lower["webhook-signature"]
    except KeyError as exc:
        raise WebhookVerificationError(f"missing header {exc.args[0]}") from None
    try:
        timestamp = int(ts_raw)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        raise WebhookVerificationError("webhook-timestamp outside the tolerance window")
    try:
        expected = sign(secret, webhook_id, timestamp, body).split(",", 1)[1]
    except UnicodeDecodeError:
        raise WebhookVerificationError("the body is not UTF-8") from None
    for candidate in sig_header.split():
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return webhook_id
    raise WebhookVerificationError("no matching signature")


def _address_is_refused(addr: str) -> bool:
    """Anything but a globally routable unicast address: private, loopback, link-local,
    shared (100.64.0.0/10, where cloud metadata services live), reserved, multicast, and
    every IPv6 form that embeds an IPv4 address (mapped, 6to4, NAT64, Teredo) unless the
    embedded address is itself global. ``is_global`` alone says yes to 2002::/16 (6to4),
    whose 2002:7f00:1:: is 127.0.0.1.
    """
    ip = ipaddress.ip_address(addr.split("%", 1)[0])
    if not ip.is_global or ip.is_multicast:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if ip in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return any(e is not None and _address_is_refused(str(e)) for e in embedded)
    return False


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


@dataclass(frozen=True)
class Destination:
    """A checked webhook URL and the address it was checked at (None: not pinned, when
    private destinations are allowed); delivery connects to that address and no other."""

    url: str
    address: str | None = None


async def _resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (one DNS look-up)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def check_destination(url: str, allow_private: bool) -> Destination:
    """Refuse non-http(s) URLs and (unless allowed) any that resolve to an address that is
    not globally routable; return the address to connect to.

    Checked at submission (a clear 422) and again before every delivery, because DNS may
    have changed in between. The delivery connects to the address checked here: resolving
    again to connect would let a name answer a public address to the check and a private
    one to the connection (DNS rebinding).
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. a netloc with characters that normalise to '/' or '@'
        raise WebhookUrlError("webhook_url is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookUrlError("webhook_url must be an absolute http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port out of range or not a number
        raise WebhookUrlError("webhook_url has an invalid port") from exc
    if allow_private:
        return Destination(url)
    host = parts.hostname
    try:
        addresses = await _resolve(host, port)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebhookUrlError(f"webhook_url host {host!r} does not resolve") from exc
    if not addresses:
        raise WebhookUrlError(f"webhook_url host {host!r} does not resolve")
    for address in addresses:
        if _address_is_refused(address):
            raise WebhookUrlError(
                f"webhook_url resolves to a private, loopback or otherwise non-global "
                f"address ({address}); set WAYPOINT_WEBHOOK_ALLOW_PRIVATE=true to allow it"
            )
    return Destination(url, addresses[0])


def _pinned_request(
    destination: Destination, headers: dict[str, str]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """URL, headers and request extensions that reach the checked address: the URL's host
    replaced by it, the Host header and TLS server name (SNI, and the certificate check)
    kept as the name the caller gave."""
    if destination.address is None:
        return destination.url, headers, {}
    parts = urlsplit(destination.url)
    host = parts.hostname or ""
    ip = ipaddress.ip_address(destination.address.split("%", 1)[0])
    literal = f"[{ip}]" if ip.version == 6 else str(ip)
    userinfo, at, host_header = parts.netloc.rpartition("@")  # no userinfo in a Host header
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    url = urlunsplit((parts.scheme, f"{userinfo}{at}{netloc}", parts.path, parts.query, ""))
    extensions: dict[str, Any] = {}
    if parts.scheme == "https":
        extensions["sni_hostname"] = host
    return url, {**headers, "host": host_header}, extensions


class _Undelivered(Exception):
    """One attempt failed (transport error or non-2xx): retry."""


class WebhookSender:
    def __init__(
        self,
        *,
        timeout_s: float,
        max_attempts: int,
        backoff_initial_s: float,
        backoff_max_s: float,
        allow_private: bool,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.transport = transport  # tests inject a mock transport; None = the network
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.allow_private = allow_private

    async def deliver(
        self,
        url: str,
        secret: str,
        webhook_id: str,
        body: str,
        on_attempt: _AttemptLog,
        first_attempt: int = 1,
    ) -> bool:
        """POST until a 2xx or the attempts run out; log every attempt. True if delivered."""
        attempt_no = first_attempt - 1
        remaining = max(1, self.max_attempts - attempt_no)
        async with httpx.AsyncClient(
            timeout=self.timeout_s, follow_redirects=False, transport=self.transport
        ) as client:
            try:
                async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(remaining),
                    wait=wait_exponential(
                        multiplier=self.backoff_initial_s, max=self.backoff_max_s
                    ),
                    retry=retry_if_exception_type(_Undelivered),
                ):
                    with attempt:
                        attempt_no += 1
                        await self._attempt(
                            client, url, secret, webhook_id, body, attempt_no, on_attempt
                        )
            except RetryError:
                log.warning("webhook gave up", extra={"webhook_id": webhook_id, "url": url})
                return False
        return True

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        url: str,
        secret: str,
        webhook_id: str,
        body: str,
        attempt_no: int,
        on_attempt: _AttemptLog,
    ) -> None:
        at = datetime.now(UTC)
        try:
            destination = await check_destination(url, self.allow_private)
            content = body.encode("utf-8")
            target, headers, extensions = _pinned_request(
                destination, signed_headers(secret, webhook_id, body)
            )
            response = await client.post(
                target, content=content, headers=headers, extensions=extensions
            )
        except (httpx.HTTPError, WebhookUrlError) as exc:
            await on_attempt(
                WebhookDelivery(
                    attempt=attempt_no,
                    webhook_id=webhook_id,
                    at=at,
                    error=f"{type(exc).__name__}: {exc}"[:300],
                    ok=False,
                )
            )
            raise _Undelivered(str(exc)) from exc
        ok = 200 <= response.status_code < 300
        await on_attempt(
            WebhookDelivery(
                attempt=attempt_no,
                webhook_id=webhook_id,
                at=at,
                status_code=response.status_code,
                ok=ok,
                error=None if ok else f"HTTP {response.status_code}",
            )
        )
        if not ok:
            raise _Undelivered(f"HTTP {response.status_code}")
        log.info(
            "webhook delivered", extra={"webhook_id": webhook_id, "attempt": attempt_no, "url": url}
        )
