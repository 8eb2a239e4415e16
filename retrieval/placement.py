"""Where a blocking engine call runs: on the event loop, or in a worker thread.

A worker thread keeps the loop free while a call blocks, at the price of two hand-offs
(submit, and the result back to the loop), each a wait for the GIL when the loop is busy.
For the in-process engines most calls cost less than that: Qdrant Edge's query and the
SQLite catalog hold the GIL while they run (a thread adds nothing but the hand-offs), and
a BM25 search on a corpus of thousands of passages takes ~0.3 ms before its hits are
decoded in Python. Measured on MuSiQue (160 questions, the two variants alternated per
question in one process, query embeddings traced): iterative p50 68.0 -> 64.7 ms with the
rule below against every call in a thread; the single-round hybrid search unchanged
(21.5 / 21.8 ms: its one embedding dominates). Same answers on 744 questions.

So an in-process engine's call runs on the loop while its recent calls have been short
(an exponential average under :data:`INLINE_BELOW_S`); the first call of each kind, and
any kind whose calls grow (a large index, a slow disk), runs in a thread, so a long
search never holds every other run on the loop. Engines reached over the network
(Elasticsearch, a Qdrant server) and objects that do not say ``in_process = True``
always run in a thread. An owner may also veto the loop for one call (``inline_ok(name)``):
the store does while another thread writes its catalog (a read would wait for that
writer's lock) and while its documents view is stale (the next lookup rebuilds it).

A call on the loop cannot be interrupted: with ``timeout_s`` one that ran longer raises
:class:`TimeoutError` when it returns, as a timed-out thread call would have (its result
is dropped), so a leg's timeout still degrades the search.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

INLINE_BELOW_S = 0.005  # recent cost under which a call is cheaper on the loop
_WEIGHT = 0.2  # of the newest call in the running average

# owner (an engine, a store) -> call name -> running average of its duration in seconds
_RECENT: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()


async def engine_call(
    owner: Any, name: str, fn: Callable[..., T], *args: Any, timeout_s: float | None = None
) -> T:
    """Run ``fn(*args)``, a blocking call of ``owner``'s, where it costs least.

    ``timeout_s`` bounds a call made on the loop after the fact (see the module notes); a
    call in a thread is bounded by the caller's own ``asyncio.wait_for``.
    """
    if not getattr(owner, "in_process", False):
        return await asyncio.to_thread(fn, *args)
    try:
        recent = _RECENT.setdefault(owner, {})
    except TypeError:  # not hashable or not weakly referenceable: nothing to remember by
        return await asyncio.to_thread(fn, *args)

    def timed() -> tuple[T, float]:
        start = time.perf_counter()
        try:
            out = fn(*args)
        finally:  # a failed call's time counts too
            took = time.perf_counter() - start
            last = recent.get(name)
            recent[name] = took if last is None else last + _WEIGHT * (took - last)
        return out, took

    last = recent.get(name)
    veto = getattr(owner, "inline_ok", None)
    if last is None or last >= INLINE_BELOW_S or (veto is not None and not veto(name)):
        return (await asyncio.to_thread(timed))[0]
    out, took = timed()
    if timeout_s is not None and took > timeout_s:
        raise TimeoutError(f"{name} took {took:.3f}s on the event loop (limit {timeout_s:g}s)")
    return out


def recent_cost(owner: Any, name: str) -> float | None:
    """The running average duration of ``owner``'s ``name`` calls (None: none seen)."""
    return _RECENT.get(owner, {}).get(name)
