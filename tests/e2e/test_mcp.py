"""`waypoint mcp` over stdio, driven by the official MCP client SDK, on the real index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.conftest import KEYS, SECRET_MARKER, WAYPOINT
from tools.catalog import DEFAULT_TOOLS

pytestmark = pytest.mark.e2e


def _params(home: Path, tmp_path: Path, key: str) -> StdioServerParameters:
    auth = tmp_path / "keys.json"
    auth.write_text(json.dumps({"keys": KEYS}))
    env = {
        **os.environ,
        "WAYPOINT_HOME": str(home),
        "WAYPOINT_AUTH_FILE": str(auth),
        "WAYPOINT_MCP_API_KEY": key,
    }
    return StdioServerParameters(command=WAYPOINT, args=["mcp"], env=env)


async def test_mcp_tools_over_stdio_under_the_keys_acl(built_index: Path, tmp_path: Path) -> None:
    seen: dict[str, str] = {}
    for key in ("key-ana", "key-hana"):
        async with Client(_params(built_index, tmp_path, key), read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            # every tool of the research loop's catalog, as the loop sees it
            assert set(tools) == {t.name for t in DEFAULT_TOOLS}
            assert all(t.annotations.read_only_hint for t in tools.values())
            assert all(t.output_schema for t in tools.values())
            found = await c.call_tool(
                "search_knowledge", {"query": "salary band code of the Ledger team", "k": 5}
            )
            assert not found.is_error
            owner = await c.call_tool("lookup_entity", {"name": "Ledger Team"})
            doc_id = owner.structured_content["evidence"][0]["doc_id"]
            whole = await c.call_tool("get_document", {"id": doc_id})
            secret = await c.call_tool("get_document", {"id": "hr:compensation-bands.md"})
            first = found.structured_content["evidence"][0]["id"]
            near = await c.call_tool("get_neighbors", {"chunk_id": first})
            assert not near.is_error
        assert doc_id == "wiki:ledger-team.md"
        assert "Maria Okafor" in json.dumps(whole.structured_content)
        seen[key] = json.dumps([found.structured_content, secret.structured_content])
    assert SECRET_MARKER not in seen["key-ana"]
    assert SECRET_MARKER in seen["key-hana"]
