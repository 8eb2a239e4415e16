"""Structured JSON logs that carry the request id, run id and task id on every line.

The ids live in contextvars: set once where a request or run starts, every log call
below (service, workers, graph, engines) inherits them without passing them around.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tools.telemetry import current_trace_id

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "waypoint_request_id", default=None
)
run_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "waypoint_run_id", default=None
)
task_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "waypoint_task_id", default=None
)

_CONTEXT_VARS = {"request_id": request_id_var, "run_id": run_id_var, "task_id": task_id_var}
# Attributes every LogRecord has; anything else passed via `extra=` is emitted as a field.
_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class ContextFilter(logging.Filter):
    """Copies the current request/run/task ids onto every record, and the trace id of the
    current span when tracing is on (a log line then leads to its trace)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _CONTEXT_VARS.items():
            if not hasattr(record, name):
                setattr(record, name, var.get())
        if not hasattr(record, "trace_id"):
            record.trace_id = current_trace_id()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in _CONTEXT_VARS:
            out[name] = getattr(record, name, None)
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str = "INFO", json_lines: bool = True) -> None:
    """Route every logger (ours, uvicorn's, the engines') through one JSON handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    if json_lines:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter(
                "%(levelname)s %(name)s [req=%(request_id)s run=%(run_id)s] %(message)s"
            )
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True


@contextmanager
def bound(**ids: str | None) -> Iterator[None]:
    """Set request_id / run_id / task_id for the duration of a block."""
    tokens = [(_CONTEXT_VARS[k], _CONTEXT_VARS[k].set(v)) for k, v in ids.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
