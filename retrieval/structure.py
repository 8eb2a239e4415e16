"""A document's own structure: the names it defines and the things it links to.

Kept with the catalog entry of each document (written in the same transaction as its
chunks, deleted with it), from the records alone, so no connector branches here:

- names (what the document defines or is about): its title, headings, the identifiers
  written in them or opening a line of its body (``- ERR-4012: ...``, ``| shared_buffers |``),
  the code symbols its chunks define (``Meta.SYMBOLS``: ``LedgerClient``,
  ``LedgerClient.post``), the entities, author and people/teams of its metadata, its own
  URL;
- links (what it points at): hyperlinks (``Meta.LINKS``, resolved against the folder the
  connector read), identifiers it mentions without defining them (``OPS-142``), URLs and
  code paths written in its text.

:class:`StructureIndex` resolves links to document ids at read time (a link to a page
ingested later resolves once it is), and answers "who defines this name".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from retrieval.records import Meta, Record

# Kinds of name, best first: what an exact lookup ranks by.
# An identifier the document defines: its native id, its whole title / a whole heading /
# an entity, or a definition line (``- ERR-4012: ...``, ``| shared_buffers | ...``).
IDENT = "ident"
IDENT_IN = "ident_in"  # an identifier inside its title or a heading (what it is about)
TITLE = "title"
ENTITY = "entity"  # metadata: entities, author, people and teams
HEADING = "heading"
URL_NAME = "url"  # the document's own URL
NAME_KINDS = (IDENT, TITLE, ENTITY, IDENT_IN, HEADING, URL_NAME)

# Kinds of link.
DOC = "doc"  # a hyperlink to a path of the same source (stored as the candidate doc id)
URL = "url"
MENTION = "mention"  # an identifier the document names but does not define
PATH = "path"  # a code / file path written in the text

# Ticket and error keys: OPS-142, ERR-4012, INC-2026-007.
_KEY = r"[A-Z][A-Z0-9]{1,9}-\d{1,6}(?:-\d{1,6})*"
# snake_case / SCREAMING_SNAKE names: shared_buffers, pg_dump, LEDGER_STRICT_IDEMPOTENCY.
_SNAKE = r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"
# Dotted code names: json.dumps, os.path.join, ledger.entries.v1, asyncio.TaskGroup,
# re.DOTALL (parts of 2+ characters, a lowercase module first; a capitalised part only in
# CamelCase or upper case, so two sentences run together, "ended.The", are no code).
# (The CamelCase test is a lookahead so that a long run of letters is scanned once, not
# tried at every split.)
_CAMEL_PART = r"[A-Z](?=[A-Za-z0-9_]*?(?:[a-z0-9_][A-Z]|[A-Z][a-z]{2}))[A-Za-z0-9_]*"
_DOTTED = (
    rf"[a-z_][A-Za-z0-9_]+(?:\.(?:[a-z_][A-Za-z0-9_]+|{_CAMEL_PART}|[A-Z][A-Z0-9_]{{2,}}))+"
    r"(?:\(\))?"
)
# A class's member written without its module, as API references list them:
# Repr.maxstring, Lock.acquire, Path.walk() (the member lowercase, so "ended.The" is none).
_MEMBER = r"[A-Z][a-z][A-Za-z0-9]*(?:\.[a-z_][A-Za-z0-9_]+)+(?:\(\))?"
_IDENT_RE = re.compile(rf"(?<![\w./-])(?:{_KEY}|{_SNAKE}|{_DOTTED}|{_MEMBER})(?![\w-]|\.\w)")
_BACKTICK_RE = re.compile(r"`([^`\s]{2,60})`")
_URL_RE = re.compile(r"https?://[^\s<>()\"'`\]]+[^\s<>()\"'`\].,;:!?]")
_PATH_RE = re.compile(r"(?<![\w/.:-])(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,5}(?![\w/])")
# A C-family declaration's return type before the function it declares: "int
# sqlite3_snapshot_get(", "const char *sqlite3_libversion(void);", "PGconn *PQconnectdb(":
# qualifiers, then a built-in type, a lowercase typedef (size_t, sqlite3_int64, sqlite3) or
# a capitalised type returned by pointer ("Call sqlite3_open(" is a sentence, not this).
_C_RETURN = (
    r"(?:(?:const|unsigned|signed|static|extern|inline|struct|enum|public|private|"
    r"protected)\s+)*"
    r"(?:(?:void|int|char|short|long|float|double|bool|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|"
    r"[a-z]+\d+)\s*\**\s+\**|[A-Z]\w*\s*\*+\s*)"
    r"(?=[A-Za-z_]\w*\s*\()"
)
# What may open a line before the name it defines: list markers, table bars, emphasis, and
# the kind an API reference writes before a name ("class asyncio.TaskGroup").
_LINE_OPEN = re.compile(
    r"^[\s>*+|#`_-]*(?:\d+[.)]\s*)?[*_`]*"
    r"(?:(?:abstract\s+|async\s+|static\s+)?(?:class|exception|def|function|method|"
    r"attribute|data|coroutine|interface|struct|enum)\s+(?=[\w.]+\s*(?:[(:=]|$))|"
    rf"{_C_RETURN})?"
)
# A REPL prompt (">>> json.dumps(...)") opens a call, which defines nothing.
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.)\s")
# Code names people write without a module: CamelCase classes (TaskGroup, HTTPStatus) and
# upper-case settings (PYTHONPATH). Read in questions only: running text has too many
# capitalised words that are not code. A question's "McDonald" or "UNESCO" is read too;
# looking it up is one bounded call that finds its page or nothing.
_CAMEL = re.compile(rf"(?<![\w.]){_CAMEL_PART}(?![\w.])")
_UPPER = re.compile(r"(?<![\w.])[A-Z][A-Z0-9]{5,}(?![\w.])")
# What follows a defined name on its line: a colon, a table bar, a dash, "=", a bracket.
_DEFINES = re.compile(r"[*_`]*\s*(?:[:|=\u2014\u2013(]|\s-\s|$)")
# Metadata keys (any source) whose values name people or teams.
PEOPLE_KEYS = frozenset(
    "owner owners team teams assignee reporter maintainer maintainers authors".split()
)
_MAX_NAME = 120


def fold(name: str) -> str:
    return " ".join(name.split()).casefold()


def identifiers(text: str) -> list[str]:
    """Identifier-like tokens of ``text`` (keys, snake_case, dotted code names, backticked
    code), first occurrence order, no repeats."""
    found = [m.group(0).removesuffix("()") for m in _IDENT_RE.finditer(text)]
    found += [m.group(1).strip("()") for m in _BACKTICK_RE.finditer(text)]
    return list(dict.fromkeys(f for f in found if f))


def code_names(question: str) -> list[str]:
    """The code names a question writes: its identifiers, and CamelCase or upper-case names
    ("when did asyncio get TaskGroup?", "what does PYTHONSAFEPATH do?")."""
    found = identifiers(question)
    found += [m.group(0) for m in _CAMEL.finditer(question)]
    found += [m.group(0) for m in _UPPER.finditer(question)]
    return list(dict.fromkeys(found))


def defines(text: str, name: str) -> bool:
    """Does a line of ``text`` define ``name``, qualified or by its last part
    ("TaskGroup" is defined by "class asyncio.TaskGroup")?"""
    return any(_names(d, name) for d in _defined_on_lines(text))


def _names(defined: str, name: str) -> bool:
    key = fold(name)
    return len(key) >= 3 and (fold(defined) == key or fold(defined).endswith("." + key))


def entry_runs_on(text: str, name: str) -> bool:
    """Is the entry defining ``name`` the last entry ``text`` opens? A chunk cut inside it
    holds the entry's start; its notes ("New in version 3.10", "Default: 3") follow in the
    next chunk."""
    defined = _defined_on_lines(text)
    return bool(defined) and _names(defined[-1], name)


def entry_rest(text: str) -> str:
    """The lines of ``text`` before the first one opening another entry: the end of an
    entry a chunk boundary cut."""
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if _line_defines(line)), len(lines))
    return "\n".join(lines[:end]).lstrip("\n").rstrip()


def _defined_on_lines(text: str) -> list[str]:
    """Identifiers that open a line: a glossary entry, an error table's row, a setting."""
    return [d for d in map(_line_defines, text.splitlines()) if d]


def _line_defines(line: str) -> str | None:
    if _PROMPT.match(line):
        return None
    rest = line[_LINE_OPEN.match(line).end() :]  # type: ignore[union-attr]
    m = _IDENT_RE.match(rest)
    if m and _DEFINES.match(rest, m.end()):
        return m.group(0).removesuffix("()")
    return None


@dataclass
class Structure:
    names: list[tuple[str, str]] = field(default_factory=list)  # (folded name, kind)
    links: list[tuple[str, str]] = field(default_factory=list)  # (target, kind)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


def document_structure(records: Sequence[Record]) -> Structure:
    """Names and links of one document (its chunks, in order)."""
    if not records:
        return Structure()
    first = records[0]
    md = first.metadata
    source = first.source
    names: dict[tuple[str, str], None] = {}

    def name(value: str, kind: str) -> None:
        key = fold(value)
        if key and len(key) <= _MAX_NAME:
            names[(key, kind)] = None

    title = first.title
    if title:
        name(title, TITLE)
    heads: dict[str, None] = {}
    for r in records:
        for h in r.metadata.get(Meta.HEADING_PATH) or []:
            if isinstance(h, str):
                heads[h] = None
    for h in heads:
        if h != title:
            name(h, HEADING)
    entities = _strings(md.get(Meta.ENTITIES)) + _strings(md.get(Meta.AUTHOR))
    for key in PEOPLE_KEYS:
        entities += _strings(md.get(key))
    for e in entities:
        name(e, ENTITY)
    if isinstance(md.get(Meta.URL), str):
        name(md[Meta.URL], URL_NAME)
    defined: dict[str, None] = {}
    inside: dict[str, None] = {}
    native = first.doc_id.partition(":")[2]
    for text in [native, title, *heads, *entities]:
        if text and _IDENT_RE.fullmatch(text.strip()):
            defined[text.strip()] = None
        else:
            inside.update(dict.fromkeys(identifiers(text)))
    body = "\n".join(r.text for r in records)
    defined.update(dict.fromkeys(_defined_on_lines(body)))
    for r in records:
        defined.update(dict.fromkeys(_strings(r.metadata.get(Meta.SYMBOLS))))
    for ident in defined:
        name(ident, IDENT)
    for ident in inside:
        if ident not in defined:
            name(ident, IDENT_IN)
    links: dict[tuple[str, str], None] = {}
    for r in records:
        for target in r.metadata.get(Meta.LINKS) or []:
            if not isinstance(target, str) or not target:
                continue
            if "://" in target or target.startswith(("mailto:", "//")):
                links[(target, URL)] = None
            else:
                links[(f"{source}:{target}", DOC)] = None
    own = {fold(d) for d in defined}
    for ident in identifiers(body):
        if fold(ident) not in own:
            links[(fold(ident), MENTION)] = None
    for m in _URL_RE.finditer(body):
        links[(m.group(0), URL)] = None
    for m in _PATH_RE.finditer(body):
        links[(m.group(0), PATH)] = None
    return Structure(names=list(names), links=list(links))


@dataclass
class Linked:
    doc_id: str
    via: str  # the link target or the name that led there
    kind: str  # a link kind


class StructureIndex:
    """The names and links of every document, resolved to document ids (in memory; built
    per catalog content version). ACL filtering is the caller's (the store's)."""

    def __init__(
        self,
        doc_ids: Iterable[str],
        names: Iterable[tuple[str, str, str]],
        links: Iterable[tuple[str, str, str]],
    ) -> None:
        self.doc_ids = set(doc_ids)
        self.by_name: dict[str, dict[str, list[str]]] = {}
        # "taskgroup" -> the documents defining asyncio.TaskGroup: code is named unqualified
        self.by_last_part: dict[str, list[str]] = {}
        self.defined: Counter[str] = Counter()  # identifiers each document defines
        for doc_id, key, kind in names:
            self.by_name.setdefault(key, {}).setdefault(kind, []).append(doc_id)
            if kind == IDENT:
                self.defined[doc_id] += 1
            # (not a document's own file name: "intro.html" is no qualified code name)
            own_path = fold(doc_id.partition(":")[2])
            if kind == IDENT and "." in key and " " not in key and key != own_path:
                self.by_last_part.setdefault(key.rsplit(".", 1)[1], []).append(doc_id)
        self.by_path: dict[str, list[str]] = {}
        for doc_id in self.doc_ids:
            _source, _, path = doc_id.partition(":")
            if path:
                self.by_path.setdefault(path, []).append(doc_id)
        self.out: dict[str, list[tuple[str, str]]] = {}
        self.mentioned_by: dict[str, list[str]] = {}
        for doc_id, target, kind in links:
            self.out.setdefault(doc_id, []).append((target, kind))
            if kind == MENTION:
                self.mentioned_by.setdefault(target, []).append(doc_id)
        self._incoming: dict[str, list[Linked]] | None = None
        self._linking: dict[str, list[str]] | None = None

    def named(self, name: str, kinds: Sequence[str] = NAME_KINDS) -> list[str]:
        """Documents with ``name`` among their names, by kind in ``kinds`` order."""
        found = self.by_name.get(fold(name), {})
        out: list[str] = []
        for kind in kinds:
            out += [d for d in found.get(kind, ()) if d not in out]
        return out

    def qualified(self, name: str) -> list[str]:
        """Documents defining a qualified name whose last part is ``name``
        ("TaskGroup" -> the page defining asyncio.TaskGroup), the most specific first: a
        contents page lists every entry of a chapter, the entry's own page a few."""
        found = list(dict.fromkeys(self.by_last_part.get(fold(name), ())))
        return sorted(found, key=lambda d: self.defined[d])

    def mentioning(self, name: str) -> list[str]:
        """Documents that name the identifier without defining it."""
        return list(self.mentioned_by.get(fold(name), ()))

    def resolve(self, doc_id: str, target: str, kind: str) -> list[str]:
        """The documents a link of ``doc_id`` reaches (empty: broken or external)."""
        if kind == DOC:
            for candidate in _doc_candidates(target):
                if candidate in self.doc_ids:
                    return [candidate] if candidate != doc_id else []
            path = target.partition(":")[2]
            return [d for d in self.by_path.get(path, ()) if d != doc_id]
        if kind == URL:
            return [d for d in self.named(target, (URL_NAME,)) if d != doc_id]
        if kind == MENTION:
            found = [d for d in self.named(target, (IDENT,)) if d != doc_id]
            return found or [d for d in self.named(target, (IDENT_IN,)) if d != doc_id]
        if kind == PATH:
            found = self.by_path.get(target, [])
            if not found:
                suffix = "/" + target
                found = [d for p, ds in self.by_path.items() if p.endswith(suffix) for d in ds]
            return [d for d in found if d != doc_id]
        return []

    def outgoing(self, doc_id: str) -> list[Linked]:
        out: list[Linked] = []
        seen: set[str] = set()
        for target, kind in self.out.get(doc_id, ()):
            for d in self.resolve(doc_id, target, kind):
                if d not in seen:
                    seen.add(d)
                    out.append(Linked(d, target, kind))
        return out

    def incoming(self, doc_id: str) -> list[Linked]:
        if self._incoming is None:
            incoming: dict[str, list[Linked]] = {}
            for src in self.out:
                for link in self.outgoing(src):
                    incoming.setdefault(link.doc_id, []).append(Linked(src, link.via, link.kind))
            self._incoming = incoming
        return list(self._incoming.get(doc_id, ()))

    def linking(self) -> dict[str, list[str]]:
        """Document -> the documents its links reach, for every document with one."""
        if self._linking is None:
            self._linking = {
                d: [x.doc_id for x in found] for d in self.out if (found := self.outgoing(d))
            }
        return self._linking

    def broken(self, doc_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(document, target) of each hyperlink of ``doc_ids`` that reaches no document."""
        return [
            (d, target.partition(":")[2])
            for d in doc_ids
            for target, kind in self.out.get(d, ())
            if kind == DOC and not self.resolve(d, target, kind)
        ]


def _doc_candidates(target: str) -> list[str]:
    """A hyperlink's doc id and the spellings a folder link or an extensionless link take."""
    out = [target]
    stem, dot, ext = target.rpartition(".")
    if not dot or "/" in ext:
        out += [target + ".md", target + ".html", target + "/index.html", target + "/README.md"]
        out += [target + "/index.md"]
    elif ext in ("html", "htm"):
        out.append(stem + ".md")
    return out
