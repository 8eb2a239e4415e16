"""Start-up checks of a home for the service and the CLI, and who holds a home.

* :func:`home_findings`: the retrieval stores (:mod:`retrieval.health`) plus the service's
  own SQLite files (``runs.sqlite`` checkpoints, ``traces.sqlite``, ``tasks.sqlite``), each
  read with ``PRAGMA quick_check``: a corrupt one passed health and then failed every
  answer with a 500.
* :func:`open_checked_store`: ``Store.open`` behind those checks, its errors turned into
  one line naming the file (:class:`HomeError`), a lock held by another process included.
* A holder file (``<home>/holder.json``: pid and command) written by whichever process
  opened the home's embedded engines, so that another one refused by the engine's lock
  (Qdrant Edge's WAL: "Can't init WAL: Kind(WouldBlock)") can say by whom.
"""

from __future__ import annotations

import atexit
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.health import Finding, check_home, sqlite_problem

if TYPE_CHECKING:
    from api.settings import ApiSettings
    from retrieval.settings import RetrievalSettings
    from retrieval.store import Store

HOLDER_FILE = "holder.json"


class HomeError(RuntimeError):
    """A home that cannot be opened: the message is one line, file and repair included."""


class HomeInUse(HomeError):
    """Another process holds the home's embedded engines."""


def _backends(settings: RetrievalSettings | None) -> dict[str, str]:
    if settings is None:
        from retrieval.settings import RetrievalSettings

        settings = RetrievalSettings()
    return {"lexical_backend": settings.lexical_backend, "dense_backend": settings.dense_backend}


def sqlite_findings(files: list[tuple[str, Path, str]]) -> list[Finding]:
    """A fatal finding for each (component, path, what deleting it loses) whose file
    exists and does not pass ``PRAGMA quick_check``."""
    found = []
    for component, path, loses in files:
        if not path.is_file():
            continue
        problem = sqlite_problem(path)
        if problem is not None:
            found.append(
                Finding(
                    component,
                    path,
                    problem,
                    f"restore it from a backup, or delete it and its -wal/-shm files ({loses})",
                    fatal=True,
                )
            )
    return found


def home_findings(
    home: Path, retrieval: RetrievalSettings | None = None, api: ApiSettings | None = None
) -> list[Finding]:
    """Every store of ``home``: the catalog and engines, and with ``api`` the run
    checkpoints, traces and (SQLite) task store of the service."""
    found = check_home(Path(home), **_backends(retrieval))
    runs = Path(home) / "runs.sqlite"
    files = []
    if api is not None:
        runs = api.checkpoint_path or runs
        url = api.resolved_tasks_url()
        if url.startswith("sqlite:///"):
            files.append(("tasks", Path(url[len("sqlite:///") :]), "the task records are lost"))
    files[:0] = [
        ("runs", runs, "stored runs can no longer be resumed"),
        ("traces", runs.with_name("traces.sqlite"), "stored traces are lost"),
    ]
    return found + sqlite_findings(files)


def fatal_line(findings: list[Finding]) -> str | None:
    """The first fatal finding as one line (with how many more), or None."""
    fatal = [f for f in findings if f.fatal]
    if not fatal:
        return None
    more = f" (and {len(fatal) - 1} more problem(s))" if len(fatal) > 1 else ""
    return f"damaged index home: {fatal[0].line()}{more}"


# ---- who holds a home ------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs, and (where /proc tells) runs Python: a holder file left by a
    killed process must not name whatever later got its pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().lower()
    except OSError:
        return True
    return any(word in cmdline for word in (b"waypoint", b"python", b"pytest"))


def holder(home: Path) -> tuple[int, str] | None:
    """(pid, command) of the live process that claimed ``home``, other than this one."""
    try:
        data = json.loads((Path(home) / HOLDER_FILE).read_text())
        pid, command = int(data["pid"]), str(data.get("command", "waypoint"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid() or pid <= 0 or not _alive(pid):
        return None
    return pid, command


def claim_home(home: Path, command: str) -> None:
    """Record this process as the holder of ``home`` (removed at :func:`release_home`
    or at exit). Best effort: a home that cannot be written is reported elsewhere."""
    path = Path(home) / HOLDER_FILE
    # Overwritten: the embedded engines' locks are exclusive, so whoever opened them last
    # holds them (a file left by an earlier in-process open names nobody useful).
    try:
        tmp = path.with_name(f".{HOLDER_FILE}.{os.getpid()}")
        tmp.write_text(json.dumps({"pid": os.getpid(), "command": command}))
        os.replace(tmp, path)
    except OSError:
        return
    atexit.register(release_home, Path(home))


def release_home(home: Path) -> None:
    path = Path(home) / HOLDER_FILE
    try:
        if int(json.loads(path.read_text())["pid"]) == os.getpid():
            path.unlink()
    except (OSError, ValueError, KeyError, TypeError):
        pass


def in_use_line(home: Path) -> str:
    held = holder(home)
    who = f"process {held[0]} (waypoint {held[1]})" if held else "another process"
    return (
        f"index {home} in use by {who}: stop it, or use it through that process "
        "(the HTTP API), or give another --index"
    )


def is_lock_error(exc: BaseException) -> bool:
    """An engine refusing a home because another process holds its lock."""
    text = str(exc)
    return (
        "WouldBlock" in text
        or "LockBusy" in text
        or type(exc).__name__ == "LexicalIndexLocked"
        or "being written by another process" in text
    )


def open_checked_store(
    home: Path,
    settings: RetrievalSettings | None = None,
    *,
    command: str,
    api: ApiSettings | None = None,
) -> tuple[Store, list[Finding]]:
    """``Store.open(home)`` after the start-up checks: a fatal finding, a lock held by
    another process or a store that does not open raise :class:`HomeError` (one line);
    the degraded findings come back with the store."""
    findings = home_findings(home, settings, api)
    line = fatal_line(findings)
    if line is not None:
        raise HomeError(line)
    return open_store_explained(home, settings, command=command), [
        f for f in findings if not f.fatal
    ]


def open_store_explained(
    home: Path, settings: RetrievalSettings | None = None, *, command: str
) -> Store:
    """``Store.open(home)``, an engine's error turned into one line naming the file (a
    lock held by another process: :class:`HomeInUse`), and this process recorded as the
    home's holder."""
    from retrieval.store import Store

    try:
        store = Store.open(settings, home=home)
    except Exception as exc:  # noqa: BLE001 - every engine error becomes one line
        raise _open_error(home, exc) from exc
    claim_home(home, command)
    return store


def _open_error(home: Path, exc: BaseException) -> Exception:
    from retrieval.store import StoreError

    if is_lock_error(exc):
        return HomeInUse(in_use_line(home))
    if isinstance(exc, StoreError):
        return exc
    try:
        from retrieval.embedding import EmbeddingModelError

        if isinstance(exc, EmbeddingModelError):
            return exc
    except ImportError:  # pragma: no cover
        pass
    text = " ".join(str(exc).split())[:300]
    return HomeError(
        f"cannot open the index at {home}: {text}; delete the damaged folder named there "
        f"and run `waypoint reindex --index {home}`, or re-ingest into a fresh --index"
    )


# A finding's parenthesised details: how many chunks the catalog holds for a leg.
_DETAILS = re.compile(r"\s*\([^)]*\)")


def degraded_checks(findings: list[Finding]) -> dict[str, str]:
    """``/healthz`` entries for the degraded components: what is wrong and the repair.
    The endpoint needs no key, so no corpus facts (the record counts in a finding's
    details); the start-up log line keeps the whole finding."""
    return {
        f.component: f"degraded: {f.path} {_DETAILS.sub('', f.problem)}; {f.repair}"
        for f in findings
    }


# ---- hand-over from `waypoint serve` to the service's lifespan ---------------------------
# `serve` checks the home and opens its store before the server starts (a failure is then
# one line, not a traceback from inside the lifespan); the lifespan takes both over.
_HANDED_OVER: dict[str, tuple[Any, list[Finding]]] = {}


def hand_over(home: Path, store: Any, findings: list[Finding]) -> None:
    _HANDED_OVER[os.path.realpath(home)] = (store, findings)


def take_over(home: Path) -> tuple[Any, list[Finding]] | None:
    """What :func:`hand_over` left for ``home`` (once), or None."""
    return _HANDED_OVER.pop(os.path.realpath(home), None)


def handed_over_findings(home: Path) -> list[Finding] | None:
    handed = _HANDED_OVER.get(os.path.realpath(home))
    return None if handed is None else handed[1]
