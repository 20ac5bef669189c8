"""Comment commands: the ``forksync.on_comment`` handler, wired to the adapter, the gate and the queue.

The handler runs inside the webhook task (``workers/tasks/webhooks.py``): it is quick (one
comment, a few API calls, git reads of the cached pair), and what takes long is enqueued by
name (ingestion, L1, L2). See ``workers/commands/handler.py`` for the flow.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from core import tasknames
from core.errors import ForksyncError
from core.settings import WorkerSettings
from workers.app.handlers import handles
from workers.commands.gate import Gate, MemoryGate, RedisGate
from workers.commands.handler import Answer, CommentTask, handle
from workers.commands.registry import default_actions
from workers.commands.services import Services

log = logging.getLogger("forksync.commands")

_gates: dict[str | None, Gate] = {}


def gate_for(settings: WorkerSettings) -> Gate:
    """One gate per process and Redis URL: Redis when configured, else this process's memory."""
    url = settings.bot.redis_url
    gate = _gates.get(url)
    if gate is None:
        gate = _gates[url] = RedisGate.from_url(url) if url else MemoryGate()
    return gate


def send_task(name: str, kwargs: dict[str, Any]) -> None:
    """Enqueue a task by name on the current Celery app (tests replace this to record or run it)."""
    from celery import current_app

    current_app.send_task(name, kwargs=kwargs)


def _settings() -> WorkerSettings:
    from celery import current_app

    from workers.app.celery_app import settings_of

    return settings_of(current_app)


def answer(settings: WorkerSettings, kwargs: dict[str, Any]) -> Answer | None:
    """Run the handler for one ``on_comment`` delivery with this process's adapter and gate."""
    from workers.app import runtime

    task = CommentTask(
        installation_id=kwargs.get("installation_id"),
        repo=str(kwargs["repo"]),
        issue_number=int(kwargs["issue_number"]),
        comment_id=int(kwargs["comment_id"]),
        author=str(kwargs.get("author") or ""),
        author_type=str(kwargs.get("author_type") or "User"),
        is_pull_request=bool(kwargs.get("is_pull_request")),
        delivery=str(kwargs.get("delivery") or ""),
    )
    if task.installation_id is None:
        log.warning("%s: comment %s came without an installation; cannot answer", task.repo, task.comment_id)
        return None
    github = runtime.github_for(settings, int(task.installation_id))
    adapter = getattr(github, "adapter", None)
    if adapter is None:
        log.warning(
            "%s: this deployment's GitHub view has no adapter (demo mode); comment %s not answered",
            task.repo,
            task.comment_id,
        )
        return None
    services = Services(
        fork_location=lambda repo: settings.map_url(github.clone_url(repo)),
        upstream_location=settings.map_url,
        git_token=github.git_token,
        send_task=send_task,
    )
    # Records only forksync may write (the /approve comment) are trusted from the App's own login.
    app = getattr(github, "app", None)
    own_login = app.bot_login() if app is not None else None
    from workers.adapters.answers import StoreAnswerIndex

    try:
        index: StoreAnswerIndex | None = StoreAnswerIndex(settings.store())
    except Exception as exc:  # the store unreachable: "already answered" is read from the thread
        log.warning("answered-comment index unavailable (%s); reading the thread instead", type(exc).__name__)
        index = None
    return handle(
        task,
        adapter,
        gate_for(settings),
        default_actions(),
        services,
        own_login=own_login,
        answers=index,
    )


@handles(tasknames.ON_COMMENT)
def answer_comment(**kwargs: Any) -> None:
    """Answer the commands of a new comment (see ``workers/commands/handler.py``)."""
    answer(_settings(), kwargs)


@shared_task(
    name=tasknames.RECOVER_COMMANDS,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # type: ignore[untyped-decorator]
    time_limit=tasknames.time_limit_for(tasknames.RECOVER_COMMANDS),
)
def recover_commands(self: Any, **_: Any) -> int:
    """Worker start-up and beat: enqueue the comments with commands and no reply (lost deliveries)."""
    from workers.app import runtime
    from workers.app.celery_app import settings_of
    from workers.jobs.recover_commands import recover_commands as run

    settings = settings_of(self.app)
    try:
        app = runtime.app_for(settings)
        own_login = app.bot_login()
    except ForksyncError as exc:  # no App configured (demo), or GitHub unreachable: beat tries again
        log.warning("command recovery skipped: %s", exc)
        return 0
    done = run(settings.store(), app.adapter, send_task, own_login=own_login)
    log.info("command recovery: %d comment(s) answered late", len(done))
    return len(done)


def _recover_at_start(sender: Any = None, **_: Any) -> None:
    """On ``worker_ready``: one recovery pass, sent to the queue (a worker consuming ``github`` runs it)."""
    app = getattr(sender, "app", None)
    if app is None:
        return
    try:
        app.send_task(tasknames.RECOVER_COMMANDS)
    except Exception as exc:  # a broker hiccup at start-up must not stop the worker; beat runs it later
        log.warning("command recovery not sent at start-up (%s); beat sends it later", exc)


def wire_recovery() -> None:
    from celery import signals

    signals.worker_ready.connect(_recover_at_start, weak=False, dispatch_uid="forksync-recover-commands")


wire_recovery()
