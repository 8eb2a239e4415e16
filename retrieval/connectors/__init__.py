"""Connectors: everything source-specific ends here; they emit :class:`Record` only.

``load_path`` detects what a path holds and runs the matching connector:

* a git repository (a folder with ``.git``)   -> the files of one ref (:mod:`.git`)
* a folder with ``channels.json``            -> Slack export  (:mod:`.slack`)
* a ``.json`` file holding a list of objects with ``key`` and ``fields`` -> ticket export
* a ``.jsonl`` / ``.jsonl.gz`` file          -> JSONL passages (:mod:`.jsonl`)
* otherwise a folder (recursive), a ``.zip`` of one, or a single page or document:
  .md/.markdown/.txt/.html/.htm, .pdf/.docx/.pptx/.xlsx/.xlsm/.csv/.tsv (:mod:`.files`)

Id scheme and formats: docs/CONNECTORS.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from retrieval.connectors.archives import ARCHIVE_SUFFIXES
from retrieval.connectors.base import (
    BaseConnector,
    ConnectorSettings,
    LoadContext,
    SourceDocument,
)
from retrieval.connectors.files import SUFFIXES, FilesConnector
from retrieval.connectors.found import FoundFiles
from retrieval.connectors.git import GitError, is_git_repository, load_repository
from retrieval.connectors.jsonl import JsonlConnector
from retrieval.connectors.parallel import parse_files
from retrieval.connectors.slack import Distiller, SlackConnector, is_slack_export
from retrieval.connectors.tickets import TicketsConnector, looks_like_tickets
from retrieval.records import PUBLIC_GROUP, Record
from retrieval.settings import RetrievalSettings

__all__ = [
    "ConnectorResult",
    "ConnectorSettings",
    "GitError",
    "LoadContext",
    "SourceDocument",
    "default_source",
    "detect_kind",
    "load_path",
]

_SOURCE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_SUFFIXES_TO_STRIP = (".jsonl.gz", ".jsonl", ".json", ".zip", *sorted(SUFFIXES))


@dataclass
class ConnectorResult:
    records: list[Record]
    failures: list[tuple[str, str]] = field(default_factory=list)  # (where, reason): errors
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, reason): ignored
    kind: str = ""  # "git" | "files" | "jsonl" | "slack" | "tickets"
    source: str = ""
    sync_interval: timedelta = timedelta(hours=1)
    # A versioned source (git): the version loaded (a commit), and which documents the
    # load stands for: ``None`` all of the source (documents not emitted are gone), else
    # the paths it re-read (their documents not emitted are gone). Unversioned: version
    # None and ``touched`` empty (nothing is deleted).
    version: str | None = None
    touched: list[str] | None = field(default_factory=list)
    # An unversioned folder or zip: the load stands for its source, but for the files
    # met and not read (:mod:`.found`). None for a single file and the other connectors.
    found: FoundFiles | None = None


def default_source(path: Path) -> str:
    """The folder name or the file name without its known suffixes, made id-safe."""
    name = path.resolve().name
    for suffix in _SUFFIXES_TO_STRIP:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", name).strip("-.") or "source"
    return name


def detect_kind(path: Path) -> str:
    """``git`` | ``slack`` | ``tickets`` | ``jsonl`` | ``files`` (see the module docstring)."""
    if is_git_repository(path):
        return "git"
    if is_slack_export(path):
        return "slack"
    name = path.name.lower()
    if path.is_file() and (name.endswith(".jsonl") or name.endswith(".jsonl.gz")):
        return "jsonl"
    if path.is_file() and name.endswith(".json"):
        return "tickets"  # the connector checks the shape and reports a mismatch
    return "files"


def load_path(
    path: str | Path,
    source: str | None = None,
    acl: list[str] | None = None,
    project: str | None = None,
    *,
    settings: RetrievalSettings | None = None,
    connector_settings: ConnectorSettings | None = None,
    distiller: Distiller | None = None,
    ref: str | None = None,
    since: str | None = None,
) -> ConnectorResult:
    """Load every record under ``path``. A bad file or line is reported in ``failures``
    and the rest is loaded; only a bad *argument* (missing path, bad source / acl, a git
    ref that names no commit) raises ``ValueError`` / ``FileNotFoundError``.

    A git repository: the files of ``ref`` (default ``HEAD``); with ``since`` (the commit
    indexed before) only the files changed since then."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no such file or folder: {root}")
    source = source or default_source(root)
    if not _SOURCE_RE.match(source):
        raise ValueError(
            f"invalid source name {source!r}: use letters, digits, '_', '-', '.' "
            "(':' and '#' are reserved for ids)"
        )
    if acl is not None and not [g for g in acl if str(g).strip()]:
        raise ValueError("acl must name at least one group (omit it for public)")
    ctx = LoadContext(
        source=source,
        acl=[str(g).strip() for g in acl if str(g).strip()] if acl else [PUBLIC_GROUP],
        project=project,
        settings=settings or RetrievalSettings(),
        connector_settings=connector_settings or ConnectorSettings(),
    )
    kind = detect_kind(root)
    if ref is not None and kind != "git":
        raise ValueError(f"--ref needs a git repository; {root} is not one")
    if kind == "git":
        loaded = load_repository(root, ctx, ref or "HEAD", since)
        return ConnectorResult(
            loaded.records,
            ctx.failures,
            ctx.skipped,
            kind,
            source,
            version=loaded.commit,
            touched=loaded.touched,
        )
    connector: BaseConnector[Any]
    if kind == "slack":
        connector = SlackConnector(ctx, distiller)
    elif kind == "jsonl":
        connector = JsonlConnector(ctx)
    elif kind == "tickets":
        if not _is_ticket_file(root, ctx):
            return ConnectorResult([], ctx.failures, ctx.skipped, kind, source)
        connector = TicketsConnector(ctx)
    else:
        connector = FilesConnector(ctx)
    records = _run(connector, root, ctx)
    found: FoundFiles | None = None
    if isinstance(connector, FilesConnector):
        failed = len(ctx.failures)
        records.extend(_load_exports(connector.exports, ctx))
        if root.is_dir() or root.suffix.lower() in ARCHIVE_SUFFIXES:
            found = FoundFiles(connector.unread(), exports_complete=len(ctx.failures) == failed)
    return ConnectorResult(
        records, ctx.failures, ctx.skipped, kind, source, connector.sync_interval, found=found
    )


def _load_exports(paths: list[Path], ctx: LoadContext) -> list[Record]:
    """JSONL and ticket-export files found inside a folder, each by its own connector
    (ids stay ``<source>:<native id>``). Other JSON is skipped, not failed: a folder of
    pages may well hold unrelated JSON."""
    records: list[Record] = []
    for path in paths:
        if detect_kind(path) == "jsonl":
            records.extend(_run(JsonlConnector(ctx), path, ctx))
        elif _is_ticket_file(path, ctx, in_folder=True):
            records.extend(_run(TicketsConnector(ctx), path, ctx))
    return records


def _is_ticket_file(path: Path, ctx: LoadContext, in_folder: bool = False) -> bool:
    limit = ctx.settings.max_file_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            ctx.fail(path, f"too large: {size} bytes > max_file_bytes {limit}")
            return False
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        ctx.fail(path, f"unreadable: {exc.strerror or exc}")
        return False
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        ctx.fail(path, f"invalid JSON: {exc}")
        return False
    if isinstance(data, dict) and isinstance(data.get("issues"), list):
        data = data["issues"]
    if not looks_like_tickets(data):
        reason = "unsupported JSON: not a ticket export (list of {key, fields})"
        (ctx.skip if in_folder else ctx.fail)(path, reason)
        return False
    return True


def _run(connector: BaseConnector[Any], root: Path, ctx: LoadContext) -> list[Record]:
    if isinstance(connector, FilesConnector):
        return parse_files(connector, connector.fetch(root), ctx)
    records: list[Record] = []
    for raw in connector.fetch(root):
        try:
            records.extend(connector.transform(raw))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A malformed item must not sink the load: report it and go on.
            ctx.fail(_where(raw, root), f"could not transform: {type(exc).__name__}: {exc}")
    return records


def _where(raw: Any, root: Path) -> str:
    """A readable location for a raw item (file, file:line, channel/thread, file[index])."""
    path = getattr(raw, "path", None)
    if hasattr(raw, "line_no"):
        return f"{path}:{raw.line_no}"
    if hasattr(raw, "index"):
        return f"{path}[{raw.index}]"
    if hasattr(raw, "thread_ts"):
        return f"{root}/{raw.channel.name}/{raw.thread_ts}"
    return str(path or root)
