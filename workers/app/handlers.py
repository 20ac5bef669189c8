"""Webhook handlers per feature, composed under the one Celery task per event name.

The bot sends each event once, by name (``core/tasknames.py``); several features react to the
same event (a merged bundle PR moves ingestion, an opened PR starts L1...). Each feature
registers its handler here with :func:`handles`, in its own ``workers/tasks/<feature>.py``; the
webhook task runs every handler of its event (bedevere's routers). A handler decides fast from
the primitive kwargs and enqueues the real work as its own task; it must be idempotent.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

Handler = Callable[..., None]
_HANDLERS: dict[str, list[Handler]] = {}


def handles(event_task: str) -> Callable[[Handler], Handler]:
    """Register the decorated function for the webhook task ``event_task`` (kwargs as sent)."""

    def register(fn: Handler) -> Handler:
        registered = _HANDLERS.setdefault(event_task, [])
        if fn not in registered:
            registered.append(fn)
        return fn

    return register


def handlers_for(event_task: str) -> list[Handler]:
    return list(_HANDLERS.get(event_task, ()))


def dispatch(event_task: str, kwargs: dict[str, Any]) -> int:
    """Run every handler of ``event_task``; one handler's failure does not starve the others.

    Raises the first failure after all have run (so the task retries or reports it); returns
    how many handlers ran.
    """
    first: BaseException | None = None
    handlers = handlers_for(event_task)
    for fn in handlers:
        try:
            fn(**kwargs)
        except Exception as exc:
            log.exception("%s handler %s failed", event_task, getattr(fn, "__qualname__", fn))
            first = first or exc
    if first is not None:
        raise first
    return len(handlers)


@contextlib.contextmanager
def only_from(*modules: str) -> Iterator[None]:
    """Within the block, run only the handlers defined in ``modules`` (this process only).

    ``forksync demo`` uses it to run the ingestion, comment-command and L1 handlers alone (the
    others need what the offline demo leaves out: a resolution agent, L3 workloads).
    """
    saved = {name: list(fns) for name, fns in _HANDLERS.items()}
    for fns in _HANDLERS.values():
        fns[:] = [fn for fn in fns if fn.__module__ in modules]
    try:
        yield
    finally:
        _HANDLERS.clear()
        _HANDLERS.update(saved)
