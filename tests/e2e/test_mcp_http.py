"""`waypoint mcp --transport http` as a subprocess, driven by the MCP SDK's streamable HTTP
client, on the real index."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.e2e.conftest import SECRET_MARKER, WAYPOINT, free_port, mcp_env, wait_for
from tools.catalog import DEFAULT_TOOLS

pytestmark = pytest.mark.e2e

LOOPBACK_V4 = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it
SECRET_DOC = "hr:compensation-bands.md"


@contextmanager
def _mcp_http(home: Path, workdir: Path, key: str) -> Iterator[int]:
    """`waypoint mcp --transport http` with no --host (the default bind); yields its port."""
    port = free_port()
    log_path = workdir / f"mcp-{port}.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [WAYPOINT, "mcp", "--transport", "http", "--port", str(port)],
            env=mcp_env(home, workdir, key),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )

        def listening() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"waypoint mcp exited: {log_path.read_text()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        try:
            wait_for(listening, timeout=180, interval=0.2)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _listen_addresses(port: int) -> set[str]:
    """Local addresses (kernel hex form) with a TCP socket in LISTEN on ``port``."""
    found = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            local, _remote, state = line.split()[1:4]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def _assert_local_only(port: int) -> None:
    if Path("/proc/net/tcp").exists():
        # The default bind is loopback only: no 0.0.0.0 or :: listener.
        assert _listen_addresses(port) == {LOOPBACK_V4}
    # A page on another origin cannot reach it through DNS rebinding.
    rebound = httpx.post(
        f"http://127.0.0.1:{port}/mcp",
        headers={
            "Host": f"attacker.example:{port}",
            "Accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        timeout=30,
    )
    assert rebound.status_code == 421


def _text(result: Any) -> str:
    return json.dumps(result.structured_content)


async def test_mcp_tools_over_streamable_http_under_the_keys_acl(
    built_index: Path, tmp_path: Path
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for key in ("key-ana", "key-hana"):
        with _mcp_http(built_index, tmp_path, key) as port:
            _assert_local_only(port)
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                found = await c.call_tool(
                    "search_knowledge", {"query": "salary band code of the Ledger team", "k": 5}
                )
                secret = await c.call_tool("get_document", {"id": SECRET_DOC})
                too_many = await c.call_tool("search_knowledge", {"query": "ledger", "k": 500})
        seen[key] = {"tools": tools, "found": found, "secret": secret, "too_many": too_many}

    tools = seen["key-ana"]["tools"]
    # every tool of the research loop's catalog, as the loop sees it
    assert set(tools) == {t.name for t in DEFAULT_TOOLS}
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert set(tool.output_schema["properties"]) == {"evidence", "detail", "warnings"}
    search_in = tools["search_knowledge"].input_schema
    assert search_in["required"] == ["query"]
    assert search_in["properties"]["k"]["maximum"] == 50
    assert tools["get_document"].input_schema["required"] == ["id"]
    assert seen["key-ana"]["too_many"].is_error  # the input schema is enforced, not advisory

    for key in ("key-ana", "key-hana"):
        assert not seen[key]["found"].is_error
        assert not seen[key]["secret"].is_error
    ana_found = seen["key-ana"]["found"].structured_content["evidence"]
    assert ana_found, "the public pages are searchable for ana"
    assert all(e["source"] != "hr" for e in ana_found)
    assert SECRET_MARKER not in _text(seen["key-ana"]["found"])
    assert seen["key-ana"]["secret"].structured_content["evidence"] == []
    # The same calls under hana's key (group hr) do reach the restricted page.
    assert SECRET_MARKER in _text(seen["key-hana"]["found"])
    assert SECRET_MARKER in _text(seen["key-hana"]["secret"])
