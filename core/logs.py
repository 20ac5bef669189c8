"""Structured logs: every line of a unit of work names its delivery, task, installation and repo.

A unit of work starts in the webhook view (the delivery id, the installation, the repo) and
goes on in Celery tasks, and in the tasks they send. The context lives in a ``contextvars``
variable; a logging filter copies it onto every record; Celery carries it from the sender to the
task in the message's headers (``forksync_context``; :func:`publish_headers` /
:func:`from_headers`, wired in ``workers/app/celery_app.py``). ``FORKSYNC_LOG_FORMAT=json``
writes one JSON object per line (``ts level logger msg delivery task_id installation repo``,
plus ``exc`` for tracebacks), so ``jq 'select(.delivery=="...")'`` follows one delivery from
webhook to PR; the default is plain text with the same fields appended.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

FIELDS = ("delivery", "task_id", "installation", "repo")
HEADER = "forksync_context"

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "forksync_log_context", default=None
)


def current() -> dict[str, Any]:
    """The fields of the unit of work running here (empty outside one)."""
    return dict(_context.get() or {})


@contextlib.contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """Add fields (None values are ignored) to the context for the ``with`` body."""
    merged = {**current(), **{k: v for k, v in fields.items() if v is not None}}
    token = _context.set(merged)
    try:
        yield
    finally:
        _context.reset(token)


def bind(**fields: Any) -> contextvars.Token[dict[str, Any] | None]:
    """Set the context until :func:`unbind` (for Celery's prerun/postrun signal pair)."""
    return _context.set({k: v for k, v in fields.items() if v is not None})


def unbind(token: contextvars.Token[dict[str, Any] | None]) -> None:
    try:
        _context.reset(token)
    except ValueError:  # reset from another context (a signal ran elsewhere): just clear it
        _context.set(None)


def publish_headers() -> dict[str, Any]:
    """What a task sent from here carries to the worker (the task id is the new task's own)."""
    ctx = {k: v for k, v in current().items() if k != "task_id"}
    return {HEADER: ctx} if ctx else {}


def from_task(request: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A task's context: its sender's (message headers), then what its own arguments say."""
    headers = getattr(request, "headers", None) or {}
    inherited = headers.get(HEADER) if isinstance(headers, Mapping) else None
    if inherited is None:
        inherited = getattr(request, HEADER, None)  # Celery also exposes custom headers as attributes
    ctx: dict[str, Any] = dict(inherited) if isinstance(inherited, Mapping) else {}
    for key, arg in (("delivery", "delivery"), ("installation", "installation_id"), ("repo", "repo")):
        value = kwargs.get(arg)
        if value is not None:
            ctx[key] = value
    ctx["task_id"] = getattr(request, "id", None)
    return {k: v for k, v in ctx.items() if v is not None}


class ContextFilter(logging.Filter):
    """Copies the unit of work's fields onto each record (``record.delivery``...)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = current()
        for key in FIELDS:
            if not hasattr(record, key):
                setattr(record, key, ctx.get(key))
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                data[key] = value
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = " ".join(f"{k}={getattr(record, k)}" for k in FIELDS if getattr(record, k, None) is not None)
        return f"{text} [{extra}]" if extra else text


def formatter(log_format: str | None = None) -> logging.Formatter:
    chosen = (log_format if log_format is not None else os.environ.get("FORKSYNC_LOG_FORMAT", "")).lower()
    return JsonFormatter() if chosen == "json" else TextFormatter()


def install(handler: logging.Handler, log_format: str | None = None) -> logging.Handler:
    """Give ``handler`` the context filter and the configured format."""
    if not any(isinstance(f, ContextFilter) for f in handler.filters):
        handler.addFilter(ContextFilter())
    handler.setFormatter(formatter(log_format))
    return handler


def configure(level: int = logging.INFO, log_format: str | None = None, stream: Any = None) -> None:
    """The root logger's handlers (or one on stderr) get the filter and format; idempotent."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(stream or sys.stderr))
    for handler in root.handlers:
        install(handler, log_format)
    root.setLevel(min(root.level or level, level) if root.level else level)
