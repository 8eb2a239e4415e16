"""`waypoint ingest` of a git repository and `waypoint sources` (typer runner, real
engines): the commit indexed, skips with reasons, a re-sync deleting a removed file,
broken links listed, --ref, usage errors in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.git_repo import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def _summary(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_ingest_a_repository_then_resync_and_list_sources(cli, tmp_path: Path):
    repo = tmp_path / "svc"
    (repo / "docs").mkdir(parents=True)
    (repo / "app.py").write_text("def handler(event):\n    return event\n")
    (repo / "old.py").write_text("class Legacy:\n    pass\n")
    (repo / "docs" / "index.md").write_text("# Service\n\nSee [setup](setup.md).\n")
    (repo / "data.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    first_head = git(repo, "rev-parse", "HEAD")
    index = str(tmp_path / "idx")

    first = _summary(cli("ingest", str(repo), "--source", "code", "--index", index, "--json"))
    assert first["added"] == 3 and first["commits"] == {"code": first_head}
    assert {"path": f"{repo}/data.bin", "reason": "binary file"} in first["skipped"]
    assert first["broken_links"] == [{"document": "code:docs/index.md", "target": "docs/setup.md"}]

    git(repo, "rm", "-q", "old.py")
    git(repo, "commit", "-q", "-m", "two")
    second_head = git(repo, "rev-parse", "HEAD")
    plain = cli("ingest", str(repo), "--source", "code", "--index", index)
    assert plain.exit_code == 0, plain.output
    assert "1 deleted" in plain.stdout and f"code at commit {second_head}" in plain.stdout

    listed = cli("sources", "--index", index, "--json")
    assert listed.exit_code == 0, listed.output
    (code,) = json.loads(listed.stdout)
    assert code["version"] == second_head and code["documents"] == 2
    assert code["broken_links"] == [{"document": "code:docs/index.md", "target": "docs/setup.md"}]
    table = cli("sources", "--index", index)
    assert second_head[:12] in table.stdout
    assert "broken link code:docs/index.md -> docs/setup.md" in table.stdout

    # --ref: the tagged tree again (other settings: the whole tree, old.py back).
    tagged = _summary(
        cli("ingest", str(repo), "--source", "code", "--ref", "v1", "--index", index, "--json")
    )
    assert tagged["commits"] == {"code": first_head} and tagged["added"] == 1

    bad_ref = cli("ingest", str(repo), "--ref", "no-such-branch", "--index", index)
    assert bad_ref.exit_code == 2 and "no commit for ref 'no-such-branch'" in bad_ref.output
    not_git = cli("ingest", str(repo / "docs"), "--ref", "main", "--index", index)
    assert not_git.exit_code == 2 and "needs a git repository" in not_git.output
