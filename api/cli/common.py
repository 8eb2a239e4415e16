"""Shared CLI plumbing: one-line usage errors (exit 2), the index option, callers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from graph.models import Caller

IndexOption = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="Index folder of the embedded engines (default: $WAYPOINT_HOME or .waypoint).",
        envvar="WAYPOINT_HOME",
        show_default=False,
    ),
]
AsUserOption = Annotated[
    str | None,
    typer.Option(
        "--as",
        help="Act as USER from $WAYPOINT_USERS_FILE (their groups become the ACL).",
        show_default=False,
    ),
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one readable line and exit (2 = usage / input error)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def load_users(path: str | None = None) -> dict[str, dict]:
    path = path or os.environ.get("WAYPOINT_USERS_FILE")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        fail(f"cannot read users file {path}: {exc}")
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict):
        fail(f"users file {path} must be a JSON object with a 'users' object")
    return users


def resolve_caller(as_user: str | None, project: str | None = None) -> Caller:
    """No --as: the local operator, who sees public records only unless groups are given
    through $WAYPOINT_GROUPS (comma list)."""
    if as_user is None:
        groups = [g for g in os.environ.get("WAYPOINT_GROUPS", "").split(",") if g]
        return Caller(user=os.environ.get("USER", "local"), groups=groups, project=project)
    users = load_users()
    if as_user not in users:
        where = os.environ.get("WAYPOINT_USERS_FILE") or "no WAYPOINT_USERS_FILE set"
        fail(f"unknown user {as_user!r} ({where})")
    entry = users[as_user] or {}
    return Caller(
        user=as_user,
        groups=list(entry.get("groups") or []),
        project=project or entry.get("project"),
    )
