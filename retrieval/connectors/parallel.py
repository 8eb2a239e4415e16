"""Files parsed in a pool of processes: HTML extraction, PDF and Office conversion and
chunking are pure CPU work per file, so a folder of many files is parsed on every core.

The walk (:meth:`FilesConnector.fetch`: what is met, skipped, too large) stays in this
process; each file on disk is parsed by a worker with a context of the same source, ACL,
project and settings, which returns its records and what it reported. Results are taken
in the walk's order, so a load gives the same records in the same order as a serial one.
Archive members (bytes already in memory) are parsed here. A worker that dies (a parser
crashing the interpreter) ends the pool; the files it had not parsed are parsed here.
"""

from __future__ import annotations

import ast
import logging
import multiprocessing
import os
import sys
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from retrieval.connectors.base import LoadContext
from retrieval.connectors.files import FileItem, FilesConnector
from retrieval.records import Record

log = logging.getLogger(__name__)

# Below this many files the pool's start-up (a fresh interpreter per worker, about 0.4 s)
# costs more than it saves.
MIN_FILES = 16

Parsed = tuple[list[Record], list[tuple[str, str]], list[tuple[str, str]]]


def workers_for(ctx: LoadContext) -> int:
    """Processes to parse with: the setting, or one per core when workers may start."""
    if ctx.connector_settings.ingest_workers:
        return ctx.connector_settings.ingest_workers
    if not main_module_is_guarded():
        log.info(
            "files parsed in this process: the program has no `if __name__ == "
            "'__main__':` guard, and a worker process would run it again "
            "(WAYPOINT_INGEST_WORKERS sets the pool's size anyway)"
        )
        return 1
    return os.cpu_count() or 1


@lru_cache(maxsize=1)
def main_module_is_guarded() -> bool:
    """May a worker process start? A spawned interpreter imports the program's main
    module again, so a script that loads files at its top level, without the
    ``if __name__ == "__main__":`` guard, would run its work once more in every worker.
    An interactive session (or ``python -c``) has no module to import; a module or file
    is safe when its work sits under the guard (console scripts, pytest, the service)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    where = getattr(spec, "origin", None) or getattr(main, "__file__", None)
    if where is None:
        return True
    try:
        tree = ast.parse(Path(where).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False  # nothing to read (stdin, a frozen or zipped program): not known safe
    return any(isinstance(node, ast.If) and _is_main_test(node.test) for node in tree.body)


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.comparators) == 1):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return isinstance(test.ops[0], ast.Eq) and names == ["__name__"] and texts == ["__main__"]


def parse_files(
    connector: FilesConnector, items: Iterable[FileItem], ctx: LoadContext
) -> list[Record]:
    """Every item's records, in the walk's order; on-disk files parsed by the pool when
    there are enough of them, the rest (and everything without a pool) here."""
    walked = list(items)
    on_disk = [i for i, item in enumerate(walked) if item.data is None]
    if len(on_disk) < MIN_FILES or (workers := min(workers_for(ctx), len(on_disk))) < 2:
        return [r for item in walked for r in transform_reporting(connector, item, ctx)]
    spec = replace(ctx, failures=[], skipped=[])
    results: dict[int, Future[Parsed]] = {}
    # A fresh interpreter per worker: forking a process that runs threads (the service,
    # the embedding runtime) can deadlock the child.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for i in on_disk:
            results[i] = pool.submit(parse_one, spec, walked[i])
        records: list[Record] = []
        broken = False
        for i, item in enumerate(walked):
            future = results.get(i)
            parsed: Parsed | None = None
            if future is not None and not broken:
                try:
                    parsed = future.result()
                except BrokenProcessPool:
                    broken = True
                    log.warning("a parsing process died: the files not parsed yet are parsed here")
            if parsed is None:
                records.extend(transform_reporting(connector, item, ctx))
                continue
            found, failures, skipped = parsed
            ctx.failures.extend(failures)
            ctx.skipped.extend(skipped)
            if found:
                connector.read.add(item.rel)
            records.extend(found)
    return records


def parse_one(spec: LoadContext, item: FileItem) -> Parsed:
    """In a worker: one file's records and what parsing it reported."""
    ctx = replace(spec, failures=[], skipped=[])
    connector = FilesConnector(ctx)
    records = transform_reporting(connector, item, ctx)
    return records, ctx.failures, ctx.skipped


def transform_reporting(
    connector: FilesConnector, item: FileItem, ctx: LoadContext
) -> list[Record]:
    """One file's records; a file that does not transform is reported, not raised."""
    try:
        return connector.transform(item)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # A malformed file must not sink the load: report it and go on.
        ctx.fail(item.path, f"could not transform: {type(exc).__name__}: {exc}")
        return []
