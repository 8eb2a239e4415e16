"""`waypoint ingest / search / sources / delete` in-process (typer runner, real engines)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "connectors"


def _docs(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    (root / "teams").mkdir(parents=True)
    (root / "teams" / "payments.md").write_text(
        "# Payments team\n\nThe payments team owns ledger-service. Lead: Dana Okafor.\n"
    )
    (root / "secret.md").write_text(
        "---\ntitle: Salary bands\nacl: [hr]\n---\n# Salary bands\n\nBand L5 tops at 190k.\n"
    )
    (root / "blob.md").write_bytes(b"\x00\x01binary\x00junk")
    return root


def test_ingest_reports_summary_and_skips_bad_file(cli, tmp_path):
    index = tmp_path / "idx"
    res = cli("ingest", str(_docs(tmp_path)), "--index", str(index), "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["added"] == 2 and summary["unchanged"] == 0
    assert any("blob.md" in f["path"] for f in summary["failed"])
    again = json.loads(
        cli("ingest", str(tmp_path / "wiki"), "--index", str(index), "--json")
        .stdout.strip()
        .splitlines()[-1]
    )
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 2)
    assert again["embeddings"] == 0


def test_search_respects_acl_and_explains(cli, tmp_path):
    index = tmp_path / "idx"
    cli("ingest", str(_docs(tmp_path)), "--index", str(index), "--project", "acme")
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": {"hana": {"groups": ["hr"]}, "eve": {"groups": []}}}))
    env = {"WAYPOINT_USERS_FILE": str(users)}
    as_eve = cli(
        "search", "salary band L5", "--index", str(index), "--json", "--as", "eve", env=env
    )
    assert as_eve.exit_code == 0, as_eve.output
    assert all("secret" not in h["doc_id"] for h in json.loads(as_eve.stdout)["hits"])
    as_hana = cli(
        "search", "salary band L5", "--index", str(index), "--json", "--as", "hana", env=env
    )
    assert json.loads(as_hana.stdout)["hits"][0]["doc_id"] == "wiki:secret.md"
    explained = cli("search", "who owns ledger-service", "--index", str(index), "--explain")
    assert explained.exit_code == 0
    for stage in ("rewritten:", "leg: lexical", "leg: dense", "fused (RRF)", "timings:"):
        assert stage in explained.stdout
    unknown = cli("search", "x", "--index", str(index), "--as", "mallory", env=env)
    assert unknown.exit_code == 2 and "unknown user" in unknown.output


def test_usage_errors_exit_2_with_one_line(cli, tmp_path):
    missing = cli("ingest", str(tmp_path / "nope"), "--index", str(tmp_path / "i"))
    assert missing.exit_code == 2 and "no such file" in missing.output
    no_index = cli("search", "anything", "--index", str(tmp_path / "empty"))
    assert no_index.exit_code == 2 and "waypoint ingest" in no_index.output
    assert "Traceback" not in no_index.output
    bad_leg = cli("search", "q", "--index", str(tmp_path / "empty"), "--legs", "sparse")
    assert bad_leg.exit_code == 2 and "unknown leg" in bad_leg.output


def test_acl_takes_a_comma_list_of_groups(cli, tmp_path):
    # "--acl hr,eng" once made one group named "hr,eng" that no user holds.
    root = tmp_path / "plans"
    root.mkdir()
    (root / "plan.md").write_text("# Reorg plan\n\nThe zeppelin team merges into platform.\n")
    index = tmp_path / "idx"
    res = cli("ingest", str(root), "--index", str(index), "--acl", "hr, eng", "--acl", "ops")
    assert res.exit_code == 0, res.output
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": {"e": {"groups": ["eng"]}, "o": {"groups": ["ops"]}}}))
    env = {"WAYPOINT_USERS_FILE": str(users)}
    for user in ("e", "o"):
        found = cli("search", "zeppelin", "--index", str(index), "--json", "--as", user, env=env)
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)["hits"][0]["metadata"]["acl"] == ["hr", "eng", "ops"]
    blank = cli("ingest", str(root), "--index", str(index), "--acl", "hr,,eng")
    assert blank.exit_code == 2 and "empty group" in blank.output


def test_search_k_is_bounded_with_one_line(cli, tmp_path):
    for k in ("0", "201", str(10**12)):
        res = cli("search", "q", "--index", str(tmp_path / "none"), "--k", k)
        assert res.exit_code == 2
        assert res.output.strip().splitlines() == [f"error: --k must be between 1 and 200, got {k}"]


def test_sources_and_delete(cli, tmp_path):
    index = tmp_path / "idx"
    cli("ingest", str(_docs(tmp_path)), "--index", str(index), "--project", "acme")
    cli("ingest", str(FIXTURES / "tickets.json"), "--source", "tickets", "--index", str(index))
    listed = json.loads(cli("sources", "--index", str(index), "--json").stdout)
    by_name = {s["name"]: s for s in listed}
    assert set(by_name) == {"wiki", "tickets"} and by_name["wiki"]["projects"] == ["acme"]
    assert cli("delete", "wiki:teams/payments.md", "--index", str(index)).exit_code == 0
    res = cli("search", "ledger-service Dana", "--index", str(index), "--json")
    assert all(h["doc_id"] != "wiki:teams/payments.md" for h in json.loads(res.stdout)["hits"])
    assert cli("delete", "tickets", "--index", str(index)).exit_code == 0
    assert cli("delete", "nothing-here", "--index", str(index)).exit_code == 2


def test_search_whose_every_leg_fails_exits_1_with_the_reason(cli, tmp_path, monkeypatch):
    from retrieval.engines.tantivy_engine import TantivyLexicalEngine

    index = tmp_path / "idx"
    cli("ingest", str(_docs(tmp_path)), "--index", str(index))

    def broken(*_args, **_kwargs):
        raise OSError("lexical index unreadable")

    monkeypatch.setattr(TantivyLexicalEngine, "search", broken)
    res = cli("search", "ledger-service", "--index", str(index), "--legs", "lexical")
    assert res.exit_code == 1
    assert "search failed" in res.output and "lexical index unreadable" in res.output
    assert "Traceback" not in res.output
