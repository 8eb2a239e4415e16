"""What a new user meets first (issue 25, "New user, fresh clone"): --help names types as
words, `waypoint ingest` says what it skipped and fails when nothing could be ingested,
its progress goes to stderr, and `waypoint serve` refuses to start without keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli.main import _register_all, app, type_word

COMMANDS = ["ingest", "search", "sources", "delete", "reindex", "ask", "trace", "serve", "mcp"]
COMMANDS += ["eval", "eval-beir"]


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    if not app.registered_commands:
        _register_all()
    return CliRunner()


@pytest.mark.parametrize(
    ("label", "word"),
    [
        ("<str>", "TEXT"),
        ("<int>", "INTEGER"),
        ("<float>", "FLOAT"),
        ("<path>", "PATH"),
        ("<list[Path]>", "PATH"),
        ("<list[str]>", "TEXT"),
        ("<int range>", "INTEGER"),
        ("<stdio|http>", "[stdio|http]"),
        ("<Decimal>", "DECIMAL"),
    ],
)
def test_type_word(label: str, word: str) -> None:
    assert type_word(label) == word


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_types_as_words_and_flags_take_none(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "<" not in result.output.replace("<=", ""), result.output
    for line in result.output.splitlines():
        cells = line.strip("│ ").split()
        if cells[:1] == ["--help"]:
            assert cells[1] == "Show", line  # a flag: no type word before its help


def test_help_shows_text_and_integer(runner: CliRunner) -> None:
    out = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "160"}).output
    assert "TEXT" in out and "INTEGER" in out and "PATH" in out
    json_line = next(line for line in out.splitlines() if "--json" in line)
    assert "BOOLEAN" not in json_line and "TEXT" not in json_line


# -- ingest ---------------------------------------------------------------------------------


def test_ingest_of_only_bad_files_exits_1_with_one_error_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "blob.md").write_bytes(b"\x00\x01binary")
    (folder / "empty.md").write_text("")
    result = runner.invoke(app, ["ingest", str(folder), "--index", str(tmp_path / "idx")])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "nothing ingested" in errors[0]
    assert "blob.md: binary content" in result.stdout
    assert "skipped" in result.stdout and "empty.md: empty document" in result.stdout


def test_ingest_json_of_only_bad_files_still_prints_the_summary_then_exits_1(
    runner: CliRunner, tmp_path: Path
) -> None:
    bad = tmp_path / "blob.md"
    bad.write_bytes(b"\x00junk")
    result = runner.invoke(app, ["ingest", str(bad), "--index", str(tmp_path / "idx"), "--json"])
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["added"] == 0 and summary["failed"][0]["path"].endswith("blob.md")


def test_an_empty_file_is_reported_as_skipped_with_its_reason(
    runner: CliRunner, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("   \n")
    result = runner.invoke(app, ["ingest", str(empty), "--index", str(tmp_path / "idx"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["failed"] == []
    assert summary["skipped"] == [{"path": str(empty), "reason": "empty document"}]


def test_ingest_progress_goes_to_stderr_also_with_json(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "a.md").write_text("# Payments\n\nThe payments team owns ledger-service.\n")
    result = runner.invoke(app, ["ingest", str(folder), "--index", str(tmp_path / "idx"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 1  # stdout: the summary alone
    assert f"reading {folder}" in result.stderr
    assert "1 record(s) indexed" in result.stderr


def test_a_bad_source_name_is_one_line_and_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    result = runner.invoke(
        app,
        ["ingest", str(tmp_path / "a.md"), "--source", "a b", "--index", str(tmp_path / "i")],
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: invalid source name")


# -- serve ----------------------------------------------------------------------------------


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """`waypoint serve` up to the point it would listen: the app it would serve."""
    import signal

    import uvicorn

    import api.app

    served: list[object] = []
    monkeypatch.setattr(api.app, "create_app", lambda settings: settings)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    return served


def _serve_env(tmp_path: Path, **env: str) -> dict[str, str]:
    return {"WAYPOINT_HOME": str(tmp_path / "home"), "WAYPOINT_ENV": "", **env}


def test_serve_without_keys_refuses_with_one_line(
    runner: CliRunner, tmp_path: Path, no_server: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAYPOINT_AUTH_FILE", raising=False)
    result = runner.invoke(app, ["serve"], env=_serve_env(tmp_path))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert "WAYPOINT_AUTH_FILE" in lines[0] and "--dev" in lines[0]
    assert no_server == []


def test_serve_with_an_empty_key_file_refuses(
    runner: CliRunner, tmp_path: Path, no_server: list[object]
) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text('{"keys": {}}')
    result = runner.invoke(app, ["serve"], env=_serve_env(tmp_path, WAYPOINT_AUTH_FILE=str(keys)))
    assert result.exit_code == 2 and "holds no key" in result.output
    assert no_server == []


@pytest.mark.parametrize("how", ["--dev", "WAYPOINT_ENV"])
def test_serve_in_development_starts_without_keys_and_warns(
    runner: CliRunner,
    tmp_path: Path,
    no_server: list[object],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    monkeypatch.delenv("WAYPOINT_AUTH_FILE", raising=False)
    args = ["serve", "--dev"] if how == "--dev" else ["serve"]
    env = _serve_env(tmp_path, **({"WAYPOINT_ENV": "development"} if how != "--dev" else {}))
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert len(no_server) == 1
    assert "401" in result.stderr


def test_serve_with_keys_starts(runner: CliRunner, tmp_path: Path, no_server: list[object]) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": {"k1": {"user": "ana", "groups": ["eng"]}}}))
    result = runner.invoke(app, ["serve"], env=_serve_env(tmp_path, WAYPOINT_AUTH_FILE=str(keys)))
    assert result.exit_code == 0, result.output
    assert len(no_server) == 1 and result.stderr == ""
