"""One Celery task per webhook event name; each runs the handlers features registered for it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task

from core import tasknames
from core.errors import ForksyncError
from workers.app.handlers import dispatch

log = logging.getLogger(__name__)


def with_installation(name: str, kwargs: dict[str, Any], find: Callable[[str], int]) -> dict[str, Any] | None:
    """``kwargs`` with ``installation_id`` filled in, or None (logged with why) when it cannot be.

    A plain repository webhook carries no ``installation`` (core/tasknames.py): the handlers all
    need one to act as the App, so it is looked up once here (``find(repo)``) rather than by each.
    """
    if kwargs.get("installation_id") is not None or not kwargs.get("repo"):
        return kwargs
    repo = str(kwargs["repo"])
    try:
        installation_id = find(repo)
    except ForksyncError as exc:
        log.warning("%s for %s (delivery %s) dropped: no installation in the payload and none found: %s; %s",
                    name, repo, kwargs.get("delivery"), exc.problem, exc.remedy)
        return None
    return {**kwargs, "installation_id": installation_id}


def _find_installation(task: Any) -> Callable[[str], int]:
    from core.github.app import app_for
    from workers.app import celery_app

    return lambda repo: app_for(celery_app.settings_of(task.app).bot).installation_for_repo(repo)


def _make(name: str) -> Any:
    # Its queue's limit (40 s): a dead worker's message comes back within a minute (core/tasknames.py).
    @shared_task(name=name, bind=True, acks_late=True, reject_on_worker_lost=True,
                 time_limit=tasknames.time_limit_for(name), soft_time_limit=tasknames.time_limit_for(name) - 5)  # type: ignore[untyped-decorator]
    def event(self: Any, **kwargs: Any) -> int:
        resolved = with_installation(name, kwargs, _find_installation(self))
        return 0 if resolved is None else dispatch(name, resolved)

    event.__doc__ = f"Run every handler registered for {name} (workers/app/handlers.py)."
    return event


WEBHOOK_TASKS = {name: _make(name) for name in tasknames.WEBHOOK_TASKS}
