"""The tool catalog: name, one-line capability, JSON schema of the arguments, and the code.

Tools return evidence only, never partial answers (retrieval and reasoning are decoupled).
Store calls are synchronous (embedded engines), so they run in a worker thread to keep the
event loop free for the other legs of the fan-out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from retrieval.placement import engine_call
from retrieval.records import ALL_LEGS, Meta
from retrieval.search_models import SearchOptions
from retrieval.structure import defines, entry_rest, entry_runs_on, identifiers
from tools.context import ToolContext
from tools.evidence import Evidence
from tools.normalize import evidence_from_hit, evidence_from_record
from tools.titles import tokens


@dataclass
class ToolOutput:
    evidence: list[Evidence]
    detail: dict[str, Any] = field(default_factory=dict)  # summary for the trace
    warnings: list[str] = field(default_factory=list)


ToolFn = Callable[[ToolContext, Any], Awaitable[ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str  # one line: what the planner reads
    args_model: type[BaseModel]
    fn: ToolFn

    @property
    def args_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "args": self.args_schema}


# -- argument models (their JSON schema is what planners see) --


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, max_length=1000, description="what to search for")
    k: int | None = Field(default=None, ge=1, le=100, description="how many passages")
    legs: list[Literal["lexical", "dense"]] | None = Field(
        default=None,
        min_length=1,
        description="engines to search (default both); lexical alone suits a keyword query",
    )

    dense_query: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="what the dense leg embeds instead of the query (what a question asks)",
    )
    dense_parts: list[Annotated[str, Field(min_length=1, max_length=1000)]] = Field(
        default_factory=list,
        max_length=4,
        description=(
            "instead of one dense text: parts of a composed question (what it asks, the "
            "description inside it); the dense leg looks near all of them at once"
        ),
    )
    feedback: list[str] = Field(
        default_factory=list,
        max_length=5,
        description="ids of passages found already: the dense leg also looks near them",
    )

    @model_validator(mode="after")
    def _one_dense_text(self) -> SearchArgs:
        if self.dense_query is not None and self.dense_parts:
            raise ValueError("give dense_query or dense_parts, not both")
        return self

    @property
    def embeds(self) -> bool:
        """Whether the search runs the dense leg (and so needs the query embedded)."""
        return self.legs is None or "dense" in self.legs

    @property
    def dense_texts(self) -> list[str]:
        """The texts the dense leg embeds (before the pipeline's own dense-leg rewrite):
        ``dense_parts``, else ``dense_query``, else the query."""
        return list(self.dense_parts) or [self.dense_query or self.query]

    @property
    def own_dense_text(self) -> bool:
        """Whether the dense leg embeds the query itself (as a plain search does)."""
        return self.dense_query is None and not self.dense_parts


class LookupArgs(BaseModel):
    name: str = Field(min_length=1, max_length=300, description="a title or entity name")
    limit: int = Field(default=3, ge=1, le=10)
    query: str | None = Field(
        default=None,
        max_length=1000,
        description="what is sought on the page: also return its best-matching section",
    )


class DocumentArgs(BaseModel):
    id: str = Field(min_length=1, description="a document id (or a chunk id of it)")


class LinksArgs(BaseModel):
    doc: str = Field(min_length=1, description="a document id (or a chunk id of it)")
    direction: Literal["out", "in", "both"] = Field(
        default="both", description="the documents it links to, that link to it, or both"
    )
    limit: int = Field(default=5, ge=1, le=20)
    query: str | None = Field(
        default=None,
        max_length=1000,
        description="what is sought: return each linked page's best-matching section",
    )


class NeighborArgs(BaseModel):
    chunk_id: str = Field(min_length=1)
    window: int = Field(default=1, ge=1, le=3)


# -- implementations --


async def search_knowledge(ctx: ToolContext, args: SearchArgs) -> ToolOutput:
    k = args.k or ctx.default_k
    # The detail reports the top k of each ranked list: the rest is not built.
    options = SearchOptions(k=k, explain_depth=k, legs=list(args.legs or ALL_LEGS))
    if ctx.search_fn is not None:  # a swapped search embeds as it likes (no dense_query)
        result = await ctx.search_fn(ctx.store, args.query, ctx.flt, options)
    else:
        from retrieval.pipeline import hybrid_search  # lazy: optional at import

        result = await hybrid_search(
            ctx.store,
            args.query,
            ctx.flt,
            options,
            query_vector=ctx.dense_vector(
                args.dense_texts,
                options,
                feedback=args.feedback,
                own_query=args.own_dense_text,
            ),
            dense_cache=ctx.dense_legs,
        )
    detail: dict[str, Any] = {
        "original_query": result.original_query,
        "rewritten_query": result.rewritten_query,
        "legs": {leg: [i.model_dump() for i in items[:k]] for leg, items in result.legs.items()},
        "fused": [i.model_dump() for i in result.fused[:k]],
        "reranked": (
            [i.model_dump() for i in result.reranked[:k]] if result.reranked is not None else None
        ),
        "timings_ms": result.timings_ms,
    }
    return ToolOutput(
        evidence=[evidence_from_hit(h) for h in result.hits],
        detail=detail,
        warnings=list(result.warnings),
    )


def _name_score(name: str, record: Any) -> float:
    # Exact title (ignoring a "(disambiguation)" suffix) or an identifier the page
    # defines ranks above a fuzzy match.
    title = record.title
    base = title.split(" (", 1)[0].strip().casefold()
    key = name.strip().casefold()
    if key in (title.casefold(), base):
        return 1.0
    return 1.0 if key in _defined_by(record) else 0.5


def _defined_by(record: Any) -> frozenset[str]:
    md = record.metadata
    return frozenset(
        str(e).casefold() for e in (md.get(Meta.ENTITIES) or []) if isinstance(e, str)
    ) | frozenset(i.casefold() for i in identifiers(record.title))


async def lookup_entity(ctx: ToolContext, args: LookupArgs) -> ToolOutput:
    # One call for the lookup and the pages' sections (not one hand-off per store call).
    evidence = await engine_call(ctx.store, "lookup", _lookup_entity, ctx, args)
    return ToolOutput(evidence=evidence, detail={"matched": [e.title for e in evidence]})


def _lookup_entity(ctx: ToolContext, args: LookupArgs) -> list[Evidence]:
    records = ctx.store.lookup(args.name, ctx.flt, args.limit)
    evidence = []
    for first in records:
        score = _name_score(args.name, first)
        evidence += _page_evidence(ctx, first, score, args.query, defining=args.name)
    return evidence


def _page_evidence(
    ctx: ToolContext,
    first: Any,
    score: float,
    query: str | None,
    chunks: list[Any] | None = None,
    defining: str | None = None,
) -> list[Evidence]:
    """A page's opening, after its section best matching ``query`` when there is one
    (``chunks``: the page's sections the caller may read, when already read) and, first,
    the section that defines the name looked up ("class asyncio.TaskGroup")."""
    out: list[Evidence] = []
    if query:
        # A long page's first section rarely holds the fact sought: its best-matching
        # section comes first, then the page's opening (what the page is about).
        if chunks is None:
            chunks = ctx.store.get_document(first.doc_id, ctx.flt)
        # The section defining the name looked up (of several, the one matching the query
        # best: an index of names defines them too); the best match for the query too, as
        # a definition may open at a section's end and go on in the next.
        definers = [c for c in chunks if defining and defines(c.text, defining)]
        if defining:
            # a chunk cut right after the name's line holds the label, the next its text
            definers = [c for c in definers if defines(_body(c.text), defining)] or definers
        definer = _best_section(definers, query, skip=first.id) if definers else None
        sections = [definer, _best_section(chunks, query, skip=first.id)]
        for best in {s.id: s for s in sections if s is not None}.values():
            found = evidence_from_record(best, score)
            if best is definer and defining:
                found = _whole_entry(found, best, chunks, defining)
            out.append(found)
            score *= 0.9
    out.append(evidence_from_record(first, score))
    return out


_LINKS_READ = 40  # linked pages a get_links call reads at most (a hub page links hundreds)
_PREFIX = 5  # words compared on their first letters ("drains" meets "drained")


async def get_links(ctx: ToolContext, args: LinksArgs) -> ToolOutput:
    found = await engine_call(ctx.store, "get_links", _get_links, ctx, args)
    evidence, detail = found
    return ToolOutput(evidence=evidence, detail=detail)


def _get_links(ctx: ToolContext, args: LinksArgs) -> tuple[list[Evidence], dict[str, Any]]:
    """The caller's view of a document's links: nothing about a document it cannot read
    (the store filters both ends)."""
    doc_id = args.doc.split("#", 1)[0]
    outgoing, incoming = ctx.store.links(doc_id, ctx.flt)
    chosen = [
        *(outgoing if args.direction in ("out", "both") else []),
        *(incoming if args.direction in ("in", "both") else []),
    ]
    pages: list[tuple[int, int, list[Any]]] = []  # (-overlap, link order, chunks)
    wanted = {_fold(t)[:_PREFIX] for t in tokens(args.query or "") if t not in _STOP}
    seen: set[str] = set()
    for order, link in enumerate(chosen):
        if link.doc_id in seen or len(seen) >= _LINKS_READ:
            continue
        seen.add(link.doc_id)
        records = ctx.store.get_document(link.doc_id, ctx.flt)
        if not records:
            continue
        overlap = (
            max(len(wanted & _word_starts(f"{c.title} {c.text}")) for c in records) if wanted else 0
        )
        if wanted and not overlap:
            continue  # with a query: only the pages that hold some of what is sought
        pages.append((-overlap, order, records))
    evidence: list[Evidence] = []
    for _neg, _order, records in sorted(pages, key=lambda p: (p[0], p[1]))[: args.limit]:
        evidence += _page_evidence(ctx, records[0], 0.5, args.query, records)
    detail = {
        "out": [{"doc_id": x.doc_id, "via": x.via, "kind": x.kind} for x in outgoing],
        "in": [{"doc_id": x.doc_id, "via": x.via, "kind": x.kind} for x in incoming],
    }
    return evidence, detail


_STOP = frozenset(
    "a an the of in on at to for by with and or is was were are be who what which when where "
    "how did does do from that this as it its".split()
)


# A hub's linked pages are read by call after call: each text's words are folded once.
_TEXTS_KEPT = 8192


@lru_cache(maxsize=_TEXTS_KEPT)
def _folded_words(text: str) -> frozenset[str]:
    return frozenset(_fold(t) for t in set(tokens(text)))


@lru_cache(maxsize=_TEXTS_KEPT)
def _word_starts(text: str) -> frozenset[str]:
    return frozenset(w[:_PREFIX] for w in _folded_words(text))


def _fold(token: str) -> str:
    """A light inflection fold so "leads" meets "lead" and "owns" meets "Owning"."""
    for suffix, keep in (("ing", 3), ("ies", 3), ("es", 4), ("s", 3)):
        if token.endswith(suffix) and len(token) - len(suffix) >= keep:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def _whole_entry(found: Evidence, record: Any, chunks: list[Any], name: str) -> Evidence:
    """The entry defining ``name`` to its end: when the chunk ends inside it (no other
    entry opens after it), the next chunk of the same section up to the next entry is
    part of it. A lookup is for what the entry says, and an entry's last lines (its
    default, the version that added it) are the ones a chunk boundary cuts off."""
    if not entry_runs_on(record.text, name):
        return found
    after = next((c for c in chunks if c.chunk_index == record.chunk_index + 1), None)
    if after is None or _section(after) != _section(record):
        return found
    start, end = after.metadata.get(Meta.CHAR_START), record.metadata.get(Meta.CHAR_END)
    # chunks overlap a little so a sentence cut at one boundary is whole in one of them
    overlap = end - start if isinstance(start, int) and isinstance(end, int) else 0
    skip = max(overlap, 0)
    rest = entry_rest(after.text[skip:])
    if not rest:
        return found
    locator = found.locator
    if locator is not None and isinstance(start, int):
        rest_end = after.text.index(rest, skip) + len(rest)
        locator = locator.model_copy(update={"char_end": start + rest_end})
    return found.model_copy(update={"text": f"{found.text}\n\n{rest}", "locator": locator})


def _section(record: Any) -> list[str]:
    return list(record.metadata.get(Meta.HEADING_PATH) or [])


def _body(text: str) -> str:
    """The text without its last line: a name on that line opens no entry here."""
    return text.rstrip().rpartition("\n")[0]


def _best_section(chunks: list[Any], query: str, skip: str) -> Any:
    wanted = {_fold(t) for t in tokens(query) if t not in _STOP}
    scored = [
        (len(wanted & _folded_words(c.text)), -c.chunk_index, c) for c in chunks if c.id != skip
    ]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


async def get_document(ctx: ToolContext, args: DocumentArgs) -> ToolOutput:
    doc_id = args.id.split("#", 1)[0]
    records = await engine_call(ctx.store, "get_document", ctx.store.get_document, doc_id, ctx.flt)
    return ToolOutput(evidence=[evidence_from_record(r, 1.0) for r in records])


async def get_neighbors(ctx: ToolContext, args: NeighborArgs) -> ToolOutput:
    records = await engine_call(
        ctx.store, "neighbors", ctx.store.neighbors, args.chunk_id, ctx.flt, args.window
    )
    return ToolOutput(evidence=[evidence_from_record(r, 0.5) for r in records])


SEARCH_KNOWLEDGE = ToolSpec(
    "search_knowledge",
    "Hybrid (keyword + semantic) search over every source in scope; returns ranked passages.",
    SearchArgs,
    search_knowledge,
)
LOOKUP_ENTITY = ToolSpec(
    "lookup_entity",
    "Open the page that defines an identifier (ERR-4012, shared_buffers) or whose title or "
    "named entity matches a name (exact, then fuzzy).",
    LookupArgs,
    lookup_entity,
)
GET_DOCUMENT = ToolSpec(
    "get_document",
    "Full text (all sections, in order) of a document already found.",
    DocumentArgs,
    get_document,
)
GET_LINKS = ToolSpec(
    "get_links",
    "The documents a document links to or names by identifier, and those that link to it.",
    LinksArgs,
    get_links,
)
GET_NEIGHBORS = ToolSpec(
    "get_neighbors",
    "The sections just before and after a passage already found.",
    NeighborArgs,
    get_neighbors,
)

DEFAULT_TOOLS: tuple[ToolSpec, ...] = (
    SEARCH_KNOWLEDGE,
    LOOKUP_ENTITY,
    GET_DOCUMENT,
    GET_LINKS,
    GET_NEIGHBORS,
)


class Catalog:
    """Named tools; what a planner may choose from."""

    def __init__(self, tools: tuple[ToolSpec, ...] | list[ToolSpec] = DEFAULT_TOOLS) -> None:
        self._tools = {t.name: t for t in tools}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> ToolSpec:
        try:
            return self._tools[name]
        except KeyError:
            raise KeyError(f"unknown tool {name!r}; known: {sorted(self._tools)}") from None

    def names(self) -> list[str]:
        return list(self._tools)

    def describe(self) -> list[dict[str, Any]]:
        return [t.describe() for t in self._tools.values()]
