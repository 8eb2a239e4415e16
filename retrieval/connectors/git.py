"""Git repository connector: the files of one ref of a local repository (dulwich).

What is read is the committed tree of the ref (default ``HEAD``), never the work tree:
uncommitted edits are not indexed. Left out, each reported in ``skipped`` with its reason:
paths a ``.gitignore`` of the tree matches (a file committed before it was ignored),
binary files (a NUL byte in the first ``git_binary_probe_bytes``), files over
``git_max_file_bytes``, files that are not UTF-8, submodules and symbolic links. Hidden
paths (``.github/``, ``.gitignore``) are not documents, as in a folder.

Documents: pages and office documents (``.md .html .pdf .docx`` ...) as the files
connector reads them; every other text file as code, cut at its top-level definitions
(:mod:`.code`), kind ``code``, title its path. Ids: ``<source>:<path in the repository>``.
Each record carries ``path`` and the last commit that touched its file: ``commit`` (sha),
``commit_author``, ``commit_date`` (also its timestamp, author and source version).

Incremental: given the commit indexed before (``since``), only the files changed between
it and the ref are read (the trees' diff, not a rescan); ``touched`` lists them, so that
their documents not emitted again (a deleted file, one now binary or ignored) can be
deleted. Without ``since``, when it is not in the repository, or when a ``.gitignore``
changed, the whole tree is read (``touched`` is ``None``: the load is the whole source).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from stat import S_ISLNK

from dulwich.diff_tree import tree_changes
from dulwich.ignore import IgnoreFilter, read_ignore_patterns
from dulwich.objects import Blob, Commit, Tree
from dulwich.objectspec import parse_commit
from dulwich.repo import Repo

from retrieval.connectors.base import LoadContext, Section, SourceDocument, document_records
from retrieval.connectors.code import code_sections, language_for
from retrieval.connectors.files import SUFFIXES, FileItem, FilesConnector
from retrieval.records import Meta, Record

_GITLINK = 0o160000  # a submodule's entry in a tree
_IGNORE_FILE = ".gitignore"


class GitError(ValueError):
    """The path is not a readable repository, or the ref names no commit."""


def is_git_repository(path: Path) -> bool:
    """A work tree with ``.git`` (a folder, or a file pointing at one) or a bare repo."""
    if not path.is_dir():
        return False
    if (path / ".git").exists():
        return True
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    date: datetime

    def metadata(self) -> dict[str, str]:
        return {
            "commit": self.sha,
            "commit_author": self.author,
            "commit_date": self.date.isoformat(),
        }


@dataclass
class GitLoad:
    records: list[Record]
    commit: str  # the sha the ref resolved to
    touched: list[str] | None  # changed paths of an incremental load; None: whole tree
    files: int = 0  # files read
    commits: dict[str, CommitInfo] = field(default_factory=dict)


def load_repository(
    path: Path, ctx: LoadContext, ref: str = "HEAD", since: str | None = None
) -> GitLoad:
    """The records of the files of ``ref`` (all, or those changed since ``since``)."""
    try:
        repo = Repo(str(path))
    except Exception as exc:  # noqa: BLE001 - dulwich raises several kinds for a bad repo
        raise GitError(f"not a readable git repository: {path}: {exc}") from exc
    with repo:
        try:
            head = parse_commit(repo, ref)
        except (KeyError, ValueError) as exc:
            raise GitError(f"{path}: no commit for ref {ref!r}") from exc
        reader = _TreeReader(repo, head, path, ctx)
        base = _commit_or_none(repo, since) if since else None
        if base is not None and base.id == head.id:
            return GitLoad([], head.id.decode(), [])
        changed = _changed_paths(repo, base, head) if base is not None else None
        if changed is not None and any(PurePosixPath(p).name == _IGNORE_FILE for p in changed):
            changed = None  # what is ignored changed: read the whole tree again
        paths = changed if changed is not None else list(reader.all_paths())
        present = [p for p in paths if reader.entry(p) is not None]
        commits = _last_commits(repo, head, present)
        records: list[Record] = []
        files = 0
        for p in present:
            recs = reader.records(p, commits.get(p))
            if recs is not None:
                files += 1
                records.extend(recs)
        return GitLoad(records, head.id.decode(), changed, files, commits)


def _commit_or_none(repo: Repo, sha: str) -> Commit | None:
    try:
        obj = repo[sha.encode()]
    except (KeyError, ValueError):
        return None  # history rewritten, or another repository
    return obj if isinstance(obj, Commit) else None


def _changed_paths(repo: Repo, base: Commit, head: Commit) -> list[str]:
    out: list[str] = []
    for change in tree_changes(repo.object_store, base.tree, head.tree):
        for entry in (change.old, change.new):
            if entry is not None and entry.path is not None:
                out.append(entry.path.decode("utf-8", "surrogateescape"))
    return list(dict.fromkeys(out))


def _last_commits(repo: Repo, head: Commit, paths: Iterable[str]) -> dict[str, CommitInfo]:
    """The last commit that changed each path, walking first parents back from ``head``
    (a change merged from a branch is the merge's); stops once every path is found."""
    wanted = {p.encode("utf-8", "surrogateescape") for p in paths}
    found: dict[str, CommitInfo] = {}
    commit: Commit | None = head
    while commit is not None and wanted:
        parent = repo[commit.parents[0]] if commit.parents else None
        parent_tree = parent.tree if isinstance(parent, Commit) else None
        info: CommitInfo | None = None
        for change in tree_changes(repo.object_store, parent_tree, commit.tree):
            entry = change.new if change.new is not None else change.old
            if entry is None or entry.path not in wanted:
                continue
            info = info or _commit_info(commit)
            found[entry.path.decode("utf-8", "surrogateescape")] = info
            wanted.discard(entry.path)
        commit = parent if isinstance(parent, Commit) else None
    return found


def _commit_info(commit: Commit) -> CommitInfo:
    author = commit.author.decode("utf-8", "replace")
    name = author.split(" <", 1)[0].strip() or author
    tz = timezone(timedelta(seconds=commit.author_timezone))
    date = datetime.fromtimestamp(commit.author_time, tz=tz).astimezone(UTC)
    return CommitInfo(commit.id.decode(), name, date)


class _TreeReader:
    """Reads files of one commit's tree into records, with the tree's ignore rules."""

    def __init__(self, repo: Repo, commit: Commit, root: Path, ctx: LoadContext) -> None:
        self.repo = repo
        self.commit = commit
        self.root = root
        self.ctx = ctx
        tree = repo[commit.tree]
        assert isinstance(tree, Tree)
        self.tree = tree
        self._ignores: dict[str, IgnoreFilter | None] = {}
        self._files = FilesConnector(ctx)

    def all_paths(self) -> Iterator[str]:
        for entry in self.repo.object_store.iter_tree_contents(self.commit.tree):
            if entry.path is not None:
                yield entry.path.decode("utf-8", "surrogateescape")

    def entry(self, path: str) -> tuple[int, bytes] | None:
        """(mode, sha) of ``path`` in the tree, or ``None`` when it is not there."""
        try:
            mode, sha = self.tree.lookup_path(
                self.repo.object_store.__getitem__, path.encode("utf-8", "surrogateescape")
            )
        except KeyError:
            return None
        return mode, sha

    def records(self, path: str, commit: CommitInfo | None) -> list[Record] | None:
        """The records of one file; ``None`` (reported) when it is left out."""
        if any(part.startswith(".") for part in PurePosixPath(path).parts):
            return None
        where = f"{self.root}/{path}"
        found = self.entry(path)
        if found is None:
            return None
        mode, sha = found
        if mode == _GITLINK:
            self.ctx.skip(where, "submodule: not read")
            return None
        if S_ISLNK(mode):
            self.ctx.skip(where, "symbolic link: not read")
            return None
        if self._ignored(path):
            self.ctx.skip(where, "ignored by .gitignore")
            return None
        blob = self.repo[sha]
        if not isinstance(blob, Blob):
            return None
        cs = self.ctx.connector_settings
        limit = min(cs.git_max_file_bytes, self.ctx.settings.max_file_bytes)
        size = blob.raw_length()
        if size > limit:
            self.ctx.skip(where, f"too large: {size} bytes > git_max_file_bytes {limit}")
            return None
        data = blob.as_raw_string()
        if b"\x00" in data[: cs.git_binary_probe_bytes]:
            self.ctx.skip(where, "binary file")
            return None
        info = commit or _commit_info(self.commit)
        if PurePosixPath(path).suffix.lower() in SUFFIXES:
            return self._document(path, data, info)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            self.ctx.skip(where, "not UTF-8 text")
            return None
        if not text.strip():
            self.ctx.skip(where, "empty file")
            return None
        return document_records(self._code(path, text, info), self.ctx.settings)

    def _code(self, path: str, text: str, commit: CommitInfo) -> SourceDocument:
        language = language_for(path)
        sections = code_sections(text, language) or [Section(0, len(text))]
        extra: dict[str, object] = {Meta.PATH: path, **commit.metadata()}
        if language:
            extra["language"] = language
        return SourceDocument(
            doc_id=f"{self.ctx.source}:{path}",
            source=self.ctx.source,
            text=text,
            title=path,
            kind="code",
            timestamp=commit.date,
            source_version=commit.sha,
            acl=list(self.ctx.acl),
            author=commit.author,
            project=self.ctx.project,
            extra=extra,
            hash_basis=text,
            sections=sections,
        )

    def _document(self, path: str, data: bytes, commit: CommitInfo) -> list[Record]:
        item = FileItem(self.root, self.root, path, data, commit.date)
        records: list[Record] = []
        for doc in self._files.documents(item):
            doc.extra.update(commit.metadata())
            doc.source_version = commit.sha
            doc.author = doc.author or commit.author
            records.extend(document_records(doc, self.ctx.settings))
        return records

    def _ignored(self, path: str) -> bool:
        """Whether the ``.gitignore`` files of the tree (the root's, then each folder's
        down to the file's; a deeper one decides over a shallower) ignore ``path``."""
        parts = PurePosixPath(path).parts
        verdict: bool | None = None
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            rules = self._ignore_filter(folder)
            if rules is None:
                continue
            rel = "/".join(parts[depth:])
            # A folder of the path being ignored ignores everything in it.
            for i in range(1, len(parts) - depth):
                if rules.is_ignored("/".join(parts[depth : depth + i]) + "/"):
                    return True
            decided = rules.is_ignored(rel)
            if decided is not None:
                verdict = decided
        return bool(verdict)

    def _ignore_filter(self, folder: str) -> IgnoreFilter | None:
        if folder not in self._ignores:
            name = f"{folder}/{_IGNORE_FILE}" if folder else _IGNORE_FILE
            found = self.entry(name)
            rules: IgnoreFilter | None = None
            if found is not None:
                blob = self.repo[found[1]]
                if isinstance(blob, Blob):
                    patterns = list(read_ignore_patterns(io.BytesIO(blob.as_raw_string())))
                    rules = IgnoreFilter(patterns, path=name)
            self._ignores[folder] = rules
        return self._ignores[folder]
