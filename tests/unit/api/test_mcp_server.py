"""The MCP face in-process through the SDK client: schemas, annotations, ACL."""

from __future__ import annotations

from mcp import Client

from api.mcp_server import build_mcp_server
from graph.models import Caller
from retrieval.records import Meta, Record
from tools.catalog import DEFAULT_TOOLS
from tools.testing import MemoryStore, memory_search


def _rec(doc: str, i: int, text: str, acl: list[str] | None = None) -> Record:
    return Record(
        id=f"wiki:{doc}#{i}",
        source="wiki",
        text=text,
        metadata={
            Meta.DOC_ID: f"wiki:{doc}",
            Meta.CHUNK_INDEX: i,
            Meta.TITLE: doc,
            Meta.ACL: acl or ["public"],
        },
    )


STORE_RECORDS = [
    _rec("Billing", 0, "Billing is owned by the Ledger team."),
    _rec("Billing", 1, "Billing runs in eu-west."),
    _rec("Salaries", 0, "Salary band code SECRET-42 for billing engineers.", acl=["hr"]),
]


async def test_tools_listed_with_schemas_and_read_only_hints() -> None:
    server = build_mcp_server(MemoryStore(STORE_RECORDS), Caller(user="ana"), memory_search)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {t.name for t in DEFAULT_TOOLS}  # get_links included
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.output_schema is not None and "evidence" in tool.output_schema["properties"]
        assert tool.input_schema["type"] == "object"
    assert tools["search_knowledge"].input_schema["required"] == ["query"]


async def test_tools_apply_the_callers_acl() -> None:
    store = MemoryStore(STORE_RECORDS)
    for groups, sees_secret in (([], False), (["hr"], True)):
        server = build_mcp_server(store, Caller(user="u", groups=groups), memory_search)
        async with Client(server) as client:
            found = await client.call_tool("search_knowledge", {"query": "billing salary band"})
            doc = await client.call_tool("get_document", {"id": "wiki:Salaries"})
            near = await client.call_tool("get_neighbors", {"chunk_id": "wiki:Billing#0"})
        ids = [e["id"] for e in found.structured_content["evidence"]]
        assert ("wiki:Salaries#0" in ids) is sees_secret
        assert bool(doc.structured_content["evidence"]) is sees_secret
        assert [e["id"] for e in near.structured_content["evidence"]] == ["wiki:Billing#1"]


async def test_bad_arguments_are_a_tool_error() -> None:
    server = build_mcp_server(MemoryStore(STORE_RECORDS), Caller(user="ana"), memory_search)
    async with Client(server) as client:
        result = await client.call_tool("search_knowledge", {"query": ""})
    assert result.is_error
