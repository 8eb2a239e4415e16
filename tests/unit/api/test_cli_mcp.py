"""`waypoint mcp --transport http` binds beyond loopback only when told to (no auth on it)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from api.cli.main import _register_all, app
from api.cli.serve import is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("mcp.internal", False),  # a name may resolve anywhere
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_non_loopback_http_bind_is_refused_with_one_line_and_exit_2(tmp_path) -> None:
    if not app.registered_commands:
        _register_all()
    result = CliRunner().invoke(
        app,
        ["mcp", "--transport", "http", "--host", "0.0.0.0", "--as", "alice"],
        env={"WAYPOINT_HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--allow-remote" in lines[0] and "no authentication" in lines[0]
    assert "Traceback" not in result.output
