"""Blocking calls (the task store's SQLite or psycopg, the catalog) off the event loop.

A request handler or the worker loop that called them directly would stall every other
request and stream for as long as the call takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio
from starlette.concurrency import run_in_threadpool

P = ParamSpec("P")
T = TypeVar("T")


async def settle(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking call in a thread even while the caller is being cancelled: what a
    request writes as it ends (a run marked failed or cancelled, an idempotency claim
    freed) must be written when the client went away too."""
    with anyio.CancelScope(shield=True):
        result = await run_in_threadpool(call, *args, **kwargs)
    return result
