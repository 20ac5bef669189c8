"""One Celery task per webhook event name; each runs the handlers features registered for it.

Each run is accounted in the accepted-delivery log (``core/store/deliveries.py``): the task takes
its delivery first (a delivery that finished before is never run again, one another worker holds
now is left to it), marks it finished at the end, and frees it when it will be retried. The
replay pass (``forksync.replay_deliveries``, at worker start-up and by beat) sends again the
deliveries that never finished because their message was lost.
"""

from __future__ import annotations

import logging
import os
import socket
import time
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
        log.warning(
            "%s for %s (delivery %s) dropped: no installation in the payload and none found: %s; %s",
            name,
            repo,
            kwargs.get("delivery"),
            exc.problem,
            exc.remedy,
        )
        return None
    return {**kwargs, "installation_id": installation_id}


def _find_installation(task: Any) -> Callable[[str], int]:
    from workers.app import celery_app, runtime

    return lambda repo: runtime.app_for(celery_app.settings_of(task.app)).installation_for_repo(repo)


def _store_of(task: Any) -> Any:
    """The SQL store of the task's app, or None (an app not made by create_celery, or no store)."""
    from workers.app import celery_app

    try:
        return celery_app.settings_of(task.app).store()
    except Exception as exc:  # the store unreachable must not drop a delivery: run it unaccounted
        log.warning(
            "delivery log unavailable (%s); running the delivery without its accounting", type(exc).__name__
        )
        return None


def _account(task: Any, kwargs: dict[str, Any], what: Callable[[Any, str], Any]) -> Any:
    delivery = kwargs.get("delivery")
    if not isinstance(delivery, str) or not delivery:
        return None
    store = _store_of(task)
    if store is None:
        return None
    try:
        return what(store, delivery)
    except Exception as exc:
        log.warning("delivery log: could not record delivery %s (%s)", delivery, type(exc).__name__)
        return None


def holder() -> str:
    """Who runs a delivery: this host and process ("host:pid")."""
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_gone(who: str) -> bool:
    """True when ``who`` ("host:pid") is a process of this host that no longer exists (a pool
    process killed mid-task: its requeued message must not wait for the lease)."""
    host, _, pid = who.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


def _make(name: str) -> Any:
    from core.store import deliveries

    limit = tasknames.time_limit_for(name)

    # Its queue's limit (40 s): a dead worker's message comes back within a minute (core/tasknames.py).
    @shared_task(
        name=name,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        time_limit=limit,
        soft_time_limit=limit - 5,
    )  # type: ignore[untyped-decorator]
    def event(self: Any, **kwargs: Any) -> int:
        taken = _account(
            self,
            kwargs,
            lambda store, d: deliveries.begin(store, d, time.time(), limit, holder(), holder_gone),
        )
        if taken == deliveries.DONE:
            log.info("%s: delivery %s finished before; not running it again", name, kwargs.get("delivery"))
            return 0
        if taken == deliveries.BUSY:
            log.info(
                "%s: delivery %s is being run by another worker; leaving it to that one",
                name,
                kwargs.get("delivery"),
            )
            return 0
        resolved = with_installation(name, kwargs, _find_installation(self))
        ran = 0 if resolved is None else dispatch(name, resolved)
        _account(self, kwargs, lambda store, d: deliveries.finish(store, d, "done", time.time()))
        return ran

    event.__doc__ = f"Run every handler registered for {name} (workers/app/handlers.py), once per delivery."
    return event


WEBHOOK_TASKS = {name: _make(name) for name in tasknames.WEBHOOK_TASKS}


def _on_retry(sender: Any = None, request: Any = None, **_: Any) -> None:
    """A webhook task will be retried: free its delivery's lease, so the retry can take it."""
    from core.store import deliveries

    if getattr(sender, "name", None) not in WEBHOOK_TASKS:
        return
    kwargs = getattr(request, "kwargs", None) or {}
    _account(sender, dict(kwargs), lambda store, d: deliveries.release(store, d, time.time()))


def _on_failure(sender: Any = None, kwargs: Any = None, **_: Any) -> None:
    """A webhook task failed for good (not a retry): its delivery is finished, as failed; the
    failure is in the worker's log, and replaying it would only fail again."""
    from core.store import deliveries

    if getattr(sender, "name", None) not in WEBHOOK_TASKS:
        return
    _account(sender, dict(kwargs or {}), lambda store, d: deliveries.finish(store, d, "failed", time.time()))


@shared_task(
    name=tasknames.REPLAY_DELIVERIES,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.REPLAY_DELIVERIES),
)
def replay_deliveries(self: Any, **_: Any) -> int:
    """Worker start-up and beat: send again the accepted deliveries whose task never finished."""
    from workers.app.celery_app import settings_of
    from workers.jobs.replay_deliveries import Replay
    from workers.jobs.replay_deliveries import replay_deliveries as run

    settings = settings_of(self.app)
    done = run(
        settings.store(),
        lambda task, kwargs: self.app.send_task(task, kwargs=kwargs),
        known_tasks=frozenset(WEBHOOK_TASKS),
        grace_s=settings.replay_grace_s,
    )
    replayed = sum(1 for action in done if isinstance(action, Replay))
    if done:
        log.info("delivery replay: %d delivery(ies) sent again, %d given up", replayed, len(done) - replayed)
    return replayed


def _replay_at_start(sender: Any = None, **_: Any) -> None:
    """On ``worker_ready``: one replay pass, sent to the queue (a worker consuming ``github`` runs it)."""
    app = getattr(sender, "app", None)
    if app is None:
        return
    try:
        app.send_task(tasknames.REPLAY_DELIVERIES)
    except Exception as exc:  # a broker hiccup at start-up must not stop the worker; beat runs it later
        log.warning("delivery replay not sent at start-up (%s); beat sends it later", exc)


def wire_accounting() -> None:
    from celery import signals

    signals.task_retry.connect(_on_retry, weak=False, dispatch_uid="forksync-delivery-retry")
    signals.task_failure.connect(_on_failure, weak=False, dispatch_uid="forksync-delivery-failure")
    signals.worker_ready.connect(_replay_at_start, weak=False, dispatch_uid="forksync-replay-deliveries")


wire_accounting()
