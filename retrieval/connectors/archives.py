"""Zip archives (a Confluence HTML space export, a Notion Markdown export, a zipped folder
of mixed files), read member by member in memory: nothing is extracted to disk.

Refused, each reported and the rest of the archive read:

* zip-slip: a member path that is absolute, has a drive letter, or climbs with ``..``
  (its id would leave the archive; ``\\`` separators read as ``/``) -> failure; a
  second member of the same path -> skipped;
* a member over ``max_file_bytes`` (declared, or found while reading: only that many
  bytes plus one are ever decompressed) -> skipped;
* a member of at least 64 KiB whose uncompressed/compressed ratio is over
  ``zip_max_ratio`` (a zip bomb) -> failure; an encrypted or corrupt member (bad CRC,
  broken deflate stream) -> failure.

The whole archive is refused (one failure) when it is not a readable zip, holds more than
``zip_max_members`` members, or declares (or, while read, inflates to) more than
``zip_max_total_bytes`` in all. Hidden members (``.x``, ``__MACOSX/``) are ignored.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from retrieval.connectors.base import LoadContext

ARCHIVE_SUFFIXES = {".zip"}
_RATIO_MIN_BYTES = 64 * 1024
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def member_path(name: str) -> str:
    """A member's path with Windows separators (written by some zip tools) as ``/``."""
    return name.replace("\\", "/")


def unsafe_member(name: str) -> bool:
    """A member path that would leave the archive's folder (zip-slip)."""
    name = member_path(name)
    if not name or name.startswith("/") or _DRIVE_RE.match(name):
        return True
    return any(part == ".." for part in PurePosixPath(name).parts)


def _mtime(info: zipfile.ZipInfo) -> datetime:
    try:
        return datetime(*info.date_time, tzinfo=UTC)
    except ValueError:
        return datetime(1980, 1, 1, tzinfo=UTC)


def archive_members(
    archive: Path, ctx: LoadContext, accept: Callable[[str, str], bool]
) -> Iterator[tuple[str, bytes, datetime]]:
    """(member path, bytes, mtime) of each accepted member. ``accept(name, where)`` decides
    by name before anything is decompressed (and reports what it rejects)."""
    cs = ctx.connector_settings
    limit = ctx.settings.max_file_bytes
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        ctx.fail(archive, f"unreadable archive: {exc}")
        return
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > cs.zip_max_members:
            ctx.fail(
                archive,
                f"refused: {len(infos)} members > zip_max_members {cs.zip_max_members}",
            )
            return
        declared = sum(i.file_size for i in infos)
        if declared > cs.zip_max_total_bytes:
            ctx.fail(
                archive,
                f"refused: {declared} bytes uncompressed > zip_max_total_bytes "
                f"{cs.zip_max_total_bytes} (a zip bomb?)",
            )
            return
        inflated = 0
        seen: set[str] = set()
        for info in infos:
            name = member_path(info.filename)
            where = f"{archive}/{name}"
            if unsafe_member(name):
                ctx.fail(where, "refused: unsafe member path (absolute or '..', zip-slip)")
                continue
            if name in seen:
                ctx.skip(where, "duplicate member path: the first one was read")
                continue
            seen.add(name)
            parts = PurePosixPath(name).parts
            if parts[0] == "__MACOSX" or any(p.startswith(".") for p in parts):
                continue
            if not accept(name, where):
                continue
            if info.flag_bits & 0x1:
                ctx.fail(where, "encrypted archive member")
                continue
            if info.file_size > limit:
                ctx.skip(where, f"too large: {info.file_size} bytes > max_file_bytes {limit}")
                continue
            if info.file_size >= _RATIO_MIN_BYTES:
                ratio = info.file_size / max(1, info.compress_size)
                if ratio > cs.zip_max_ratio:
                    ctx.fail(
                        where,
                        f"refused: compression ratio {ratio:.0f} > zip_max_ratio "
                        f"{cs.zip_max_ratio:.0f} (a zip bomb?)",
                    )
                    continue
            try:
                with zf.open(info) as fh:
                    data = fh.read(limit + 1)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as exc:
                ctx.fail(where, f"corrupt archive member: {exc}")
                continue
            except NotImplementedError as exc:  # an unsupported compression method
                ctx.fail(where, f"unsupported archive member: {exc}")
                continue
            if len(data) > limit:  # the declared size was a lie
                ctx.skip(where, f"too large: over max_file_bytes {limit} once decompressed")
                continue
            inflated += len(data)
            if inflated > cs.zip_max_total_bytes:
                ctx.fail(
                    archive,
                    f"refused the rest: over zip_max_total_bytes {cs.zip_max_total_bytes} "
                    "decompressed (a zip bomb?)",
                )
                return
            yield name, data, _mtime(info)
