"""The web trace viewer at ``/ui``: static files served by the app (no external CDN)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

router = APIRouter(tags=["ui"], include_in_schema=False)
_STATIC = Path(__file__).resolve().parent.parent / "static"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
# Asset names are plain file names: anything else (a NUL byte, a separator, "..") is no
# asset, answered 404 before it reaches the file system (a NUL made ``resolve`` raise: 500).
_ASSET_NAME = re.compile(r"[A-Za-z0-9_-]+\.[a-z]+")
# The page shows retrieved text, which is data an attacker may have written: it may run
# only the app's own script, load only its own style sheet, talk only to this service,
# and may not be framed (clickjacking) or have its types sniffed.
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@router.get("/ui", operation_id="ui_page")
def ui_page() -> FileResponse:
    return FileResponse(_STATIC / "index.html", media_type="text/html", headers=_HEADERS)


@router.get("/ui/{name}", operation_id="ui_asset")
def ui_asset(name: str) -> FileResponse:
    if not _ASSET_NAME.fullmatch(name):
        raise HTTPException(404, "no such asset")
    path = _STATIC / name
    if not path.is_file() or path.suffix not in _TYPES:
        raise HTTPException(404, "no such asset")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=_HEADERS)
