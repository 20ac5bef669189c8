"""The Celery app: factory wired to Flask (Flask's Celery pattern), queues, routes, retries, beat.

``celery -A workers.app.celery_app worker -Q ingest,github`` and ``celery -A workers.app.celery_app beat``
use the module-level ``app``, built from the environment on first access (lazily, so importing
this module reads nothing; library code calls :func:`create_celery` instead). Routes and queue names
come from ``core/tasknames.py`` only. Without ``REDIS_URL`` the same code runs on the embedded
broker (SQLite under the data dir, see ``workers/app/embedded.py``).
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import random
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import Celery, Task
from celery.schedules import crontab
from kombu.entity import Exchange, Queue

from core import logs, tasknames, telemetry
from core.config import RepoConfig
from core.github.errors import RetryableGitHubError
from core.settings import WorkerSettings
from workers.adapters.state import LockBusy, StoreUnavailable
from workers.app import embedded

log = logging.getLogger(__name__)

# The embedded (SQL) transport polls: with one message in flight per process the consumer sleeps a
# polling interval between tasks. One machine has no other worker to be fair to, so fetch ahead.
EMBEDDED_PREFETCH = 4

# Beat's upstream poll; the name and its route live in core/tasknames.py like every other task's.
POLL_UPSTREAM = tasknames.POLL_UPSTREAM

# Backoff for transient GitHub failures: base * 2**retries, capped, plus jitter; never sooner
# than GitHub's own Retry-After / x-ratelimit-reset.
RETRY_BASE_S = 2.0
RETRY_MAX_S = 600.0
MAX_RETRIES = 8
# A task that finds its repository locked by another ingest waits this long and tries again
# (for up to 10 minutes; past that the next push or poll ingests the newer state anyway).
LOCK_RETRY_S = 5.0
LOCK_MAX_RETRIES = 120

# Every module of this package is imported by create_celery: a feature adds its tasks by
# adding a module there (``workers/tasks/l1.py``...), nothing else to register.
TASK_PACKAGE = "workers.tasks"


def retry_after(exc: BaseException) -> float | None:
    """Seconds to wait before retrying ``exc`` (at least), or None when it is not transient.

    The GitHub adapter raises ``RetryableGitHubError(retry_after_s)`` for 5xx answers, timeouts
    and rate limits, with the wait GitHub asked for (0 when it did not say: backoff decides).
    """
    if isinstance(exc, RetryableGitHubError):
        return exc.retry_after_s
    return None


def backoff_s(retries: int, floor_s: float = 0.0, base_s: float = RETRY_BASE_S) -> float:
    """Exponential backoff with jitter, never below ``floor_s`` (GitHub's Retry-After)."""
    delay = min(RETRY_MAX_S, base_s * float(2**retries))
    return max(floor_s, delay) + random.uniform(0, min(1.0, delay / 4))


class ForksyncTask(Task):  # type: ignore[misc]
    """Base task: runs inside the Flask app context when there is one (Flask's Celery pattern),
    retries transient GitHub errors honouring Retry-After, and waits out a busy repository lock."""

    flask_app: Any = None
    retry_base_s: float = RETRY_BASE_S

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Every log line of this task names its delivery, task id, installation and repo
        # (inherited from the sender through the message headers: core/logs.py).
        with logs.bound(**logs.from_task(self.request, kwargs)):
            return self._call(*args, **kwargs)

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if self.flask_app is not None:
                with self.flask_app.app_context():
                    return self.run(*args, **kwargs)
            return self.run(*args, **kwargs)
        except (LockBusy, StoreUnavailable) as exc:
            log.info("%s: %s; retrying in %.0f s", self.name, exc, LOCK_RETRY_S)
            raise self.retry(
                exc=exc, countdown=LOCK_RETRY_S + random.uniform(0, 1), max_retries=LOCK_MAX_RETRIES
            ) from None
        except Exception as exc:
            floor = retry_after(exc)
            if floor is None:
                raise
            retries = self.request.retries
            countdown = backoff_s(retries, floor, self.retry_base_s)
            log.warning(
                "%s: transient GitHub error (%s); retry %d in %.1f s", self.name, exc, retries + 1, countdown
            )
            raise self.retry(exc=exc, countdown=countdown, max_retries=MAX_RETRIES) from None


def broker_and_backend(settings: WorkerSettings) -> tuple[str, str]:
    """Redis for both with ``REDIS_URL``; else the embedded SQLite files under the data dir.

    The embedded broker file is the one the webhook view sends to (``core.tasknames``); workers
    read it through the tuned transport of ``workers/app/embedded.py`` (same tables, same file).
    """
    if settings.bot.redis_url:
        return settings.bot.redis_url, settings.bot.redis_url
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    stock = tasknames.embedded_broker_url(str(settings.data_dir))
    broker = "embedded+" + stock.split("+", 1)[1]
    backend = f"db+sqlite:///{settings.data_dir / 'celery-results.sqlite'}"
    return broker, backend


def beat_schedule(config: RepoConfig) -> dict[str, dict[str, Any]]:
    """Beat entries from the process config's ``schedule`` and ``l2.schedule`` (UTC)."""
    hour, _, minute = config.l2.schedule.partition(":")
    return {
        "poll-upstream": {
            "task": POLL_UPSTREAM,
            "schedule": timedelta(minutes=config.schedule.poll_upstream_minutes),
        },
        "snapshot-metrics": {
            "task": tasknames.SNAPSHOT_METRICS,
            "schedule": timedelta(minutes=config.schedule.snapshot_minutes),
        },
        # Daily: the digest task edits the period's issue, and opens the next one when a period ends.
        "pin-update-digest": {"task": tasknames.DIGEST, "schedule": crontab(hour=6, minute=0)},
        "l1-watchdog": {
            "task": tasknames.L1_WATCHDOG,
            "schedule": timedelta(minutes=config.schedule.l1_watchdog_minutes),
        },
        "recover-commands": {
            "task": tasknames.RECOVER_COMMANDS,
            "schedule": timedelta(minutes=config.schedule.recover_commands_minutes),
        },
        # Accepted deliveries whose task never finished (their message was lost) are sent again.
        "replay-deliveries": {
            "task": tasknames.REPLAY_DELIVERIES,
            "schedule": timedelta(minutes=config.schedule.recover_commands_minutes),
        },
        # The L2 task itself belongs to the L2 feature; beat only sends it by name.
        "nightly-l2": {"task": tasknames.RUN_L2, "schedule": crontab(hour=int(hour), minute=int(minute))},
    }


def celery_config(settings: WorkerSettings) -> dict[str, Any]:
    """Plain Celery settings for ``settings`` (pure apart from creating the data dir)."""
    broker, backend = broker_and_backend(settings)
    routes: dict[str, dict[str, str]] = dict(tasknames.TASK_ROUTES)
    transport_options: dict[str, Any] = {"visibility_timeout": settings.visibility_timeout_s}
    if settings.bot.redis_url:
        # kombu sweeps for expired unacked messages (a worker that died holding them) every
        # interval × throttle seconds, 100 s by default; sweep every interval instead (one cheap
        # ZRANGE), and more often when the visibility timeout is short.
        transport_options["unacked_restore_interval"] = max(1, min(10, settings.visibility_timeout_s // 3))
        transport_options["unacked_restore_throttle"] = 1
        # Each set of queues keeps its own index of unacknowledged messages: a webhook worker
        # restores a dead peer's webhook messages after its short timeout, and never an L2 run a
        # healthy long worker is still holding (kombu's one global index would).
        if set(settings.worker_queues) != set(tasknames.QUEUES):
            suffix = "-".join(sorted(settings.worker_queues))
            transport_options.update(
                {
                    "unacked_key": f"unacked:{suffix}",
                    "unacked_index_key": f"unacked_index:{suffix}",
                    "unacked_mutex_key": f"unacked_mutex:{suffix}",
                }
            )
    else:
        # The embedded broker leases taken messages per queue (workers/app/embedded.py): a killed
        # worker's webhook messages come back within a minute, a live worker's never.
        queues = (*tasknames.QUEUES, *(q for q in settings.worker_queues if tasknames.is_l1_pool_queue(q)))
        transport_options["queue_visibility_timeouts"] = {
            q: settings.visibility_override_s or embedded.default_lease_s(q) for q in queues
        }
    return {
        "broker_url": broker,
        "result_backend": backend,
        # Named like the queues Celery creates for a route (what the bot's sender declares), so
        # the bot and the workers bind the same exchange and routing key.
        # A worker of an L1 pool (l1.suites[].pools) also declares its pool's queue, l1-<pool>.
        "task_queues": [
            Queue(name, Exchange(name), routing_key=name)  # type: ignore[no-untyped-call]
            for name in (
                *tasknames.QUEUES,
                *(q for q in settings.worker_queues if tasknames.is_l1_pool_queue(q)),
            )
        ],
        "task_default_queue": tasknames.Q_GITHUB,
        "task_routes": routes,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "result_expires": 24 * 3600,
        # One message at a time per process: an ingest is long, and prefetched messages would
        # wait behind it while another worker idles.
        "worker_prefetch_multiplier": 1 if settings.bot.redis_url else EMBEDDED_PREFETCH,
        "broker_transport_options": transport_options,
        "broker_connection_retry_on_startup": True,
        # A webhook must not be lost because the broker blinked (a Redis restart): keep trying.
        "task_publish_retry": True,
        "task_publish_retry_policy": {
            "max_retries": 20,
            "interval_start": 0.2,
            "interval_step": 0.5,
            "interval_max": 2.0,
        },
        "timezone": "UTC",
        "enable_utc": True,
        "beat_schedule": beat_schedule(settings.process_config),
        "beat_schedule_filename": str(settings.data_dir / "celerybeat-schedule"),
        "worker_hijack_root_logger": False,
        "include": task_modules(),
    }


def persistence_report(settings: WorkerSettings, env: Mapping[str, Any]) -> tuple[int, str, bool]:
    """(log level, the one start-up line, refuse to start) about what survives a broker restart:
    Redis's append-only file, and what the durable store covers without it (docs/security.md).
    ``FORKSYNC_REQUIRE_REDIS_AOF=1`` refuses to start on a Redis without AOF (or one that hides it)."""
    from core.persistence import redis_persistence

    store = (
        "the SQL store (FORKSYNC_DATABASE_URL)"
        if settings.bot.database_url
        else f"{settings.data_dir}/store.sqlite"
    )
    if not settings.bot.redis_url:
        return (
            logging.INFO,
            f"broker persistence: embedded broker in {settings.data_dir}/celery-broker.sqlite "
            "(on disk; a killed worker's messages come back after their queue's lease); "
            f"delivery log in {store}",
            False,
        )
    required = str(env.get("FORKSYNC_REQUIRE_REDIS_AOF") or "") in ("1", "true", "yes")
    state = redis_persistence(settings.bot.redis_url)
    if state.aof:
        return (
            logging.INFO,
            f"broker persistence: Redis AOF on (appendfsync {state.fsync or '?'}): queued messages "
            f"survive a restart; delivery log and dedup in {store}",
            False,
        )
    what = "Redis AOF off" if state.aof is False else f"Redis AOF unknown ({state.detail})"
    return (
        logging.ERROR if required else logging.WARNING,
        f"broker persistence: {what}: a Redis restart loses the messages queued then; webhook deliveries "
        f"are replayed from the delivery log in {store} after {settings.replay_grace_s:g} s, queued ingests and "
        "L1/L2 runs wait for beat or the next event; set appendonly yes (appendfsync everysec) in redis.conf"
        + ("; refusing to start (FORKSYNC_REQUIRE_REDIS_AOF=1)" if required else ""),
        required,
    )


def _check_persistence(sender: Any = None, **_: Any) -> None:
    """On ``worker_init``: say in one line what survives a broker restart; stop when AOF is required."""
    app = getattr(sender, "app", None)
    settings = app.conf.get("forksync_settings") if app is not None else None
    if not isinstance(settings, WorkerSettings):
        return
    level, line, refuse = persistence_report(settings, os.environ)
    log.log(level, "%s", line)
    if refuse:
        raise SystemExit(line)


def _settings_from(source: Any) -> tuple[WorkerSettings, Any]:
    """(settings, flask app or None) from WorkerSettings, a Flask app, a mapping or None (env)."""
    if isinstance(source, WorkerSettings):
        return source, None
    if source is None:
        return WorkerSettings.from_mapping(None), None
    if isinstance(source, Mapping):
        return WorkerSettings.from_mapping({**os.environ, **source}), None
    config = getattr(source, "config", None)
    if config is not None:  # a Flask app: its config overrides the environment
        overrides = {k: v for k, v in config.items() if isinstance(k, str) and isinstance(v, str)}
        return WorkerSettings.from_mapping({**os.environ, **overrides}), source
    raise TypeError(
        f"create_celery needs WorkerSettings, a Flask app, a mapping or None, not {type(source).__name__}"
    )


def create_celery(source: Any = None) -> Celery:
    """Build the Celery app for ``source`` (see :func:`_settings_from`) and register our tasks.

    With a Flask app, tasks run in its app context and the app is stored in
    ``flask_app.extensions["celery"]`` (Flask's Celery pattern).
    """
    embedded.register()
    wire_logs()
    from core import logsafe

    logsafe.install()  # payload text in task logs cannot forge lines
    settings, flask_app = _settings_from(source)
    task_cls = type(
        "ForksyncTask", (ForksyncTask,), {"flask_app": flask_app, "retry_base_s": settings.retry_base_s}
    )
    app = Celery("forksync", task_cls=task_cls)
    app.conf.update(celery_config(settings))
    app.conf.forksync_settings = settings
    app.set_default()
    if flask_app is not None:
        flask_app.extensions["celery"] = app
    # Import the task modules now, so that @shared_task binds them to this app in every process
    # (worker, beat, web) without relying on autodiscovery.
    for module in task_modules():
        importlib.import_module(module)
    return app


def _publish_context(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None:
        headers.update(logs.publish_headers())


def _install_log_format(logger: logging.Logger | None = None, **_: Any) -> None:
    for handler in (logger or logging.getLogger()).handlers:
        logs.install(handler)


_STARTED: dict[str, float] = {}


def _queue_of(task: Any) -> str:
    info = getattr(getattr(task, "request", None), "delivery_info", None) or {}
    queue = info.get("routing_key") if isinstance(info, dict) else None
    if not queue:
        try:
            queue = tasknames.queue_for(task.name)
        except KeyError:
            queue = "other"
    return str(queue)


def _task_started(task_id: str | None = None, **_: Any) -> None:
    if task_id:
        _STARTED[task_id] = time.monotonic()


def _task_finished(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    started = _STARTED.pop(task_id or "", None)
    if started is not None and task is not None:
        telemetry.TASK_DURATION.labels(queue=_queue_of(task), task=task.name).observe(
            time.monotonic() - started
        )


def _task_failed(sender: Any = None, **_: Any) -> None:
    if sender is not None:
        telemetry.TASK_FAILURES.labels(queue=_queue_of(sender), task=sender.name).inc()


def wire_logs() -> None:
    """Tasks sent from a task carry its log context; the worker's log handlers get its format;
    task durations and failures go to the Prometheus metrics (core/telemetry.py)."""
    from celery import signals

    signals.worker_init.connect(_check_persistence, weak=False, dispatch_uid="forksync-broker-persistence")
    signals.task_prerun.connect(_task_started, weak=False, dispatch_uid="forksync-task-started")
    signals.task_postrun.connect(_task_finished, weak=False, dispatch_uid="forksync-task-finished")
    signals.task_failure.connect(_task_failed, weak=False, dispatch_uid="forksync-task-failed")
    signals.before_task_publish.connect(_publish_context, weak=False, dispatch_uid="forksync-log-context")
    signals.after_setup_logger.connect(_install_log_format, weak=False, dispatch_uid="forksync-log-format")
    signals.after_setup_task_logger.connect(
        _install_log_format, weak=False, dispatch_uid="forksync-task-log-format"
    )


def task_modules() -> list[str]:
    """``workers.tasks.*`` module names, sorted (each feature's tasks live in one of them)."""
    package = importlib.import_module(TASK_PACKAGE)
    return sorted(
        f"{TASK_PACKAGE}.{m.name}"
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith("_")
    )


def settings_of(app: Celery) -> WorkerSettings:
    """The WorkerSettings a Celery app was created with."""
    settings = app.conf.get("forksync_settings")
    if not isinstance(settings, WorkerSettings):
        raise RuntimeError("this Celery app was not made by workers.app.celery_app.create_celery")
    return settings


def data_path(app: Celery, *parts: str) -> Path:
    return settings_of(app).data_dir.joinpath(*parts)


_app: Celery | None = None


def __getattr__(name: str) -> Celery:
    """``app`` / ``celery_app``: the process's Celery app, built from the environment on first use.

    Lazy (PEP 562) so that importing this module reads no settings and creates no files;
    ``celery -A workers.app.celery_app`` looks the attribute up and so builds it.
    """
    global _app
    if name in ("app", "celery_app", "celery"):
        if _app is None:
            _app = create_celery()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
