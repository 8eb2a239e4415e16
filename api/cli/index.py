"""`waypoint ingest | search | sources | delete | reindex`: the index from the shell."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from api.cli.common import AsUserOption, IndexOption, fail, resolve_caller
from retrieval.search_models import MAX_K
from retrieval.settings import RetrievalSettings

if TYPE_CHECKING:
    from retrieval.catalog import Catalog, SourceInfo
    from retrieval.search_models import RankedItem, SearchResult
    from retrieval.store import ProgressFn, Store

console = Console()
err_console = Console(stderr=True)


def open_store(index: Path | None, must_exist: bool = False, in_use_raises: bool = False) -> Store:
    """The home's store after its start-up checks: a damaged home, or one another process
    holds, is one line and exit 2; a missing leg is a warning line and the command runs.

    ``in_use_raises``: a home held by another process raises :class:`HomeInUse` instead
    (a command that can do with a read-only view of the catalog)."""
    import click

    from api.startup_checks import HomeError, HomeInUse, in_use_line, open_checked_store
    from retrieval.embedding import EmbeddingModelError
    from retrieval.health import check_home
    from retrieval.store import StoreError

    settings = RetrievalSettings()
    home = Path(index or settings.home)
    if must_exist and not (home / "catalog.sqlite").exists() and not check_home(home):
        fail(f"no index at {home}: run `waypoint ingest PATH --index {home}` first")
    context = click.get_current_context(silent=True)
    command = context.info_name if context is not None and context.info_name else "cli"
    try:
        store, degraded = open_checked_store(home, settings, command=command)
    except HomeInUse:
        if in_use_raises:
            raise
        fail(in_use_line(home))
    except (HomeError, StoreError, EmbeddingModelError) as exc:
        fail(str(exc))
    for finding in degraded:
        typer.echo(f"warning: {finding.line()}", err=True)
    return store


def _bar_progress(bar: Progress, task: TaskID) -> ProgressFn:
    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update


def ingest(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files or folders: Markdown/text/HTML/PDF/Office folders or .zip, .jsonl, "
            "a Slack export, a ticket export, a git repository (the files of --ref)."
        ),
    ],
    source: Annotated[str | None, typer.Option(help="Source name (default: folder name).")] = None,
    acl: Annotated[
        list[str] | None,
        typer.Option("--acl", help="Groups allowed to read: repeat, or a comma list (hr,eng)."),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Add the source(s) to this project.")] = None,
    ref: Annotated[
        str | None,
        typer.Option(help="Git repository: the branch, tag or commit to index (default HEAD)."),
    ] = None,
    index: IndexOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Ingest documents and exports; unchanged content is skipped, changed content replaced.
    A folder or .zip ingested again deletes the documents of the files removed from it.
    A git repository indexed before is re-synced from its diff: the changed files are read
    again and the removed ones deleted, in one step.

    Progress goes to stderr (with --json too); the summary to stdout. Exit 1 when files
    were given and none of them could be ingested."""
    from retrieval.sync import ingest_path

    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        fail(f"no such file or folder: {', '.join(missing)}")
    if source is not None and len(paths) > 1:
        fail("--source names one source: give one PATH per --source")
    groups = acl_groups(acl or [])
    store = open_store(index)
    totals = {
        "added": 0,
        "updated": 0,
        "unchanged": 0,
        "deleted": 0,
        "records": 0,
        "embeddings": 0,
    }
    failures: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    broken: list[tuple[str, str]] = []
    commits: dict[str, str] = {}
    try:
        for path in paths:
            _note(f"reading {path}")
            with _ingest_progress(str(path)) as progress:
                try:
                    synced = ingest_path(
                        store,
                        path,
                        source=source,
                        acl=groups or None,
                        project=project,
                        ref=ref,
                        progress=progress,
                    )
                except (ValueError, FileNotFoundError) as exc:  # a bad argument, not a file
                    fail(str(exc))
            loaded, report = synced.loaded, synced.report
            failures.extend(loaded.failures)
            skipped.extend(loaded.skipped)
            documents = len({r.doc_id for r in loaded.records})
            at = f" at commit {loaded.version[:12]}" if loaded.version else ""
            _note(
                f"{path}{at}: {documents} document(s), {len(loaded.records)} record(s), "
                f"{len(loaded.failures)} failed, {len(loaded.skipped)} skipped"
            )
            if loaded.version:
                commits[loaded.source] = loaded.version
            totals["added"] += report.added
            totals["updated"] += report.updated
            totals["unchanged"] += report.unchanged
            totals["deleted"] += report.deleted
            totals["records"] += report.records_indexed
            totals["embeddings"] += report.embeddings
            failures.extend(report.failed)
            broken.extend(report.broken_links)
    finally:
        store.close()
    ingested = totals["added"] + totals["updated"] + totals["unchanged"] + totals["deleted"]
    if json_out:
        print(
            json.dumps(
                {
                    **totals,
                    "commits": commits,
                    "failed": [{"path": p, "reason": r} for p, r in failures],
                    "skipped": [{"path": p, "reason": r} for p, r in skipped],
                    "broken_links": [{"document": d, "target": t} for d, t in broken],
                }
            )
        )
    else:
        deleted = f", {totals['deleted']} deleted" if totals["deleted"] else ""
        console.print(
            f"documents: [green]{totals['added']} added[/], "
            f"[yellow]{totals['updated']} updated[/], {totals['unchanged']} unchanged{deleted}, "
            f"[red]{len(failures)} failed[/], {len(skipped)} skipped  "
            f"(records indexed {totals['records']}, embeddings computed {totals['embeddings']})",
            highlight=False,
            soft_wrap=True,
        )
        for name, commit in commits.items():
            console.print(f"  {escape(name)} at commit {commit}", highlight=False)
        # One line per file, never wrapped: a log or a grep reads each whole.
        for failed_path, reason in failures:
            console.print(
                f"  [red]failed[/] {escape(failed_path)}: {escape(reason)}", soft_wrap=True
            )
        for skipped_path, reason in skipped:
            console.print(
                f"  skipped {escape(skipped_path)}: {escape(reason)}",
                highlight=False,
                soft_wrap=True,
            )
        _print_broken(broken)
    if failures and not ingested:
        fail(f"nothing ingested: every file failed ({len(failures)} failure(s))", code=1)


def _print_broken(broken: list[tuple[str, str]]) -> None:
    """One line per hyperlink that reaches no document (reported, never an error)."""
    for doc_id, target in broken:
        console.print(
            f"  broken link {escape(doc_id)} -> {escape(target)}", highlight=False, soft_wrap=True
        )


def _note(message: str) -> None:
    """One progress line on stderr (never stdout: --json keeps stdout to the summary)."""
    err_console.print(message, highlight=False, markup=False, soft_wrap=True)


@contextmanager
def _ingest_progress(label: str) -> Iterator[ProgressFn]:
    """A bar on a terminal; elsewhere (a pipe, a log) a line every 10 s and one at the
    end, so a long ingest is never silent."""
    if err_console.is_terminal:
        with Progress(
            TextColumn(f"[bold]{escape(label)}"),
            BarColumn(),
            MofNCompleteColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            yield _bar_progress(bar, bar.add_task("ingest", total=1))
        return
    start = last = time.monotonic()
    seen = 0

    def update(done: int, of: int) -> None:
        nonlocal last, seen
        seen = of
        now = time.monotonic()
        if now - last >= 10.0 and done < of:
            last = now
            _note(f"{label}: {done}/{of} records ({now - start:.0f} s, {_rate(done, now - start)})")

    yield update
    elapsed = time.monotonic() - start
    _note(f"{label}: {seen} record(s) indexed in {elapsed:.1f} s ({_rate(seen, elapsed)})")


def _rate(records: int, seconds: float) -> str:
    return f"{records / seconds:.0f} records/s" if seconds > 0 else "- records/s"


class _RateColumn(ProgressColumn):
    """Records a second (unchanged documents count too: they cost no embedding)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(
            f"{speed:.0f} records/s" if speed else "- records/s", style="progress.data.speed"
        )


def acl_groups(values: list[str]) -> list[str]:
    """The groups of ``--acl`` options, each a group or a comma list of them: "hr,eng" is
    the groups hr and eng (it once became one group named "hr,eng", which no key holds, so
    the documents were readable by nobody). A blank entry is a usage error."""
    groups: list[str] = []
    for value in values:
        for part in value.split(","):
            group = part.strip()
            if not group:
                fail(f"--acl {value!r} has an empty group name")
            if group not in groups:
                groups.append(group)
    return groups


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("--k", help=f"Hits to return (1-{MAX_K}).")] = 10,
    explain: Annotated[bool, typer.Option(help="Show every stage of the pipeline.")] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the full result as JSON.")
    ] = False,
    as_user: AsUserOption = None,
    project: Annotated[str | None, typer.Option(help="Restrict to a project's sources.")] = None,
    legs: Annotated[str, typer.Option(help="Comma list of legs: lexical,dense.")] = "lexical,dense",
    index: IndexOption = None,
) -> None:
    """Hybrid search (BM25 + dense, RRF, rerank) under the caller's permissions."""
    from retrieval.pipeline import SearchFailed, hybrid_search
    from retrieval.search_models import SearchOptions
    from retrieval.store import StoreError

    if not query.strip():
        fail("empty query")
    if not 1 <= k <= MAX_K:  # checked here, not by typer: one line, as every usage error
        fail(f"--k must be between 1 and {MAX_K}, got {k}")
    leg_list = [x.strip() for x in legs.split(",") if x.strip()]
    bad = [x for x in leg_list if x not in {"lexical", "dense"}]
    if bad or not leg_list:
        fail(f"unknown leg(s) {', '.join(bad) or '(none)'}; valid: lexical, dense")
    caller = resolve_caller(as_user, project)
    store = open_store(index, must_exist=True)
    try:
        if store.is_empty():
            fail(f"the index at {store.home} is empty: run `waypoint ingest PATH` first")
        try:
            flt = store.filter_for(caller.groups, caller.project)
        except StoreError as exc:
            fail(str(exc))
        try:
            result = asyncio.run(
                hybrid_search(store, query, flt, SearchOptions(k=k, legs=leg_list))
            )
        except SearchFailed as exc:  # an engine problem, not a usage error: exit 1
            fail(f"search failed: {exc}", code=1)
    finally:
        store.close()
    if json_out:
        print(result.model_dump_json(indent=2))
        return
    if explain:
        _print_explain(result)
    _print_hits(result)


def _print_explain(result: SearchResult) -> None:
    console.rule("[bold]query")
    console.print(f"original:  {result.original_query}")
    console.print(f"rewritten: {result.rewritten_query}")
    console.print(f"corpus {result.corpus_size} records, recall depth per leg {result.depth}")
    for leg, items in result.legs.items():
        console.print(_ranked_table(f"leg: {leg}", items, "{:.4f}"))
    console.print(_ranked_table("fused (RRF)", result.fused, "{:.5f}"))
    console.print(_ranked_table("after per-document cap", result.capped, "{:.5f}"))
    if result.reranked is not None:
        console.print(_ranked_table("reranked (cross-encoder)", result.reranked, "{:.4f}"))
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in result.timings_ms.items())
    console.print(f"timings: {timings}")
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {w}")


def _ranked_table(title: str, items: list[RankedItem], score_format: str) -> Table:
    table = Table(title=title)
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("title")
    for it in items[:15]:
        table.add_row(str(it.rank), score_format.format(it.score), it.id, it.title)
    return table


def _print_hits(result: SearchResult) -> None:
    if not result.hits:
        console.print("no results")
        for w in result.warnings:
            console.print(f"[yellow]warning:[/] {w}")
        return
    console.rule("[bold]results")
    for i, hit in enumerate(result.hits, 1):
        loc = hit.locator
        where = " > ".join(loc.heading_path) if loc.heading_path else ""
        span = f" chars {loc.char_start}-{loc.char_end}" if loc.char_start is not None else ""
        label = f"  {escape(loc.label)}" if loc.label else ""  # "report.pdf p. 4"
        console.print(
            f"[bold]{i}. {escape(hit.title or hit.doc_id)}[/]{label}  [dim]{hit.id}{span}[/]"
        )
        if where:
            console.print(f"   [dim]{where}[/]")
        text = " ".join(hit.text.split())
        console.print(f"   {text[:300]}{'...' if len(text) > 300 else ''}")


def sources(
    index: IndexOption = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List sources: records, documents, last sync, projects, the commit a repository is
    indexed at, and the hyperlinks of its documents that reach no document.

    Also on a home another process holds (`waypoint serve`): read from its catalog."""
    from api.startup_checks import HomeInUse

    try:
        store = open_store(index, must_exist=True, in_use_raises=True)
    except HomeInUse:
        infos, broken = _catalog_sources(Path(index or RetrievalSettings().home))
    else:
        try:
            infos, broken = store.sources(), _broken_links(store.catalog)
        finally:
            store.close()
    if json_out:
        rows = [
            {
                **i.__dict__,
                "broken_links": [{"document": d, "target": t} for d, t in broken.get(i.name, [])],
            }
            for i in infos
        ]
        print(json.dumps(rows, indent=2))
        return
    if not infos:
        console.print("no sources yet: run `waypoint ingest PATH`")
        return
    table = Table(title="sources")
    for col in ("name", "documents", "records", "last sync", "commit", "projects", "broken"):
        table.add_column(col)
    for i in infos:
        table.add_row(
            i.name,
            str(i.documents),
            str(i.records),
            i.last_sync or "-",
            (i.version or "-")[:12],
            ", ".join(i.projects) or "-",
            str(len(broken.get(i.name, []))),
        )
    console.print(table)
    for name, links in broken.items():
        if links:
            console.print(f"{escape(name)}: {len(links)} broken link(s)", highlight=False)
            _print_broken(links)


def _broken_links(catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    """Per source, (document, target) of each hyperlink that reaches no document."""
    from retrieval.structure import StructureIndex

    docs, names, links = catalog.structure()
    index = StructureIndex(docs, names, links)
    out: dict[str, list[tuple[str, str]]] = {}
    for doc_id, target in index.broken(sorted({d for d, _t, _k in links})):
        out.setdefault(doc_id.partition(":")[0], []).append((doc_id, target))
    return out


def _catalog_sources(home: Path) -> tuple[list[SourceInfo], dict[str, list[tuple[str, str]]]]:
    """The sources of ``home``'s catalog alone (SQLite: it is shared with the process
    holding the engines)."""
    from retrieval.catalog import Catalog

    catalog = Catalog(home / "catalog.sqlite")
    try:
        return catalog.sources(), _broken_links(catalog)
    finally:
        catalog.close()


def delete(
    target: Annotated[str, typer.Argument(help="A document id (source:path) or a source name.")],
    index: IndexOption = None,
) -> None:
    """Delete a document, or a whole source, from both engines and the catalog."""
    store = open_store(index, must_exist=True)
    try:
        if store.catalog.document(target) is not None:
            store.delete_document(target)
            console.print(f"deleted document {target}")
        elif any(s.name == target for s in store.sources()):
            n = store.delete_source(target)
            console.print(f"deleted source {target} ({n} documents)")
        else:
            fail(f"no document or source named {target!r}")
    finally:
        store.close()


def reindex(index: IndexOption = None) -> None:
    """Re-embed everything with the configured model into a new generation, then switch;
    the lexical index is rewritten from the catalog too (a deleted one is rebuilt)."""
    store = open_store(index, must_exist=True)
    try:
        with Progress(
            TextColumn("reindex"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
        ) as bar:
            task = bar.add_task("reindex", total=max(1, store.corpus_size()))
            gen = store.reindex(progress=_bar_progress(bar, task))
            lexical = rebuild_lexical(store)
    finally:
        store.close()
    console.print(f"switched to generation {gen}; lexical index rewritten ({lexical} records)")


def rebuild_lexical(store: Store, batch: int = 512) -> int:
    """Write every lexical record of the catalog into the lexical engine (same ids are
    overwritten in place): the repair of a lexical index that was deleted or lost
    records. Returns the number of records written."""
    pending: list = []
    written = 0
    for record, _vector in store.catalog.iter_chunks():
        if "lexical" in record.legs:
            pending.append(record)
        if len(pending) >= batch:
            store.lexical.upsert(pending)
            written, pending = written + len(pending), []
    if pending:
        store.lexical.upsert(pending)
        written += len(pending)
    return written


def register(app: typer.Typer) -> None:
    app.command()(ingest)
    app.command()(search)
    app.command()(sources)
    app.command()(delete)
    app.command()(reindex)
