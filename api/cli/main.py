"""The `waypoint` command line: one typer app, each area registers its own commands."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from typing import Any

import typer
import typer.core

app = typer.Typer(
    name="waypoint",
    help="Waypoint: agentic research over your organisation's knowledge, with cited answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines `register(app)`; one line per area.
_AREAS = [
    "api.cli.index",
    "api.cli.eval",
    "api.cli.research",
    "api.cli.serve",
]


def _register_all() -> None:
    readable_help_types()
    for name in _AREAS:
        importlib.import_module(name).register(app)


# How --help names a value: typer (0.2x) prints a parameter's Python annotation, "<str>",
# "<bool>", "<list[Path]>", "<int range>"; a reader wants click's words, and no word at all
# for a flag, which takes no value.
_TYPE_WORDS = {
    "str": "TEXT",
    "int": "INTEGER",
    "float": "FLOAT",
    "bool": "BOOLEAN",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIRECTORY",
    "datetime": "DATETIME",
    "int range": "INTEGER",  # the bounds follow it: INTEGER [1<=x<=10]
    "float range": "FLOAT",
    "uuid": "UUID",
}


def type_word(label: str) -> str:
    """``"<str>"`` -> ``"TEXT"``, ``"<list[Path]>"`` -> ``"PATH"`` (a repeatable option
    takes one value each time), ``"<stdio|http>"`` -> ``"[stdio|http]"``."""
    inner = label.strip()
    if inner.startswith("<") and inner.endswith(">"):
        inner = inner[1:-1]
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[5:-1]
    if "|" in inner:
        return f"[{inner}]"
    return _TYPE_WORDS.get(inner.lower(), inner.upper())


def readable_help_types() -> None:
    """Make --help name types as words (TEXT, INTEGER, PATH) and show none for flags.

    Only typer versions that render ``<annotation>`` have ``display_type``; with any other
    version this does nothing and typer's own rendering stands."""
    for cls in (typer.core.TyperArgument, typer.core.TyperOption):
        original = cls.__dict__.get("_waypoint_original_display_type") or getattr(
            cls, "display_type", None
        )
        if original is None:
            continue

        def display_type(
            self: Any, ctx: Any, _original: Callable[[Any, Any], str] = original
        ) -> str:
            if getattr(self, "is_flag", False) and not getattr(self, "count", False):
                return ""
            return type_word(_original(self, ctx))

        setattr(cls, "_waypoint_original_display_type", original)  # noqa: B010
        setattr(cls, "display_type", display_type)  # noqa: B010


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _register_all()
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
