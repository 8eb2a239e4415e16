"""A bounded pool of in-process workers that run research tasks from the task store.

Restart safety: a task is ``running`` in the database while a worker holds it, under the
store's ``owner`` (one per process), whose lease the pool renews every few seconds. If the
process dies, its tasks go back to the queue flagged ``resume`` (at the next start on
SQLite, which one process has to itself; once the lease lapses on a shared Postgres
database, taken back by any process), and the worker that claims them calls
``Researcher.resume(run_id)``, which continues from the last LangGraph checkpoint. A
process that finds, at a heartbeat, that a task it runs was taken back (it stalled past its
lease) stops running it and records nothing more for it. Webhook deliveries left pending
are restarted too, with the same webhook id (the receiver deduplicates on it).

A resumed task records each step once: the run redoes the steps after its last checkpoint,
and the events the stopped attempt stored for them are replaced by the redone ones (ids
only grow; see ``TaskStore.replace_redone_events``); its progress is counted over the events
kept, and its final counts are the run's own. Each webhook attempt is logged before it is
sent: one cut short by a stop stays in the log, marked interrupted (it may have arrived).

A task created with ``review=["plan"]`` pauses after its first plan (``ReviewRequired``):
it becomes ``input_required``, held by no one (a restart leaves it paused), with the
proposed calls on the task, an ``input_required`` event and a ``task.input_required``
webhook. The owner's decision (``POST /v1/tasks/{id}/input``) queues it to resume, and
the worker that claims it passes the decision to ``Researcher.resume``.

A task runs as its key is now: the caller (the key's groups) is read from the key set, by
the key's id, when the run starts or resumes and at every step (``graph.runner.
CallerSource``); a key gone from the auth file fails the task ("key revoked").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.auth import KeyRing
from api.events import done_data, run_failed_data
from api.logging import bound
from api.schemas import TERMINAL, TaskProgress, TaskRequest, WebhookDelivery
from api.tasks.store import Closing, Recovered, TaskStore, webhook_body
from api.telemetry import task_span
from api.webhooks import WebhookSender
from graph.models import Caller, ResearchResult, TraceEvent
from graph.runner import CallerRevoked, CallerSource, ReviewRequired, UnknownRun

log = logging.getLogger("waypoint.api.tasks")


class ResearcherLike(Protocol):
    async def run(
        self,
        question: str,
        caller: Caller,
        options: Any,
        run_id: str | None = None,
        on_event: Any = None,
        caller_source: CallerSource | None = None,
        review: list[Any] | None = None,
    ) -> ResearchResult: ...

    async def resume(
        self,
        run_id: str,
        on_event: Any = None,
        caller_source: CallerSource | None = None,
        decision: dict[str, Any] | None = None,
    ) -> ResearchResult: ...

    async def prune(self, before: float) -> int: ...


class ChangeFeed:
    """Wakes SSE listeners when a task gets a new event or status (in this process).

    Listeners also re-poll on a timeout, so a second process writing the same database
    is picked up too, just later.
    """

    def __init__(self) -> None:
        self._cond = asyncio.Condition()

    async def notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    async def wait(self, seconds: float) -> None:
        async with self._cond:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cond.wait(), seconds)


# The closing event of a cancelled task's stream.
_CANCELLED = Closing("error", {"code": "cancelled", "message": "cancelled"})

# The task's own events that frame its stream (the run's own of these types are not
# stored), and its pause for review: not counted in its progress.
_FRAMES = ("metadata", "done", "error", "input_required")


def _progress_from(progress: TaskProgress, event: TraceEvent) -> TaskProgress:
    return _progress_with(progress, event.type, event.round, event.data or {})


def _progress_with(
    progress: TaskProgress, etype: str, round_no: int, data: dict[str, Any]
) -> TaskProgress:
    p = progress.model_copy()
    p.events += 1
    p.round = max(p.round, round_no)
    if etype == "tool_call":
        p.tool_calls += 1
    if etype == "evidence" and isinstance(data.get("pool_size"), int):
        p.evidence = data["pool_size"]
    return p


class WorkerPool:
    def __init__(
        self,
        tasks: TaskStore,
        researcher: ResearcherLike,
        sender: WebhookSender,
        keys: KeyRing,
        workers: int,
        feed: ChangeFeed | None = None,
        lease_s: float = 30.0,
        retention_s: float = 0.0,
        prune_every_s: float = 3600.0,
    ) -> None:
        self.tasks = tasks
        self.lease_s = lease_s
        # Finished work older than this is deleted (TaskStore.prune), checked at the first
        # heartbeat and every ``prune_every_s`` after; 0 keeps everything.
        self.retention_s = retention_s
        self.prune_every_s = prune_every_s
        self._next_prune = 0.0
        # Renewed well inside the lease, and often enough that a cancel asked of another
        # process is read within a few seconds.
        self.heartbeat_s = min(lease_s / 3, 5.0)
        self.researcher = researcher
        self.sender = sender
        self.keys = keys
        self.n_workers = workers
        self.feed = feed or ChangeFeed()
        self._wake = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._running: dict[str, asyncio.Task[ResearchResult]] = {}
        self._cancel_requested: set[str] = set()
        self._lost: set[str] = set()  # taken back by another process while running here
        # Claimed by a worker here and not yet let go: a task this owner holds in the store
        # but not here is orphaned (its run was dropped) and is handed back.
        self._claimed: set[str] = set()
        self._heartbeat: asyncio.Task[None] | None = None
        self._settled: dict[str, asyncio.Event] = {}
        self._deliveries: set[asyncio.Task[None]] = set()
        # Being sent here: task ids (their final webhook), outbox messages' webhook ids.
        self._delivering: set[str] = set()
        self._stopping = False

    # ----------------------------------------------------------- lifecycle
    async def start(self) -> None:
        await run_in_threadpool(self.tasks.heartbeat, self.lease_s)
        recovered = await run_in_threadpool(self.tasks.recover, exclusive=self.tasks.exclusive)
        if recovered:
            log.info("recovered after restart", extra=_recovered_fields(recovered))
        self._heartbeat = asyncio.create_task(self._keep_lease(), name="waypoint-lease")
        exclusive = self.tasks.exclusive
        for task_id in await run_in_threadpool(self.tasks.claim_webhooks, exclusive=exclusive):
            self._spawn_delivery(task_id)
        for webhook_id in await run_in_threadpool(self.tasks.claim_messages, exclusive=exclusive):
            self._spawn_message(webhook_id)
        self._workers = [
            asyncio.create_task(self._worker(i), name=f"waypoint-worker-{i}")
            for i in range(self.n_workers)
        ]
        self._wake.set()

    async def stop(self) -> None:
        # Running tasks go back to the queue marked to resume: this or another process
        # continues them from their checkpoints, as after a crash, without waiting for
        # the lease to lapse.
        self._stopping = True
        background = [*self._workers, *self._deliveries]
        if self._heartbeat is not None:
            background.append(self._heartbeat)
        for t in background:
            t.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        self._workers.clear()
        self._heartbeat = None
        try:
            released = await run_in_threadpool(self.tasks.release)
        except Exception:  # the database is down: the lease lapses and peers take them back
            log.exception("running tasks not released at stop")
            return
        if released:
            log.info("running tasks released for resumption", extra={"tasks": released})

    async def _keep_lease(self) -> None:
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await run_in_threadpool(self.tasks.heartbeat, self.lease_s)
                renewed = time.monotonic()
                recovered, webhooks, messages, owned = await run_in_threadpool(self._take_stock)
            except Exception:  # the database is unreachable now: logged, tried again next beat
                log.exception("task lease not renewed")
                if time.monotonic() - renewed > self.lease_s:
                    # Peers may have taken these back by now: stop before running them twice.
                    self._drop_runs(set(self._running), "its lease lapsed while unreachable")
                continue
            if recovered:
                log.info("took back work of a stopped process", extra=_recovered_fields(recovered))
                self._wake.set()
            for task_id in webhooks:
                self._spawn_delivery(task_id)  # not if one is in flight here
            for webhook_id in messages:
                self._spawn_message(webhook_id)
            for task_id in set(owned) - self._claimed:
                # Held in the store but not run here (its run was dropped while the store
                # was unreachable): back to the queue, for this or another process.
                log.warning("orphaned task handed back", extra={"task_id": task_id})
                await self._hand_back(task_id)
                self._wake.set()
            self._drop_runs(
                {t for t in self._running if t not in owned}, "taken back by another process"
            )
            for task_id, runner in list(self._running.items()):
                asked = owned.get(task_id) and task_id not in self._cancel_requested
                if asked and not runner.done():
                    self._cancel_requested.add(task_id)  # asked of this process elsewhere
                    runner.cancel()
            if self.retention_s and time.monotonic() >= self._next_prune:
                self._next_prune = time.monotonic() + self.prune_every_s
                await self._prune()

    async def _prune(self) -> None:
        before = time.time() - self.retention_s
        try:
            pruned = await run_in_threadpool(self.tasks.prune, before)
        except Exception:  # the database is unreachable now: logged, tried at the next pass
            log.exception("retention pass failed")
            return
        if pruned:
            log.info("retention: finished work deleted", extra=asdict(pruned))
        try:
            runs = await self.researcher.prune(before)
        except Exception:  # a store error: logged, tried at the next pass
            log.exception("retention pass over run traces and checkpoints failed")
            return
        if runs:
            log.info("retention: run traces and checkpoints deleted", extra={"runs": runs})

    def _take_stock(self) -> tuple[Recovered, list[str], list[str], dict[str, bool]]:
        """A heartbeat's store work after the lease (in a thread): the work of gone owners
        taken back, and what this owner now holds: unsent webhooks and outbox messages,
        running tasks (each with whether a cancel was asked)."""
        recovered = self.tasks.recover()
        self.tasks.claim_webhooks()  # those of gone owners become this owner's
        self.tasks.claim_messages()
        return (
            recovered,
            self.tasks.owned_unsent_webhooks(),
            self.tasks.owned_unsent_messages(),
            self.tasks.owned_running(),
        )

    def _drop_runs(self, task_ids: set[str], why: str) -> None:
        """Stop running these tasks here, recording nothing more for them: another process
        holds (or will hold) them."""
        for task_id in task_ids:
            runner = self._running.get(task_id)
            if runner is None or runner.done():
                continue  # finished: its worker is recording the outcome
            log.warning("task no longer run here: " + why, extra={"task_id": task_id})
            self._lost.add(task_id)
            runner.cancel()

    def notify(self) -> None:
        self._wake.set()

    async def cancel(self, task_id: str) -> bool:
        """Cancel a queued or running task; False if it already finished."""
        if await self._cancel_queued(task_id):
            return True
        running = self._running.get(task_id)
        if running is not None:
            self._cancel_requested.add(task_id)
            settled = self._settled.setdefault(task_id, asyncio.Event())
            running.cancel()
            # Return once the worker has recorded the cancellation (bounded wait).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(settled.wait(), 10.0)
            # Taken back from here meanwhile: ask whoever holds it now (or its next claimant).
            await run_in_threadpool(self.tasks.request_cancel, task_id)
            return True
        if await run_in_threadpool(self.tasks.request_cancel, task_id):  # in another process
            # Its owner reads the request at its next heartbeat (bounded wait). Should the
            # owner stop first, the task is queued again, still asked to cancel: cancel it
            # here (else its next claimant does).
            deadline = time.monotonic() + 10.0 + self.heartbeat_s
            while time.monotonic() < deadline:
                row = await run_in_threadpool(self.tasks.task_row, task_id)
                if row is None or row["status"] != "running":
                    break
                await asyncio.sleep(0.2)
            await self._cancel_queued(task_id)
            return True
        return False

    async def _cancel_queued(self, task_id: str) -> bool:
        if not await run_in_threadpool(self.tasks.cancel_queued, task_id, _CANCELLED):
            return False
        await self.feed.notify()
        await self._spawn_delivery_if_needed(task_id)
        return True

    # -------------------------------------------------------------- workers
    async def _worker(self, index: int) -> None:
        while not self._stopping:
            try:
                row = await run_in_threadpool(self.tasks.claim_next)
            except Exception:  # the database is unreachable now: logged, tried again
                log.exception("could not claim a task")
                row = None
            if row is None:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=2.0)
                continue
            self._claimed.add(row["id"])
            with bound(task_id=row["id"], run_id=row["run_id"]):
                try:
                    await self._take(row)
                except Exception:  # the store failed mid-task (a run's own error is recorded)
                    log.exception("task handling failed: handing it back to the queue")
                    await self._hand_back(row["id"])
                    await asyncio.sleep(1.0)  # the store is failing: no hot claim loop
                finally:
                    self._claimed.discard(row["id"])
                    # e.g. after a failed event write
                    await self._spawn_delivery_if_needed(row["id"])

    async def _hand_back(self, task_id: str) -> None:
        try:
            await run_in_threadpool(self.tasks.release, task_id)
        except Exception:  # still failing: the task goes back when this lease lapses
            log.exception("task not handed back")

    async def _take(self, row: Any) -> None:
        if row["cancel_requested"]:  # asked while another process ran it
            await self._finish_cancelled(row["id"])
            await self.feed.notify()
            return
        await self._execute(row)

    async def _event(self, task_id: str, etype: str, data: dict[str, Any], **kw: Any) -> int:
        return await run_in_threadpool(self._append_frame, task_id, etype, data, kw)

    def _append_frame(
        self, task_id: str, etype: str, data: dict[str, Any], extra: dict[str, Any]
    ) -> int:
        row = self.tasks.task_row(task_id)
        run_id = row["run_id"] if row is not None else ""
        event = {"run_id": run_id, "type": etype, "ts": time.time(), "data": data, **extra}
        return self.tasks.append_event(task_id, event)

    async def _execute(self, row: Any) -> None:
        task_id, run_id = row["id"], row["run_id"]
        try:
            request = TaskRequest.model_validate(json.loads(row["request"]))
        except (ValueError, ValidationError) as exc:  # stored by another version, say
            log.warning("task request unreadable: failed", extra={"error": str(exc)[:300]})
            await self._finish_failed(task_id, exc)
            await self.feed.notify()
            return
        # The caller is read from the task's key as it is now, here and at every step of the
        # run (graph.runner.CallerSource): never from what the run stored when it started.
        caller_source = self._caller_source(row, request.project)
        progress = TaskProgress.model_validate_json(row["progress"] or "{}")
        resume = bool(row["resume"])
        # Where a new run pauses for review, and the reviewer's decision a paused run
        # resumes with (TaskStore.submit_review); passed only when there is one.
        run_kw: dict[str, Any] = {"review": list(request.review)} if request.review else {}
        resume_kw: dict[str, Any] = {}
        if row["review_decision"]:
            resume_kw["decision"] = json.loads(row["review_decision"])
        # A resumed run redoes the steps after its last checkpoint: the first step it
        # starts says which of the stored events are about to be emitted again.
        redo_from: int | None = None  # the seq of this attempt's first event, until then

        def record(event: TraceEvent) -> bool:
            """Store the event and the progress it makes (in a thread); False if this
            process no longer holds the task."""
            nonlocal progress, redo_from
            if redo_from is not None and event.type == "node_start" and event.node:
                # Once: a later step is not where the run started again.
                before, redo_from = redo_from, None
                progress = self._replace_redone(task_id, event.node, event.round, before)
            progress = _progress_from(progress, event)
            held = self.tasks.set_progress(task_id, progress)
            if held:
                self.tasks.append_event(task_id, event.model_dump(mode="json", exclude={"seq"}))
            return held

        async def on_event(event: TraceEvent) -> None:
            if event.type in _FRAMES:
                return  # the task's own metadata / done / error events frame the stream
            try:
                held = await run_in_threadpool(record, event)
            except Exception:  # the store failed: the run goes on (its trace keeps the event)
                log.exception("task progress not recorded")
                return
            if not held:
                # Taken back while running here: another process runs it now.
                # (Events may come from LangGraph's node tasks: the run's own task is cancelled.)
                self._drop_runs({task_id}, "taken back by another process")
                return
            await self.feed.notify()

        started = await self._event(
            task_id, "metadata", {"task_id": task_id, "run_id": run_id, "resumed": resume}
        )
        if resume:
            redo_from = started
        await self.feed.notify()
        log.info("task started", extra={"resume": resume})

        async def drive() -> ResearchResult:
            with task_span(task_id, row["traceparent"]):
                return await attempt()

        async def attempt() -> ResearchResult:
            if resume:
                await run_in_threadpool(self.tasks.mark_resumed, task_id)
                try:
                    return await self.researcher.resume(
                        run_id,
                        on_event=on_event,
                        caller_source=caller_source,
                        **resume_kw,
                    )
                except UnknownRun:
                    log.info("no trace of the run before the restart: starting it afresh")
            return await self.researcher.run(
                request.question,
                caller_source(),
                request.run_options(),
                run_id=run_id,
                on_event=on_event,
                caller_source=caller_source,
                **run_kw,
            )

        runner = asyncio.create_task(drive())
        self._running[task_id] = runner
        try:
            result = await runner
        except asyncio.CancelledError:
            if task_id in self._lost:
                self._lost.discard(task_id)  # its new owner runs it now: nothing to record
                return
            if task_id not in self._cancel_requested:
                raise  # the pool is stopping: the task is released and resumes later
            self._cancel_requested.discard(task_id)
            await self._finish_cancelled(task_id)
        except ReviewRequired as stop:  # not an end: paused until POST /v1/tasks/{id}/input
            await self._pause(task_id, run_id, stop.asked)
        except CallerRevoked as exc:  # not a fault: the key was deleted from the auth file
            log.warning("task failed: its key was revoked")
            await self._finish_failed(task_id, exc)
        except Exception as exc:  # recorded on the task and logged with its traceback
            log.exception("task failed")
            await self._finish_failed(task_id, exc)
        else:
            # The run's own counts (its state), not those summed from events: a resumed
            # run's redone round is counted once.
            progress.round = result.rounds
            progress.tool_calls = result.tool_calls
            progress.evidence = max(progress.evidence, len(result.evidence))
            await run_in_threadpool(self.tasks.set_progress, task_id, progress)
            finished = await run_in_threadpool(
                self.tasks.finish,
                task_id,
                "succeeded",
                result=result.model_dump(mode="json"),
                closing=Closing("done", done_data(result)),
            )
            if not finished:
                log.warning("task finished here after another process took it back")
                return
            log.info("task succeeded", extra={"rounds": result.rounds})
        finally:
            self._running.pop(task_id, None)
            self._lost.discard(task_id)
            self._cancel_requested.discard(task_id)
            settled = self._settled.pop(task_id, None)
            if settled is not None:
                settled.set()
        await self.feed.notify()  # the worker starts the webhook when it lets the task go

    def _replace_redone(self, task_id: str, node: str, round_no: int, before: int) -> TaskProgress:
        """The resumed run starts again at ``node`` of round ``round_no``: the stopped
        attempt's events from there on are deleted (the run emits them again), and the
        progress is counted again over the events kept."""
        dropped = self.tasks.replace_redone_events(task_id, node, round_no, before)
        if dropped:
            log.info(
                "a stopped attempt's events replaced by the resumed run's",
                extra={"events": dropped, "from_node": node, "round": round_no},
            )
        progress, after = TaskProgress(), 0
        while batch := self.tasks.events_after(task_id, after):
            for e in batch:
                if e.get("type") not in _FRAMES:
                    progress = _progress_with(
                        progress, str(e.get("type")), int(e.get("round") or 0), e.get("data") or {}
                    )
            after = int(batch[-1]["seq"])
        return progress

    async def _pause(self, task_id: str, run_id: str, asked: dict[str, Any]) -> None:
        """The run waits for a person's decision on its plan: the task says so (status,
        ``review_request``, an ``input_required`` event) and its webhook is sent."""
        if not await run_in_threadpool(self.tasks.pause, task_id, asked):
            log.warning("task paused here after another process took it back")
            return
        await self._event(
            task_id, "input_required", {"task_id": task_id, "run_id": run_id, **asked}
        )
        log.info("task waits for review", extra={"point": asked.get("point")})
        # Its webhook was put in the outbox with the pause (sent from there).
        for webhook_id in await run_in_threadpool(self.tasks.owned_unsent_messages):
            self._spawn_message(webhook_id)

    async def _finish_failed(self, task_id: str, exc: Exception) -> None:
        err = run_failed_data(exc)
        await run_in_threadpool(
            self.tasks.finish, task_id, "failed", error=err, closing=Closing("error", err)
        )

    async def _finish_cancelled(self, task_id: str) -> None:
        cancelled = {"code": "cancelled", "message": "cancelled by the caller"}
        if await run_in_threadpool(
            self.tasks.finish, task_id, "cancelled", error=cancelled, closing=_CANCELLED
        ):
            log.info("task cancelled")

    def _caller_source(self, row: Any, project: str | None) -> CallerSource:
        """The task's caller as its key is now: the key's current groups, the task's
        project (else the key's). Raises CallerRevoked once the key is gone from the auth
        file, or names another user (a key handed to someone else is not the task's)."""
        key_id, user = row["key_id"], row["user"]

        def current() -> Caller:
            principal = self.keys.by_key_id(key_id)
            if principal is None or principal.user != user:
                raise CallerRevoked("key revoked: the API key this task runs for was removed")
            return Caller(
                user=user, groups=list(principal.groups), project=project or principal.project
            )

        return current

    # ------------------------------------------------------------- webhooks
    async def _spawn_delivery_if_needed(self, task_id: str) -> None:
        try:
            row = await run_in_threadpool(self.tasks.task_row, task_id)
        except Exception:  # unreachable now: the next heartbeat sends this owner's own
            log.exception("webhook not started")
            return
        if (
            row is not None
            and row["webhook_url"]
            and row["webhook_state"] == "pending"
            and row["status"] in TERMINAL
            and row["owner"] == self.tasks.owner  # another live owner sends its own
        ):
            self._spawn_delivery(task_id)

    def _spawn_message(self, webhook_id: str) -> None:
        """Send an outbox message (``task.input_required``): signed and retried as the
        final webhook, with its own id, and not in the task's delivery log (which is the
        final webhook's)."""
        self._send(webhook_id, lambda: self._deliver_message(webhook_id))

    async def _deliver_message(self, webhook_id: str) -> None:
        outgoing = await run_in_threadpool(self._prepare_message, webhook_id)
        if outgoing is None:
            return
        task_id, url, secret, body = outgoing
        with bound(task_id=task_id):

            async def log_attempt(delivery: WebhookDelivery) -> None:
                log.info(
                    "webhook message attempt",
                    extra={"attempt": delivery.attempt, "ok": delivery.ok, "error": delivery.error},
                )

            ok = await self.sender.deliver(url, secret, webhook_id, body, log_attempt)
            await run_in_threadpool(
                self.tasks.settle_message, webhook_id, "delivered" if ok else "failed"
            )

    def _prepare_message(self, webhook_id: str) -> tuple[str, str, str, str] | None:
        """An outbox message this owner is to send (in a thread): its task, URL, the
        secret of the task's key and its body; None if there is nothing to send (sent,
        pruned, another owner's, or failed: its key has no webhook secret any more)."""
        row = self.tasks.outbox_message(webhook_id)
        if row is None or row["state"] != "pending" or row["owner"] != self.tasks.owner:
            return None
        principal = self.keys.by_key_id(row["key_id"])
        if not row["webhook_url"] or principal is None or not principal.webhook_secret:
            log.warning(
                "webhook not sent: the task's key has no webhook secret any more",
                extra={"task_id": row["task_id"]},
            )
            self.tasks.settle_message(webhook_id, "failed")
            return None
        return row["task_id"], row["webhook_url"], principal.webhook_secret, row["body"]

    def _signed_body(self, row: Any) -> tuple[str, str] | None:
        """The secret of the task's key and the webhook body of the task as it is now, in a
        thread; None if the key has no webhook secret any more."""
        principal = self.keys.by_key_id(row["key_id"])
        if principal is None or not principal.webhook_secret:
            log.warning("webhook not sent: the task's key has no webhook secret any more")
            return None
        task = self.tasks.get_task(row["id"])
        assert task is not None
        return principal.webhook_secret, webhook_body(task)

    def _spawn_delivery(self, task_id: str) -> None:
        self._send(task_id, lambda: self._deliver(task_id))

    def _send(self, key: str, deliver: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start a delivery, unless one for ``key`` is in flight here."""
        if self._stopping or key in self._delivering:
            return  # stopping: release() hands it to whoever sends it next
        self._delivering.add(key)
        t = asyncio.create_task(deliver(), name=f"webhook-{key}")
        self._deliveries.add(t)
        t.add_done_callback(self._deliveries.discard)
        t.add_done_callback(lambda _: self._delivering.discard(key))

    async def _deliver(self, task_id: str) -> None:
        row = await run_in_threadpool(self.tasks.task_row, task_id)
        if row is None:
            return
        with bound(task_id=task_id, run_id=row["run_id"]):
            outgoing = await run_in_threadpool(self._prepare_delivery, row)
            if outgoing is None:
                return
            # The sender's last attempt number.
            last = max(outgoing.first_attempt, self.sender.max_attempts)

            async def log_attempt(delivery: WebhookDelivery) -> None:
                await run_in_threadpool(self._log_attempt, task_id, delivery, last)

            ok = await self.sender.deliver(
                row["webhook_url"],
                outgoing.secret,
                outgoing.webhook_id,
                outgoing.body,
                log_attempt,
                first_attempt=outgoing.first_attempt,
            )
            await run_in_threadpool(
                self.tasks.set_webhook_state, task_id, "delivered" if ok else "failed"
            )

    def _prepare_delivery(self, row: Any) -> _Outgoing | None:
        """The webhook of a finished task, ready to send (in a thread): its body and id
        fixed once, its first attempt logged in flight. None if it cannot be signed."""
        task_id = row["id"]
        signed = self._signed_body(row)
        if signed is None:
            self.tasks.set_webhook_state(task_id, "failed")
            return None
        secret, body = signed
        webhook_id, body = self.tasks.prepare_webhook(task_id, f"msg_{uuid.uuid4().hex}", body)
        # An attempt still in flight in the log was cut short by a stop: it may have
        # arrived. It keeps its number (and says so); this send numbers after it.
        if self.tasks.interrupt_deliveries(task_id):
            log.warning("webhook attempt interrupted by a stop: sending again, same id")
        first = self.tasks.count_deliveries(task_id) + 1
        # Each attempt is logged before it is sent, completed after: a stop mid-send
        # leaves it in the log (the receiver deduplicates on the webhook id).
        self.tasks.begin_delivery(task_id, first, webhook_id)
        return _Outgoing(secret, webhook_id, body, first)

    def _log_attempt(self, task_id: str, delivery: WebhookDelivery, last: int) -> None:
        """An attempt's outcome; the next one logged in flight if the sender tries again."""
        self.tasks.log_delivery(task_id, delivery)
        if not delivery.ok and delivery.attempt < last:
            self.tasks.begin_delivery(task_id, delivery.attempt + 1, delivery.webhook_id)


@dataclass(frozen=True)
class _Outgoing:
    secret: str
    webhook_id: str
    body: str
    first_attempt: int


def _recovered_fields(recovered: Recovered) -> dict[str, int]:
    return {
        "requeued_tasks": recovered.tasks,
        "stale_idempotency_keys": recovered.idempotency_keys,
        "failed_source_jobs": recovered.source_jobs,
    }
