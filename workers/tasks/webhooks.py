"""One Celery task per webhook event name; each runs the handlers features registered for it."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from bot import tasknames
from workers.handlers import dispatch


def _make(name: str) -> Any:
    @shared_task(name=name, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def event(**kwargs: Any) -> int:
        return dispatch(name, kwargs)

    event.__doc__ = f"Run every handler registered for {name} (workers/handlers.py)."
    return event


WEBHOOK_TASKS = {name: _make(name) for name in tasknames.WEBHOOK_TASKS}
