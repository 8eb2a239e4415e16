"""`waypoint mcp` over stdio: get_links follows a document's hyperlinks and the
identifiers it names, both ways, and says nothing about a page the key cannot read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.conftest import WAYPOINT, mcp_env

pytestmark = pytest.mark.e2e

PAGES = {
    "wiki/payments.md": "# Payments\n\nCard refunds fail with ERR-4012 when the ledger is "
    "locked. The [ledger runbook](runbook.md) explains the unlock.\n",
    "wiki/runbook.md": "# Ledger runbook\n\nTo unlock the ledger, drain the settlement queue "
    "and restart the writer.\n",
    "wiki/errors.md": "# Error codes\n\n- ERR-4012: ledger locked by a running settlement\n",
    "hr/oncall-pay.md": "# On-call pay\n\nThe [payments page](../wiki/payments.md) is "
    "covered by the PAYSCALE-ORCHID on-call allowance, paid as the "
    "[allowance table](allowance.md) says.\n",
    "hr/allowance.md": "# Allowance table\n\nWeekday nights and weekend days.\n",
}


def _ingest(home: Path, corpus: Path) -> None:
    env = {**os.environ, "WAYPOINT_HOME": str(home)}
    for folder, acl in (("wiki", "eng"), ("hr", "hr")):
        done = subprocess.run(
            [WAYPOINT, "ingest", str(corpus / folder), "--source", folder, "--acl", acl],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]


async def test_get_links_over_mcp_under_the_keys_acl(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for rel, text in PAGES.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    home = tmp_path / "home"
    _ingest(home, corpus)
    seen: dict[str, dict[str, list[str]]] = {}
    for key in ("key-ana", "key-hana"):
        params = StdioServerParameters(
            command=WAYPOINT, args=["mcp"], env=mcp_env(home, tmp_path, key)
        )
        async with Client(params, read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            annotations = tools["get_links"].annotations
            assert annotations is not None and annotations.read_only_hint is True
            out = await c.call_tool("get_links", {"doc": "wiki:payments.md", "direction": "out"})
            inward = await c.call_tool(
                "get_links", {"doc": "wiki:payments.md#0", "direction": "in"}
            )
            hidden = await c.call_tool("get_links", {"doc": "hr:oncall-pay.md"})
        assert not out.is_error and not inward.is_error and not hidden.is_error
        seen[key] = {
            name: [e["doc_id"] for e in result.structured_content["evidence"]]
            for name, result in (("out", out), ("in", inward), ("hidden", hidden))
        }
        seen[key]["text"] = [json.dumps(r.structured_content) for r in (out, inward, hidden)]
    # ana (eng): the linked runbook and the page defining the error code; no hr page.
    assert set(seen["key-ana"]["out"]) == {"wiki:runbook.md", "wiki:errors.md"}
    assert seen["key-ana"]["in"] == [] and seen["key-ana"]["hidden"] == []
    assert not any("ORCHID" in t for t in seen["key-ana"]["text"])
    # hana (hr): the hr page's link to the allowance table, not its link to a wiki page
    # she may not read; of the wiki page, nothing.
    assert seen["key-hana"]["hidden"] == ["hr:allowance.md"]
    assert seen["key-hana"]["out"] == [] and seen["key-hana"]["in"] == []
