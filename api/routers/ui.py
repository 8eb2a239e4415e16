"""The web trace viewer at ``/ui``: static files served by the app (no external CDN)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

router = APIRouter(tags=["ui"], include_in_schema=False)
_STATIC = Path(__file__).resolve().parent.parent / "static"
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


@router.get("/ui", operation_id="ui_page")
def ui_page() -> FileResponse:
    return FileResponse(
        _STATIC / "index.html", media_type="text/html", headers={"Cache-Control": "no-store"}
    )


@router.get("/ui/{name}", operation_id="ui_asset")
def ui_asset(name: str) -> FileResponse:
    path = (_STATIC / name).resolve()
    if path.parent != _STATIC or not path.is_file() or path.suffix not in _TYPES:
        raise HTTPException(404, "no such asset")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers={"Cache-Control": "no-store"})
