"""`waypoint eval` and `waypoint eval-beir`: reproducible quality figures, one command each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from evalsets.loaders import SPLIT_RULE, SPLITS, EvalInputError

_COLUMNS = (
    ("support_recall_all", "R-all"),
    ("support_recall", "R"),
    ("mrr", "MRR"),
    ("answer_in_evidence", "A-in-E"),
    ("em", "EM"),
    ("f1", "F1"),
    ("short_answer_coverage", "SA-cov"),
    ("short_answer_precision", "SA-P"),
    ("answer_states_gold", "A-gold"),
    ("claim_support_rate", "Claim-S"),
    ("citation_precision", "Cit-P"),
    ("refusal_accuracy", "Refuse"),
    ("refused_answerable", "Over-R"),
    ("mean_rounds", "rounds"),
    ("mean_tool_calls", "calls"),
    ("p50_s", "p50 s"),
    ("p95_s", "p95 s"),
)


def _console() -> Console:
    # Piped output (CI logs, `| tee`) would default to 80 columns and crush the table.
    probe = Console()
    return probe if probe.is_terminal else Console(width=170)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _tracker(progress: Progress, labels: list[str], total: int) -> Callable[[str, int], None]:
    tasks = {label: progress.add_task(label, total=total) for label in labels}

    def advance(label: str, done: int) -> None:
        progress.update(tasks[label], completed=done)

    return advance


def _ingest_progress(progress: Progress, total: int) -> Callable[..., None]:
    task = progress.add_task("ingest", total=total)

    def advance(done: int, *_: Any) -> None:
        progress.update(task, completed=done)

    return advance


def _open_index(console: Console, records: list[Any], dataset: str) -> Any:
    from evalsets.index import MARKER, corpus_hash, eval_settings, open_eval_index
    from retrieval.settings import RetrievalSettings

    settings = RetrievalSettings()
    digest = corpus_hash(records, settings)
    if (eval_settings(settings, digest)[1] / MARKER).is_file():
        index = open_eval_index(records, dataset, settings)
    else:
        with _progress(console) as progress:
            index = open_eval_index(
                records, dataset, settings, progress=_ingest_progress(progress, len(records))
            )
    if index.reused:
        console.print(
            f"index {digest} reused: same corpus content, ingestion skipped ({index.home})"
        )
    else:
        console.print(f"index {digest} built: {len(records)} passages ingested ({index.home})")
    return index


def _results_table(report: dict[str, Any]) -> Table:
    table = Table(
        title=(
            f"{report['dataset']} ({report.get('split', 'all')} split): "
            f"{report['questions']} questions, "
            f"{report['corpus_passages']} passages, budget {report['budget']}"
        )
    )
    table.add_column("mode")
    table.add_column("n", justify="right")
    for _, header in _COLUMNS:
        table.add_column(header, justify="right")
    for mode, values in report["modes"].items():
        table.add_row(mode, str(report["questions"]), *(_fmt(values.get(k)) for k, _ in _COLUMNS))
        for qtype, sub in values.get("by_type", {}).items():
            table.add_row(
                f"  {qtype}",
                str(sub.get("questions", "")),
                *(_fmt(sub.get(k)) for k, _ in _COLUMNS),
                style="dim",
            )
        table.add_section()
    return table


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def eval_command(
    questions: Annotated[
        Path, typer.Argument(help="Questions file (multi-hop JSONL or the acme set).")
    ],
    corpus: Annotated[
        list[Path] | None,
        typer.Option(
            "--corpus", help="Multi-hop file(s) whose paragraphs form the corpus (repeatable)."
        ),
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="Comma list of lexical, dense, hybrid, iterative, or all.")
    ] = "hybrid",
    budget: Annotated[
        int, typer.Option("--budget", min=1, max=100, help="Evidence budget B.")
    ] = 10,
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help=f"Which half of the questions: {', '.join(SPLITS)} ({SPLIT_RULE}).",
        ),
    ] = "report",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="First N questions (of the split) only.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the JSON report here.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a bar chart (PNG) here.")
    ] = None,
) -> None:
    """Evaluate retrieval (and the research loop) on a question set, mode by mode."""
    from evalsets.loaders import load_questions
    from evalsets.runner import UnknownModeError, evaluate, iterative_available, parse_modes

    console = _console()
    try:
        modes = parse_modes(mode)
    except UnknownModeError as exc:
        raise _fail(str(exc)) from None
    if "iterative" in modes and (why := iterative_available()):
        if mode.strip().lower() != "all":
            raise _fail(f"mode iterative is unavailable: {why}")
        console.print(f"iterative: skipped, {why}")
        modes.remove("iterative")
    try:
        evalset = load_questions(questions, list(corpus or []), split=split)
    except EvalInputError as exc:
        raise _fail(str(exc)) from None
    for row in evalset.skipped:
        console.print(f"skipped {row}", style="yellow")
    for failure in evalset.failures:
        console.print(f"corpus item not loaded: {failure}", style="yellow")
    if limit:
        evalset.questions = evalset.questions[:limit]
    if not evalset.questions:
        raise _fail(f"no usable question in {questions} (split {evalset.split})")
    console.print(
        f"split {evalset.split}: {len(evalset.questions)} questions "
        f"(halves by {SPLIT_RULE}; the corpus is whole)"
    )
    if not evalset.records:
        raise _fail(f"empty corpus for {questions}")

    index = _open_index(console, evalset.records, evalset.dataset)
    try:
        with _progress(console) as progress:
            tracker = _tracker(progress, modes, len(evalset.questions))
            report = asyncio.run(evaluate(index.store, evalset, modes, budget, tracker))
    finally:
        index.store.close()

    payload = report.to_json()
    console.print(_results_table(payload))
    console.print(
        "R-all support_recall_all, R support_recall, A-in-E answer_in_evidence; "
        "EM/F1 on the short answer (none = wrong), SA-cov short_answer_coverage, "
        "SA-P short_answer_precision (EM when given), A-gold answer_states_gold, "
        "Claim-S claim_support_rate, Cit-P citation_precision, Over-R refused_answerable; "
        "'-' = does not apply",
        style="dim",
    )
    if report.skipped_rows:
        console.print(f"skipped rows: {report.skipped_rows}", style="yellow")
    for err in report.errors[:20]:
        console.print(f"error {err}", style="red")
    if len(report.errors) > 20:
        console.print(f"... {len(report.errors) - 20} more errors", style="red")
    if out:
        _write_json(out, payload)
        console.print(f"wrote {out}")
    if plot:
        from evalsets.plot import plot_modes

        plot_modes(payload, plot)
        console.print(f"wrote {plot}")
    if report.errors:
        # The figures count failed questions as misses; the exit code says they happened.
        typer.echo(f"error: {len(report.errors)} question run(s) failed", err=True)
        raise typer.Exit(code=1)


def eval_beir_command(
    directory: Annotated[
        Path, typer.Argument(help="BEIR folder: corpus.jsonl(.gz), queries.jsonl, qrels/.")
    ],
    mode: Annotated[
        str, typer.Option("--mode", help="Comma list of lexical, dense, hybrid, or all.")
    ] = "lexical,dense,hybrid",
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help=f"Which half of the queries: {', '.join(SPLITS)} ({SPLIT_RULE}).",
        ),
    ] = "report",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="First N test queries (of the split) only.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the JSON report here.")] = None,
) -> None:
    """nDCG@10 and recall@100 of the single-round pipeline on a BEIR dataset."""
    from evalsets.beir import BEIR_MODES, beir_variants, rerank_status, run_beir
    from evalsets.loaders import load_beir
    from evalsets.runner import UnknownModeError, parse_modes

    console = _console()
    try:
        modes = parse_modes(mode, BEIR_MODES)
    except UnknownModeError as exc:
        raise _fail(str(exc)) from None
    try:
        beir = load_beir(directory, half=split)
    except EvalInputError as exc:
        raise _fail(str(exc)) from None
    for row in beir.skipped:
        console.print(f"skipped {row}", style="yellow")
    if not beir.queries:
        raise _fail(f"no query with qrels in {directory} (split {beir.split})")
    console.print(
        f"split {beir.split}: {len(beir.queries)} queries "
        f"(halves by {SPLIT_RULE}; the corpus is whole)"
    )

    index = _open_index(console, beir.records, beir.dataset)
    try:
        rerank_model = rerank_status(index.store)
        console.print(f"rerank: {rerank_model or 'not configured'}")
        labels = [label for label, _, _ in beir_variants(modes, rerank_model)]
        total = min(limit, len(beir.queries)) if limit else len(beir.queries)
        with _progress(console) as progress:
            tracker = _tracker(progress, labels, total)
            report = asyncio.run(run_beir(index.store, beir, modes, limit, tracker))
    finally:
        index.store.close()

    table = Table(
        title=f"{report['dataset']} ({report['split']} split): {report['queries']} queries, "
        f"{report['corpus_passages']} documents"
    )
    for header in ("mode", "nDCG@10", "recall@100", "p50 s", "p95 s"):
        table.add_column(header, justify="left" if header == "mode" else "right")
    for label, values in report["modes"].items():
        table.add_row(
            label,
            *(_fmt(values[k]) for k in ("ndcg@10", "recall@100", "p50_s", "p95_s")),
        )
    console.print(table)
    for warning in report["warnings"]:
        console.print(f"warning: {warning}", style="yellow")
    if out:
        _write_json(out, report)
        console.print(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
    app.command("eval-beir")(eval_beir_command)
