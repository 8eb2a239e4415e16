"""`waypoint ask | trace`: research a question with cited answers; inspect a stored run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from api.cli.common import AsUserOption, IndexOption, fail, resolve_caller
from graph.models import ResearchResult, RunOptions, TraceEvent

console = Console()
prompts = Console(stderr=True)  # the review of a plan: stdout stays the answer (or JSON)


def _researcher(index: Path | None, must_exist: bool):  # noqa: ANN202 - Researcher
    from api.cli.index import open_store
    from graph.runner import Researcher
    from graph.settings import GraphSettings

    try:
        settings = GraphSettings()
    except ValueError as exc:
        fail(f"bad WAYPOINT_ setting: {' '.join(str(exc).split())[:200]}")
    store = open_store(index, must_exist=must_exist)
    return Researcher(store, settings), store


_CLIP = 60  # characters of a title or query shown in the trace tree


def _clip(text: Any, width: int = _CLIP) -> str:
    """One line, at most ``width`` characters: Slack thread titles are whole messages."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _short(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_clip(v)!r}" for k, v in args.items() if k not in ("k", "limit"))


def render_trace(events: list[TraceEvent]) -> Tree:
    """Rounds -> plan, calls, what entered the pool, verdict; then the synthesis."""
    meta = next((e.data for e in events if e.type == "metadata"), {})
    root = Tree(
        f"[bold]run[/bold] {events[0].run_id if events else '?'}: {meta.get('question', '')}"
    )
    rounds: dict[int, Tree] = {}
    synth: Tree | None = None

    def round_node(n: int) -> Tree:
        if n not in rounds:
            rounds[n] = root.add(f"[bold cyan]round {n}[/bold cyan]")
        return rounds[n]

    for e in events:
        d = e.data
        if e.type == "plan":
            node = round_node(e.round).add(f"plan: {len(d.get('calls', []))} call(s)")
            for c in d.get("calls", []):
                why = _clip(c.get("reason", ""), 70)
                node.add(f"{c['tool']}({_short(c['args'])})  [dim]{why}[/dim]")
        elif e.type == "tool_result":
            status = "[green]ok[/green]" if d.get("ok") else f"[red]failed[/red] {d.get('error')}"
            titles = "; ".join(_clip(r["title"], 40) for r in d.get("results", [])[:3])
            round_node(e.round).add(
                f"{d.get('tool')}({_clip(d.get('query'))!r}) {status} "
                f"{len(d.get('results', []))} hit(s) {d.get('duration_ms')} ms  [dim]{titles}[/dim]"
            )
        elif e.type == "evidence" and e.node == "fuse":
            entered = [_clip(x["title"] or x["id"], 40) for x in d.get("entered", [])]
            round_node(e.round).add(
                f"pool +{len(entered)} -> {d.get('pool_size')}  [dim]{'; '.join(entered[:6])}[/dim]"
            )
        elif e.type == "round":
            bound = f" [red]bound: {d['bound_hit']}[/red]" if d.get("bound_hit") else ""
            missing = f" missing: {', '.join(d['missing'])}" if d.get("missing") else ""
            round_node(e.round).add(
                f"verdict: [bold]{d.get('decision')}[/bold] - {d.get('reason')}{missing}{bound}"
            )
        elif e.type == "node_end" and e.node == "synthesize":
            (synth or root.add("synthesis")).add(f"{e.data.get('duration_ms')} ms")
        elif e.type == "citation":
            synth = synth or root.add("[bold]synthesis[/bold]")
            synth.add(f"[{d.get('n')}] {_clip(d.get('title'))} ({d.get('evidence_id')})")
        elif e.type == "error":
            root.add(f"[red]error[/red] {d.get('error')}")
    return root


def print_result(result: ResearchResult) -> None:
    if result.short_answer:
        console.print(f"[bold]{escape(result.short_answer)}[/bold]\n", highlight=False)
    # The answer's text follows the short answer (as it does in JSON); only its claims here.
    body = result.answer
    if result.short_answer and body.startswith(result.short_answer):
        body = body[len(result.short_answer) :].lstrip("\n")
    console.print(body, markup=False, highlight=False)
    dropped = [c for c in result.claims if not c.supported]
    for claim in dropped:
        console.print(f"[dim]removed claim: {escape(claim.text)} ({escape(claim.reason)})[/dim]")
    if result.citations:
        console.print("\n[bold]Sources[/bold]")
        for c in result.citations:
            # Where in a paged or tabular file: "report.pdf p. 4" (None elsewhere).
            where = f", {c.locator.label}" if c.locator.label else ""
            console.print(
                f"  [{c.n}] {c.title}{where} ({c.evidence_id})", markup=False, highlight=False
            )
    for w in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    console.print(
        f"[dim]run {result.run_id} - {result.mode}, {result.rounds} round(s), "
        f"{result.tool_calls} tool call(s)[/dim]"
    )


def ask(
    question: Annotated[str, typer.Argument(help="The question to research.")],
    mode: Annotated[
        str, typer.Option(help="hybrid (one search round) or iterative (the loop).")
    ] = "iterative",
    max_rounds: Annotated[int, typer.Option(min=1, max=10, help="Round bound.")] = 4,
    budget: Annotated[int, typer.Option(min=1, max=100, help="Evidence items read.")] = 10,
    project: Annotated[str | None, typer.Option(help="Restrict to a project's sources.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    trace: Annotated[bool, typer.Option("--trace", help="Print the rounds as a tree.")] = False,
    review: Annotated[
        bool,
        typer.Option(
            "--review",
            help="Pause after the first plan: approve or edit its calls, pin or exclude "
            "documents, then run.",
        ),
    ] = False,
    as_user: AsUserOption = None,
    index: IndexOption = None,
) -> None:
    """Research a question over the index and print a cited answer."""
    if mode not in ("hybrid", "iterative"):
        fail(f"--mode must be hybrid or iterative, not {mode!r}")
    if not question.strip():
        fail("the question is empty")
    caller = resolve_caller(as_user, project)
    checked_mode: Literal["hybrid", "iterative"] = "hybrid" if mode == "hybrid" else "iterative"
    options = RunOptions(mode=checked_mode, max_rounds=max_rounds, budget=budget)
    researcher, store = _researcher(index, must_exist=True)

    async def research() -> tuple[ResearchResult, list[TraceEvent]]:
        from graph.runner import ReviewRequired

        try:
            try:
                result = await researcher.run(
                    question, caller, options, review=["plan"] if review else None
                )
            except ReviewRequired as stop:
                decision = _decide(researcher, stop.asked, caller.user)
                result = await researcher.resume(stop.run_id, decision=decision)
            return result, researcher.get_trace(result.run_id)
        finally:
            await researcher.aclose()  # the checkpointer's connection lives on this loop

    try:
        result, events = asyncio.run(research())
        if json_out:
            typer.echo(result.model_dump_json(indent=2))
        else:
            print_result(result)
        if trace and not json_out:
            console.print(render_trace(events))
    except ValueError as exc:
        fail(str(exc))
    finally:
        researcher.close()
        store.close()


def _decide(researcher: Any, asked: dict[str, Any], user: str) -> Any:
    """The operator's decision on the proposed plan, asked on the terminal until the run
    can take it (``Researcher.check_review``)."""
    prompts.print(f"[bold]plan of round {asked.get('round')}[/bold]")
    for n, call in enumerate(asked.get("calls") or [], 1):
        prompts.print(f"  {n}. {call['tool']}({_short(call.get('args') or {})})", markup=False)

    def ids(label: str) -> list[str]:
        given = typer.prompt(label, default="", show_default=False, err=True)
        return [x.strip() for x in given.split(",") if x.strip()]

    while True:
        action = typer.prompt("approve or edit", default="approve", err=True).strip()
        try:
            calls = (
                json.loads(
                    typer.prompt('calls as JSON, e.g. [{"tool": ..., "args": {...}}]', err=True)
                )
                if action == "edit"
                else []
            )
            decision = {
                "action": action,
                "calls": calls,
                "pin": ids("pin document ids (comma-separated, optional)"),
                "exclude": ids("exclude sources or document ids (comma-separated, optional)"),
                "by": user,
            }
            return researcher.check_review(decision)
        except ValueError as exc:  # bad JSON, or a decision the run refuses (InvalidReview)
            prompts.print(f"[red]not taken:[/red] {escape(str(exc))}")


def trace_cmd(
    run_id: Annotated[str, typer.Argument(help="A run id printed by `waypoint ask`.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the events as JSON.")] = False,
    index: IndexOption = None,
) -> None:
    """Print the stored trace of a run."""
    researcher, store = _researcher(index, must_exist=True)
    try:
        events = researcher.get_trace(run_id)
        if not events:
            fail(f"no run {run_id!r} in this index")
        if json_out:
            typer.echo(json.dumps([e.model_dump() for e in events], indent=2, default=str))
        else:
            console.print(render_trace(events))
            result = researcher.get_result(run_id)
            if result is not None:
                print_result(result)
    finally:
        researcher.close()
        store.close()


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
    app.command("trace")(trace_cmd)
